"""The read stage's work items: every input group's files (and WARC ranges) in one collection.

``PlanWork(inputs)``::

    Create((group, glob)) -> match (FileSystems) -> Reshuffle (files spread)
      -> plan: a WARC file -> its ``WarcRange``s (one cheap scan), any other file -> itself
      -> Reshuffle (work items spread)

``ReadWorkFn`` reads one work item with the reader DoFns of ``pipelines.transforms.read`` (``ReadFileFn``,
``ReadWarcRangeFn``) and also reports how many records it read per source (tag ``read``), the
count the accounting checks the outcomes against.  Only file names and ranges are shuffled,
never documents: the documents of a work item are processed where they were read.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterator

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.pvalue import TaggedOutput

from curation.document import DeadLetter, Document, Removal
from curation.readers.files import common_root, file_problem, id_path
from pipelines.transforms import progress
from pipelines.transforms.outputs import DEAD_LETTER, REMOVED
from pipelines.transforms.timing import timed
from pipelines.config.job import InputSpec
from pipelines.storage.staging import sha256_of  # wiring (issue 52)
from pipelines.transforms.read import (WARC_RECORDS_PER_RANGE, PlanWarcRangesFn, ReadFileFn, ReadWarcRangeFn,
                            _dead, _fail, _path_element, _records, _route)

READ = "read"
"""Tag of ``(source, records)`` per work item."""
SLICE_BYTES = 2 << 20
"""A non-WARC file over this size is read as several slices (see ``FileSlice``): about 2,000
documents each, so a stage has enough similar-sized work items to keep every worker busy (the
local runner splits a stage's items between its workers once, by count)."""
MAX_SLICES = 32
PROGRESS_RECORDS = 64
"""Records between two progress counts of a work item (its bytes count when it is finished)."""


@dataclass(frozen=True)
class FileSlice:
    """Records ``k, k + n, k + 2n, ...`` of one file.  A Pile ``.jsonl.zst`` is one zstd frame
    that cannot be entered in the middle, so a slice decompresses and splits the whole file but
    normalizes, identifies and filters only its share: the per-document work, which dominates,
    spreads over the workers (a 14 GB Pile file is otherwise one worker's job).  The JSON Lines
    readers parse only the slice's own records."""

    metadata: object
    k: int = 0
    n: int = 1


def slices_for(size: int) -> int:
    return max(1, min(MAX_SLICES, -(-size // SLICE_BYTES)))


class MatchFn(beam.DoFn):
    """``(group, glob)`` -> ``(group, FileMetadata)`` for every file it matches
    (``pipelines.config.inputs.match_files``: names with a backslash too, and the local entries
    Beam's match drops because it cannot stat them, size 0, each read as one dead letter)."""

    def process(self, element):
        from pipelines.config.inputs import match_files

        group, pattern = element
        for m in match_files(pattern):
            yield group, m


class PlanFn(beam.DoFn):
    """``(group, FileMetadata)`` -> ``(group, work item, input bytes it covers)``: WARC ranges,
    or slices of the file (the bytes feed the read stage's progress)."""

    def __init__(self, inputs: list[InputSpec], records_per_range: int) -> None:
        self.inputs, self.records_per_range = inputs, records_per_range

    def process(self, element):
        group, metadata = element
        size = metadata.size_in_bytes or 0
        if self.inputs[group].reader == "warc":
            ranges = list(PlanWarcRangesFn(self.records_per_range).process(_path_element(metadata.path)))
            ends = [r.offset for r in ranges[1:]] + [max(size, ranges[-1].offset)]
            for r, end in zip(ranges, ends):
                yield group, r, end - r.offset
        else:
            n = slices_for(size)
            for k in range(n):
                yield group, FileSlice(metadata, k, n), size // n + (k < size % n)


class PlanWork(beam.PTransform):
    """``p | PlanWork(inputs)`` -> ``(group index, FileSlice | WarcRange, bytes)``, spread."""

    def __init__(self, inputs: list[InputSpec], records_per_range: int = WARC_RECORDS_PER_RANGE,
                 label: str | None = None) -> None:
        super().__init__(label)
        self.inputs, self.records_per_range = list(inputs), records_per_range

    def expand(self, pbegin):
        patterns = [(i, p) for i, spec in enumerate(self.inputs) for p in spec.paths]
        return (pbegin
                | "Patterns" >> beam.Create(patterns, reshuffle=False)  # SpreadFiles spreads them
                | "Match" >> beam.ParDo(MatchFn())
                | "SpreadFiles" >> beam.Reshuffle()
                | "Plan" >> beam.ParDo(PlanFn(self.inputs, self.records_per_range))
                | "SpreadWork" >> beam.Reshuffle())


def _source_of(rec) -> str:
    if isinstance(rec, TaggedOutput):
        rec = rec.value
    if isinstance(rec, Document):
        return rec.source
    if isinstance(rec, Removal):
        return rec.doc.source
    if isinstance(rec, DeadLetter):
        return rec.source
    raise TypeError(f"reader yielded {type(rec).__name__}")


class ReadWorkFn(beam.DoFn):
    """``(group, item, bytes)`` -> documents; ``removed`` and ``dead_letter`` records; and
    ``read``: ``(source, records)`` for the item (every record the reader produced).
    ``progress``: the stage folder its progress goes to (``pipelines.transforms.progress``)."""

    def __init__(self, inputs: list[InputSpec], input_root: str | None = None,
                 progress: str | None = None, language=None, language_skip=()) -> None:
        self.inputs, self.progress = list(inputs), progress
        # wiring (issue 52): the early language decision for WARC inputs; its model pinned here, as LanguageFn's
        self.language, self.language_skip = language, frozenset(language_skip)
        self.model_sha256 = (sha256_of(language.model_path)
                             if language is not None and language.early_score > 0 and language.model_path else None)
        # Document ids hold paths relative to this root (contract 1); without one, each group's
        # deepest common folder (as ``pipelines.transforms.read.ReadInputs``).
        self.roots = [input_root if input_root is not None else common_root(spec.paths)
                      for spec in self.inputs]
        self._fns: dict[int, beam.DoFn] = {}

    def _fn(self, group: int) -> beam.DoFn:
        fn = self._fns.get(group)
        if fn is None:
            spec, root = self.inputs[group], self.roots[group]
            early = None if spec.source in self.language_skip else self.language  # wiring (issue 52)
            fn = (ReadWarcRangeFn(spec, root, early, self.model_sha256) if spec.reader == "warc"
                  else ReadFileFn(spec, root))
            fn.setup()
            self._fns[group] = fn
        return fn

    def process(self, element) -> Iterator:
        group, item, nbytes = element
        read: Counter = Counter()
        if isinstance(item, FileSlice) and item.n > 1:
            records = self._slice(self.inputs[group], self.roots[group], item)
        else:
            arg = _path_element(item.metadata.path) if isinstance(item, FileSlice) else item
            records = self._fn(group).process(arg) or ()
        n = 0
        for rec in records:
            read[_source_of(rec)] += 1
            yield rec
            n += 1
            if n % PROGRESS_RECORDS == 0:
                progress.report(self.progress, "read", docs=PROGRESS_RECORDS)
        for source, k in sorted(read.items()):
            yield TaggedOutput(READ, (source, k))
        progress.report(self.progress, "read", docs=n % PROGRESS_RECORDS, bytes=nbytes)


    @timed("read")
    def _slice(self, spec: InputSpec, root: str, item: FileSlice) -> Iterator:
        """``ReadFileFn.process`` for one slice: every record is parsed, only the slice's share
        is routed (and counted); a failure mid-file is reported by the slice owning its position."""
        path = item.metadata.path
        source = spec.source or "pile_other"
        problem = file_problem(path)  # before opening: a FIFO would block here forever
        if problem is not None:
            if item.k == 0:
                yield _dead(source, f"{path}:0", problem)
            return
        name = id_path(path, root)
        i = 0
        try:
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
                # the JSON Lines readers parse only this slice's records (None for the others)
                for rec in _records(spec, f, path, name, lambda j: j % item.n == item.k):
                    if rec is not None and i % item.n == item.k:
                        yield from _route(rec, path, name)
                    i += 1
        except (Exception, RecursionError) as e:  # noqa: BLE001 - a file failing mid-way is a dead letter
            if i % item.n == item.k:
                yield _fail(spec.source or "pile_other", f"{path}:after_record_{i}", e)


OUTPUT_TAGS = (REMOVED, DEAD_LETTER, READ)
