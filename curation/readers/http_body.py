"""The page bytes of an HTTP response: transfer and content codings undone, in bounded steps.

``http_body(record)`` replaces warcio's ``record.content_stream()``, which (warcio 1.8 with
brotli 1.2) dead-lettered every ``Content-Encoding: br`` page (its brotli adapter sets an
attribute the brotli package no longer allows), returns all output of a decompression step at
once (one 16 KB brotli step can expand to gigabytes) and cuts a body that fails mid-way
silently (the error goes to stderr).  Here:

- ``Transfer-Encoding: chunked`` is undone by warcio's public ``ChunkedDataReader``, which
  takes a body that says chunked but is not as it is;
- content codings ``gzip``/``x-gzip``, ``deflate`` (zlib-wrapped or raw, as browsers accept)
  and ``br`` are decoded at most ``OUT_STEP`` bytes per step, so a reader that stops after n
  bytes (``warc._read_bounded``) holds about n + ``OUT_STEP``, whatever the ratio;
- as warcio (and for the same reason: servers lie), a body whose first bytes are not in the
  coding its header names, or one with a coding we do not know, is taken as it is;
- a body that fails after it started to decode raises ``CorruptBody`` (the record becomes a
  dead letter), never a shortened page; one that simply ends early (a crawler's size cap)
  gives what it holds.
"""
from __future__ import annotations

import zlib
from typing import Any, Callable, Iterator

import brotli

from infra.compat.warcio import ChunkedDataReader

OUT_STEP = 1 << 20
"""Most decoded bytes produced per decompression step (brotli may overshoot by one block)."""
IN_STEP = 64 * 1024

if not hasattr(brotli.Decompressor, "can_accept_more_data"):  # pragma: no cover - old brotli
    raise ImportError(f"brotli {getattr(brotli, '__version__', '?')} cannot bound its output; "
                      "curation needs brotli>=1.2 (pyproject.toml)")


class CorruptBody(ValueError):
    """A compressed HTTP body that stopped decoding part-way."""


def _pieces(stream) -> Iterator[bytes]:
    while data := stream.read(IN_STEP):
        yield data


_HEADER_BYTES = {zlib.MAX_WBITS | 16: 10, zlib.MAX_WBITS: 2}
"""Header bytes of a gzip member and of a zlib stream (raw deflate has none)."""


def _has_header(piece: bytes, wbits: int) -> bool:
    """Whether ``piece`` starts with a valid header of the format: then a failure later is a
    corrupt body, not a server that named a coding it did not use."""
    size = _HEADER_BYTES.get(wbits)
    if size is None or len(piece) < size:
        return False
    try:
        zlib.decompressobj(wbits).decompress(piece[:size])
    except zlib.error:
        return False
    return True


def _zlib(wbits_tries: tuple[int, ...]) -> Callable[[Iterator[bytes]], Iterator[bytes]]:
    def decode(pieces: Iterator[bytes]) -> Iterator[bytes]:
        tries = list(wbits_tries)
        d_bits = tries.pop(0)
        d, produced, first = zlib.decompressobj(d_bits), 0, True
        for piece in pieces:
            data = piece
            while True:
                try:
                    out = d.decompress(data, OUT_STEP)
                except zlib.error as exc:
                    if produced or not first or _has_header(piece, d_bits):
                        raise CorruptBody(f"zlib: {exc} after {produced} bytes") from None
                    if tries:  # e.g. deflate without its zlib wrapper
                        d_bits = tries.pop(0)
                        d, data = zlib.decompressobj(d_bits), piece
                        continue
                    yield piece  # not in this coding at all: taken as it is
                    yield from pieces
                    return
                produced += len(out)
                if out:
                    yield out
                if d.eof:
                    return  # bytes after the end of the stream are not the page's
                data = d.unconsumed_tail
                if not data and len(out) < OUT_STEP:
                    break
            first = False
        if tail := d.flush():  # the input ended early: what it decodes to
            yield tail
    return decode


def _brotli(pieces: Iterator[bytes]) -> Iterator[bytes]:
    d, produced = brotli.Decompressor(), 0
    for data in pieces:
        try:
            out = d.process(data, output_buffer_limit=OUT_STEP)
            while True:
                produced += len(out)
                if out:
                    yield out
                if d.can_accept_more_data():
                    break
                out = d.process(b"", output_buffer_limit=OUT_STEP)
        except brotli.error as exc:
            if produced:
                raise CorruptBody(f"brotli: {exc} after {produced} bytes") from None
            yield data  # not brotli at all: taken as it is
            yield from pieces
            return
        if d.is_finished():
            return


DECODERS: dict[str, Callable[[Iterator[bytes]], Iterator[bytes]]] = {
    "gzip": _zlib((zlib.MAX_WBITS | 16,)),
    "x-gzip": _zlib((zlib.MAX_WBITS | 16,)),
    "deflate": _zlib((zlib.MAX_WBITS, -zlib.MAX_WBITS)),
    "br": _brotli,
}


class DecodedBody:
    """A read-only file over an iterator of byte chunks: ``read(n)`` joins chunks until it
    has n bytes (it never allocates n up front: the caller's n is a limit, often 32 MiB)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks, self._buf = chunks, b""

    def read(self, size: int = -1) -> bytes:
        parts, have = [self._buf], len(self._buf)
        while size < 0 or have < size:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            parts.append(chunk)
            have += len(chunk)
        data = b"".join(parts)
        if 0 <= size < len(data):
            data, self._buf = data[:size], data[size:]
        else:
            self._buf = b""
        return data


def codings(header: str | None) -> list[str] | None:
    """The content codings to undo, last applied first; ``None`` when one is unknown (the body
    is then taken as it is)."""
    names = [c.strip().lower() for c in (header or "").split(",")]
    names = [c for c in names if c and c != "identity"]
    if any(c not in DECODERS for c in names):
        return None
    return names[::-1]


def http_body(record: Any) -> DecodedBody:
    """The decoded payload of a warcio response ``record`` whose ``raw_stream`` holds the
    bytes after its HTTP headers, as a file to ``read(n)`` from (``CorruptBody`` while reading
    when a compressed body breaks off)."""
    raw = record.raw_stream
    headers = record.http_headers
    if headers is None:
        return DecodedBody(_pieces(raw))
    if (headers.get_header("Transfer-Encoding") or "").strip().lower() == "chunked":
        raw = ChunkedDataReader(raw)
    chunks = _pieces(raw)
    for name in codings(headers.get_header("Content-Encoding")) or ():
        chunks = DECODERS[name](chunks)
    return DecodedBody(chunks)
