"""``http://`` and ``https://`` as a Beam filesystem (read-only), registered by importing this
module (``infra.storage`` does; every curate DoFn's module imports it through ``pipelines.plumbing``).

Beam finds a filesystem among the loaded subclasses of ``apache_beam.io.filesystem.FileSystem``
by their ``scheme()`` (``FileSystems.get_filesystem``), so a process must have imported the
module before it opens a URL.  Workers started by ``sdk_worker_main`` (the local runner's
worker processes, Dataflow, SDK containers) also import every module named by
``--beam_plugins`` before any work; an EXTERNAL worker pool's harnesses do not, and get it
from the modules of the DoFns they unpickle.

- ``open`` returns a seekable stream (``infra.storage.http_stream``): Range requests,
  retries with backoff and jitter, resumption at the byte a cut connection stopped at, at most
  ``max_connections_per_host`` requests in flight per host and worker process.
- ``match``, ``exists``, ``size``, ``metadata`` ask the server (HEAD).  There is no globbing:
  HTTP has no directory listing, so a pattern with ``*`` is refused with a pointer to listing
  inputs (docs/config.md); a URL that answers 404 matches nothing.
- Writing, renaming and deleting raise ``BeamIOError``.

Settings (``infra.storage.http_settings.HttpSettings``) are per process: ``configure``
sets them (the curate config's ``http:`` section, applied by the driver when it loads the
config and by each read DoFn in ``setup``); until then the defaults apply.
"""
from __future__ import annotations

import email.utils
import threading
from typing import BinaryIO

from apache_beam.io.filesystem import (BeamIOError, CompressedFile, CompressionTypes, FileMetadata,
                                       FileSystem, MatchResult)

from infra.storage.http_client import Client, HttpError
from infra.storage.http_settings import HttpSettings
from infra.storage.http_stream import open_stream

NO_GLOB = ("http(s) has no directory listing, so a pattern cannot be expanded: name the files "
           "one by one, or in a listing file (inputs[].listing, docs/config.md)")
_lock = threading.Lock()
_client: Client | None = None


def configure(settings: HttpSettings | None) -> Client:
    """Use ``settings`` (None: the defaults) for this process's requests from now on; the
    same settings again keep the connections and counters as they are."""
    global _client
    settings = settings or HttpSettings()
    with _lock:
        if _client is None or _client.settings != settings:
            _client = Client(settings)
        return _client


def client() -> Client:
    """This process's client (the defaults unless ``configure`` was called)."""
    with _lock:
        current = _client
    return current if current is not None else configure(None)


def _mtime(value: str | None) -> float:
    if not value:
        return 0.0
    try:
        return email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return 0.0


class HttpFileSystem(FileSystem):
    """Read-only ``http://`` files (``HttpsFileSystem``: ``https://``)."""

    @classmethod
    def scheme(cls) -> str:
        return "http"

    def join(self, basepath: str, *paths: str) -> str:
        out = basepath
        for p in paths:
            out = out.rstrip("/") + "/" + p.lstrip("/")
        return out

    def split(self, path: str) -> tuple[str, str]:
        prefix = f"{self.scheme()}://"
        if not path.startswith(prefix):
            raise ValueError(f"{path!r} is not a {prefix} URL")
        rest = path[len(prefix):]
        if "/" not in rest:
            return path, ""
        head, tail = path.rsplit("/", 1)
        return head, tail

    def has_dirs(self) -> bool:
        return False

    def mkdirs(self, path: str) -> None:
        raise BeamIOError(f"{path}: http(s) is read-only here")

    def _list(self, dir_or_prefix: str):
        raise BeamIOError(f"{dir_or_prefix}: {NO_GLOB}")

    def match(self, patterns: list[str], limits: list[int] | None = None) -> list[MatchResult]:
        results, errors = [], {}
        for pattern in patterns:
            try:
                if "*" in pattern:
                    raise ValueError(NO_GLOB)
                results.append(MatchResult(pattern, [self.metadata(pattern)]))
            except FileNotFoundError:
                results.append(MatchResult(pattern, []))
            except Exception as e:  # noqa: BLE001 - reported per pattern, as Beam's match does
                errors[pattern] = e
        if errors:
            raise BeamIOError(f"Match operation failed: {next(iter(errors.values()))}", errors)
        return results

    def create(self, path: str, mime_type: str = "application/octet-stream",
               compression_type: str = CompressionTypes.AUTO) -> BinaryIO:
        raise BeamIOError(f"{path}: http(s) is read-only here")

    def open(self, path: str, mime_type: str = "application/octet-stream",
             compression_type: str = CompressionTypes.AUTO) -> BinaryIO:
        compression_type = FileSystem._get_compression_type(path, compression_type)
        raw = open_stream(client(), path)
        if compression_type == CompressionTypes.UNCOMPRESSED:
            return raw
        return CompressedFile(raw, compression_type=compression_type)

    def copy(self, source_file_names, destination_file_names) -> None:
        raise BeamIOError("http(s) is read-only here")

    def rename(self, source_file_names, destination_file_names) -> None:
        raise BeamIOError("http(s) is read-only here")

    def delete(self, paths) -> None:
        raise BeamIOError("http(s) is read-only here")

    def exists(self, path: str) -> bool:
        try:
            self.metadata(path)
        except FileNotFoundError:
            return False
        return True

    def size(self, path: str) -> int:
        return self.metadata(path).size_in_bytes

    def last_updated(self, path: str) -> float:
        return self.metadata(path).last_updated_in_seconds

    def checksum(self, path: str) -> str:
        info = self._head(path)
        return info.etag or str(info.size)

    def metadata(self, path: str) -> FileMetadata:
        info = self._head(path)
        return FileMetadata(path, info.size or 0, _mtime(info.last_modified))

    def _head(self, path: str):
        try:
            return client().head(path)
        except HttpError as e:
            if e.status in (404, 410):
                raise FileNotFoundError(str(e)) from None
            raise


class HttpsFileSystem(HttpFileSystem):
    """Read-only ``https://`` files; certificates verified (``http.ca_bundle``)."""

    @classmethod
    def scheme(cls) -> str:
        return "https"
