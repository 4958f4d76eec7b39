"""Shared pieces of the curate job's stages: output tags, counters, and the filter DoFn base.

Every stage's DoFn emits kept documents on its main output and ``Removal`` records on the
tagged ``removed`` output (readers also emit ``DeadLetter`` records on ``dead_letter``), and
counts each outcome per stage, source and reason with ``Metrics.counter``.
"""
from __future__ import annotations

import dataclasses
from typing import Iterator

import apache_beam as beam
import xxhash
from apache_beam.metrics import Metrics

from curation.document import Document, FilterResult, Removal

REMOVED = "removed"
DEAD_LETTER = "dead_letter"
NAMESPACE = "curate"


def count(stage: str, source: str, outcome: str, reason: str | None = None, n: int = 1) -> None:
    """Increment the counter ``<stage>/<source>/<outcome>[/<reason>]`` in namespace ``curate``."""
    name = f"{stage}/{source}/{outcome}" + (f"/{reason}" if reason else "")
    Metrics.counter(NAMESPACE, name).inc(n)


def stable_hash(text: str) -> int:
    """A 64-bit hash that is the same in every process and run (Python's ``hash`` is not)."""
    return xxhash.xxh3_64_intdigest(text.encode("utf-8"))


def with_changes(doc: Document, **changes) -> Document:
    """A copy of ``doc`` with fields replaced: Beam forbids mutating an input element."""
    return dataclasses.replace(doc, **changes)


class FilterDoFn(beam.DoFn):
    """Base of the per-document stages: subclasses implement ``check(doc) -> (doc, result)``.

    Kept documents go to the main output; drops go to ``removed`` as a ``Removal`` of this
    stage with the filter's reason, and every outcome is counted.
    """

    stage: str = ""
    skip_sources: frozenset[str] = frozenset()
    """Sources this stage passes through unchecked (``skip_sources`` in the config)."""

    def check(self, doc: Document) -> tuple[Document, FilterResult]:
        raise NotImplementedError

    def process(self, doc: Document) -> Iterator:
        if doc.source in self.skip_sources:
            count(self.stage, doc.source, "skipped")
            yield doc
            return
        doc, result = self.check(doc)
        if result.keep:
            count(self.stage, doc.source, "kept")
            yield doc
        else:
            count(self.stage, doc.source, "removed", result.reason)
            yield beam.pvalue.TaggedOutput(REMOVED, Removal(doc, self.stage, result.reason or "unknown"))


class ApplyFilter(beam.PTransform):
    """``docs | ApplyFilter(fn)`` -> ``{"kept": docs, "removed": removals}``."""

    def __init__(self, fn: FilterDoFn, skip_sources=(), label: str | None = None) -> None:
        super().__init__(label)
        fn.skip_sources = frozenset(skip_sources)
        self._fn = fn

    def expand(self, docs):
        out = docs | "Apply" >> beam.ParDo(self._fn).with_outputs(REMOVED, main="kept")
        return {"kept": out.kept, "removed": out[REMOVED]}
