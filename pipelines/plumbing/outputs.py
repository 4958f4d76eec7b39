"""What every stage's DoFn emits, and the counters of its outcomes.

Every stage's DoFn emits kept documents on its main output and ``Removal`` records on the
tagged ``removed`` output (readers also emit ``DeadLetter`` records on ``dead_letter``), and
counts each outcome per stage, source and reason with ``Metrics.counter``.
"""
from __future__ import annotations

import dataclasses

from apache_beam.metrics import Metrics

from curation.document import Document

REMOVED = "removed"
DEAD_LETTER = "dead_letter"
NAMESPACE = "curate"


_COUNTERS: dict[tuple, object] = {}
"""Counter objects by ``(stage, source, outcome, reason)``: making one (``Metrics.counter``) cost
more than the increment, and the per-document stages count several times per document.  A
counter object finds the running bundle's metrics when it is incremented, so one object serves
every bundle of the process."""


def count(stage: str, source: str, outcome: str, reason: str | None = None, n: int = 1) -> None:
    """Increment the counter ``<stage>/<source>/<outcome>[/<reason>]`` in namespace ``curate``."""
    key = (stage, source, outcome, reason)
    counter = _COUNTERS.get(key)
    if counter is None:
        name = f"{stage}/{source}/{outcome}" + (f"/{reason}" if reason else "")
        counter = _COUNTERS[key] = Metrics.counter(NAMESPACE, name)
    counter.inc(n)


def with_changes(doc: Document, **changes) -> Document:
    """A copy of ``doc`` with fields replaced: Beam forbids mutating an input element."""
    return dataclasses.replace(doc, **changes)
