"""The numbered units of a WARC file, surviving damage: records, and damaged spans between them.

``warc_entries(fileobj, offset, number)`` walks a WARC (gzip per record, or plain; a file
compressed whole as one gzip member is walked front to back through its decompressed bytes) with
warcio (its internals through ``infra.compat.warcio``) and yields one ``WarcEntry`` per unit,
each with its number (``#k`` in ids):

- a record: its parsed headers, its block read (up to ``keep`` bytes kept), and what is wrong
  with its framing: ``missing`` bytes (the file ends before its Content-Length) or
  ``overrun`` (bytes follow the block where the record should end: Content-Length too small);
- a damaged span: bytes that cannot be parsed (a corrupt gzip member, garbage, a header that
  does not parse).  The walk resynchronises at the next point where a gzip member (magic
  ``1f 8b 08``; for plain files a line ``WARC/1.x``) starts AND decodes to a parsable WARC
  header; the span runs from the failure to there, or to the end of the file.

The numbering depends only on the bytes, never on what the caller does with a record, so the
range planner and the range reader, starting anywhere the planner cut, agree on every number.
Every record's block is read completely before its entry is yielded, so a failure inside a
record's block makes that record the damaged span (same number whoever reads it).
"""
from __future__ import annotations

import io
import re
import zlib
from dataclasses import dataclass
from typing import Any, BinaryIO, Iterator

from infra.compat import warcio as warcio_compat

GZIP_MAGIC = b"\x1f\x8b\x08"
SCAN_CHUNK = 1 << 20
# The one-member probe reads its file's head in small pieces: over http(s) a large read would
# fetch (and the walk then fetch again) far more of the file than its first record.
PROBE_CHUNK = 1 << 14
HEADER_PROBE = 64 * 1024  # decoded bytes examined to accept a resynchronisation point
QUICK_PROBE = 4096
MAX_CANDIDATES = 1_000_000  # magic-byte matches probed per resynchronisation before giving up
_WARC_LINE_RE = re.compile(rb"WARC/\d\.\d+\r?\n")


@dataclass
class WarcEntry:
    number: int
    offset: int  # byte offset in the file where the record or the damaged span starts
    record: Any = None  # warcio ArcWarcRecord (None: a damaged span)
    block: bytes = b""  # the record's block (after HTTP headers), b"" when over ``keep``
    block_size: int = 0
    missing: int = 0  # block bytes absent (file ended inside the record)
    overrun: bool = False  # unexpected bytes after the block (Content-Length too small)
    damage: str | None = None  # what failed, for a damaged span
    end: int | None = None  # damaged span: where reading resumed (None: end of file)


def is_gzip(fileobj: BinaryIO, file_name: str) -> bool:
    if file_name.lower().endswith(".gz"):
        return True
    pos = fileobj.tell()
    fileobj.seek(0)
    head = fileobj.read(3)
    fileobj.seek(pos)
    return head == GZIP_MAGIC


_CONTENT_LENGTH_RE = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)[ \t]*\r\n", re.I)
MAX_FIRST_HEADER = 1 << 20  # a first record whose header is longer is not examined


def _first_record_end(head: bytes) -> int | None:
    """Where the first record of decompressed ``head`` ends (after its block, before the two
    line ends that close it); None while its header is incomplete; -1 when it cannot parse."""
    if not _WARC_LINE_RE.match(head):
        return -1 if len(head) >= 16 else None
    end = head.find(b"\r\n\r\n")
    if end < 0:
        return -1 if len(head) > MAX_FIRST_HEADER else None
    m = _CONTENT_LENGTH_RE.search(head, 0, end + 2)
    return end + 4 + int(m.group(1)) if m else -1


def one_gzip_member(fileobj: BinaryIO, file_name: str) -> bool:
    """Whether a gzip WARC's first member holds more than its first record: the file was
    compressed whole (``gzip file.warc`` writes ONE member), so it has no record boundaries to
    seek to and is read in one sequential pass (``warc_entries`` does so by itself).
    Decompresses only until the first record has ended; the position is left unchanged."""
    if not is_gzip(fileobj, file_name):
        return False
    pos = fileobj.tell()
    try:
        fileobj.seek(0)
        d = zlib.decompressobj(zlib.MAX_WBITS | 16)
        head, after, total, end = bytearray(), bytearray(), 0, None
        while not d.eof:
            data = d.unconsumed_tail or fileobj.read(PROBE_CHUNK)
            if not data:
                return False  # the first member is cut: damage, which the walk reports
            out = d.decompress(data, SCAN_CHUNK)
            if end is None:
                head += out
                end = _first_record_end(bytes(head))
                if end == -1:
                    return False  # not a WARC record: damage, which the walk reports
            if end is not None:  # collect the member's bytes after the record's end
                head = bytearray()
                lo, hi = max(end, total), min(end + 64, total + len(out))
                if hi > lo:
                    after += out[lo - total:hi - total]
                if after.lstrip(b"\r\n"):
                    return True
            total += len(out)
        return False
    except (zlib.error, OSError):
        return False
    finally:
        fileobj.seek(pos)


class _OneMemberStream:
    """The decompressed bytes of a whole-file gzip, read front to back.  It cannot seek
    (``warc_entries`` then stops at the first damage instead of resynchronising).  A cut or
    corrupt stream raises only once the bytes before the damage have been read, and never as
    ``EOFError``, which warcio takes for a clean end of the file."""

    def __init__(self, fileobj: BinaryIO) -> None:
        from curation.readers._io import decompressed_chunks

        fileobj.seek(0)
        self._chunks = decompressed_chunks(fileobj, ".gz")
        self._buf, self._pos, self._error = bytearray(), 0, None

    def read(self, size: int = -1) -> bytes:
        while self._error is None and (size < 0 or len(self._buf) < size):
            try:
                chunk = next(self._chunks, None)
            except Exception as exc:  # noqa: BLE001 - raised once the good bytes are read
                self._error = exc
                break
            if chunk is None:
                break
            self._buf += chunk
        if not self._buf and self._error is not None and size != 0:
            raise self._error
        n = len(self._buf) if size < 0 else min(size, len(self._buf))
        data = bytes(self._buf[:n])
        del self._buf[:n]
        self._pos += n
        return data

    def tell(self) -> int:
        return self._pos

    def seekable(self) -> bool:
        return False

    def seek(self, pos: int, whence: int = 0) -> int:
        if whence == 0 and pos == self._pos:
            return pos
        raise io.UnsupportedOperation("a whole-file gzip is read front to back")


def parsable_header(head: bytes) -> bool:
    """Whether ``head`` starts with a WARC header block that parses: the version line, then
    ``Name: value`` lines with a WARC-Type and an integer Content-Length, then a blank line."""
    m = _WARC_LINE_RE.match(head)
    if not m:
        return False
    end = head.find(b"\r\n\r\n", m.end() - 2)
    if end < 0:
        return False
    names = {}
    for line in head[m.end():end].split(b"\r\n"):
        name, sep, value = line.partition(b":")
        if not sep or not name.strip() or b" " in name.strip():
            return False
        names[name.strip().lower()] = value.strip()
    return b"warc-type" in names and names.get(b"content-length", b"x").isdigit()


def _probe_bytes(raw, gz: bool) -> bool:
    """Whether ``raw`` (at most ``HEADER_PROBE`` bytes from a candidate) starts a record.
    A small window first, so garbage is rejected after a few KB, not 64 KB, of work."""
    for size in (QUICK_PROBE, HEADER_PROBE):
        window = raw[:size]
        if gz:
            try:
                head = zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(window, size)
            except zlib.error:
                return False
        else:
            head = bytes(window)
        if not head.startswith(b"WARC/"):
            return False
        if parsable_header(head):
            return True
        if len(raw) <= size:
            return False
    return False


def _probe(fileobj: BinaryIO, at: int, gz: bool) -> bool:
    fileobj.seek(at)
    return _probe_bytes(fileobj.read(HEADER_PROBE), gz)


def resync(fileobj: BinaryIO, start: int, gz: bool) -> int | None:
    """The first offset >= ``start`` where a record starts and its header parses, or None.

    Candidates are probed in the scan buffer (the file is read again only near a buffer's
    end), and at most ``MAX_CANDIDATES`` per call: a hostile run of repeated gzip magic bytes
    costs bounded time instead of one decompression per three bytes of the file."""
    magic = GZIP_MAGIC if gz else b"\nWARC/"
    shift = 0 if gz else 1  # for plain files the match starts at the newline before WARC/
    pos, tail, tried = start, b"", 0
    while True:
        fileobj.seek(pos)
        chunk = fileobj.read(SCAN_CHUNK)
        if not chunk:
            return None
        buf, base = tail + chunk, pos - len(tail)
        view = memoryview(buf)  # probe windows without copying 64 KB per candidate
        i = buf.find(magic)
        while i >= 0:
            cand = base + i + shift
            if cand >= start:
                tried += 1
                if tried > MAX_CANDIDATES:
                    return None
                window = view[i + shift:i + shift + HEADER_PROBE]
                if _probe_bytes(window, gz) if len(window) == HEADER_PROBE else _probe(fileobj, cand, gz):
                    return cand
            i = buf.find(magic, i + 1)
        tail, pos = buf[-(len(magic) - 1):], pos + len(chunk)


def _read_block(stream, keep: int) -> tuple[bytes, int]:
    """The block (kept if at most ``keep`` bytes) and its size; the stream is read to its end."""
    data = stream.read(keep + 1)
    size = len(data)
    if size > keep:
        data = b""
        while chunk := stream.read(1 << 20):
            size += len(chunk)
    return data, size


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"


def warc_entries(fileobj: BinaryIO, file_name: str, offset: int = 0, number: int = 0,
                 keep: int = 32 * 1024 * 1024) -> Iterator[WarcEntry]:
    """Every record and damaged span from ``offset`` (a record boundary) to the end of the
    file, numbered from ``number``.  ``fileobj`` must be seekable to resynchronise; when it is
    not, the first damage runs to the end of the file.  A whole-file gzip
    (``one_gzip_member``) is read front to back through its decompressed bytes (offsets are
    then positions in those), and a damage in it runs to the end of the file."""
    if offset == 0 and number == 0 and one_gzip_member(fileobj, file_name):
        for e in _walk(_OneMemberStream(fileobj), False, False, 0, 0, keep):
            if e.damage is not None:
                e.damage += ("; the file is one gzip member (offsets are in its decompressed "
                             "bytes): nothing after the damage can be found")
            yield e
        return
    gz = is_gzip(fileobj, file_name)
    seekable = getattr(fileobj, "seekable", lambda: False)()
    yield from _walk(fileobj, gz, seekable, offset, number, keep)


def _walk(fileobj, gz: bool, seekable: bool, offset: int, number: int,
          keep: int) -> Iterator[WarcEntry]:
    pos = offset
    while pos is not None:
        fileobj.seek(pos)
        it = warcio_compat.warc_iterator(fileobj)
        records = iter(it)
        pending: WarcEntry | None = None  # yielded once the next record shows its framing
        failure: tuple[int, BaseException] | None = None
        while True:
            errors = warcio_compat.framing_errors(it)
            try:
                record = next(records)
            except StopIteration:
                break
            except Exception as exc:  # noqa: BLE001 - damaged bytes: resynchronise below
                if pending is not None and warcio_compat.framing_errors(it) > errors:
                    pending.overrun = True
                if pending is not None and warcio_compat.record_offset(it) <= pending.offset:
                    failure, pending = (pending.offset, exc), None  # the failure is in its block
                else:
                    failure = (warcio_compat.record_offset(it), exc)
                break
            if pending is not None:
                pending.overrun = warcio_compat.framing_errors(it) > errors
                yield pending
                number += 1
                pending = None
            start = warcio_compat.record_offset(it)
            try:
                block, size = _read_block(record.raw_stream, keep)
            except Exception as exc:  # noqa: BLE001 - the block itself is damaged
                failure = (start, exc)
                break
            pending = WarcEntry(number, start, record, block, size,
                                missing=warcio_compat.unread_bytes(record.raw_stream))
        if pending is not None:
            yield pending
            number += 1
        if failure is None:
            return
        at, exc = failure
        at = max(at, pos)  # warcio's offset can lag inside a member; never step backwards
        resume = resync(fileobj, at + 1, gz) if seekable else None
        yield WarcEntry(number, at, damage=_describe(exc), end=resume)
        number += 1
        pos = resume
