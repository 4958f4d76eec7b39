"""When an HTTP(S) request is tried again, and how long to wait first: the retry policy of
``infra.storage.http_client`` (pure: no network, no Beam, sleeping and chance injected).

A try answered 429, 408 or any 5xx, or whose connection fails, times out or is cut before its
body ended, is retried after a wait drawn uniformly between 0 and a cap that doubles with each
retry ("full jitter": workers throttled at the same moment do not return together), at least
the server's ``Retry-After``, both capped at ``backoff_max``; ``settings.retries`` failed tries
in a row end the request with ``HttpError``.  A try that delivered part of its body is not a
failure: the caller resumes at the byte it stopped at.
"""
from __future__ import annotations

import email.utils
import logging
import random
import time
from typing import Callable

from infra.storage.http_settings import HttpSettings

log = logging.getLogger("infra.storage.http_client")

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
"""Answers worth trying again (any other 5xx too): throttling ("Slow Down") and server trouble."""


class HttpError(OSError):
    """A request that failed for good: ``status`` is the last HTTP status (None: the connection
    failed), ``tries`` how many requests were made for it."""

    def __init__(self, message: str, url: str, status: int | None = None, tries: int = 1) -> None:
        super().__init__(message)
        self.url, self.status, self.tries = url, status, tries


class Retryable(Exception):
    """A failed try worth repeating: what happened, the HTTP status, the server's Retry-After."""

    def __init__(self, what: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(what)
        self.what, self.status, self.retry_after = what, status, retry_after


class Progress(Exception):
    """A try that ended early but delivered bytes: the next one resumes (not a failure)."""

    def __init__(self, cause: Retryable) -> None:
        super().__init__(cause.what)
        self.cause = cause


def backoff_delay(settings: HttpSettings, attempt: int, retry_after: float | None = None,
                  rand: Callable[[], float] = random.random) -> float:
    """Seconds to wait before retry number ``attempt`` (1-based): full jitter over an
    exponentially growing cap, at least the server's Retry-After (both capped)."""
    cap = min(settings.backoff_max, settings.backoff_initial * 2 ** (attempt - 1))
    delay = rand() * cap
    if retry_after is not None:
        delay = max(delay, min(retry_after, settings.backoff_max))
    return delay


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """A ``Retry-After`` header (seconds, or an HTTP date) as seconds from now; None if absent
    or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


def retrying(settings: HttpSettings, url: str, what: str, attempt: Callable,
             sleep: Callable[[float], None], rand: Callable[[], float],
             counted: Callable[[str], None] = lambda kind: None):
    """``attempt()`` until it returns.  ``Retryable`` answers and transport errors are tried again
    after ``backoff_delay``, at most ``settings.retries`` times in a row; ``Progress`` (a cut body
    that delivered bytes) is resumed at once and resets the count; ``HttpError`` and an
    untrusted certificate end it.  ``what`` names the request of ``url`` in messages ("GET URL
    (bytes A-B)"); ``counted("retries" | "resumed")`` is told of each retry and resumption."""
    failures, last = 0, None
    while True:
        try:
            return attempt()
        except HttpError:
            raise
        except Progress as p:
            last = p.cause
            counted("resumed")
            failures = 0
            continue
        except Retryable as e:
            last = e
        except transport_errors() as e:
            if certificate_failure(e):
                raise HttpError(f"{what}: the server's certificate does not verify "
                                f"({describe(e)}); trust its CA with http.ca_bundle", url) from None
            last = Retryable(describe(e))
        failures += 1
        if failures > settings.retries:
            raise HttpError(f"{what}: {last.what} after {failures} tries (http.retries: "
                            f"{settings.retries})", url, last.status, failures) from None
        delay = backoff_delay(settings, failures, last.retry_after, rand)
        log.info("%s: %s; retry %d of %d in %.1fs", what, last.what, failures, settings.retries, delay)
        counted("retries")
        if delay > 0:
            sleep(delay)


def transport_errors() -> tuple:
    import urllib3

    return (urllib3.exceptions.HTTPError, OSError)


def certificate_failure(e: BaseException) -> bool:
    import ssl

    seen = 0
    while e is not None and seen < 8:  # the cause chain: urllib3 wraps ssl's error
        if isinstance(e, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(e):
            return True
        e, seen = (getattr(e, "reason", None) or e.__cause__ or e.__context__), seen + 1
    return False


def describe(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:200]}"
