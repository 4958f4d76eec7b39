"""Text normalization applied to every document before any filter sees it.

MT-NLG's non-Common-Crawl sources were ftfy-cleaned (REFERENCE.md section 2); we apply the same
to all sources so that hashes, n-grams and lengths are computed on one canonical form.
"""
from __future__ import annotations

import re
import unicodedata

import ftfy

from infra.compat.ftfy import fix_lines, fix_segment

# ftfy.fix_text works line by line; a line of printable ASCII, tabs and its newline, without "&"
# (HTML entities), is one it provably returns unchanged: encoding fixes return ASCII as it is,
# and every other fixer (quotes, ligatures, widths, C1/control characters, terminal escapes,
# surrogates, line breaks, NFC) only touches characters outside that set.
_FTFY_MAY_CHANGE = re.compile(r"[^\t\n\x20-\x25\x27-\x7e]")
_FTFY_CONFIG = ftfy.TextFixerConfig(explain=False)  # fix_text's defaults (NFC included)

# Control characters (Unicode category Cc) except tab and newline; also the format characters
# that are invisible noise in web text (zero-width space, BOM, soft hyphen).  Zero-width joiners
# are kept: they are meaningful in emoji and several scripts.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b\ufeff\u00ad]")
# Unicode line/paragraph separators and NEL are line breaks, not spaces: "\r\n" becomes one
# "\n", each other of these characters one "\n" (a translate, only where one occurs).
_LINE_SEP_CHARS_RE = re.compile(r"[\r\u2028\u2029\x85\x0b\x0c]")
_LINE_SEP_TABLE = {ord(c): "\n" for c in "\r\u2028\u2029\x85\x0b\x0c"}
# Any character of the two steps above: one search instead of a search and a substitution over
# every text (most hold none of them).
_CONTROL_OR_LINE_SEP_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b\ufeff\u00ad\u2028\u2029]")
# Whitespace other than a newline or a space: with "  " what _INLINE_SPACE_RE needs to match (a
# text holding neither is left alone; the check costs a third of the substitution's scan).
_OTHER_SPACE_RE = re.compile(r"[^\S\n ]")
# Runs of whitespace other than newline become one space.  A lone space is already that, so
# only the runs that differ are matched (a run starting " x" is a lone space when x is not
# whitespace; replacing every lone space cost more than the rest of the cleanup).
_INLINE_SPACE_RE = re.compile(r"(?: [^\S\n]|[^\S\n ])[^\S\n]*")
_SPACE_AT_NEWLINE_RE = re.compile(r" \n ?|\n ")  # a line's end spaces, once runs are one space
_MANY_NEWLINES_RE = re.compile(r"\n{3,}")


def normalize_text(text: str) -> str:
    """ftfy fix + NFC + control-character removal + whitespace cleanup.

    Paragraph breaks survive: runs of 3+ newlines collapse to one blank line, single newlines
    stay, spaces and tabs inside a line collapse to one space, and lines are stripped.
    """
    text = fix_text(text)
    text = unicodedata.normalize("NFC", text)  # ftfy may skip NFC on text it leaves alone
    if _CONTROL_OR_LINE_SEP_RE.search(text):
        if _LINE_SEP_CHARS_RE.search(text):
            text = text.replace("\r\n", "\n").translate(_LINE_SEP_TABLE)
        text = _CONTROL_RE.sub("", text)
    # Each line's spaces collapsed and the line stripped, on the whole text at once: once every
    # run of inline whitespace is one space, a line's ends hold at most one space each.  Each
    # substitution only where what it matches can be: "  " or other whitespace; " \n" or "\n ".
    if "  " in text or _OTHER_SPACE_RE.search(text):
        text = _INLINE_SPACE_RE.sub(" ", text)
    if " \n" in text or "\n " in text:
        text = _SPACE_AT_NEWLINE_RE.sub("\n", text)
    if "\n\n\n" in text:
        text = _MANY_NEWLINES_RE.sub("\n\n", text)
    return text.strip()


def fix_text(text: str) -> str:
    """Exactly ``ftfy.fix_text(text)``, without handing ftfy the lines it leaves alone.

    The segments are ftfy's own (its lines, and the same rule that HTML entities stop being
    unescaped once a segment contains "<"); the lines are fixed together by
    ``infra.compat.ftfy.fix_lines`` where no line may hold mojibake, else each line that ftfy
    may change by ``infra.compat.ftfy.fix_segment`` (``ftfy.fix_and_explain``'s steps, each
    skipped where it provably returns its input).  Equality with ftfy is tested on the sample
    corpus, every code point and adversarial text."""
    if not _FTFY_MAY_CHANGE.search(text):
        return text
    if len(text) > _FTFY_CONFIG.max_decode_length:  # ftfy also cuts long lines: its own loop
        return _fix_text_by_segments(text)
    # HTML entities are unescaped in a line only while no line up to and including it holds
    # "<": the lines before the first "<" line are unescaped, that line and the rest are not.
    # Each part is fixed whole (``fix_lines``) unless one of its lines may hold mojibake.
    first_lt = text.find("<")
    cut = len(text) if first_lt < 0 else text.rfind("\n", 0, first_lt) + 1
    out = []
    for part, unescape in ((text[:cut], True), (text[cut:], False)):
        if _FTFY_MAY_CHANGE.search(part):
            fixed = fix_lines(part, unescape)
            part = _fix_line_by_line(part, unescape) if fixed is None else fixed
        out.append(part)
    return "".join(out)


def _fix_line_by_line(text: str, unescape: bool) -> str:
    """Only the lines holding a character ftfy may change are visited, each by ``fix_segment``."""
    out, pos = [], 0
    while (m := _FTFY_MAY_CHANGE.search(text, pos)) is not None:
        start = text.rfind("\n", pos, m.start()) + 1 or pos
        end = text.find("\n", m.start()) + 1 or len(text)
        out.append(text[pos:start])
        out.append(fix_segment(text[start:end], unescape))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _fix_text_by_segments(text: str) -> str:
    unescape, out, pos = True, [], 0
    while pos < len(text):
        end = text.find("\n", pos) + 1 or len(text)
        end = min(end, pos + _FTFY_CONFIG.max_decode_length)
        segment = text[pos:end]
        if unescape and "<" in segment:
            unescape = False
        if _FTFY_MAY_CHANGE.search(segment):
            segment = fix_segment(segment, unescape)
        out.append(segment)
        pos = end
    return "".join(out)
