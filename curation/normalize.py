"""Text normalization applied to every document before any filter sees it.

MT-NLG's non-Common-Crawl sources were ftfy-cleaned (REFERENCE.md section 2); we apply the same
to all sources so that hashes, n-grams and lengths are computed on one canonical form.
"""
from __future__ import annotations

import re
import unicodedata

import ftfy

# Control characters (Unicode category Cc) except tab and newline; also the format characters
# that are invisible noise in web text (zero-width space, BOM, soft hyphen).  Zero-width joiners
# are kept: they are meaningful in emoji and several scripts.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b\ufeff\u00ad]")
# Unicode line/paragraph separators and NEL are line breaks, not spaces.
_LINE_SEP_RE = re.compile(r"\r\n?|[\u2028\u2029\x85\x0b\x0c]")
_INLINE_SPACE_RE = re.compile(r"[^\S\n]+")  # any whitespace except newline
_MANY_NEWLINES_RE = re.compile(r"\n{3,}")


def normalize_text(text: str) -> str:
    """ftfy fix + NFC + control-character removal + whitespace cleanup.

    Paragraph breaks survive: runs of 3+ newlines collapse to one blank line, single newlines
    stay, spaces and tabs inside a line collapse to one space, and lines are stripped.
    """
    text = ftfy.fix_text(text, normalization="NFC")
    text = unicodedata.normalize("NFC", text)  # ftfy may skip NFC on text it leaves alone
    text = _LINE_SEP_RE.sub("\n", text)
    text = _CONTROL_RE.sub("", text)
    lines = [_INLINE_SPACE_RE.sub(" ", line).strip() for line in text.split("\n")]
    text = "\n".join(lines)
    text = _MANY_NEWLINES_RE.sub("\n\n", text)
    return text.strip()
