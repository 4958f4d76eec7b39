"""The read stage's work items: every input group's files (and WARC ranges) in one collection.

``PlanWork(inputs)``::

    Create((group, glob)) -> match (FileSystems) -> Reshuffle (files spread)
      -> plan: a WARC file -> its ``WarcRange``s (one cheap scan), any other file -> slices of it
      -> Reshuffle (work items spread)

Matching goes through Beam's FileSystems (``pipelines.config.inputs.match_files``), so ``gs://``,
``s3://``, ``hdfs://`` work.  WARC files are split because HTML extraction dominates the cost
and one Common Crawl file holds tens of thousands of pages; a Pile ``.jsonl.zst`` is one zstd
frame (not seekable without an index), so its slices each decompress the whole file and parse
only their share (``FileSlice``).  Only file names and ranges are shuffled, never documents:
``readers.ReadWorkFn`` reads each item where it lands.  Duplicate files are refused earlier,
when the config is loaded (``pipelines.config.inputs``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from curation.readers.files import file_problem
from pipelines.config.job import InputSpec
from pipelines.plumbing.outputs import count

WARC_RECORDS_PER_RANGE = 200
"""Records per WARC range (100 request/response pairs): small enough that a Common Crawl file
becomes hundreds of work items, large enough that planning and seeking are noise."""
SLICE_BYTES = 2 << 20
"""A non-WARC file over this size is read as several slices (see ``FileSlice``): about 2,000
documents each, so a stage has enough similar-sized work items to keep every worker busy (the
local runner splits a stage's items between its workers once, by count)."""
MAX_SLICES = 32


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


def path_element(path: str) -> bytes:
    """Paths travel between steps as bytes: a local file name may hold bytes that are not
    UTF-8 (Python keeps them as surrogate escapes), which Beam's str coder cannot encode."""
    return path.encode("utf-8", "surrogateescape")


def element_path(element: bytes | str) -> str:
    return element.decode("utf-8", "surrogateescape") if isinstance(element, bytes) else element


def warc_ranges(path: str, records_per_range: int = WARC_RECORDS_PER_RANGE) -> list:
    """A WARC file's ``WarcRange``s (``curation.readers.plan_warc_ranges``); a file that cannot
    be opened is one whole-file range, whose reader reports it."""
    from curation.readers import WarcRange, plan_warc_ranges

    ranges = [WarcRange(path, 0, 0, None)]
    if file_problem(path) is None:
        try:
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
                ranges = plan_warc_ranges(f, path, records_per_range)
        except Exception:  # noqa: BLE001
            pass
    count("read", "warc", "ranges", n=len(ranges))
    return ranges


class MatchFn(beam.DoFn):
    """``(group, glob)`` -> ``(group, FileMetadata)`` for every file it matches
    (``pipelines.config.inputs.match_files``: names with a backslash too, and the local entries
    Beam's match drops because it cannot stat them, size 0, each read as one dead letter);
    ``(group, listing)`` -> its selected files (``pipelines.config.inputs.input_files``)."""

    def __init__(self, inputs: list[InputSpec]) -> None:
        self.inputs = list(inputs)

    def setup(self) -> None:  # the http(s) settings apply in each worker process
        from pipelines.config.inputs import apply_http_settings
        apply_http_settings(self.inputs)

    def process(self, element):
        from pipelines.config.inputs import input_files

        group, pattern = element
        for m in input_files(self.inputs[group], pattern):
            yield group, m


class PlanFn(beam.DoFn):
    """``(group, FileMetadata)`` -> ``(group, work item, input bytes it covers)``: WARC ranges,
    or slices of the file (the bytes feed the read stage's progress)."""

    def __init__(self, inputs: list[InputSpec], records_per_range: int) -> None:
        self.inputs, self.records_per_range = inputs, records_per_range

    def setup(self) -> None:
        from pipelines.config.inputs import apply_http_settings
        apply_http_settings(self.inputs)

    def process(self, element) -> Iterator:
        from pipelines.config.listings import file_size

        group, metadata = element
        size = file_size(metadata)  # a listed file's size is asked here, on a worker
        if self.inputs[group].reader == "warc":
            ranges = warc_ranges(metadata.path, self.records_per_range)
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
        from pipelines.config.inputs import work_patterns

        patterns = work_patterns(self.inputs)  # globs, and listings as one element each
        return (pbegin
                | "Patterns" >> beam.Create(patterns, reshuffle=False)  # SpreadFiles spreads them
                | "Match" >> beam.ParDo(MatchFn(self.inputs))
                | "SpreadFiles" >> beam.Reshuffle()
                | "Plan" >> beam.ParDo(PlanFn(self.inputs, self.records_per_range))
                | "SpreadWork" >> beam.Reshuffle())
