"""HTTP(S) requests that survive a throttling server: bounded Range reads with retries,
exponential backoff with jitter, resumption at the byte a dropped connection stopped at, and
a cap on the requests in flight to one host.  No Beam here (the filesystem around it is
``infra.storage.http_filesystem``); the transport is urllib3.

``Client(settings).read_range(url, start, end)`` returns bytes ``[start, end)`` of the file (fewer
only at its end) and what the server said about the file (size, ETag).  Failed tries are
retried as ``infra.storage.http_retry`` decides; the bytes a cut response delivered are
kept and the next try asks only for the rest, so no byte is read twice and none is skipped.
When the retries are used up the read ends with ``HttpError`` (its ``status``: the last HTTP
status, None for a connection failure).  A 404, 403, a certificate that does not verify, a
server that ignores Range requests or a file that changes while it is read (its ETag or size)
fail at once: trying again cannot help.

Why urllib3 (2.x, already in every worker's install: Beam requires requests, which requires
it): it gives per-request connect/read timeouts, thread-safe connection pools per host and raw
bodies read in steps without decoding.  requests, one layer up, adds ``Accept-Encoding: gzip``
and decodes bodies by default, which would make byte offsets refer to something else than the
file whenever a server compresses on the fly; here every request asks for ``identity``.
"""
from __future__ import annotations

import random
import re
import threading
import time
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urljoin, urlsplit

from infra.storage.http_retry import (RETRY_STATUSES, HttpError, Progress, Retryable,
                                          backoff_delay, certificate_failure, describe,
                                          retry_after_seconds, retrying, transport_errors)
from infra.storage.http_settings import HttpSettings

__all__ = ["Client", "FileInfo", "HttpError", "Transfers", "backoff_delay", "retry_after_seconds"]
MAX_REDIRECTS = 5
_CHUNK = 64 * 1024
_CONTENT_RANGE_RE = re.compile(r"bytes\s+(?:(\d+)-(\d+)|\*)/(\d+|\*)", re.I)


@dataclass(frozen=True)
class FileInfo:
    """What a server said about a file: its size (None: not said yet) and validators."""

    size: int | None = None
    etag: str | None = None
    last_modified: str | None = None


@dataclass
class Transfers:
    """This process's requests, for measurements (bench, tests): never used for decisions."""

    requests: int = 0
    bytes: int = 0
    retries: int = 0
    resumed: int = 0


def _urllib3_opener(settings: HttpSettings):
    """``open(method, url, headers) -> response``: one urllib3 pool manager, pools per host
    sized to the cap, certificates always verified (against ``ca_bundle`` when given)."""
    import urllib3

    kw = {"cert_reqs": "CERT_REQUIRED"}
    if settings.ca_bundle:
        from infra.storage.staging import local_copy  # a pkg:// or s3:// bundle, staged

        kw["ca_certs"] = local_copy(settings.ca_bundle)
    manager = urllib3.PoolManager(num_pools=64, maxsize=settings.max_connections_per_host, **kw)
    timeout = urllib3.Timeout(connect=settings.timeout, read=settings.timeout)

    def open_(method: str, url: str, headers: dict):
        return manager.request(method, url, headers=headers, retries=False, redirect=False,
                               timeout=timeout, preload_content=False, decode_content=False)

    return open_


def _host_key(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class Client:
    """Requests of one worker process (``infra.storage.http_filesystem`` keeps one per
    settings).  ``opener``, ``sleep`` and ``rand`` are replaceable for tests."""

    def __init__(self, settings: HttpSettings, opener=None, sleep: Callable[[float], None] = time.sleep,
                 rand: Callable[[], float] = random.random) -> None:
        self.settings = settings
        self._opener = opener
        self._sleep, self._rand = sleep, rand
        self._lock = threading.Lock()
        self._slots: dict[str, threading.BoundedSemaphore] = {}
        self.transfers = Transfers()

    def _open(self, method: str, url: str, headers: dict):
        if self._opener is None:
            with self._lock:
                if self._opener is None:
                    self._opener = _urllib3_opener(self.settings)
        return self._opener(method, url, headers)

    def _slot(self, url: str) -> threading.BoundedSemaphore:
        key = _host_key(url)
        with self._lock:
            slot = self._slots.get(key)
            if slot is None:
                slot = self._slots[key] = threading.BoundedSemaphore(self.settings.max_connections_per_host)
            return slot

    # -- one request, redirects followed ------------------------------------------------------

    def _send(self, method: str, url: str, headers: dict):
        """The final response (redirects followed, each from the original's headers)."""
        for _ in range(MAX_REDIRECTS + 1):
            self._count("requests")
            resp = self._open(method, url, headers)
            if resp.status in (301, 302, 303, 307, 308) and resp.headers.get("Location"):
                url = urljoin(url, resp.headers["Location"])
                resp.drain_conn()
                resp.release_conn()
                continue
            return resp
        raise HttpError(f"{method} {url}: more than {MAX_REDIRECTS} redirects", url, resp.status)

    def _check_status(self, method: str, url: str, resp, what: str) -> None:
        status = resp.status
        if status in RETRY_STATUSES or 500 <= status < 600:
            reason = getattr(resp, "reason", "") or ""
            raise Retryable(f"HTTP {status} {reason}".strip(), status,
                            retry_after_seconds(resp.headers.get("Retry-After")))
        if status >= 400:
            raise HttpError(f"{method} {url}{what}: HTTP {status} "
                            f"{getattr(resp, 'reason', '') or ''}".rstrip(), url, status)

    def _retry(self, url: str, what: str, attempt):
        return retrying(self.settings, url, what, attempt, self._sleep, self._rand, self._count)

    def _count(self, kind: str, n: int = 1) -> None:
        with self._lock:
            setattr(self.transfers, kind, getattr(self.transfers, kind) + n)

    # -- public ----------------------------------------------------------------------------------

    def head(self, url: str) -> FileInfo:
        """Size and validators of ``url`` (HEAD; a server that refuses HEAD is asked for its
        first byte instead).  ``HttpError`` with status 404 when it is not there."""

        def attempt() -> FileInfo:
            with self._slot(url):
                resp = self._send("HEAD", url, {"Accept-Encoding": "identity"})
                try:
                    if resp.status in (405, 501):
                        return None  # no HEAD here: the first byte's Content-Range tells
                    self._check_status("HEAD", url, resp, "")
                    length = resp.headers.get("Content-Length")
                    return FileInfo(int(length) if length and length.isdigit() else None,
                                    resp.headers.get("ETag"), resp.headers.get("Last-Modified"))
                finally:
                    resp.release_conn()

        info = self._retry(url, f"HEAD {url}", attempt)
        if info is None or info.size is None:
            _, info = self.read_range(url, 0, 1)
        return info

    def read_range(self, url: str, start: int, end: int,
                   expect: FileInfo | None = None) -> tuple[bytes, FileInfo]:
        """Bytes ``[start, end)`` of ``url`` (fewer only where the file ends) and the file's
        info; ``expect``: what an earlier request said (a different ETag or size: the file
        changed while being read, ``HttpError``)."""
        got = bytearray()
        info = [expect or FileInfo()]
        want = end - start

        def attempt() -> bytes:
            pos = start + len(got)
            what = f" (bytes {pos}-{end - 1})"
            with self._slot(url):
                resp = self._send("GET", url, {"Range": f"bytes={pos}-{end - 1}",
                                               "Accept-Encoding": "identity"})
                complete = False  # the body read to its end: the connection can be reused
                try:
                    if resp.status == 416:  # the range starts at or after the end
                        info[0] = self._merge(url, info[0], _total_of(resp))
                        return bytes(got)
                    self._check_status("GET", url, resp, what)
                    info[0] = self._merge(url, info[0], *self._validate(url, resp, pos))
                    before = len(got)
                    try:
                        for chunk in resp.stream(_CHUNK, decode_content=False):
                            self._count("bytes", len(chunk))
                            got.extend(chunk[:want - len(got)])
                            if len(got) >= want and resp.status != 206:
                                break  # a whole-file answer (Range ignored at byte 0): enough
                        else:
                            complete = True
                    except transport_errors() as e:
                        if len(got) > before and not certificate_failure(e):
                            raise Progress(Retryable(f"connection cut after {len(got) - before} "
                                                     f"bytes ({describe(e)})")) from None
                        raise
                    size = info[0].size
                    if len(got) < want and (size is None or start + len(got) < size):
                        if len(got) > before:
                            raise Progress(Retryable("response ended early"))
                        raise Retryable("response ended before its first byte")
                    return bytes(got)
                finally:
                    if complete:
                        resp.release_conn()
                    else:
                        resp.close()  # a cut, refused or abandoned body: not reusable

        data = self._retry(url, f"GET {url} (bytes {start}-{end - 1})", attempt)
        return data, info[0]

    def _validate(self, url: str, resp, pos: int) -> tuple[int | None, str | None, str | None]:
        """(size, ETag, Last-Modified) of a 200/206 answer to a Range request from ``pos``."""
        etag, modified = resp.headers.get("ETag"), resp.headers.get("Last-Modified")
        if resp.status == 206:
            m = _CONTENT_RANGE_RE.match(resp.headers.get("Content-Range", ""))
            if not m or m.group(1) is None or int(m.group(1)) != pos:
                raise HttpError(f"GET {url}: asked for bytes from {pos}, the server sent "
                                f"{resp.headers.get('Content-Range')!r}", url, 206)
            total = m.group(3)
            return (int(total) if total != "*" else None), etag, modified
        if pos != 0:
            raise HttpError(f"GET {url}: the server ignores Range requests (HTTP {resp.status} to "
                            f"a request from byte {pos}); it cannot be read in parts", url, resp.status)
        length = resp.headers.get("Content-Length")
        return (int(length) if length and length.isdigit() else None), etag, modified

    def _merge(self, url: str, old: FileInfo, size: int | None, etag: str | None = None,
               modified: str | None = None) -> FileInfo:
        """The file's info after one more answer; a changed file is an ``HttpError``."""
        if (old.etag and etag and old.etag != etag) or (
                old.size is not None and size is not None and old.size != size):
            raise HttpError(f"GET {url}: the file changed while it was read (ETag {old.etag!r} -> "
                            f"{etag!r}, size {old.size} -> {size})", url)
        return FileInfo(size if size is not None else old.size, etag or old.etag,
                        modified or old.last_modified)


def _total_of(resp) -> int | None:
    m = _CONTENT_RANGE_RE.match(resp.headers.get("Content-Range", ""))
    return int(m.group(3)) if m and m.group(3) != "*" else None
