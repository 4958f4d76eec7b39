"""Reading the read stage's work items (``plan``): one item -> its records, where it landed.

``ReadWorkFn`` reads a ``FileSlice`` or a ``WarcRange`` with the reader of its input group
(``curation.readers``: Pile, WARC, RealNews, CC-Stories; readers decompress by the file name
themselves) and sends each record to its output: documents on the main output, read-stage
removals (``Removal(stage="read")``, e.g. Pile subsets outside the blend) on ``removed``,
unparseable records (or the rest of a file that failed mid-way) on ``dead_letter``, and
``(source, records)`` per item on ``read``, the count the accounting checks the outcomes
against.  The documents of an item are processed where they were read (the next steps are
chained into the same DoFn: ``pipelines.filters.chain``).

Nothing a file holds can stop the job: a path that is not a regular file (FIFO, socket, device,
directory, broken or looping symlink) is one dead letter and is never opened (a FIFO would block
forever); a reader that raises, or a record that could not be encoded downstream
(``curation.document.record_problem``: meta nested hundreds deep, lone surrogates), is a dead
letter with its location.  Document ids use the path relative to the input root (contract 1).
"""
from __future__ import annotations

from collections import Counter
from typing import Iterator

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.pvalue import TaggedOutput

from curation.document import DeadLetter, Document, Removal, record_problem
from curation.readers.files import file_problem, id_path
from curation.language import LanguageConfig, make_identifier
from pipelines.config.job import InputSpec
from pipelines.plumbing import progress
from pipelines.plumbing.outputs import DEAD_LETTER, REMOVED, count
from pipelines.plumbing.timing import timed
from pipelines.read.plan import FileSlice
from infra.storage.staging import local_copy, sha256_of

READ = "read"
"""Tag of ``(source, records)`` per work item."""
OUTPUT_TAGS = (REMOVED, DEAD_LETTER, READ)
PROGRESS_RECORDS = 64
"""Records between two progress counts of a work item (its bytes count when it is finished)."""


class ReadWorkFn(beam.DoFn):
    """``(group, item, bytes)`` -> documents; ``removed`` and ``dead_letter`` records; and
    ``read``: ``(source, records)`` for the item (every record the reader produced).
    ``input_root``: the root document ids are relative to (the config's ``input_root``; without
    one, each group's deepest common folder; a listing's ``base``).  ``progress``: the stage folder its progress goes
    to (``pipelines.plumbing.progress``)."""

    def __init__(self, inputs: list[InputSpec], input_root: str | None = None,
                 progress: str | None = None, language: LanguageConfig | None = None,
                 language_skip=()) -> None:
        from pipelines.config.inputs import id_root

        self.inputs, self.progress = list(inputs), progress
        self.roots = [id_root(spec, input_root) for spec in self.inputs]
        # The early language decision of WARC pages (``curation.readers.read_warc``): the
        # language step's settings, its model pinned by sha256 as ``LanguageFn`` pins it.
        early = language is not None and language.early_score > 0
        self.language = language if early else None
        self.language_skip = frozenset(language_skip)
        self.model_sha256 = sha256_of(language.model_path) if early and language.model_path else None
        self._identifier = None

    def setup(self) -> None:
        from pipelines.config.inputs import apply_http_settings

        apply_http_settings(self.inputs)  # the http(s) settings apply in each worker process
        if self.language is not None and self._identifier is None:
            path = local_copy(self.language.model_path, self.model_sha256) if self.language.model_path else None
            self._identifier = make_identifier(self.language, path)

    def _early(self, spec: InputSpec) -> dict:
        """``read_warc``'s early-decision arguments for ``spec``'s pages (none: no decision)."""
        if self.language is None or spec.source in self.language_skip:
            return {}
        if self._identifier is None:
            self.setup()
        return {"language": self.language, "identifier": self._identifier}

    def process(self, element) -> Iterator:
        group, item, nbytes = element
        spec, root = self.inputs[group], self.roots[group]
        if isinstance(item, FileSlice):
            records = read_file(spec, root, item)
        else:
            records = read_warc_range(spec, root, item, **self._early(spec))
        read: Counter = Counter()
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


@timed("read")
def read_file(spec: InputSpec, root: str, item: FileSlice) -> Iterator:
    """One file, or slice ``k`` of ``n`` of it: every record is parsed, only the slice's share
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
            owned = (lambda j: j % item.n == item.k) if item.n > 1 else None
            for rec in _records(spec, f, path, name, owned):
                if rec is not None and i % item.n == item.k:
                    yield from _route(rec, path, name)
                i += 1
    except (Exception, RecursionError) as e:  # noqa: BLE001 - a file failing mid-way is a dead letter
        if i % item.n == item.k:
            yield _fail(source, f"{path}:after_record_{i}", e)


@timed("read")
def read_warc_range(spec: InputSpec, root: str, r, language=None, identifier=None) -> Iterator:
    """One ``WarcRange`` -> its documents, read-stage removals and dead letters (and with
    ``language``, the early language decision's removals)."""
    from curation.readers import read_warc

    problem = file_problem(r.path)
    if problem is not None:
        yield _dead(spec.source, f"{r.path}#0", problem)
        return
    name = id_path(r.path, root)
    emitted = 0
    try:
        with FileSystems.open(r.path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            f.seek(r.offset)
            _end_at(f, r.end)
            for rec in read_warc(f, r.path, spec.source, spec.extractor,
                                 first_record=r.first_record, max_records=r.count, id_path=name,
                                 language=language, identifier=identifier):
                emitted += 1
                yield from _route(rec, r.path, name)
    except (Exception, RecursionError) as e:  # noqa: BLE001
        yield _fail(spec.source, f"{r.path}#{r.first_record}:after_record_{emitted}", e)


def _end_at(f, end: int | None) -> None:
    """Tell a remote file's stream where the range ends, so it fetches no byte past it that
    another worker's range fetches again (local and object-store files need not know)."""
    raw = getattr(f, "raw", f)
    if end is not None and hasattr(raw, "end_at"):
        raw.end_at(end)


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
        count(rec.stage, rec.doc.source, "removed", rec.reason)  # the early decision's: language
        yield beam.pvalue.TaggedOutput(REMOVED, rec)
    elif isinstance(rec, DeadLetter):
        count("read", rec.source, "dead_letter")
        yield beam.pvalue.TaggedOutput(DEAD_LETTER, rec)
    else:
        raise TypeError(f"reader yielded {type(rec).__name__}")


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
