"""Per-document stages: normalize, language id, heuristic filters.

Each is a ``FilterDoFn`` (kept -> main output, drops -> ``removed`` with the stage's reason)
wrapped by ``ApplyFilter``; scores are stored on the document, decisions come from config.
"""
from __future__ import annotations

from typing import Any

import apache_beam as beam

from curation.document import Document, FilterResult
from curation.language import LanguageConfig, keep_language, make_identifier
from curation.normalize import normalize_text
from pipelines.filters.base import FilterDoFn
from pipelines.plumbing.outputs import count, with_changes
from pipelines.plumbing.timing import timed
from pipelines.storage.staging import local_copy, sha256_of


class NormalizeFn(beam.DoFn):
    """ftfy + whitespace normalization (never removes a document)."""

    @timed("normalize")
    def process(self, doc: Document):
        count("normalize", doc.source, "normalized")
        yield with_changes(doc, text=normalize_text(doc.text))


class LanguageFn(FilterDoFn):
    """fastText lid.176; the model is staged and loaded once per worker process (``setup``).
    A configured model (path or URL) is pinned by its sha256 when the pipeline is built."""

    stage = "language"

    def __init__(self, cfg: LanguageConfig) -> None:
        self.cfg = cfg
        self.model_sha256 = sha256_of(cfg.model_path) if cfg.model_path else None
        self._identifier = None

    def setup(self) -> None:
        path = local_copy(self.cfg.model_path, self.model_sha256) if self.cfg.model_path else None
        self._identifier = make_identifier(self.cfg, path)

    def check(self, doc: Document) -> tuple[Document, FilterResult]:
        if self._identifier is None:
            self.setup()
        c = self._identifier.identify(doc.text)
        doc = with_changes(doc, lang=c.lang, lang_score=c.score, lang_share=c.share)
        return doc, keep_language(c.lang, c.score, self.cfg)


class HeuristicsFn(FilterDoFn):
    """Gopher/C4 rules of ``curation.heuristics`` with the config's overrides: every rule's
    score is stored on the document (``heuristic_scores``, kept or removed), the config's
    thresholds decide, and the first failing rule is the removal reason."""

    stage = "heuristics"

    def __init__(self, overrides: dict[str, Any]) -> None:
        self.overrides = dict(overrides)
        self._cfg = None

    def setup(self) -> None:
        from curation.heuristics import HeuristicsConfig

        self._cfg = HeuristicsConfig(**self.overrides)

    def check(self, doc: Document) -> tuple[Document, FilterResult]:
        from curation.heuristics import decide, score_document

        if self._cfg is None:
            self.setup()
        scores = score_document(doc.text)
        return with_changes(doc, heuristic_scores=scores), decide(scores, self._cfg)


class Normalize(beam.PTransform):
    def expand(self, docs):
        return docs | "NormalizeText" >> beam.ParDo(NormalizeFn())
