"""The quality stage of the curate job: score documents with the fastText quality classifier,
store the score on the document, keep by the configured rule (``curation.quality``).

Only the sources listed in ``quality.sources`` (the Common Crawl snapshots by default) are
scored; every other document passes through unscored (``quality_score`` stays null) and is
counted as ``quality/<source>/skipped``.  Removed documents go to ``removed/quality/`` with
reason ``low_quality`` and ``detail = {score, rule, threshold | alpha}``.

The model (a local path or any FileSystems URL) is staged and loaded once per worker process
(``DoFn.setup``), checked against the sha256 the driver recorded in ``run.json`` so every worker
scores with the same model.
"""
from __future__ import annotations

from apache_beam.metrics import Metrics

from curation.document import Document, FilterResult
from curation.quality import QualityConfig, QualityScorer, keep_quality
from pipelines.plumbing.outputs import NAMESPACE, with_changes
from pipelines.filters.base import FilterDoFn
from infra.storage.staging import local_copy

STAGE = "quality"


class QualityFn(FilterDoFn):
    """Score -> ``doc.quality_score`` -> keep rule; drops carry the score and the rule."""

    stage = STAGE

    def __init__(self, cfg: QualityConfig, model_sha256: str | None = None, skip_sources=()) -> None:
        super().__init__(skip_sources)
        self.cfg = cfg
        self.sources = frozenset(cfg.sources)
        self.model_sha256 = model_sha256
        self._scorer: QualityScorer | None = None
        self._scores = None

    def setup(self) -> None:
        # Scores as a distribution in thousandths (Beam distributions hold integers).
        self._scores = Metrics.distribution(NAMESPACE, "quality/score_x1000")
        # A model given by URL is staged once per process, verified against the driver's sha256.
        path = local_copy(self.cfg.model_path, self.model_sha256)
        self._scorer = QualityScorer(path, self.cfg.max_chars, self.model_sha256)
        self._scorer.load()  # fail at worker start, not on the first document

    def check(self, doc: Document) -> tuple[Document, FilterResult]:
        if self._scorer is None:
            self.setup()
        score = self._scorer.score(doc.text)
        self._scores.update(int(round(score * 1000)))
        return with_changes(doc, quality_score=score), keep_quality(doc.id, score, self.cfg)

    def applies_to(self, doc: Document) -> bool:
        return doc.source in self.sources and doc.source not in self.skip_sources

    def removal_detail(self, doc: Document) -> dict:
        rule = {"threshold": self.cfg.threshold} if self.cfg.rule == "threshold" else {
            "alpha": self.cfg.alpha, "seed": self.cfg.seed}
        return {"score": round(doc.quality_score, 6), "rule": self.cfg.rule, **rule}
