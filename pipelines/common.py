"""Shared pieces of the curate job's stages: output tags, counters, and the filter DoFn base.

Every stage's DoFn emits kept documents on its main output and ``Removal`` records on the
tagged ``removed`` output (readers also emit ``DeadLetter`` records on ``dead_letter``), and
counts each outcome per stage, source and reason with ``Metrics.counter``.
"""
from __future__ import annotations

import dataclasses
import functools
import time
from typing import Iterator

import apache_beam as beam
import xxhash
from apache_beam.metrics import Metrics

from curation.document import Document, FilterResult, Removal

REMOVED = "removed"
DEAD_LETTER = "dead_letter"
NAMESPACE = "curate"
TIME_NAMESPACE = "curate_time"
"""Counters of worker microseconds spent in each stage's DoFns (``run.json`` stage_seconds)."""


def count(stage: str, source: str, outcome: str, reason: str | None = None, n: int = 1) -> None:
    """Increment the counter ``<stage>/<source>/<outcome>[/<reason>]`` in namespace ``curate``."""
    name = f"{stage}/{source}/{outcome}" + (f"/{reason}" if reason else "")
    Metrics.counter(NAMESPACE, name).inc(n)


def timed(stage: str | None = None):
    """Decorate a DoFn's generator ``process`` to add its own time (not the time downstream
    stages spend on what it yields: fused consumers run inside ``yield``) to the stage's
    ``curate_time`` counter. ``stage=None`` uses ``self.stage``."""

    def decorate(process):
        @functools.wraps(process)
        def wrapper(self, *args, **kwargs):
            spent, t = 0.0, time.perf_counter()
            for item in process(self, *args, **kwargs) or ():
                spent += time.perf_counter() - t
                yield item
                t = time.perf_counter()
            spent += time.perf_counter() - t
            Metrics.counter(TIME_NAMESPACE, stage or self.stage).inc(int(spent * 1e6))

        return wrapper

    return decorate


def stage_seconds(result) -> dict[str, float]:
    """Seconds of worker time per stage from a finished pipeline's ``curate_time`` counters."""
    from apache_beam.metrics.metric import MetricsFilter

    out: dict[str, float] = {}
    try:
        counters = result.metrics().query(MetricsFilter().with_namespace(TIME_NAMESPACE))["counters"]
    except Exception:  # noqa: BLE001 - runners without metrics: timings are a report only
        return out
    for c in counters:
        value = c.committed if c.committed is not None else c.attempted
        name = c.key.metric.name
        out[name] = round(out.get(name, 0.0) + (value or 0) / 1e6, 3)
    return out


def safe_local_data_plane() -> None:
    """Stop Beam's local runner from losing elements between the runner and its workers.

    The FnApiRunner's gRPC data streams (runner -> worker everywhere, and worker -> runner for
    in-process gRPC workers) flush from a timer thread every ``DATA_BUFFER_TIME_LIMIT_MS``
    (1 s).  That flush (``data_plane.SizeBasedBufferingClosableOutputStream.flush``) sends
    ``get()`` and then ``_clear()``s the buffer, while the sending thread keeps writing to it: when
    the send blocks (the 100 MB send queue is full, i.e. big stage inputs), whatever is written
    meanwhile is wiped unsent, and a flush in the middle of an element splits it.  Whole chunks of
    a stage's input vanished without an error (537 to 27,000 documents of 100,000 on the sample;
    issue 13), or decoding failed.

    Here the timer is turned off (streams flush only in the writing thread, at element
    boundaries: the SDK harness's own default), and the runner sends a stage's input to a worker
    in ~10 MB messages as it writes them (``maybe_flush`` after each chunk) instead of as one
    message at the end, which would copy the whole input once more and cannot exceed 2 GB.
    Idempotent; other runners are not affected.
    """
    from apache_beam.runners.portability.fn_api_runner import fn_runner, worker_handlers

    worker_handlers.DATA_BUFFER_TIME_LIMIT_MS = 0
    manager = fn_runner.BundleManager
    if getattr(manager._send_input_to_worker, "_mtnlg_streaming", False):
        return

    def _send_input_to_worker(self, process_bundle_id, read_transform_id, byte_streams):
        data_out = self._worker_handler.data_conn.output_stream(process_bundle_id, read_transform_id)
        for byte_stream in byte_streams or []:
            data_out.write(byte_stream)
            data_out.maybe_flush()  # whole chunks only: a chunk holds whole elements
        data_out.close()

    _send_input_to_worker._mtnlg_streaming = True
    manager._send_input_to_worker = _send_input_to_worker


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

    def applies_to(self, doc: Document) -> bool:
        """Whether this stage judges ``doc`` at all; others pass through, counted as skipped."""
        return doc.source not in self.skip_sources

    def removal_detail(self, doc: Document) -> dict:
        """Extra context stored with a removal (e.g. the score and the rule that decided)."""
        return {}

    @timed()
    def process(self, doc: Document) -> Iterator:
        if not self.applies_to(doc):
            count(self.stage, doc.source, "skipped")
            yield doc
            return
        doc, result = self.check(doc)
        if result.keep:
            count(self.stage, doc.source, "kept")
            yield doc
        else:
            count(self.stage, doc.source, "removed", result.reason)
            yield beam.pvalue.TaggedOutput(REMOVED, Removal(
                doc, self.stage, result.reason or "unknown", self.removal_detail(doc)))


class ApplyFilter(beam.PTransform):
    """``docs | ApplyFilter(fn)`` -> ``{"kept": docs, "removed": removals}``."""

    def __init__(self, fn: FilterDoFn, skip_sources=(), label: str | None = None) -> None:
        super().__init__(label)
        fn.skip_sources = frozenset(skip_sources)
        self._fn = fn

    def expand(self, docs):
        out = docs | "Apply" >> beam.ParDo(self._fn).with_outputs(REMOVED, main="kept")
        return {"kept": out.kept, "removed": out[REMOVED]}
