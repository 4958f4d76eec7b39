"""Tokenization: batches of documents -> token arrays (EOD after each piece), length floor.

The tokenizer is loaded once per worker in ``setup``; documents are encoded in batches
(``BatchElements`` -> ``encode_batch``).  Output elements are ``(doc, tokens)`` with
``doc.tokens`` set; documents under ``min_tokens`` (EOD included) are removed at stage
``tokenize`` with reason ``too_few_tokens``.
"""
from __future__ import annotations

import numpy as np
import apache_beam as beam

from curation.document import Document, Removal
from curation.tokenizer import load_tokenizer
from infra.storage.staging import local_copy
from pipelines.plumbing.outputs import REMOVED, count, with_changes
from pipelines.plumbing.timing import timed
from curation.pieces import split_pieces


class TokenizeBatchFn(beam.DoFn):
    def __init__(self, tokenizer_path: str, min_tokens: int) -> None:
        self.tokenizer_path, self.min_tokens = tokenizer_path, min_tokens
        # Pinned on the driver; workers stage the tokenizer (pkg://, URL or path) and check it.
        self.tokenizer_sha256 = load_tokenizer(local_copy(tokenizer_path)).sha256
        self._tok = None

    def setup(self) -> None:
        self._tok = load_tokenizer(local_copy(self.tokenizer_path))
        if self._tok.sha256 != self.tokenizer_sha256:
            raise ValueError(f"tokenizer {self.tokenizer_path!r} on this worker has sha256 "
                             f"{self._tok.sha256}, the job was built with {self.tokenizer_sha256}")

    @timed("tokenize")
    def process(self, batch: list[Document]):
        if self._tok is None:
            self.setup()
        pieces = [split_pieces(d) for d in batch]
        flat = [p for ps in pieces for p in ps]
        encoded = iter(self._tok.encode_batch(flat, append_eod=True))
        for doc, ps in zip(batch, pieces):
            arrays = [next(encoded) for _ in ps]
            tokens = np.concatenate(arrays) if len(arrays) > 1 else arrays[0]
            doc = with_changes(doc, tokens=int(tokens.size))
            if tokens.size < self.min_tokens:
                count("tokenize", doc.source, "removed", "too_few_tokens")
                yield beam.pvalue.TaggedOutput(REMOVED, Removal(
                    doc, "tokenize", "too_few_tokens", {"tokens": int(tokens.size)}))
            else:
                count("tokenize", doc.source, "kept")
                count("tokenize", doc.source, "tokens", n=int(tokens.size))
                yield doc, tokens


class Tokenize(beam.PTransform):
    """docs -> ``{"kept": (doc, tokens), "removed": removals}``."""

    def __init__(self, tokenizer_path: str, min_tokens: int, batch_size: int = 64,
                 label: str | None = None) -> None:
        super().__init__(label)
        self.tokenizer_path, self.min_tokens, self.batch_size = tokenizer_path, min_tokens, batch_size

    def expand(self, docs):
        out = (
            docs
            # a fixed size: an adaptive one fits a regression per batch and starts from 1
            | "Batch" >> beam.BatchElements(min_batch_size=self.batch_size, max_batch_size=self.batch_size)
            | "Encode" >> beam.ParDo(TokenizeBatchFn(self.tokenizer_path, self.min_tokens))
            .with_outputs(REMOVED, main="kept")
        )
        return {"kept": out.kept, "removed": out[REMOVED]}
