"""The normalize step: ftfy + whitespace normalization (``curation.normalize``); never removes."""
from __future__ import annotations

import apache_beam as beam

from curation.document import Document
from curation.normalize import normalize_text
from pipelines.plumbing.outputs import count, with_changes
from pipelines.plumbing.timing import timed


class NormalizeFn(beam.DoFn):
    """One document with its text normalized."""

    @timed("normalize")
    def process(self, doc: Document):
        count("normalize", doc.source, "normalized")
        yield with_changes(doc, text=normalize_text(doc.text))
