"""``decode_html`` asks the charset detector only when the declared charsets are missing or
implausible (issue 52), and decodes exactly as when it asked every time."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from curation.readers import charset
from curation.readers.charset import _plausible, _valid_codec, decode_html

FIXTURES = Path(__file__).parent / "fixtures"
TEXT = "Grüße aus Köln: déjà vu, naïve café — «quoted» ½"


def eager(payload: bytes, content_type: str = "") -> str:
    """``decode_html`` as it was before issue 52: every candidate computed first."""
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding

    m = charset._HEADER_CHARSET_RE.search(content_type)
    m2 = charset._META_CHARSET_RE.search(payload[:4096])
    candidates = [_valid_codec(m.group(1)) if m else None,
                  _valid_codec(m2.group(1).decode("ascii", "ignore")) if m2 else None,
                  _valid_codec(detect_encoding(payload)), "utf-8"]
    tried = []
    for enc in candidates:
        if enc is None or enc in tried:
            continue
        tried.append(enc)
        if _plausible(payload, enc):
            return bytes_to_str(payload, enc, errors="ignore", fallback_encodings=())
    return bytes_to_str(payload, tried[0], errors="ignore")


def crafted() -> list[bytes]:
    page = f"<html><head>{{meta}}</head><body><p>{TEXT}</p></body></html>"
    out = []
    for enc in ("utf-8", "latin-1", "cp1252", "utf-16", "shift_jis", "koi8-r"):
        for meta in ("", f'<meta charset="{enc}">', '<meta charset="utf-8">', '<meta charset="bogus">'):
            try:
                out.append(page.format(meta=meta).encode(enc, "replace"))
            except LookupError:
                pass
    return out + [b"", b"\xff\xfe<\x00p\x00>\x00", bytes(range(256))]


HEADERS = ["", "text/html", "text/html; charset=utf-8", "text/html; charset=ISO-8859-1",
           "text/html; charset=utf-16", "text/html; charset=bogus", "text/html; charset=shift_jis"]


@pytest.mark.parametrize("content_type", HEADERS)
def test_decodes_as_when_every_candidate_was_computed(content_type):
    pages = crafted() + [gzip.decompress(p.read_bytes()) for p in sorted(FIXTURES.glob("*/*.html.gz"))]
    for payload in pages:
        assert decode_html(payload, content_type) == eager(payload, content_type), payload[:80]


def test_the_detector_runs_only_when_the_declared_charset_does_not_fit(monkeypatch):
    import resiliparse.parse.encoding as encoding

    calls = []
    real = encoding.detect_encoding
    monkeypatch.setattr(encoding, "detect_encoding", lambda data: calls.append(1) or real(data))
    page = f'<html><head><meta charset="utf-8"></head><body><p>{TEXT}</p></body></html>'
    assert TEXT in decode_html(page.encode("utf-8"), "text/html")
    assert calls == []
    assert TEXT in decode_html(page.replace('<meta charset="utf-8">', "").encode("cp1252"), "text/html")
    assert calls == [1]
