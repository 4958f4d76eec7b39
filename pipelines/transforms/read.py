"""Reading raw inputs: match globs through Beam's FileSystems, spread the work, parse records.

``ReadInputs(spec, input_root=...)`` is one input group of the config::

    Create(globs) -> match (+ what Beam's match skips: broken symlinks, names with a backslash)
      -> Reshuffle (files spread over workers)
      pile / realnews / cc_stories:  -> ReadFileFn
      warc:  -> PlanWarcRangesFn (one cheap scan: N-entry ranges at record boundaries)
             -> Reshuffle (ranges spread over workers) -> ReadWarcRangeFn (parse + extract)
    -> Reshuffle (documents spread for the per-document stages)

Matching goes through Beam's FileSystems, so ``gs://``, ``s3://``, ``hdfs://`` work.  WARC
files are split because HTML extraction dominates the cost and one Common Crawl file holds
~40k pages; a Pile ``.jsonl.zst`` is one zstd frame (not seekable without an index), so it is
read by one worker and its records are spread afterwards.
Outputs: documents, ``removed`` (``Removal(stage="read")``, e.g. Pile subsets outside the
blend) and ``dead_letter`` (unparseable records, or the rest of a file that failed mid-way).

Nothing a file holds can stop the job: a path that is not a regular file (FIFO, socket,
device, directory, broken or looping symlink) is one dead letter and is never opened (a FIFO
would block forever); a reader that raises, or a record that could not be encoded downstream
(``curation.document.record_problem``: meta nested hundreds deep, lone surrogates), is a dead
letter with its location.  Document ids use the path relative to ``input_root`` (contract 1).
Duplicate files are refused earlier, when the config is loaded (``pipelines.config.inputs``).
"""
from __future__ import annotations

from typing import Iterator

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from curation.document import DeadLetter, Document, Removal, record_problem
from curation.readers.files import common_root, file_problem, id_path
from pipelines.transforms.outputs import DEAD_LETTER, REMOVED, count
from pipelines.transforms.timing import timed
from pipelines.config.job import InputSpec

WARC_RECORDS_PER_RANGE = 200
"""Records per WARC range (100 request/response pairs): small enough that a 1 GB Common Crawl
file (~80k records) becomes ~400 work items, large enough that planning and seeking are noise."""


def _records(spec: InputSpec, fileobj, file_name: str, name: str, owned=None) -> Iterator:
    """The reader call for one file (readers decompress by the file name themselves).
    ``owned``: for the JSON Lines readers, the record numbers to parse (the rest: None)."""
    from curation import readers
    from curation.sources import PILE_SUBSET_TO_SOURCE

    if spec.reader == "pile":
        return readers.read_pile(fileobj, file_name, PILE_SUBSET_TO_SOURCE, id_path=name, owned=owned)
    if spec.reader == "warc":
        return readers.read_warc(fileobj, file_name, spec.source, spec.extractor, id_path=name)
    if spec.reader == "realnews":
        return readers.read_realnews(fileobj, file_name, spec.source, id_path=name, owned=owned)
    if spec.reader == "cc_stories":
        return readers.read_cc_stories(fileobj, file_name, spec.source, id_path=name)
    raise ValueError(f"unknown reader {spec.reader!r} (setting 'reader')")


def _route(rec, path: str, name: str) -> Iterator:
    """Count one reader record and send it to its output; a record that could not be encoded
    downstream becomes a dead letter at its location (``path`` + its record suffix)."""
    problem = record_problem(rec)
    if problem is not None and isinstance(rec, DeadLetter):  # keep its error, escape the text
        rec = DeadLetter(*(_printable(getattr(rec, f)) for f in ("source", "location", "error", "raw")))
    elif problem is not None:
        doc = rec.doc if isinstance(rec, Removal) else rec
        source = getattr(doc, "source", None) or "pile_other"
        prefix = f"{source}/{name}"
        doc_id = getattr(doc, "id", "")
        suffix = doc_id[len(prefix):] if isinstance(doc_id, str) and doc_id.startswith(prefix) else ""
        location = getattr(rec, "location", None) or f"{path}{suffix}"
        rec = DeadLetter(_printable(source), _printable(location), f"unencodable_record: {problem}")
    if isinstance(rec, Document):
        count("read", rec.source, "read")
        yield rec
    elif isinstance(rec, Removal):
        count("read", rec.doc.source, "read")
        count(rec.stage, rec.doc.source, "removed", rec.reason)  # wiring (issue 52): early language removals are the language stage's
        yield beam.pvalue.TaggedOutput(REMOVED, rec)
    elif isinstance(rec, DeadLetter):
        count("read", rec.source, "dead_letter")
        yield beam.pvalue.TaggedOutput(DEAD_LETTER, rec)
    else:
        raise TypeError(f"reader yielded {type(rec).__name__}")


def _matched_paths(pattern: str) -> list[bytes]:
    """What ``pattern`` matches (``pipelines.config.inputs.match_files``: also what Beam's own
    match skips, broken symlinks and names holding a backslash)."""
    from pipelines.config.inputs import match_files

    return [_path_element(m.path) for m in match_files(pattern)]


def _path_element(path: str) -> bytes:
    """Paths travel between steps as bytes: a local file name may hold bytes that are not
    UTF-8 (Python keeps them as surrogate escapes), which Beam's str coder cannot encode."""
    return path.encode("utf-8", "surrogateescape")


def _element_path(element: bytes | str) -> str:
    return element.decode("utf-8", "surrogateescape") if isinstance(element, bytes) else element


def _printable(text: str) -> str:
    """``text`` encodable as UTF-8: undecodable file-name bytes (surrogate escapes) spelled out."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _dead(source: str, location: str, error: str):
    count("read", source, "dead_letter")
    return beam.pvalue.TaggedOutput(DEAD_LETTER, DeadLetter(
        source=source, location=_printable(location), error=_printable(error)))


def _fail(source: str, location: str, e: BaseException):
    """A reader that raised (it should not): the rest of its input is one dead letter."""
    return _dead(source, location, f"reader_failed: {type(e).__name__}: {e}")


class ReadFileFn(beam.DoFn):
    """One input path -> its documents, read-stage removals and dead letters."""

    def __init__(self, spec: InputSpec, input_root: str) -> None:
        self.spec = spec
        self.input_root = input_root

    @timed("read")
    def process(self, element: bytes) -> Iterator:
        path = _element_path(element)
        source = self.spec.source or "pile_other"
        problem = file_problem(path)  # before opening: a FIFO would block here forever
        if problem is not None:
            yield _dead(source, f"{path}:0", problem)
            return
        name = id_path(path, self.input_root)
        emitted = 0
        try:
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
                for rec in _records(self.spec, f, path, name):
                    emitted += 1
                    yield from _route(rec, path, name)
        except (Exception, RecursionError) as e:  # noqa: BLE001 - a file failing mid-way is a dead letter
            yield _fail(source, f"{path}:after_record_{emitted}", e)


class PlanWarcRangesFn(beam.DoFn):
    """File path -> the file's ``WarcRange``s (see ``curation.readers.plan_warc_ranges``)."""

    def __init__(self, records_per_range: int = WARC_RECORDS_PER_RANGE) -> None:
        self.records_per_range = records_per_range

    def process(self, element: bytes) -> Iterator:
        from curation.readers import WarcRange, plan_warc_ranges

        path = _element_path(element)
        ranges = [WarcRange(path, 0, 0, None)]  # unopenable: one whole-file range reports it
        if file_problem(path) is None:
            try:
                with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
                    ranges = plan_warc_ranges(f, path, self.records_per_range)
            except Exception:  # noqa: BLE001
                pass
        count("read", "warc", "ranges", n=len(ranges))
        yield from ranges


class ReadWarcRangeFn(beam.DoFn):
    """One ``WarcRange`` -> its documents, read-stage removals and dead letters."""

    def __init__(self, spec: InputSpec, input_root: str, language=None, model_sha256=None) -> None:
        self.spec = spec
        self.input_root = input_root
        # wiring (issue 52): the early language decision of ``read_warc``, its model staged as LanguageFn's
        self.language, self.model_sha256, self._identifier = language, model_sha256, None

    def setup(self) -> None:  # wiring (issue 52)
        if self.language is not None and self.language.early_score > 0 and self._identifier is None:
            from curation.language import make_identifier
            from pipelines.storage.staging import local_copy

            path = local_copy(self.language.model_path, self.model_sha256) if self.language.model_path else None
            self._identifier = make_identifier(self.language, path)

    @timed("read")
    def process(self, r) -> Iterator:
        from curation.readers import read_warc

        problem = file_problem(r.path)
        if problem is not None:
            yield _dead(self.spec.source, f"{r.path}#0", problem)
            return
        name = id_path(r.path, self.input_root)
        emitted = 0
        try:
            with FileSystems.open(r.path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
                f.seek(r.offset)
                for rec in read_warc(f, r.path, self.spec.source, self.spec.extractor,
                                     first_record=r.first_record, max_records=r.count, id_path=name,
                                     language=self.language, identifier=self._identifier):  # wiring (issue 52)
                    emitted += 1
                    yield from _route(rec, r.path, name)
        except (Exception, RecursionError) as e:  # noqa: BLE001
            yield _fail(self.spec.source, f"{r.path}#{r.first_record}:after_record_{emitted}", e)


class ReadInputs(beam.PTransform):
    """One config input group -> ``{"docs", "removed", "dead_letter"}``.

    ``input_root``: the root the document ids are relative to (the config's ``input_root``);
    default: the deepest folder holding all of ``spec.paths``."""

    def __init__(self, spec: InputSpec, label: str | None = None,
                 warc_records_per_range: int = WARC_RECORDS_PER_RANGE,
                 input_root: str | None = None) -> None:
        super().__init__(label)
        self.spec = spec
        self.warc_records_per_range = warc_records_per_range
        self.input_root = input_root if input_root is not None else common_root(spec.paths)

    def expand(self, pbegin):
        files = (pbegin
                 | "Patterns" >> beam.Create(self.spec.paths, reshuffle=False)  # SpreadFiles spreads them
                 | "Match" >> beam.FlatMap(_matched_paths)
                 | "SpreadFiles" >> beam.Reshuffle())
        if self.spec.reader == "warc":
            parsed = (files
                      | "PlanRanges" >> beam.ParDo(PlanWarcRangesFn(self.warc_records_per_range))
                      | "SpreadRanges" >> beam.Reshuffle()
                      | "ParseRanges" >> beam.ParDo(ReadWarcRangeFn(self.spec, self.input_root))
                      .with_outputs(REMOVED, DEAD_LETTER, main="docs"))
        else:
            parsed = (files
                      | "Parse" >> beam.ParDo(ReadFileFn(self.spec, self.input_root))
                      .with_outputs(REMOVED, DEAD_LETTER, main="docs"))
        docs = parsed.docs | "SpreadDocs" >> beam.Reshuffle()
        return {"docs": docs, "removed": parsed[REMOVED], "dead_letter": parsed[DEAD_LETTER]}
