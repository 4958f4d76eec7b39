"""Path listings as input: a file of relative paths, one a line (Common Crawl's
``crawl-data/CC-MAIN-2020-50/warc.paths.gz``, a line per WARC file of the crawl), a base its
lines are relative to, and a selector for part of it (docs/config.md, "Path listings and HTTPS inputs").

Selecting, in this order: ``segments`` keeps the lines under the named segments
(``.../segments/<name>/...``), ``every``/``offset`` the lines whose number in the listing
(0-based, blank lines not counted) is ``offset`` modulo ``every``, ``first`` the first K of
what is left.  A document's id holds its file's path relative to the base, that is its line
of the listing, so ids are the same whatever the selector picks, and whichever mirror the base
names (``s3://commoncrawl/`` or ``https://data.commoncrawl.org/``).

The driver reads the listing once when it loads the config (to refuse a bad listing, line or
selector before any work, and to pin the listing's sha256); the job's plan reads it again on
one worker and emits one ``listed_file`` per selected line, without asking anything of the files
themselves: their sizes are asked for (``file_size``) after the files are spread over the
workers.  Nothing globs the crawl's prefix.
"""
from __future__ import annotations

import gzip
import hashlib
import posixpath
import zlib
from dataclasses import dataclass
from typing import Iterator

_SCHEME_CHARS = "://"


class ListingError(ValueError):
    """A listing that cannot be used: unreadable, a bad line, a selector that keeps nothing."""


@dataclass
class ListingSelect:
    """Which lines of a listing to read (all of them when every field is left out)."""

    first: int | None = None
    """Keep only the first K lines of what the other selectors keep."""
    every: int | None = None
    """Keep every N-th line of the listing (line numbers ``offset``, ``offset + N``, ...): a
    sample spread over the whole crawl."""
    offset: int = 0
    """With ``every``: which line of each N to keep (0 to N-1)."""
    segments: list[str] | None = None
    """Keep the lines under these segments (the path component after ``segments/``, e.g.
    ``"1606141163411.0"``: quote it, or YAML reads a number)."""

    def __post_init__(self) -> None:
        if self.first is not None and self.first < 1:
            raise ValueError(f"first: must be >= 1, got {self.first}")
        if self.every is not None and self.every < 1:
            raise ValueError(f"every: must be >= 1, got {self.every}")
        if self.offset and self.every is None:
            raise ValueError("offset: only used with 'every'; set every or remove offset")
        if self.every is not None and not 0 <= self.offset < self.every:
            raise ValueError(f"offset: must be between 0 and every - 1 ({self.every - 1}), "
                             f"got {self.offset}")
        if self.segments is not None:
            if not self.segments:
                raise ValueError("segments: an empty list selects nothing; leave it out to keep all")
            for i, s in enumerate(self.segments):
                if not s or "/" in s or s.strip() != s:
                    raise ValueError(f"segments[{i}]: {s!r} is not a segment name (one path "
                                     "component, e.g. '1606141163411.0')")


def parse_listing(data: bytes, name: str) -> list[str]:
    """The lines of a listing file's bytes (gzip when it starts like one), each checked to be
    a relative path: no URL scheme, no leading ``/``, no ``..`` or empty component."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise ListingError(f"{name!r} is not a readable gzip file ({e})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ListingError(f"{name!r} is not UTF-8 text (byte {e.start})") from None
    lines = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        problem = _line_problem(line)
        if problem:
            raise ListingError(f"{name!r} line {number}: {line[:200]!r} {problem}")
        lines.append(line)
    return lines


def _line_problem(line: str) -> str | None:
    if _SCHEME_CHARS in line:
        return "is a URL; a listing holds paths relative to its base"
    if line.startswith("/"):
        return "is an absolute path; a listing holds paths relative to its base"
    if any(part in ("", ".", "..") for part in line.split("/")):
        return "has an empty, '.' or '..' component"
    return None


def segment_of(line: str) -> str | None:
    """The segment a Common Crawl path is under (the component after ``segments``)."""
    parts = line.split("/")
    for i, part in enumerate(parts[:-1]):
        if part == "segments":
            return parts[i + 1]
    return None


def select_lines(lines: list[str], select: ListingSelect | None, where: str = "select") -> list[str]:
    """The lines ``select`` keeps, in listing order; ``ListingError`` naming the setting for a
    segment the listing does not have or a selection that keeps nothing."""
    sel = select or ListingSelect()
    kept = list(enumerate(lines))
    if sel.segments is not None:
        present = {segment_of(line) for line in lines}
        for i, s in enumerate(sel.segments):
            if s not in present:
                raise ListingError(f"{where}.segments[{i}]: no line of the listing is under "
                                   f"segment {s!r}")
        wanted = set(sel.segments)
        kept = [(n, line) for n, line in kept if segment_of(line) in wanted]
    if sel.every is not None:
        kept = [(n, line) for n, line in kept if n % sel.every == sel.offset]
    if sel.first is not None:
        kept = kept[:sel.first]
    if not kept:
        raise ListingError(f"{where}: keeps no line of the listing ({len(lines)} lines)")
    return [line for _, line in kept]


def join(base: str, line: str) -> str:
    """The file a listing line names under ``base`` (a URL or a local folder)."""
    if _SCHEME_CHARS in base:
        return base.rstrip("/") + "/" + line
    return posixpath.join(base, line) if base else line


def read_bytes(location: str) -> bytes:
    """A listing's bytes through Beam's FileSystems (local paths and every registered URL)."""
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    import infra.storage  # noqa: F401 - http(s):// registered in this process

    with FileSystems.open(location, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return f.read()


@dataclass(frozen=True)
class Listed:
    """A listing read and selected: the selected lines and the listing's sha256."""

    lines: list[str]
    total: int
    sha256: str


def load_listing(location: str, select: ListingSelect | None, where: str = "") -> Listed:
    """Read, parse and select (``where``: the input's setting path, for messages)."""
    prefix = f"{where}." if where else ""
    try:
        data = read_bytes(location)
    except Exception as e:  # noqa: BLE001 - missing file, unreachable server, permissions
        raise ListingError(f"{prefix}listing: {location!r} cannot be read: "
                           f"{type(e).__name__}: {e}") from None
    try:
        lines = parse_listing(data, location)
    except ListingError as e:
        raise ListingError(f"{prefix}listing: {e}") from None
    if not lines:
        raise ListingError(f"{prefix}listing: {location!r} holds no path")
    return Listed(select_lines(lines, select, f"{prefix}select"), len(lines),
                  hashlib.sha256(data).hexdigest())


def listed_files(spec) -> Iterator:
    """A ``listed_file`` for every selected line of a listing input (``InputSpec``), after
    checking the listing is the one the driver checked (its sha256)."""
    listed = load_listing(spec.listing, spec.select)
    if spec.listing_sha256 and listed.sha256 != spec.listing_sha256:
        raise ListingError(f"listing {spec.listing!r} changed after the job was submitted "
                           f"(sha256 {listed.sha256}, the driver read {spec.listing_sha256})")
    for line in listed.lines:
        yield listed_file(join(spec.base, line))


def listed_file(path: str):
    """A file named by a listing, size not asked yet: Beam ``FileMetadata`` with size 0 and
    ``listed=True`` (``file_size`` asks for it)."""
    from apache_beam.io.filesystem import FileMetadata

    m = FileMetadata(path, 0)
    m.listed = True
    return m


def file_size(metadata) -> int:
    """``metadata``'s size; for a listed file, asked of its filesystem now (after the files were
    spread over the workers: one HEAD each over http(s)); 0 if it cannot be asked (the reader
    then reports the file)."""
    if not getattr(metadata, "listed", False):
        return metadata.size_in_bytes or 0
    from apache_beam.io.filesystems import FileSystems

    try:
        found = FileSystems.match([metadata.path])[0].metadata_list
    except Exception:  # noqa: BLE001 - unreachable, refused: the read dead-letters the file
        return 0
    return found[0].size_in_bytes if found else 0
