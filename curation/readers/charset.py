"""HTML bytes -> text: the page's charset from what it says and what its bytes look like.

``decode_html(payload, content_type)`` tries, in order, the charset of the HTTP header, the
``<meta charset>`` of the first 4 KB, resiliparse's detector and UTF-8, and decodes with the
first that gives plausible markup.  The detector reads the whole page, so it runs only when the
declared charsets are missing or implausible: most pages declare one that fits (bench/RESULTS.md,
"The read stage: issue 52 item 2").
"""
from __future__ import annotations

import codecs
import re
from typing import Iterator

_META_CHARSET_RE = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_\-:.]+)""", re.I)
_HEADER_CHARSET_RE = re.compile(r"charset\s*=\s*[\"']?([a-zA-Z0-9_\-:.]+)", re.I)


def _valid_codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _candidates(payload: bytes, content_type: str) -> Iterator[str | None]:
    """The charsets to try, in order; the detector's only when asked for."""
    from resiliparse.parse.encoding import detect_encoding

    m = _HEADER_CHARSET_RE.search(content_type)
    yield _valid_codec(m.group(1)) if m else None
    m = _META_CHARSET_RE.search(payload[:4096])
    yield _valid_codec(m.group(1).decode("ascii", "ignore")) if m else None
    yield _valid_codec(detect_encoding(payload))
    yield "utf-8"


def decode_html(payload: bytes, content_type: str = "") -> str:
    """Decode HTML bytes.  Candidates in order: the charset of the HTTP header, ``<meta
    charset>`` in the first 4 KB, resiliparse's detector, UTF-8; the first that decodes to
    plausible markup wins.  Servers lie (``charset=utf-16`` on an ASCII page decodes "fine" to
    CJK noise with no ``<`` left), so a candidate that fails strictly or turns the page's
    ASCII markup into something else is skipped.  Undecodable bytes of the winner are dropped
    (web pages are messy and one bad byte must not lose the page)."""
    from resiliparse.parse.encoding import bytes_to_str

    tried = []
    for enc in _candidates(payload, content_type):
        if enc is None or enc in tried:
            continue
        tried.append(enc)
        if _plausible(payload, enc):
            return bytes_to_str(payload, enc, errors="ignore", fallback_encodings=())
    return bytes_to_str(payload, tried[0], errors="ignore")


def _plausible(payload: bytes, encoding: str, probe: int = 8192) -> bool:
    """Whether ``encoding`` decodes the page's head with at most 1% bad characters and keeps
    its markup: a page whose bytes hold ASCII ``<`` must still show ``<`` when decoded."""
    head = payload[:probe]
    try:
        text = head.decode(encoding, "replace")
    except LookupError:
        return False
    if text.count("\ufffd") > max(2, len(text) // 100):
        return False
    return b"<" not in head or "<" in text
