"""The optional personal-data stage of the curate job (``pii:`` in the config).

Right after normalization, ``PiiFn`` replaces e-mail addresses, IP addresses and phone numbers
by placeholders (``curation.pii``), so every later stage, ``removed/``, the documents and the
shards only ever see the redacted text.  The spans' offsets in the text before redaction (not
the values) stay on the document (``Document.pii_spans``) and reach the per-document stats row;
the matches are counted per source and kind (counters ``pii/<source>/<kind>`` and
``stats/pii.parquet``).  It never removes a document.
"""
from __future__ import annotations

import apache_beam as beam

from curation.document import Document
from curation.pii import PiiConfig, redact_pii
from pipelines.plumbing.outputs import count, with_changes
from pipelines.plumbing.timing import timed


class PiiFn(beam.DoFn):
    """Redact one document; every document passes (with ``pii_spans`` set, maybe empty)."""

    stage = "pii"

    def __init__(self, cfg: PiiConfig) -> None:
        self.cfg = cfg

    @timed()
    def process(self, doc: Document):
        text, spans = redact_pii(doc.text, self.cfg)
        for sp in spans:
            count(self.stage, doc.source, sp.kind)
        count(self.stage, doc.source, "documents_with_pii" if spans else "documents_without_pii")
        yield with_changes(doc, text=text, pii_spans=[sp.to_dict() for sp in spans])
