"""JSON Lines readers: the Pile (``.jsonl.zst``) and RealNews (``.jsonl``, optionally .gz/.zst).

Every non-blank line yields exactly one record: a ``Document``, a ``Removal`` (stage ``read``)
or a ``DeadLetter``; a failure of the stream itself (corrupt or truncated compression) yields
one final ``DeadLetter`` covering the rest of the file.  Blank lines are not documents.
A UTF-8 byte order mark before the first record is skipped (editors on Windows write one); a
file that starts with a UTF-16/UTF-32 mark is one dead letter (JSON Lines is UTF-8: RFC 8259).
Metadata must stay JSON-like and shallow (``curation.document.value_problem``): a record with
``meta`` nested 800 levels deep is a dead letter here, not a crash of the pickler downstream;
so is a line holding an integer longer than Python converts (4,300 digits by default): only
that line, never the rest of the file.
"""
from __future__ import annotations

import json
import re
import sys
from typing import Any, BinaryIO, Callable, Iterator

from curation.document import DeadLetter, Document, Removal, has_lone_surrogate, value_problem
from curation.readers._io import (
    DEFAULT_MAX_DOC_BYTES,
    Line,
    decompressed_chunks,
    id_name,
    printable_excerpt,
    split_lines,
)
from curation.sources import PILE_SUBSET_TO_SOURCE, PILE_UNUSED_SOURCE

Record = Document | Removal | DeadLetter

_UTF8_BOM = b"\xef\xbb\xbf"
_WIDE_BOMS = ((b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe\x00\x00", "UTF-32"),
              (b"\xfe\xff", "UTF-16"), (b"\xff\xfe", "UTF-16"))
_PILE_SET_RE = re.compile(rb'"pile_set_name"\s*:\s*"((?:[^"\\]|\\.)*)"')


def _json_lines(
    fileobj: BinaryIO, file_name: str, max_doc_bytes: int, dead_source: str
) -> Iterator[Line | DeadLetter]:
    """Non-blank lines (a leading UTF-8 BOM removed), then a DeadLetter if the stream itself
    fails; a UTF-16/32 file is one DeadLetter."""
    number = 0
    try:
        for line in split_lines(decompressed_chunks(fileobj, file_name), max_doc_bytes):
            number = line.number + 1
            if line.number == 0:
                head = line.data if line.data is not None else line.tail
                wide = next((enc for bom, enc in _WIDE_BOMS if head.startswith(bom)), None)
                if line.data is not None and wide:
                    yield DeadLetter(dead_source, f"{file_name}:0",
                                     f"unsupported_encoding: the file starts with a {wide} byte order "
                                     "mark; JSON Lines must be UTF-8 (re-encode it, e.g. iconv -t UTF-8)",
                                     printable_excerpt(line.data[:200]))
                    return
                if line.data is not None and line.data.startswith(_UTF8_BOM):
                    line = Line(0, line.data[len(_UTF8_BOM):], line.size - len(_UTF8_BOM))
            if line.data is not None and not line.data.strip():
                continue
            yield line
    except Exception as exc:  # corrupt or truncated compression: the rest of the file is lost
        yield DeadLetter(
            dead_source, f"{file_name}:{number}",
            f"unreadable stream from line {number} to end of file: {type(exc).__name__}: {exc}",
        )


def _owned_lines(items: Iterator[Line | DeadLetter],
                 owned: Callable[[int], bool] | None) -> Iterator[Line | DeadLetter | None]:
    """``items`` with every line whose record number ``owned`` rejects replaced by None (each
    item is one record: a line makes exactly one, so does a dead letter of the stream)."""
    if owned is None:
        yield from items
        return
    for number, item in enumerate(items):
        yield item if isinstance(item, DeadLetter) or owned(number) else None


class _NumberTooLong(ValueError):
    """A JSON integer longer than Python converts (``sys.get_int_max_str_digits()``)."""


def _bounded_int(digits: str) -> int:
    limit = sys.get_int_max_str_digits()
    if limit and len(digits.lstrip("-")) > limit:  # int() would raise mid-parse; name it here
        raise _NumberTooLong(f"an integer of {len(digits.lstrip('-'))} digits (Python converts "
                             f"at most {limit})")
    return int(digits)


def _parse_object(line: Line, source: str | Callable[[], str], file_name: str,
                  source_of: Callable[[dict], str] | None = None) -> dict[str, Any] | DeadLetter:
    """Strict UTF-8 + JSON object, or a DeadLetter saying why not (charged to ``source``, or,
    once the object parsed, to ``source_of(obj)``).  ``source`` may be a function, called only
    for a dead letter (the Pile reader sniffs the line's bytes for it)."""
    location = f"{file_name}:{line.number}"
    assert line.data is not None
    dead = _dead_letter(source)
    try:
        raw = line.data.decode("utf-8")  # strict: silent replacement would hide corrupt input
    except UnicodeDecodeError as exc:
        return dead(location, f"invalid_utf8: {exc}", printable_excerpt(line.data))
    try:
        obj = json.loads(raw, parse_int=_bounded_int)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, _NumberTooLong
        return dead(location, f"invalid_json: {exc}", raw[:2000])
    if not isinstance(obj, dict):
        return dead(location, f"invalid_json: expected an object, got {type(obj).__name__}", raw[:2000])
    text = obj.get("text")
    if not isinstance(text, str):
        return dead(location, "missing_text: no string 'text' field", raw[:2000])
    if has_lone_surrogate(text):  # JSON "\ud800" escapes decode to strings UTF-8 cannot encode
        return dead(location, "invalid_unicode: lone surrogate in text", raw[:2000])
    for key, value in obj.items():
        if key == "text":
            continue
        problem = value_problem(value)
        if problem:
            if source_of:
                return DeadLetter(source_of(obj), location, f"invalid_meta: {key!r}: {problem}", raw[:2000])
            return dead(location, f"invalid_meta: {key!r}: {problem}", raw[:2000])
    return obj


def _dead_letter(source: str | Callable[[], str]):
    def dead(location: str, error: str, raw: str) -> DeadLetter:
        return DeadLetter(source() if callable(source) else source, location, error, raw)
    return dead


def _too_large(doc_id: str, source: str, line: Line, max_doc_bytes: int) -> Removal:
    doc = Document(id=doc_id, source=source, text="", meta={"bytes": line.size})
    return Removal(doc, "read", "too_large", {"bytes": line.size, "max_doc_bytes": max_doc_bytes})


def _sniff_pile_source(data: bytes, subset_to_source: dict[str, str]) -> str:
    """The source slug named by a ``pile_set_name`` in raw bytes, for unparseable lines."""
    for m in reversed(list(_PILE_SET_RE.finditer(data))):
        try:
            name = json.loads(b'"' + m.group(1) + b'"')
        except ValueError:
            continue
        return subset_to_source.get(name, PILE_UNUSED_SOURCE)
    return PILE_UNUSED_SOURCE


def _sniffer(data: bytes, mapping: dict[str, str]) -> Callable[[], str]:
    """The dead-letter source of a line, found only if a dead letter needs it."""
    return lambda: _sniff_pile_source(data[-4096:], mapping)


def _named_source(obj: dict, mapping: dict[str, str]) -> str:
    meta = obj.get("meta")
    name = meta.get("pile_set_name") if isinstance(meta, dict) else None
    return mapping.get(name, PILE_UNUSED_SOURCE) if isinstance(name, str) else PILE_UNUSED_SOURCE


def read_pile(
    fileobj: BinaryIO,
    file_name: str,
    subset_to_source: dict[str, str] | None = None,
    *,
    max_doc_bytes: int = DEFAULT_MAX_DOC_BYTES,
    id_path: str | None = None,
    owned: Callable[[int], bool] | None = None,
) -> Iterator[Record | None]:
    """Pile ``.jsonl.zst`` records (``text`` + ``meta.pile_set_name``).

    Ids are ``<source>/<id_path>:<line>`` with the 0-based line of the decompressed stream;
    ``id_path`` is the file's path relative to the input root (the pipeline passes it; the
    default, the base name, suits a file read on its own).
    ``subset_to_source`` maps ``pile_set_name`` to a source slug (default: the eleven MT-NLG
    subsets); records of other subsets become ``Removal(stage="read",
    reason="pile_subset_not_in_blend")`` with source ``pile_other`` and EMPTY text (the unused
    subsets are ~40% of the Pile; writing their text to ``removed/`` would be pure waste; the
    character count is in ``meta["chars"]``).  Dead letters take the source named by a
    ``pile_set_name`` found in the raw line when possible, else ``pile_other``.
    ``owned``: record numbers (0-based, in file order) to parse; the others come out as None,
    unparsed (a slice of the file reads all its lines but parses only its own share).
    """
    mapping = PILE_SUBSET_TO_SOURCE if subset_to_source is None else subset_to_source
    name = id_name(file_name, id_path)
    for line in _owned_lines(_json_lines(fileobj, file_name, max_doc_bytes, PILE_UNUSED_SOURCE), owned):
        if line is None or isinstance(line, DeadLetter):
            yield line
            continue
        if line.data is None:
            source = _sniff_pile_source(line.tail, mapping)
            yield _too_large(f"{source}/{name}:{line.number}", source, line, max_doc_bytes)
            continue
        obj = _parse_object(line, _sniffer(line.data, mapping), file_name,
                            lambda o: _named_source(o, mapping))
        if isinstance(obj, DeadLetter):
            yield obj
            continue
        meta = obj.get("meta")
        subset = meta.get("pile_set_name") if isinstance(meta, dict) else None
        if not isinstance(subset, str):
            yield DeadLetter(PILE_UNUSED_SOURCE, f"{file_name}:{line.number}",
                             "missing_meta: no string 'meta.pile_set_name'", printable_excerpt(line.data))
            continue
        source = mapping.get(subset)
        if source is None:
            doc = Document(f"{PILE_UNUSED_SOURCE}/{name}:{line.number}", PILE_UNUSED_SOURCE, "",
                           meta={"pile_set_name": subset, "chars": len(obj["text"])})
            yield Removal(doc, "read", "pile_subset_not_in_blend", {"pile_set_name": subset})
            continue
        yield Document(f"{source}/{name}:{line.number}", source, obj["text"], meta=dict(meta))


REALNEWS_META = ("domain", "publish_date", "authors", "split", "warc_date")


def read_realnews(
    fileobj: BinaryIO,
    file_name: str,
    source: str = "realnews",
    *,
    max_doc_bytes: int = DEFAULT_MAX_DOC_BYTES,
    id_path: str | None = None,
    owned: Callable[[int], bool] | None = None,
) -> Iterator[Record | None]:
    """RealNews JSONL (Zellers et al. 2019): text = title + blank line + text, url = url_used,
    meta keeps domain, publish_date, authors, split and warc_date.
    Ids are ``<source>/<id_path>:<line>`` (``id_path`` and ``owned`` as for ``read_pile``)."""
    name = id_name(file_name, id_path)
    for line in _owned_lines(_json_lines(fileobj, file_name, max_doc_bytes, source), owned):
        if line is None or isinstance(line, DeadLetter):
            yield line
            continue
        doc_id = f"{source}/{name}:{line.number}"
        if line.data is None:
            yield _too_large(doc_id, source, line, max_doc_bytes)
            continue
        obj = _parse_object(line, source, file_name)
        if isinstance(obj, DeadLetter):
            yield obj
            continue
        title = obj.get("title")
        text = obj["text"]
        if isinstance(title, str) and title.strip():
            text = f"{title.strip()}\n\n{text}"
        url = obj.get("url_used") if isinstance(obj.get("url_used"), str) else None
        meta = {k: obj[k] for k in REALNEWS_META if obj.get(k) is not None}
        yield Document(doc_id, source, text, url=url, meta=meta)
