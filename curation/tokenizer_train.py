"""A byte-level BPE tokenizer of your own, trained on curated text.

MT-NLG used GPT-2's vocabulary (bundled, the default everywhere). Users who want their own
train one here on curated documents and pass its ``tokenizer.json`` to ``mtnlg curate``; its
sha256 and vocabulary size then travel through run.json into the manifest like GPT-2's.

Examples::

    # curated documents of a run (the Parquet ``text`` column)
    mtnlg tokenizer train 'RUN/documents/*/*.parquet' --vocab-size 32000 \\
        --output my_tokenizer/tokenizer.json
    # plain text files (one document per file)
    mtnlg tokenizer train corpus/*.txt --vocab-size 8000 --output tok.json

The result has GPT-2's layout: byte-level pre-tokenizer without a prefix space (every byte is
in the initial alphabet, so any text encodes with no unknown token), byte-level decoder, and
``<|endoftext|>`` as the first special token (id 0) that ends every document in the shards.
Training is deterministic: the same text and settings give the same bytes, hence the same
sha256.
"""
from __future__ import annotations

import glob
import os
from typing import Iterator, Sequence

from curation.tokenizer import EOD_TOKEN

PARQUET_BATCH_ROWS = 4096


def expand_inputs(patterns: Sequence[str]) -> list[str]:
    """Files named by ``patterns`` (globs allowed; folders mean every file inside), sorted so the
    training order, and so the result, never depends on the file system's listing order."""
    files: list[str] = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern, recursive=True)) or [pattern]
        for m in matches:
            if os.path.isdir(m):
                files += sorted(os.path.join(root, f) for root, _, names in os.walk(m)
                                for f in names if not f.startswith("."))
            elif os.path.isfile(m):
                files.append(m)
            else:
                raise FileNotFoundError(f"tokenizer training input {m!r} does not exist")
    if not files:
        raise FileNotFoundError("no tokenizer training input files")
    return sorted(dict.fromkeys(files))


def iter_texts(files: Sequence[str], text_column: str = "text") -> Iterator[str]:
    """Documents from Parquet files (the ``text_column``) and text files (one per file)."""
    for path in files:
        if path.endswith(".parquet"):
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(path)
            if text_column not in pf.schema_arrow.names:
                raise ValueError(f"{path!r} has no column {text_column!r} "
                                 f"(columns: {pf.schema_arrow.names}); set --text-column")
            for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=[text_column]):
                yield from (t for t in batch.column(0).to_pylist() if t)
        else:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            if text:
                yield text


def train_bpe(texts: Iterator[str], vocab_size: int, min_frequency: int = 2) -> object:
    """A GPT-2-style byte-level BPE ``tokenizers.Tokenizer`` trained on ``texts``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    if vocab_size < 257:
        raise ValueError(f"--vocab-size must be at least 257 (256 bytes + {EOD_TOKEN}), "
                         f"got {vocab_size}")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                  special_tokens=[EOD_TOKEN], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    return tok
