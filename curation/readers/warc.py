"""Common Crawl WARC reader: HTML responses -> main text (``curation.extraction``; or jusText,
as MT-NLG; or resiliparse).

Record handling, by WARC-Type:
- ``response`` with an HTTP 200 HTML payload: a ``Document`` (text extracted, boilerplate
  removed); empty extraction -> ``Removal(read, empty_after_extraction)``.
- ``response`` with another HTTP status -> ``Removal(read, http_status_not_ok)``; a non-HTML
  payload (PDF, image, ...) -> ``Removal(read, non_html_payload)``.  Both are well-formed crawl
  records that policy excludes, so they are removals, not failures.
- ``response`` whose markup nests deeper than ``MAX_HTML_DEPTH`` -> ``Removal(read,
  markup_too_deep)`` (extraction would take minutes; depth as a browser nests it, script,
  style, template and comment content not counted: ``curation.extraction.markup``); one with more than
  ``MAX_JUSTEXT_BLOCKS`` paragraph elements is extracted with resiliparse, noted in
  ``meta["extractor"]`` (jusText is quadratic in runs of short paragraphs).
- ``response`` whose page is surely not in an allowed language (``read_warc(...,
  language=)``, ``curation.language.LanguageConfig.early_score``: a look at the page's text
  before extraction) -> ``Removal(language, wrong_language)`` with ``detail["early"]`` and the
  decision's score; its text is not extracted.  A page with few tags
  (``curation.extraction.markup.parse_is_bounded``) gets this decision before the depth scan
  below, so such a page nested too deep but surely foreign is removed by language instead.
- ``response`` whose block is not an HTTP message -> ``DeadLetter`` (we cannot parse it).
- ``conversion`` (WET) records: the block is plain UTF-8 text, taken as is.
- ``warcinfo``, ``request``, ``metadata``, ``resource``, ``revisit``, ``continuation``: not
  documents, not counted; a record with no or an unknown WARC-Type -> ``DeadLetter``.
- a record whose block is shorter than its Content-Length (``truncated_record``) or followed by
  stray bytes (``bad_content_length``) -> ``DeadLetter``: its text would be cut.
- bytes that cannot be read (a corrupt gzip member, garbage, an unparsable header) -> one
  ``DeadLetter`` for the damaged span; reading resumes at the next gzip member whose start
  decodes to a parsable WARC header (``curation.readers.warc_records``), so one bad member
  costs its own records, not the rest of the file.
Ids are ``<source>/<path>#<k>``, k the 0-based index among ALL records (and damaged spans) of
the file, ``<path>`` the file's path relative to the input root.  Any failure of one record
(bad markup, decoding, extractor crash) is a ``DeadLetter`` for that record.

Splitting: ``plan_warc_ranges`` cuts a file into ``WarcRange``s of N records at record (gzip
member) boundaries in one cheap scan; ``read_warc(..., first_record=, max_records=)`` reads one
range from its offset, so the extraction of one large file spreads over many workers while ids
stay the same as a whole-file read.
"""
from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, BinaryIO, Iterator

from curation.document import DeadLetter, Document, Removal
from curation.extraction import (MAX_HTML_DEPTH, MAX_JUSTEXT_BLOCKS, extract_main_text, markup_too_deep,
                                 too_many_blocks)
from curation.extraction.markup import parse_is_bounded
from curation.extraction.page import page_text, parse_html
from curation.readers._io import DEFAULT_MAX_DOC_BYTES, id_name, printable_excerpt
from curation.readers.charset import decode_html
from curation.readers.http_body import http_body
from curation.readers.warc_records import WarcEntry, one_gzip_member, warc_entries

log = logging.getLogger(__name__)
Record = Document | Removal | DeadLetter
EXTRACTORS = ("main_text", "justext", "resiliparse")
"""``main_text``: curation.extraction (the default; docs/extraction.md); ``justext`` with the
English stop list: MT-NLG's and Pile-CC's setting, for reproduction; ``resiliparse``
``extract_plain_text(main_content=True)``: DCLM's."""
DEFAULT_EXTRACTOR = "main_text"
_HTML_TYPES = ("text/html", "application/xhtml+xml")
WARC_TYPES = ("warcinfo", "response", "resource", "request", "metadata", "revisit", "conversion",
              "continuation")
"""WARC 1.1 record types; only ``response`` and ``conversion`` hold documents."""
@lru_cache(maxsize=1)
def _english_stoplist() -> frozenset[str]:
    import justext

    return frozenset(justext.get_stoplist("English"))


def extract_text(html: str, extractor: str = DEFAULT_EXTRACTOR, tree=None) -> str:
    """Main text of an HTML page, paragraphs separated by blank lines; ``tree``: the page
    already parsed (``parse_html``), which ``main_text`` then reads instead of ``html``."""
    if extractor == "main_text":
        return extract_main_text(html if tree is None else tree)
    if extractor == "justext":
        from infra.compat import justext  # justext.justext's result, each paragraph's text once

        paragraphs = justext.paragraphs(html, _english_stoplist())
        return "\n\n".join(p.text for p in paragraphs if not p.is_boilerplate)
    if extractor == "resiliparse":
        from resiliparse.extract.html2text import extract_plain_text
        from resiliparse.parse.html import HTMLTree

        return extract_plain_text(HTMLTree.parse(html), main_content=True)
    raise ValueError(f"unknown extractor {extractor!r} (setting 'extractor'); expected one of {EXTRACTORS}")


def _read_bounded(stream, limit: int) -> tuple[bytes, int]:
    data = stream.read(limit + 1)
    size = len(data)
    if size > limit:  # count on (bounded: an HTTP gzip bomb must not run for minutes)
        while size <= 8 * limit and (chunk := stream.read(1 << 20)):
            size += len(chunk)
        data = b""
    return data, size


@dataclass(frozen=True)
class EarlyLanguage:
    """What the early language decision needs: the language settings and an identifier (one
    per process: it loads the model on first use)."""

    cfg: Any  # curation.language.LanguageConfig
    identifier: Any  # curation.language.LanguageIdentifier


def early_removal(tree, early: EarlyLanguage, doc: Document) -> Removal | None:
    """``Removal(language, wrong_language)`` of a page whose text is surely not in an allowed
    language (``LanguageIdentifier.early``), or None: the page goes on to extraction."""
    verdict = early.identifier.early(page_text(tree, early.cfg.early_chars), early.cfg)
    if not verdict.remove:
        return None
    doc = Document(doc.id, doc.source, "", url=doc.url, meta=doc.meta, lang=verdict.lang,
                   lang_share=verdict.share)
    return Removal(doc, "language", "wrong_language",
                   {"early": True, "score": round(verdict.score, 6), "early_score": early.cfg.early_score})


def _response(record, doc_id: str, source: str, location: str, extractor: str, max_doc_bytes: int,
              early: EarlyLanguage | None = None) -> Record:
    url = record.rec_headers.get_header("WARC-Target-URI")
    meta = {"warc_date": record.rec_headers.get_header("WARC-Date")}
    if record.http_headers is None:
        ctype = record.rec_headers.get_header("Content-Type") or ""
        return DeadLetter(source, location, f"non_http_response: response block is not HTTP (Content-Type {ctype!r})")
    status = record.http_headers.get_statuscode()
    content_type = record.http_headers.get_header("Content-Type") or ""
    meta.update(http_status=status, content_type=content_type)
    if status != "200":
        return Removal(Document(doc_id, source, "", url=url, meta=meta), "read", "http_status_not_ok", {"status": status})
    mime = content_type.split(";")[0].strip().lower()
    if mime and mime not in _HTML_TYPES:
        return Removal(Document(doc_id, source, "", url=url, meta=meta), "read", "non_html_payload", {"content_type": mime})
    payload, size = _read_bounded(http_body(record), max_doc_bytes)
    if size > max_doc_bytes:
        return Removal(Document(doc_id, source, "", url=url, meta=meta), "read", "too_large",
                       {"bytes": size, "max_doc_bytes": max_doc_bytes})
    html = tree = None
    if early is not None and parse_is_bounded(payload):
        # The early decision first: the scan for depth below is needed only by the pages it
        # lets through, and this page's parse is bounded by its few tags whatever its depth.
        html = decode_html(payload, content_type)
        tree = parse_html(html)
        removal = early_removal(tree, early, Document(doc_id, source, "", url=url, meta=meta))
        if removal is not None:
            return removal
    if markup_too_deep(payload):
        return Removal(Document(doc_id, source, "", url=url, meta=meta), "read", "markup_too_deep",
                       {"max_depth": MAX_HTML_DEPTH})
    if extractor == "justext" and too_many_blocks(payload):
        extractor = "resiliparse"  # bounded time; recorded so the text's origin stays visible
        meta["extractor"] = f"resiliparse (more than {MAX_JUSTEXT_BLOCKS} blocks for jusText)"
    if html is None:
        html = decode_html(payload, content_type)
    if early is not None and tree is None:
        tree = parse_html(html)
        removal = early_removal(tree, early, Document(doc_id, source, "", url=url, meta=meta))
        if removal is not None:
            return removal
    text = extract_text(html, extractor, tree).strip()
    doc = Document(doc_id, source, text, url=url, meta=meta)
    if not text:
        return Removal(doc, "read", "empty_after_extraction")
    return doc


def _conversion(record, doc_id: str, source: str, location: str, max_doc_bytes: int) -> Record:
    url = record.rec_headers.get_header("WARC-Target-URI")
    meta = {"warc_date": record.rec_headers.get_header("WARC-Date")}
    payload, size = _read_bounded(record.content_stream(), max_doc_bytes)
    if size > max_doc_bytes:
        return Removal(Document(doc_id, source, "", url=url, meta=meta), "read", "too_large",
                       {"bytes": size, "max_doc_bytes": max_doc_bytes})
    try:
        text = payload.decode("utf-8")  # WET text is written as UTF-8 by Common Crawl
    except UnicodeDecodeError as exc:
        return DeadLetter(source, location, f"invalid_utf8: {exc}", printable_excerpt(payload))
    doc = Document(doc_id, source, text.strip(), url=url, meta=meta)
    return doc if doc.text else Removal(doc, "read", "empty_after_extraction")


@dataclass(frozen=True)
class WarcRange:
    """A run of consecutive entries (records or damaged spans) of one WARC file: ``count``
    entries (None: to the end of the file) starting at byte ``offset``, the first being number
    ``first_record`` of the file (so ids stay ``#<k>`` whatever the split)."""

    path: str
    offset: int
    first_record: int
    count: int | None
    end: int | None = None
    """The byte where the next range starts (None: the end of the file); the ``count`` entries
    end there, so a reader of a remote file fetches nothing past it."""


def plan_warc_ranges(fileobj: BinaryIO, file_name: str, records_per_range: int) -> list[WarcRange]:
    """Cut a WARC file into ranges of ``records_per_range`` entries at entry boundaries.

    One sequential scan that only decompresses and skips record blocks (no HTML parsing, the
    expensive part), so the ranges can be read, and their pages extracted, on many workers.
    It walks the file exactly as ``read_warc`` does (``warc_entries``: damaged spans are
    numbered entries and the walk resynchronises after them), so every range reader agrees
    on the numbers.  The last range is open-ended.
    """
    if records_per_range < 1:
        raise ValueError(f"records_per_range must be >= 1, got {records_per_range}")
    if one_gzip_member(fileobj, file_name):
        log.warning("%s is compressed as ONE gzip member (as `gzip file.warc` writes): it cannot "
                    "be split, so one worker reads all of it; `warcio recompress` writes a "
                    "splittable copy (one member per record)", file_name)
        return [WarcRange(file_name, 0, 0, None)]
    starts: list[tuple[int, int]] = [(0, 0)]  # (offset, first entry) of each range
    try:
        for e in warc_entries(fileobj, file_name, keep=0):
            if e.number and e.number % records_per_range == 0:
                starts.append((e.offset, e.number))
    except Exception:  # noqa: BLE001 - unseekable or unreadable: the reader reports it
        pass
    ranges = [WarcRange(file_name, off, first, nxt - first, nxt_off)
              for (off, first), (nxt_off, nxt) in zip(starts, starts[1:])]
    ranges.append(WarcRange(file_name, starts[-1][0], starts[-1][1], None))
    return ranges


def _damaged(e: WarcEntry, file_name: str, source: str) -> DeadLetter:
    to = "end of file" if e.end is None else f"byte {e.end}, where the next record starts"
    return DeadLetter(source, f"{file_name}#{e.number}",
                      f"corrupt_warc: bytes {e.offset} to {to} cannot be read ({e.damage}); "
                      "reading resumed after them" if e.end is not None else
                      f"corrupt_warc from record {e.number} to end of file: bytes {e.offset} to "
                      f"end of file cannot be read ({e.damage})")


def read_warc(
    fileobj: BinaryIO,
    file_name: str,
    source: str,
    extractor: str = DEFAULT_EXTRACTOR,
    *,
    max_doc_bytes: int = DEFAULT_MAX_DOC_BYTES,
    first_record: int = 0,
    max_records: int | None = None,
    id_path: str | None = None,
    language: Any = None,
    identifier: Any = None,
) -> Iterator[Record]:
    """Documents from a WARC or WET file (gzipped per record or not); see the module docstring
    for what each record type yields.  To read one ``WarcRange``, pass ``fileobj`` positioned
    at its offset, ``first_record`` and ``max_records=count``.  ``id_path``: the file's path
    relative to the input root, used in ids (default: the base name).  ``language``: a
    ``curation.language.LanguageConfig`` whose ``early_score`` > 0 makes the early language
    decision on HTML pages, with ``identifier`` (a ``LanguageIdentifier`` the caller keeps;
    default: one made here)."""
    if extractor not in EXTRACTORS:
        raise ValueError(f"unknown extractor {extractor!r} (setting 'extractor'); expected one of {EXTRACTORS}")
    early = None
    if language is not None and language.early_score > 0:
        from curation.language import make_identifier

        early = EarlyLanguage(language, identifier or make_identifier(language))
    name = id_name(file_name, id_path)
    stop = None if max_records is None else first_record + max_records
    for e in warc_entries(fileobj, file_name, fileobj.tell(), first_record, keep=max_doc_bytes):
        if stop is not None and e.number >= stop:
            return
        if e.record is None:
            yield _damaged(e, file_name, source)
            continue
        out = _entry_record(e, f"{source}/{name}#{e.number}", source, f"{file_name}#{e.number}",
                            extractor, max_doc_bytes, early)
        if out is not None:
            yield out


def _entry_record(e: WarcEntry, doc_id: str, source: str, location: str, extractor: str,
                  max_doc_bytes: int, early: EarlyLanguage | None = None) -> Record | None:
    record = e.record
    try:
        kind = record.rec_type
        if kind not in WARC_TYPES:  # a record we cannot classify must not vanish uncounted
            return DeadLetter(source, location, f"unknown_record_type: WARC-Type {kind!r}")
        if kind not in ("response", "conversion"):
            return None
        if e.missing:  # the block ended before its Content-Length: a truncated record
            return DeadLetter(source, location, f"truncated_record: {e.missing} bytes missing")
        if e.overrun:
            return DeadLetter(source, location, "bad_content_length: the record does not end where "
                              "its Content-Length says (stray bytes follow its block); its text "
                              "would be cut or mixed with the next record's")
        if e.block_size > max_doc_bytes:
            url = record.rec_headers.get_header("WARC-Target-URI")
            meta = {"warc_date": record.rec_headers.get_header("WARC-Date")}
            return Removal(Document(doc_id, source, "", url=url, meta=meta), "read", "too_large",
                           {"bytes": e.block_size, "max_doc_bytes": max_doc_bytes})
        record.raw_stream = io.BytesIO(e.block)
        if kind == "response":
            return _response(record, doc_id, source, location, extractor, max_doc_bytes, early)
        return _conversion(record, doc_id, source, location, max_doc_bytes)
    except (Exception, RecursionError) as exc:  # one bad page must not stop the file
        return DeadLetter(source, location, f"record_failed: {type(exc).__name__}: {exc}")
