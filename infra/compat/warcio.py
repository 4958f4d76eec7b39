"""warcio internals this project depends on, in one place, checked on first import.

The WARC walk (``curation.readers.warc_records``) numbers records and damaged spans from the
bytes alone, which needs four things warcio's public API does not give:

- ``ArchiveIterator.offset``: where the record just yielded starts (the public
  ``get_record_offset()`` is set only once the record has been read to its end, too late to
  place a failure inside it);
- ``ArchiveIterator.err_count``: records not followed by the blank lines their Content-Length
  promises (warcio only warns on stderr): how a Content-Length that is too small is seen;
- ``ArchiveIterator.INC_RECORD``: the text of that warning, emptied here (each such record is
  one of our dead letters, not noise on stderr);
- ``LimitReader.limit``: the bytes of a block still unread when the file ended (a truncated
  record).

Used as the public API they are: ``WARCIterator``, the attributes of a record
(``rec_type``, ``rec_headers``, ``http_headers``, ``raw_stream``) and ``ChunkedDataReader``.
HTTP content codings are decoded by ``curation.readers.http_body``, not by warcio.

``check()`` runs when this module is imported: the installed warcio must be one of
``SUPPORTED`` (versions whose source was read for these names and meanings; the same in 1.7.4
and 1.8.1) and the names must be there, else ``WarcioMismatch`` says what differs, so an
upgrade stops the first import instead of silently changing how damaged files are read.
"""
from __future__ import annotations

import io
from importlib import metadata
from typing import Any, BinaryIO

SUPPORTED = ((1, 7, 4), (1, 9))
"""Lowest supported version (inclusive) and the first unsupported one: keep in step with the
``warcio`` range in pyproject.toml."""


class WarcioMismatch(ImportError):
    """The installed warcio is not a version, or lacks a name, this module was written for."""


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split("."):
        digits = "".join(c for c in piece if c.isdigit()) if piece[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def check(version: str | None = None) -> None:
    """Raise ``WarcioMismatch`` unless warcio (``version``: as installed) is supported and has
    every internal name this module uses, with the meaning it relies on."""
    from warcio.archiveiterator import ArchiveIterator, WARCIterator
    from warcio import bufferedreaders
    from warcio.limitreader import LimitReader

    found = version if version is not None else metadata.version("warcio")
    low, high = SUPPORTED
    if not low <= _version_tuple(found) < high:
        raise WarcioMismatch(
            f"warcio {found} is not supported: infra/compat/warcio.py relies on internals "
            f"checked in {'.'.join(map(str, low))} to below {'.'.join(map(str, high))}; install "
            "a version in that range (pyproject.toml), or re-check those internals and widen it")
    missing = []
    if not isinstance(getattr(bufferedreaders, "ChunkedDataReader", None), type):
        missing.append("bufferedreaders.ChunkedDataReader (a class)")
    if not isinstance(getattr(ArchiveIterator, "INC_RECORD", None), str):
        missing.append("ArchiveIterator.INC_RECORD (a str)")
    it = WARCIterator(io.BytesIO(b""))
    for name in ("offset", "err_count"):
        if not isinstance(getattr(it, name, None), int):
            missing.append(f"ArchiveIterator().{name} (an int)")
    if not isinstance(getattr(LimitReader(io.BytesIO(b""), 5), "limit", None), int):
        missing.append("LimitReader().limit (an int)")
    if missing:
        raise WarcioMismatch(f"warcio {found} lacks what infra/compat/warcio.py relies on: "
                             f"{', '.join(missing)}")


check()

from warcio.archiveiterator import WARCIterator  # noqa: E402 - only once check() passed
from warcio.bufferedreaders import ChunkedDataReader  # noqa: E402,F401 - re-exported


class StrictWarcIterator(WARCIterator):
    """WARC only: an iterator started fresh on damaged bytes must fail exactly as a running one
    does, so it may not fall back to guessing the ARC format (random bytes can parse as an ARC
    header line).  warcio's warning per bad Content-Length is silenced: it is a dead letter."""

    INC_RECORD = ""


def warc_iterator(fileobj: BinaryIO) -> StrictWarcIterator:
    """A record iterator over ``fileobj`` from its current position (digests not checked)."""
    return StrictWarcIterator(fileobj, check_digests=False)


def record_offset(it: StrictWarcIterator) -> int:
    """Where the record ``it`` yielded last starts (or where reading stopped)."""
    return it.offset


def framing_errors(it: StrictWarcIterator) -> int:
    """How many records so far were not followed by the blank lines their Content-Length
    promises (stray bytes after the block)."""
    return it.err_count


def unread_bytes(raw_stream: Any) -> int:
    """Bytes of a record's block not yet read from its ``raw_stream`` (after reading it to the
    end: what the file lacked); 0 for a stream that is not warcio's limited reader."""
    return max(0, getattr(raw_stream, "limit", 0) or 0)
