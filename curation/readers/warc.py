"""Common Crawl WARC reader: HTML responses -> main text (jusText, as MT-NLG; or resiliparse).

Record handling, by WARC-Type:
- ``response`` with an HTTP 200 HTML payload: a ``Document`` (text extracted, boilerplate
  removed); empty extraction -> ``Removal(read, empty_after_extraction)``.
- ``response`` with another HTTP status -> ``Removal(read, http_status_not_ok)``; a non-HTML
  payload (PDF, image, ...) -> ``Removal(read, non_html_payload)``.  Both are well-formed crawl
  records that policy excludes, so they are removals, not failures.
- ``response`` whose markup nests deeper than ``MAX_HTML_DEPTH`` -> ``Removal(read,
  markup_too_deep)`` (extraction would take minutes).
- ``response`` whose block is not an HTTP message -> ``DeadLetter`` (we cannot parse it).
- ``conversion`` (WET) records: the block is plain UTF-8 text, taken as is.
- ``warcinfo``, ``request``, ``metadata``, ``resource``, ``revisit``: not documents, not counted.
Ids are ``<source>/<base name>#<k>``, k the 0-based index among ALL records of the file.
Any failure of one record (bad markup, decoding, extractor crash) is a ``DeadLetter`` for that
record; a failure to read the next record header ends the file with one ``DeadLetter``.

Splitting: ``plan_warc_ranges`` cuts a file into ``WarcRange``s of N records at record (gzip
member) boundaries in one cheap scan; ``read_warc(..., first_record=, max_records=)`` reads one
range from its offset, so the extraction of one large file spreads over many workers while ids
stay the same as a whole-file read.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import BinaryIO, Iterator

from warcio.archiveiterator import ArchiveIterator

from curation.document import DeadLetter, Document, Removal
from curation.readers._io import DEFAULT_MAX_DOC_BYTES, base_name, printable_excerpt

Record = Document | Removal | DeadLetter
EXTRACTORS = ("justext", "resiliparse")
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_META_CHARSET_RE = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_\-:.]+)""", re.I)
_HEADER_CHARSET_RE = re.compile(r"charset\s*=\s*[\"']?([a-zA-Z0-9_\-:.]+)", re.I)


def _valid_codec(name: str | None) -> str | None:
    import codecs

    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def decode_html(payload: bytes, content_type: str = "") -> str:
    """Decode HTML bytes: charset from the HTTP header, then ``<meta charset>`` in the first
    4 KB, then resiliparse's detector; undecodable bytes are dropped (web pages are messy and
    one bad byte must not lose the page)."""
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding

    m = _HEADER_CHARSET_RE.search(content_type)
    encoding = _valid_codec(m.group(1)) if m else None
    if encoding is None:
        m2 = _META_CHARSET_RE.search(payload[:4096])
        encoding = _valid_codec(m2.group(1).decode("ascii", "ignore")) if m2 else None
    if encoding is None:
        encoding = _valid_codec(detect_encoding(payload)) or "utf-8"
    return bytes_to_str(payload, encoding, errors="ignore")


# Deeper markup than this is removed as ``markup_too_deep`` before extraction: resiliparse's
# main-content pass is quadratic in depth (100,000 nested divs take minutes) and libxml2 stops
# building the tree at 256 levels anyway.  Real pages stay far below (tens of levels).
MAX_HTML_DEPTH = 512
_TAG_RE = re.compile(rb"<(/?)([a-zA-Z][a-zA-Z0-9]*)[^>]*?(/?)>")
# Elements that never have content, or whose end tag is implied: they never deepen the tree.
_NO_DEPTH = frozenset(
    b"area base br col embed hr img input link meta param source track wbr "
    b"p li td th tr dt dd option optgroup tbody thead tfoot colgroup rt rp".split()
)


def markup_too_deep(html: str | bytes, limit: int = MAX_HTML_DEPTH) -> bool:
    """Whether the open-tag nesting exceeds ``limit``, estimated in one linear scan."""
    data = html.encode("utf-8", "ignore") if isinstance(html, str) else html
    depth = 0
    for m in _TAG_RE.finditer(data):
        closing, name, self_closing = m.groups()
        if name.lower() in _NO_DEPTH or self_closing:
            continue
        depth = max(0, depth - 1) if closing else depth + 1
        if depth > limit:
            return True
    return False


@lru_cache(maxsize=1)
def _english_stoplist() -> frozenset[str]:
    import justext

    return frozenset(justext.get_stoplist("English"))


def extract_text(html: str, extractor: str = "justext") -> str:
    """Main text of an HTML page, paragraphs separated by blank lines."""
    if extractor == "justext":
        import justext

        paragraphs = justext.justext(html, _english_stoplist())
        return "\n\n".join(p.text for p in paragraphs if not p.is_boilerplate)
    if extractor == "resiliparse":
        from resiliparse.extract.html2text import extract_plain_text
        from resiliparse.parse.html import HTMLTree

        return extract_plain_text(HTMLTree.parse(html), main_content=True)
    raise ValueError(f"unknown extractor {extractor!r} (setting 'extractor'); expected one of {EXTRACTORS}")


def _read_bounded(stream, limit: int) -> tuple[bytes, int]:
    data = stream.read(limit + 1)
    size = len(data)
    if size > limit:
        while chunk := stream.read(1 << 20):
            size += len(chunk)
        data = b""
    return data, size


def _response(record, doc_id: str, source: str, location: str, extractor: str, max_doc_bytes: int) -> Record:
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
    payload, size = _read_bounded(record.content_stream(), max_doc_bytes)
    if size > max_doc_bytes:
        return Removal(Document(doc_id, source, "", url=url, meta=meta), "read", "too_large",
                       {"bytes": size, "max_doc_bytes": max_doc_bytes})
    if markup_too_deep(payload):
        return Removal(Document(doc_id, source, "", url=url, meta=meta), "read", "markup_too_deep",
                       {"max_depth": MAX_HTML_DEPTH})
    text = extract_text(decode_html(payload, content_type), extractor).strip()
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
    """A run of consecutive records of one WARC file: ``count`` records (None: to the end of
    the file) starting at byte ``offset`` (a gzip member boundary), the first being record
    number ``first_record`` of the file (so ids stay ``#<k>`` whatever the split)."""

    path: str
    offset: int
    first_record: int
    count: int | None


def plan_warc_ranges(fileobj: BinaryIO, file_name: str, records_per_range: int) -> list[WarcRange]:
    """Cut a WARC file into ranges of ``records_per_range`` records at record boundaries.

    One sequential scan that only decompresses and skips record blocks (no HTML parsing, the
    expensive part), so the ranges can be read, and their pages extracted, on many workers.
    The last range is open-ended.  If the scan fails (corrupt or truncated input), planning
    stops and the last range runs from the last good boundary to the end of the file, so
    ``read_warc`` over that range meets the same failure and reports it as a dead letter.
    """
    if records_per_range < 1:
        raise ValueError(f"records_per_range must be >= 1, got {records_per_range}")
    starts: list[tuple[int, int]] = [(0, 0)]  # (offset, first record) of each range
    it = ArchiveIterator(fileobj, check_digests=False)
    k = 0
    try:
        for _ in it:
            if k and k % records_per_range == 0:
                starts.append((it.get_record_offset(), k))
            k += 1
    except Exception:  # noqa: BLE001 - the range reader reports it, with the record number
        pass
    ranges = [WarcRange(file_name, off, first, nxt - first)
              for (off, first), (_, nxt) in zip(starts, starts[1:])]
    ranges.append(WarcRange(file_name, starts[-1][0], starts[-1][1], None))
    return ranges


def read_warc(
    fileobj: BinaryIO,
    file_name: str,
    source: str,
    extractor: str = "justext",
    *,
    max_doc_bytes: int = DEFAULT_MAX_DOC_BYTES,
    first_record: int = 0,
    max_records: int | None = None,
) -> Iterator[Record]:
    """Documents from a WARC or WET file (gzipped per record or not); see the module docstring
    for what each record type yields.  To read one ``WarcRange``, pass ``fileobj`` positioned
    at its offset, ``first_record`` and ``max_records=count``."""
    if extractor not in EXTRACTORS:
        raise ValueError(f"unknown extractor {extractor!r} (setting 'extractor'); expected one of {EXTRACTORS}")
    name = base_name(file_name)
    records = iter(ArchiveIterator(fileobj, check_digests=False))
    k = first_record
    while max_records is None or k < first_record + max_records:
        location = f"{file_name}#{k}"
        try:
            record = next(records)
        except StopIteration:
            return
        except Exception as exc:  # unreadable header or gzip member: nothing after it is reliable
            yield DeadLetter(source, location, f"corrupt_warc from record {k} to end of file: {type(exc).__name__}: {exc}")
            return
        try:
            kind = record.rec_type
            doc_id = f"{source}/{name}#{k}"
            if kind == "response":
                out = _response(record, doc_id, source, location, extractor, max_doc_bytes)
            elif kind == "conversion":
                out = _conversion(record, doc_id, source, location, max_doc_bytes)
            else:
                out = None
            if out is not None:
                remaining = getattr(record.raw_stream, "limit", 0)
                if remaining > 0 and not record.raw_stream.read(1):
                    # The block ended before its Content-Length: a truncated record.
                    out = DeadLetter(source, location, f"truncated_record: {remaining} bytes missing")
        except (Exception, RecursionError) as exc:  # one bad page must not stop the file
            out = DeadLetter(source, location, f"record_failed: {type(exc).__name__}: {exc}")
        if out is not None:
            yield out
        k += 1
