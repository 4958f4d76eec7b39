"""The language step: fastText lid.176 (``curation.language``), kept by the config's languages."""
from __future__ import annotations

from curation.document import Document, FilterResult
from curation.language import LanguageConfig, keep_language, make_identifier
from pipelines.filters.base import FilterDoFn
from pipelines.plumbing.outputs import with_changes
from infra.storage.staging import local_copy, sha256_of


class LanguageFn(FilterDoFn):
    """The model is staged and loaded once per worker process (``setup``).  A configured model
    (path or URL) is pinned by its sha256 when the pipeline is built."""

    stage = "language"

    def __init__(self, cfg: LanguageConfig, skip_sources=()) -> None:
        super().__init__(skip_sources)
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
