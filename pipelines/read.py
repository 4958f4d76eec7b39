"""Reading raw inputs: match globs through Beam's FileSystems, spread the work, parse records.

``ReadInputs(spec)`` is one input group of the config::

    Create(globs) -> MatchAll -> Reshuffle (files spread over workers)
      pile / realnews / cc_stories:  -> ReadMatches -> ReadFileFn
      warc:  -> PlanWarcRangesFn (one cheap scan: N-record ranges at gzip member boundaries)
             -> Reshuffle (ranges spread over workers) -> ReadWarcRangeFn (parse + extract)
    -> Reshuffle (documents spread for the per-document stages)

``MatchAll`` goes through Beam's FileSystems, so ``gs://``, ``s3://``, ``hdfs://`` work.  WARC
files are split because HTML extraction dominates the cost and one Common Crawl file holds
~40k pages; a Pile ``.jsonl.zst`` is one zstd frame (not seekable without an index), so it is
read by one worker and its records are spread afterwards.
Outputs: documents, ``removed`` (``Removal(stage="read")``, e.g. Pile subsets outside the
blend) and ``dead_letter`` (unparseable records, or the rest of a file that failed mid-way).
"""
from __future__ import annotations

from typing import Iterator

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from curation.document import DeadLetter, Document, Removal
from pipelines.common import DEAD_LETTER, REMOVED, count, timed
from pipelines.config import InputSpec

WARC_RECORDS_PER_RANGE = 200
"""Records per WARC range (100 request/response pairs): small enough that a 1 GB Common Crawl
file (~80k records) becomes ~400 work items, large enough that planning and seeking are noise."""


def _records(spec: InputSpec, fileobj, file_name: str) -> Iterator:
    """The reader call for one file (readers decompress by the file name themselves)."""
    from curation import readers
    from curation.sources import PILE_SUBSET_TO_SOURCE

    if spec.reader == "pile":
        return readers.read_pile(fileobj, file_name, PILE_SUBSET_TO_SOURCE)
    if spec.reader == "warc":
        return readers.read_warc(fileobj, file_name, spec.source, spec.extractor)
    if spec.reader == "realnews":
        return readers.read_realnews(fileobj, file_name, spec.source)
    if spec.reader == "cc_stories":
        return readers.read_cc_stories(fileobj, file_name, spec.source)
    raise ValueError(f"unknown reader {spec.reader!r} (setting 'reader')")


def _route(rec) -> Iterator:
    """Count one reader record and send it to its output."""
    if isinstance(rec, Document):
        count("read", rec.source, "read")
        yield rec
    elif isinstance(rec, Removal):
        count("read", rec.doc.source, "read")
        count("read", rec.doc.source, "removed", rec.reason)
        yield beam.pvalue.TaggedOutput(REMOVED, rec)
    elif isinstance(rec, DeadLetter):
        count("read", rec.source, "dead_letter")
        yield beam.pvalue.TaggedOutput(DEAD_LETTER, rec)
    else:
        raise TypeError(f"reader yielded {type(rec).__name__}")


def _fail(source: str, location: str, e: BaseException):
    """A reader that raised (it should not): the rest of its input is one dead letter."""
    count("read", source, "dead_letter")
    return beam.pvalue.TaggedOutput(DEAD_LETTER, DeadLetter(
        source=source, location=location, error=f"reader_failed: {type(e).__name__}: {e}"))


class ReadFileFn(beam.DoFn):
    """One ``fileio.ReadableFile`` -> its documents, read-stage removals and dead letters."""

    def __init__(self, spec: InputSpec) -> None:
        self.spec = spec

    @timed("read")
    def process(self, readable: fileio.ReadableFile) -> Iterator:
        path = readable.metadata.path
        emitted = 0
        try:
            with readable.open(compression_type=CompressionTypes.UNCOMPRESSED) as f:
                for rec in _records(self.spec, f, path):
                    emitted += 1
                    yield from _route(rec)
        except Exception as e:  # noqa: BLE001 - a file that fails mid-way is a dead letter
            yield _fail(self.spec.source or "pile_other", f"{path}:after_record_{emitted}", e)


class PlanWarcRangesFn(beam.DoFn):
    """File metadata -> the file's ``WarcRange``s (see ``curation.readers.plan_warc_ranges``)."""

    def __init__(self, records_per_range: int = WARC_RECORDS_PER_RANGE) -> None:
        self.records_per_range = records_per_range

    def process(self, metadata) -> Iterator:
        from curation.readers import WarcRange, plan_warc_ranges

        path = metadata.path
        try:
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
                ranges = plan_warc_ranges(f, path, self.records_per_range)
        except Exception:  # noqa: BLE001 - unopenable: one whole-file range reports the error
            ranges = [WarcRange(path, 0, 0, None)]
        count("read", "warc", "ranges", n=len(ranges))
        yield from ranges


class ReadWarcRangeFn(beam.DoFn):
    """One ``WarcRange`` -> its documents, read-stage removals and dead letters."""

    def __init__(self, spec: InputSpec) -> None:
        self.spec = spec

    @timed("read")
    def process(self, r) -> Iterator:
        from curation.readers import read_warc

        emitted = 0
        try:
            with FileSystems.open(r.path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
                f.seek(r.offset)
                for rec in read_warc(f, r.path, self.spec.source, self.spec.extractor,
                                     first_record=r.first_record, max_records=r.count):
                    emitted += 1
                    yield from _route(rec)
        except Exception as e:  # noqa: BLE001
            yield _fail(self.spec.source, f"{r.path}#{r.first_record}:after_record_{emitted}", e)


class ReadInputs(beam.PTransform):
    """One config input group -> ``{"docs", "removed", "dead_letter"}``."""

    def __init__(self, spec: InputSpec, label: str | None = None,
                 warc_records_per_range: int = WARC_RECORDS_PER_RANGE) -> None:
        super().__init__(label)
        self.spec = spec
        self.warc_records_per_range = warc_records_per_range

    def expand(self, pbegin):
        files = (pbegin
                 | "Patterns" >> beam.Create(self.spec.paths)
                 | "Match" >> fileio.MatchAll()
                 | "SpreadFiles" >> beam.Reshuffle())
        if self.spec.reader == "warc":
            parsed = (files
                      | "PlanRanges" >> beam.ParDo(PlanWarcRangesFn(self.warc_records_per_range))
                      | "SpreadRanges" >> beam.Reshuffle()
                      | "ParseRanges" >> beam.ParDo(ReadWarcRangeFn(self.spec)).with_outputs(
                          REMOVED, DEAD_LETTER, main="docs"))
        else:
            parsed = (files
                      | "Open" >> fileio.ReadMatches()
                      | "Parse" >> beam.ParDo(ReadFileFn(self.spec)).with_outputs(
                          REMOVED, DEAD_LETTER, main="docs"))
        docs = parsed.docs | "SpreadDocs" >> beam.Reshuffle()
        return {"docs": docs, "removed": parsed[REMOVED], "dead_letter": parsed[DEAD_LETTER]}
