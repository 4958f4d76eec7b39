"""A remote file as a seekable binary stream: each read served from one block fetched with a
Range request (``infra.storage.http_client.Client.read_range``), blocks growing while the
reads stay sequential.

After a seek (and at the start) the first block is ``FIRST_BLOCK`` bytes, so probing a
file's head does not fetch megabytes it will not use (a stream told where its range ends,
``end_at``, fetches the range in one block instead, up to the block size); each block that
continues the previous one is twice as large, up to ``settings.block_bytes``.  Only the current
block is held.  A read that fails for good (``HttpError``: retries used up, 404, a changed
file) makes every later read of a byte at or after the position it failed at raise the same
error at once, while the bytes before it can still be read: a WARC walker that takes a failed
read for damaged bytes and looks for the next record must not find one behind a transport
error (the failure would read as corrupt data instead of failing the file), and a probe that
read ahead and failed (``one_gzip_member`` reads a MiB) must not cost the records before it.
"""
from __future__ import annotations

import io

from infra.storage.http_client import Client, FileInfo, HttpError

FIRST_BLOCK = 128 * 1024
"""Bytes of the first request after a seek: a few of a Common Crawl WARC's gzip members, so a
probe of a file's head or the start of a range read fetches little it will not use; the next
requests grow."""


class RangeReader(io.RawIOBase):
    """``url``'s bytes; ``info``: what is known of the file already (size, ETag)."""

    mode = "rb"  # what Beam's CompressedFile asks a file it wraps

    def __init__(self, client: Client, url: str, info: FileInfo | None = None) -> None:
        super().__init__()
        self._client, self.url, self.name = client, url, url
        self._info = info or FileInfo()
        self._pos = 0
        self._block, self._block_start = b"", 0
        self._last = FIRST_BLOCK  # bytes the last request asked for
        self._error: HttpError | None = None
        self._failed_at: int | None = None  # no byte from here on can be read (``_error``)
        self._end: int | None = None  # read as the end of the file (``end_at``)

    def end_at(self, end: int | None) -> None:
        """Read the file as if it ended at byte ``end``: a WARC range's reader knows where its
        range ends (where the next range's first record starts), and its walker's input buffer
        would otherwise fetch, and wait for, bytes another worker's range reads."""
        self._end = end

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    @property
    def size(self) -> int:
        if self._info.size is None:
            self._check()
            self._info = self._client._merge(self.url, self._info, self._client.head(self.url).size)
        return self._info.size

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._check()
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self.size + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if pos < 0:
            raise OSError(f"negative seek position {pos}")
        self._pos = pos
        return pos

    def readinto(self, b) -> int:
        self._check()
        n = len(b)
        if n == 0:
            return 0
        offset = self._pos - self._block_start
        if not 0 <= offset < len(self._block):
            if not self._fetch():
                return 0
            offset = 0
        k = min(n, len(self._block) - offset)
        b[:k] = memoryview(self._block)[offset:offset + k]
        self._pos += k
        return k

    def _fetch(self) -> bool:
        """The block starting at the position; False at the end of the file."""
        size = self._info.size
        if (size is not None and self._pos >= size) or (self._end is not None and self._pos >= self._end):
            return False
        if self._failed_at is not None and self._pos >= self._failed_at:
            raise self._error
        sequential = self._block and self._pos == self._block_start + len(self._block)
        length = min(self._last * 2, self._client.settings.block_bytes) if sequential else \
            min(FIRST_BLOCK, self._client.settings.block_bytes)
        if self._end is not None and not sequential:
            # A range's reader reads all of it: one request for the range (up to a block), not a
            # doubling series, so a throttling server has fewer requests to refuse.
            length = max(1, min(self._end - self._pos, self._client.settings.block_bytes))
        end = self._pos + length if size is None else min(self._pos + length, size)
        if self._failed_at is not None:
            end = min(end, self._failed_at)
        if self._end is not None:
            end = min(end, self._end)
        try:
            data, self._info = self._client.read_range(self.url, self._pos, end, self._info)
        except HttpError as e:
            self._error, self._failed_at = e, self._pos
            raise
        self._block, self._block_start, self._last = data, self._pos, length
        return bool(data)

    def _check(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on closed file")

    def close(self) -> None:
        self._block = b""
        super().close()


def open_stream(client: Client, url: str, buffer_size: int = 64 * 1024) -> io.BufferedReader:
    """A buffered, seekable reader of ``url`` (no request until the first read)."""
    return io.BufferedReader(RangeReader(client, url), buffer_size=buffer_size)
