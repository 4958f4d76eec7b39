"""Streaming helpers shared by the readers: bounded decompression and bounded line splitting.

Input is consumed in fixed-size chunks so memory stays bounded by ``max_line_bytes`` plus one
decompressed chunk, whatever the file holds (a 50 MB line is skipped, not buffered).
"""
from __future__ import annotations

import os
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Iterator

import zstandard

from curation.readers.files import escape_id_path

# Compressed bytes fed to the decompressor per step.  Small, because zstd/gzip return all the
# output of a step at once and highly repetitive input can expand by 1000x or more.
READ_CHUNK = 64 * 1024
# Bytes kept from the end of an over-long line, enough to find a trailing JSON ``meta`` object.
TAIL_BYTES = 4096
DEFAULT_MAX_DOC_BYTES = 32 * 1024 * 1024
"""Documents larger than this (UTF-8 bytes) are removed as ``too_large``.  The Pile's largest
books are a few MB; 32 MiB leaves room while bounding a worker's memory."""


class TruncatedInput(Exception):
    """The compressed stream ended inside a frame/member."""


def base_name(file_name: str) -> str:
    """Base name of a local path or URL (``gs://b/x/y.jsonl.zst`` -> ``y.jsonl.zst``)."""
    return os.path.basename(file_name.rstrip("/"))


def id_name(file_name: str, id_path: str | None) -> str:
    """The middle of a reader's document ids: ``id_path`` as the pipeline passes it (already
    escaped, ``curation.readers.files.id_path``), else the file's escaped base name."""
    return escape_id_path(base_name(file_name)) if id_path is None else id_path


def _member_chunks(fileobj: BinaryIO, new_decompressor, unit: str) -> Iterator[bytes]:
    """Decompress a stream of concatenated frames (zstd) or members (gzip), as their command
    line tools read them, and raise ``TruncatedInput`` when the input ends inside one: the
    libraries' own stream readers return a silent EOF on a cut frame, which would lose data."""
    dobj, inside, total = new_decompressor(), False, 0
    while data := fileobj.read(READ_CHUNK):
        while data:
            inside = True
            out = dobj.decompress(data)
            total += len(out)
            if out:
                yield out
            if dobj.eof:  # this one finished; anything after it starts the next
                data, dobj, inside = dobj.unused_data, new_decompressor(), False
            else:
                data = b""
    if inside:
        raise TruncatedInput(f"{unit} {total} bytes decompressed before the cut")


def _zstd_chunks(fileobj: BinaryIO) -> Iterator[bytes]:
    dctx = zstandard.ZstdDecompressor(max_window_size=2**31)
    return _member_chunks(fileobj, dctx.decompressobj, "zstd stream truncated inside a frame;")


def _gzip_chunks(fileobj: BinaryIO) -> Iterator[bytes]:
    return _member_chunks(fileobj, lambda: zlib.decompressobj(zlib.MAX_WBITS | 16),
                          "gzip stream truncated inside a member;")


def _raw_chunks(fileobj: BinaryIO) -> Iterator[bytes]:
    while data := fileobj.read(READ_CHUNK):
        yield data


def decompressed_chunks(fileobj: BinaryIO, file_name: str) -> Iterator[bytes]:
    """Chunks of the decompressed content, chosen by extension (.zst, .gz, else raw).
    Raises ``zstandard.ZstdError``/``zlib.error`` on corrupt data and ``TruncatedInput``."""
    name = file_name.lower()
    if name.endswith((".zst", ".zstd")):
        return _zstd_chunks(fileobj)
    if name.endswith(".gz"):
        return _gzip_chunks(fileobj)
    return _raw_chunks(fileobj)


@dataclass
class Line:
    number: int  # 0-based line index in the decompressed stream
    data: bytes | None  # the line without its newline; None when longer than the limit
    size: int  # bytes in the line (without the newline)
    tail: bytes = b""  # last TAIL_BYTES of an over-long line


def split_lines(chunks: Iterator[bytes], max_line_bytes: int) -> Iterator[Line]:
    """Split a chunk stream on b"\\n".  Lines over ``max_line_bytes`` are not buffered: they come
    out with ``data=None``, their size, and their tail.  Exceptions from ``chunks`` propagate
    after every complete line before the failure has been yielded."""
    buf = bytearray()
    number, skipping, skipped, tail = 0, False, 0, b""

    def add(piece: bytes) -> None:
        nonlocal buf, skipping, skipped, tail
        if skipping:
            skipped += len(piece)
            tail = (tail + piece)[-TAIL_BYTES:]
            return
        buf += piece
        if len(buf) > max_line_bytes:
            skipping, skipped, tail, buf = True, len(buf), bytes(buf[-TAIL_BYTES:]), bytearray()

    def emit() -> Line:
        nonlocal buf, skipping, skipped, tail, number
        line = Line(number, None, skipped, tail) if skipping else Line(number, bytes(buf), len(buf))
        buf, skipping, skipped, tail = bytearray(), False, 0, b""
        number += 1
        return line

    for chunk in chunks:
        start = 0
        while (nl := chunk.find(b"\n", start)) >= 0:
            add(chunk[start:nl])
            yield emit()
            start = nl + 1
        if start < len(chunk):
            add(chunk[start:])
    if buf or skipping:  # last line without a trailing newline
        yield emit()


def printable_excerpt(data: bytes, limit: int = 2000) -> str:
    """A short, always-encodable excerpt of raw input for a dead letter."""
    return data[:limit].decode("utf-8", errors="backslashreplace")
