"""The heuristics step: Gopher/C4 rules of ``curation.heuristics`` with the config's overrides."""
from __future__ import annotations

from typing import Any

from curation.document import Document, FilterResult
from pipelines.filters.base import FilterDoFn
from pipelines.plumbing.outputs import with_changes


class HeuristicsFn(FilterDoFn):
    """Every rule's score is stored on the document (``heuristic_scores``, kept or removed), the
    config's thresholds decide, and the first failing rule is the removal reason."""

    stage = "heuristics"

    def __init__(self, overrides: dict[str, Any], skip_sources=()) -> None:
        super().__init__(skip_sources)
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
