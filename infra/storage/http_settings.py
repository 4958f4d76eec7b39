"""How the ``http://`` and ``https://`` filesystem talks to a server: the ``http:`` section of a
curate config (docs/config.md, "Path listings and HTTPS inputs"), one typed dataclass checked
when the config is loaded.  Imports nothing but the standard library, so the config layer and
the filesystem (``infra.storage.http_filesystem``) share it."""
from __future__ import annotations

from dataclasses import dataclass

MIN_BLOCK_BYTES = 64 * 1024


@dataclass(frozen=True)
class HttpSettings:
    """Retries, backoff, timeouts and limits of every HTTP(S) request a worker process makes."""

    retries: int = 6
    """A request answered 429 or 5xx, or whose connection fails, times out or drops before its
    body ended, is tried again up to this many times; then the read fails and the file's
    remaining records become one dead letter naming the status.  A try that received part of
    its body does not count: the next one resumes at the byte where it stopped."""
    backoff_initial: float = 1.0
    """Seconds; the n-th retry of a request waits a random time between 0 and
    ``min(backoff_max, backoff_initial * 2**(n-1))`` ("full jitter": workers throttled at the
    same moment do not come back at the same moment), or the server's ``Retry-After`` if that is
    longer (capped at ``backoff_max``).  0: no wait (tests)."""
    backoff_max: float = 60.0
    """Seconds: the longest wait before one retry."""
    timeout: float = 60.0
    """Seconds to connect, and the longest silence while a response is read; either counts as
    a failed try."""
    max_connections_per_host: int = 8
    """Requests in flight to one host from ONE worker process (not the whole job: a job with
    W worker processes may have W times this many).  A request holds its slot from sending until
    its body has arrived (at most ``block_bytes``), never while the reader parses what it got."""
    block_bytes: int = 8 * 1024 * 1024
    """The most bytes one GET asks for (a Range request).  A read after a seek starts with a
    small request and doubles it while the reads stay sequential, up to this; each open file
    holds at most one block in memory."""
    ca_bundle: str | None = None
    """A PEM file of the certificate authorities to trust for ``https://``, instead of the
    system's (OpenSSL's default paths; ``SSL_CERT_FILE`` is honoured): a local path every worker
    has, ``pkg://...``, or an ``s3://``/``gs://`` URL (staged on each worker).  Certificates are
    always verified; there is no setting that turns verification off."""

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise ValueError(f"retries: must be >= 0, got {self.retries}")
        if self.backoff_initial < 0:
            raise ValueError(f"backoff_initial: must be >= 0 seconds, got {self.backoff_initial}")
        if self.backoff_max < self.backoff_initial:
            raise ValueError(f"backoff_max: must be >= backoff_initial ({self.backoff_initial}), "
                             f"got {self.backoff_max}")
        if self.timeout <= 0:
            raise ValueError(f"timeout: must be > 0 seconds, got {self.timeout}")
        if self.max_connections_per_host < 1:
            raise ValueError(f"max_connections_per_host: must be >= 1, got "
                             f"{self.max_connections_per_host}")
        if self.block_bytes < MIN_BLOCK_BYTES:
            raise ValueError(f"block_bytes: must be >= {MIN_BLOCK_BYTES}, got {self.block_bytes}")
        if self.ca_bundle is not None:
            if not self.ca_bundle.strip():
                raise ValueError("ca_bundle: an empty path; leave it out to use the system's CAs")
            if self.ca_bundle.lower().startswith(("http://", "https://")):
                raise ValueError(f"ca_bundle: {self.ca_bundle!r} would be fetched over the "
                                 "connection it is meant to verify; give a local path, pkg:// "
                                 "or an object-store URL")
