"""Reading raw inputs: match globs through Beam's FileSystems, spread files, parse records.

``ReadInputs(spec)`` is one input group of the config: ``MatchAll`` (so ``gs://``, ``s3://``,
``hdfs://`` work) -> ``ReadMatches`` -> ``Reshuffle`` (files spread over workers) ->
``ReadFileFn`` (the ``curation.readers`` function of the spec's reader).  Outputs: documents,
``removed`` (``Removal(stage="read")``, e.g. Pile subsets outside the blend) and
``dead_letter`` (unparseable records, or a file that failed mid-way).
"""
from __future__ import annotations

from typing import Iterator

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes

from curation.document import DeadLetter, Document, Removal
from pipelines.common import DEAD_LETTER, REMOVED, count
from pipelines.config import InputSpec


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
    raise ValueError(f"unknown reader {spec.reader!r}")


class ReadFileFn(beam.DoFn):
    """One ``fileio.ReadableFile`` -> its documents, read-stage removals and dead letters."""

    def __init__(self, spec: InputSpec) -> None:
        self.spec = spec

    def process(self, readable: fileio.ReadableFile) -> Iterator:
        path = readable.metadata.path
        fallback_source = self.spec.source or "pile_other"
        emitted = 0
        try:
            with readable.open(compression_type=CompressionTypes.UNCOMPRESSED) as f:
                for rec in _records(self.spec, f, path):
                    emitted += 1
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
        except Exception as e:  # a file that fails mid-way: the rest of it is one dead letter
            count("read", fallback_source, "dead_letter")
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, DeadLetter(
                source=fallback_source, location=f"{path}:after_record_{emitted}",
                error=f"{type(e).__name__}: {e}"))


class ReadInputs(beam.PTransform):
    """One config input group -> ``{"docs", "removed", "dead_letter"}``."""

    def __init__(self, spec: InputSpec, label: str | None = None) -> None:
        super().__init__(label)
        self.spec = spec

    def expand(self, pbegin):
        out = (
            pbegin
            | "Patterns" >> beam.Create(self.spec.paths)
            | "Match" >> fileio.MatchAll()
            | "Open" >> fileio.ReadMatches()
            | "SpreadFiles" >> beam.Reshuffle()
            | "Parse" >> beam.ParDo(ReadFileFn(self.spec)).with_outputs(
                REMOVED, DEAD_LETTER, main="docs")
        )
        return {"docs": out.docs, "removed": out[REMOVED], "dead_letter": out[DEAD_LETTER]}
