"""One ftfy segment fixed exactly as ``ftfy.fix_and_explain`` fixes it, without its costs where
nothing is to be fixed.

Why: on the sample mix, ftfy was a quarter of the read stage.  A line holding one curly quote
costs ftfy about 0.3 ms: every pass of its loop searches the whole line with its mojibake
regex (``ftfy.badness.BADNESS_RE``: ~40 alternatives tried at every character) and runs three
``str.translate`` over it (ligatures, widths, control characters: a dict lookup per
character), and a line it changed is passed over twice.

``fix_segment(text, unescape_html)`` runs ``fix_and_explain``'s loop with ftfy's own functions,
in ftfy's order, skipping a step only where it provably returns its input:

- ``fix_encoding`` returns its input unless ``is_bad`` finds mojibake.  Every alternative of
  ``BADNESS_RE`` needs a non-ASCII character and matches at most ``W`` characters (both read
  from the compiled pattern when this module loads), so only the windows of ``W - 1``
  characters around each non-ASCII character are searched; ASCII text is never bad.
- Each of the eight character fixers changes nothing in a text holding none of the characters
  it acts on (C1 controls, ligatures, full/half widths, curly quotes, line breaks other than
  ``\\n``, surrogates, ESC, control characters: read from ftfy's own tables and patterns).
- ``unescape_html`` needs an ``&``.

``supported()`` holds only for the ftfy versions in ``VERIFIED`` whose replaced code is byte for
byte the code read (sha256 of each source below); elsewhere ``fix_segment`` is plain
``ftfy.fix_and_explain``.  tests/curation/test_normalize_ftfy.py compares ``fix_text`` with
ftfy on the sample corpus, every code point and generated mojibake.
"""
from __future__ import annotations

import functools
import logging
import re
import unicodedata

VERIFIED = ((6, 3), (6, 3))
_SOURCES = {  # what fix_segment reproduces or relies on, as read in ftfy 6.3.1
    "ftfy.fix_and_explain": "a7614bc85159609196b3a042b3400b2cb88a8936dbb626544a1292f8c3a9ec57",
    "ftfy.fix_encoding": "c9e19bf9aecf666864d64e665d0792b8af19b151e69f9690631a92290a2cd8bd",
    "ftfy.fix_encoding_and_explain": "e98db423935e6203066a5d401e010648596aca3c4ee3dcfff4bb57c9339ae9bb",
    "ftfy._fix_encoding_one_step_and_explain": "995180c6d3d524b27245073a2d87342e0ddf9494f00e9adb4d7b4734852587f7",
    "ftfy.TextFixerConfig": "f8c4cbb55c35d6276fbe744fd6922fdcca7c21b891ec496f469826b1de9db299",
    "ftfy.badness.is_bad": "6904699bf7b85320b88d8b32efc6555bdd3ee205ca0acd495aafcc584059546b",
    "ftfy.fixes.unescape_html": "8e002660dddc7300f36ebd2c25cd075fb380fa9d4ead1dd1b9d8d90c76c76883",
    "ftfy.fixes.fix_c1_controls": "bd4a7af80baa74608e076d47ff744a88ac36e0414120d456191aaabf97de4ef7",
    "ftfy.fixes.fix_latin_ligatures": "c79fc9e63a3ce5c73de90693afed7abf7063978bda3d74945811bbc91cbfa9b1",
    "ftfy.fixes.fix_character_width": "4b7f7cbac792aba2f592d253a8687fb116207657d77f967f1292f09bd23d6aae",
    "ftfy.fixes.uncurl_quotes": "d1c45d55757ed6fd6eadbea8d85e34424cddf22848136a3781a2e2aea42298e7",
    "ftfy.fixes.fix_line_breaks": "001d6914785976a7be06bb83b8911511b8ef8813b2b14d5d638a763bf9005d4e",
    "ftfy.fixes.fix_surrogates": "cec4d567dbde9724400c9b6be5439264f6923ff42cb86ccc969b3afdd5abe34d",
    "ftfy.fixes.remove_terminal_escapes": "3dffb1310b13527da49eb512daac2fed5643669feb1b85bcb1b5a27eb9334f4d",
    "ftfy.fixes.remove_control_chars": "c9a8cc1db2a6ab0c2a45b28f531229d335cb401b6b465d885a1bb9316809d79a",
}
CHARACTER_FIXERS = ("fix_c1_controls", "fix_latin_ligatures", "fix_character_width", "uncurl_quotes",
                    "fix_line_breaks", "fix_surrogates", "remove_terminal_escapes", "remove_control_chars")
"""``fix_and_explain``'s fixers after ``fix_encoding``, in its order."""
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=1)
def supported() -> bool:
    """Whether the installed ftfy is a verified version with the verified code."""
    from importlib import metadata

    from infra.compat import CompatError, require_sources

    try:
        version = metadata.version("ftfy")
        require_sources("ftfy", version, VERIFIED, _SOURCES, f"{__name__}'s fast path")
        _parts()
    except (CompatError, metadata.PackageNotFoundError, OSError, TypeError, AttributeError,
            ImportError) as e:
        log.warning("ftfy's fast path is off (%s): plain ftfy.fix_and_explain is used", e)
        return False
    return True


def _char_class(chars) -> str:
    return "[" + "".join(re.escape(c) for c in sorted(set(chars))) + "]"


@functools.lru_cache(maxsize=1)
def _parts():
    """(((characters, fixer) for each character fixer), their union as a regex, badness window W or None,
    regex of the characters some of which every badness match holds, or None)."""
    import ftfy
    from ftfy import chardata

    acts_on = {  # the characters each fixer changes or needs (all of them, from ftfy's tables)
        "fix_c1_controls": {chr(c) for c in range(0x80, 0xA0)},
        "fix_latin_ligatures": set(map(chr, chardata.LIGATURES)),
        "fix_character_width": set(map(chr, chardata.WIDTH_MAP)),
        "uncurl_quotes": _class_members(chardata.SINGLE_QUOTE_RE) | _class_members(chardata.DOUBLE_QUOTE_RE),
        "fix_line_breaks": set("\r\u2028\u2029\x85"),
        "fix_surrogates": {chr(c) for c in range(0xD800, 0xE000)},
        "remove_terminal_escapes": {"\x1b"},
        "remove_control_chars": set(map(chr, chardata.CONTROL_CHARS)),
    }
    fixers = tuple((frozenset(acts_on[name]), ftfy.FIXERS[name]) for name in CHARACTER_FIXERS)
    fixable = re.compile(_char_class(set().union(*acts_on.values())))
    width = _badness_window(ftfy.badness.BADNESS_RE)
    needed = _badness_chars(ftfy.badness.BADNESS_RE) if width is not None else None
    return fixers, fixable, width, None if needed is None else re.compile(_char_class(needed))


def _class_members(pattern: re.Pattern) -> set[str]:
    """The characters of a one-character-class pattern such as ``[\\u201c-\\u201f]``."""
    from re import _constants as c, _parser

    (op, items), = _parser.parse(pattern.pattern, pattern.flags).data
    if op is not c.IN:
        raise TypeError(f"{pattern.pattern!r} is not one character class")
    out = set()
    for kind, value in items:
        if kind is c.LITERAL:
            out.add(chr(value))
        elif kind is c.RANGE:
            out.update(chr(v) for v in range(value[0], value[1] + 1))
        else:
            raise TypeError(f"{pattern.pattern!r}: {kind} in a character class")
    return out


def _badness_window(pattern: re.Pattern) -> int | None:
    """Longest match of ``pattern`` if every alternative needs a non-ASCII character and nothing
    looks beyond the match (only ``^``, which a window starting after 0 never matches, as
    ``search(text, pos)`` documents), else None (then ``is_bad`` searches whole segments)."""
    from re import _constants as c, _parser

    parsed = _parser.parse(pattern.pattern, pattern.flags)
    low, high = parsed.getwidth()
    if high >= c.MAXREPEAT or len(parsed.data) != 1 or parsed.data[0][0] is not c.BRANCH:
        return None
    allowed = {c.LITERAL, c.IN, c.ANY, c.MAX_REPEAT, c.MIN_REPEAT, c.AT}

    def ops(items):
        for op, av in items:
            yield op, av
            if op in (c.MAX_REPEAT, c.MIN_REPEAT):
                yield from ops(av[2])

    def non_ascii_only(op, av) -> bool:
        if op is c.LITERAL:
            return av > 0x7F
        if op is c.IN:
            return all((k is c.LITERAL and v > 0x7F) or (k is c.RANGE and v[0] > 0x7F) for k, v in av)
        return False

    for alternative in parsed.data[0][1][1]:
        if any(op not in allowed or (op is c.AT and av is not c.AT_BEGINNING)
               for op, av in ops(alternative)):
            return None
        if not any(non_ascii_only(op, av) for op, av in alternative):
            return None
    return high


def _non_ascii_chars(op, av) -> set[str] | None:
    """The characters a LITERAL or IN element matches if all are non-ASCII, else None."""
    from re import _constants as c

    if op is c.LITERAL:
        return {chr(av)} if av > 0x7F else None
    if op is c.IN:
        out: set[str] = set()
        for k, v in av:
            if k is c.LITERAL and v > 0x7F:
                out.add(chr(v))
            elif k is c.RANGE and v[0] > 0x7F:
                out.update(map(chr, range(v[0], v[1] + 1)))
            else:
                return None
        return out
    return None


def _badness_chars(pattern: re.Pattern) -> set[str] | None:
    """Characters of which every match of ``pattern`` holds one: for each alternative, those of
    its smallest element that matches one non-ASCII character and is not inside a repeat (so the
    alternative cannot match without it).  None if an alternative has none, or case is ignored.

    Why: ``is_bad``'s windows then need to surround only these characters, not every non-ASCII
    one: the curly apostrophe, most accented letters and every non-Latin script are not among
    them, and a segment holding none of them is not bad without a search."""
    from re import _constants as c, _parser

    if pattern.flags & re.IGNORECASE:
        return None
    parsed = _parser.parse(pattern.pattern, pattern.flags)
    if len(parsed.data) != 1 or parsed.data[0][0] is not c.BRANCH:
        return None
    needed: set[str] = set()
    for alternative in parsed.data[0][1][1]:
        options = [x for x in (_non_ascii_chars(op, av) for op, av in alternative) if x]
        if not options:
            return None
        needed |= min(options, key=len)
    return needed


def may_be_bad(text: str) -> bool:
    """``ftfy.badness.is_bad(text)``, searching only near the characters every match holds
    (``_badness_chars``; near every non-ASCII character where those are unknown)."""
    from ftfy.badness import BADNESS_RE

    width, needed = _parts()[2:]
    if text.isascii():
        return False
    if width is None:
        return bool(BADNESS_RE.search(text))
    spans: list[list[int]] = []
    for m in (needed or _NON_ASCII).finditer(text):
        start, end = m.start() - width + 1, m.start() + width
        if spans and start <= spans[-1][1]:
            spans[-1][1] = end
        else:
            spans.append([max(start, 0), end])
    if len(spans) > 8:  # dense non-ASCII text: one pass costs less than many searches
        return bool(BADNESS_RE.search(text))
    return any(BADNESS_RE.search(text, a, b) for a, b in spans)


def fix_segment(text: str, unescape_html: bool = True) -> str:
    """``ftfy.fix_and_explain(text, TextFixerConfig(explain=False, unescape_html=...)).text``
    with ``unescape_html`` "auto" (True) or False."""
    import ftfy

    if not supported():
        config = ftfy.TextFixerConfig(explain=False, unescape_html="auto" if unescape_html else False)
        return ftfy.fix_and_explain(text, config).text
    fixers, fixable = _parts()[:2]
    unescape_html = unescape_html and "<" not in text  # fix_and_explain's "auto", decided once
    while True:
        original = text
        if unescape_html and "&" in text:
            text = ftfy.fixes.unescape_html(text)
        if may_be_bad(text):
            text = ftfy.fix_encoding(text)
        text = unicodedata.normalize("NFC", _fix_characters(text, fixers, fixable))
        if text == original:
            return text


def _fix_characters(text: str, fixers, fixable: re.Pattern) -> str:
    """The character fixers of one pass, each only where its characters are: the characters found
    by one scan (again after a fixer changed the text), not one search per fixer over the text."""
    found = set(fixable.findall(text))
    if found:
        for chars, fixer in fixers:
            if not found.isdisjoint(chars):
                fixed = fixer(text)
                if fixed != text:
                    text, found = fixed, set(fixable.findall(fixed))
    return text


_HTML_ENTITY_PATTERN = r"&#?[0-9A-Za-z]{1,24};"
"""ftfy 6.3's entity pattern (``ftfy.fixes.HTML_ENTITY_RE``): no match holds a line break."""


def fix_lines(text: str, unescape_html: bool = True) -> str | None:
    """``fix_segment`` of every line of ``text`` (with its "\\n", as ``ftfy.fix_text`` cuts them),
    joined, computed on the whole text at once; None where a line may hold mojibake (then the
    caller fixes line by line).  All lines take one ``unescape_html``.

    Why it is the same: but for ``fix_encoding``, every step of the loop acts on each line alone
    (entities, the character fixers and NFC neither match nor compose across a line break), so a
    pass over the text is the passes over its lines joined, and it leaves the text unchanged
    exactly when it leaves every line unchanged; ``fix_encoding`` runs only on a line ``is_bad``
    finds, and ``_lines_may_be_bad`` finds every such line (or more, then None).  Why: one loop
    per page instead of one per line holding a non-ASCII character, each with its own passes."""
    import ftfy

    if not supported():
        return None
    fixers, fixable, width, needed = _parts()
    if width is None or needed is None or ftfy.fixes.HTML_ENTITY_RE.pattern != _HTML_ENTITY_PATTERN:
        return None
    unescape_html = unescape_html and "<" not in text
    while True:
        original = text
        if unescape_html and "&" in text:
            text = ftfy.fixes.unescape_html(text)
        if _lines_may_be_bad(text, width, needed):
            return None
        text = unicodedata.normalize("NFC", _fix_characters(text, fixers, fixable))
        if text == original:
            return text


def _lines_may_be_bad(text: str, width: int, needed: re.Pattern) -> bool:
    """True if ``is_bad`` finds some line of ``text`` bad (and maybe where it finds none: a match
    across a line break).  A match is at most ``width`` characters and holds one of ``needed``,
    so it lies in the window around that character; a match anchored by ``^`` starts its line,
    so each line start that close to such a character is also tried on its own."""
    from ftfy.badness import BADNESS_RE

    if text.isascii():
        return False
    spans: list[list[int]] = []
    starts: set[int] = set()
    for m in needed.finditer(text):
        q = m.start()
        start, end = q - width + 1, q + width
        if spans and start <= spans[-1][1]:
            spans[-1][1] = end
        else:
            spans.append([max(start, 0), end])
        line = text.rfind("\n", 0, q) + 1
        if line and q - line < width:  # a line start other than the text's (which windows see)
            starts.add(line)
    return (any(BADNESS_RE.search(text, a, b) for a, b in spans)
            or any(BADNESS_RE.match(text[p:p + width]) for p in starts))
