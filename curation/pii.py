"""Personal data in text: find e-mail addresses, IP addresses and phone numbers, replace them.

``find_pii(text, kinds)`` returns the spans (kind, start, end) in code points of ``text``;
``redact(text, spans, placeholders)`` replaces each span by its kind's placeholder.  The stats
keep the spans' offsets in the text as it was before the replacement, never the values.

Each kind is a candidate regex followed by checks that reject the look-alikes real text is
full of (measured on a planted set, bench/pii/pii.py):

* e-mail: ``local@domain.tld`` with a letters-only TLD of 2-24 characters; ``icon@2x.png``
  style asset names (an image or code file extension as the "TLD") are not addresses, and
  ``pkg@1.2.3`` never matches (the TLD must be letters).
* IP address: dotted-quad IPv4 with every octet in 0..255 and no leading zeros, not part of a
  longer dotted number (OIDs, ``10.0.19041.1``), and not right after a word that makes it a
  version or a section number (``version 1.2.3.4``, ``v1.2.3.4``, ``section 2.1.3.4``);
  IPv6 (eight groups, or ``::`` compression) validated by ``ipaddress``, so clock times and
  ``std::vector`` are not addresses.
* phone number: a North American number written with separators or parentheses
  (``(415) 555-0132``, ``415.555.0132``, ``+1 415 555 0132``: area code and exchange start with
  2-9) or an international number with a ``+`` country code and 8-15 digits in groups
  (``+44 20 7946 0958``).  Plain runs of digits are not phones (ids, ISBN-13s, amounts), nor
  dates (``2021-04-12``), ISBNs (the word ISBN before it), coordinates or numeric ranges, which
  the group structure or the context excludes.

Pure functions, no Beam; ``pipelines.filters.pii`` wraps them as a curate stage.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

KINDS = ("email", "ip_address", "phone_number")
DEFAULT_PLACEHOLDERS = {"email": "<EMAIL>", "ip_address": "<IP_ADDRESS>",
                        "phone_number": "<PHONE_NUMBER>"}


@dataclass
class PiiConfig:
    """The ``pii`` section of a curate config: the optional redaction stage."""

    enabled: bool = False
    """Find and replace personal data right after text normalization, so every later stage,
    ``removed/`` and the shards see the redacted text.  Off in the MT-NLG reproduction config
    (the paper did not redact), on in the demo."""
    kinds: list[str] = field(default_factory=lambda: list(KINDS))
    """Which kinds to find: any of ``email``, ``ip_address``, ``phone_number``."""
    placeholders: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_PLACEHOLDERS))
    """Text put in place of each kind; kinds not given keep their default placeholder."""

    def __post_init__(self) -> None:
        self.placeholders = {**DEFAULT_PLACEHOLDERS, **(self.placeholders or {})}
        self.validate()

    def validate(self) -> None:
        unknown = [k for k in self.kinds if k not in KINDS]
        if unknown:
            raise ValueError(f"kinds: unknown kind {unknown[0]!r}; expected any of {list(KINDS)}")
        extra = [k for k in self.placeholders if k not in KINDS]
        if extra:
            raise ValueError(f"placeholders: unknown kind {extra[0]!r}; expected any of {list(KINDS)}")
        for k, v in self.placeholders.items():
            if not isinstance(v, str):
                raise ValueError(f"placeholders: {k} must be a string, got {v!r}")


@dataclass(frozen=True, order=True)
class Span:
    """``text[start:end]`` is personal data of ``kind`` (offsets in code points)."""

    start: int
    end: int
    kind: str

    def to_dict(self) -> dict:
        return {"kind": self.kind, "start": self.start, "end": self.end}


# -- e-mail -------------------------------------------------------------------------------------
_EMAIL_RE = re.compile(
    r"(?<![\w.%+-])"
    r"[A-Za-z0-9_%+-]+(?:\.[A-Za-z0-9_%+-]+)*"           # local part, no leading/double dots
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
    r"([A-Za-z]{2,24})(?![\w-]|\.[A-Za-z0-9])")
_FILE_EXTENSIONS = frozenset(
    "png jpg jpeg gif svg webp bmp ico tif tiff pdf js mjs ts css scss html htm json xml yaml yml "
    "md txt py rb go rs java php vue jsx tsx".split())


def _emails(text: str):
    for m in _EMAIL_RE.finditer(text):
        if m.group(1).lower() in _FILE_EXTENSIONS:
            continue
        yield m.start(), m.end()


# -- IP addresses -------------------------------------------------------------------------------
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4_RE = re.compile(rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?![\w]|\.\d)")
_NOT_AN_ADDRESS_BEFORE = re.compile(
    r"(?:\b(?:v|ver|version|versions|release|rel|build|firmware|update|kernel|section|sections|"
    r"chapter|clause|article|rule|step|figure|fig|table|item|no|§)\.?\s*|\bv)$", re.IGNORECASE)
_IPV6_RE = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
# What every dotted quad holds: its last three dots, each followed by an octet's digits.
_IPV4_NEED = re.compile(r"\.\d{1,3}\.\d{1,3}\.\d")
# Colons less than 11 characters apart, as one run.  An IPv6 match holds two or more colons at
# most 5 apart, starts at most 4 characters before its first and ends at most 4 after its last,
# so every match lies in (run start - 4, run end + 4) of a run of two or more colons; scanning
# only those windows finds exactly the matches a scan of the whole text finds (windows of two
# runs are 7+ characters apart, so no match crosses one), without trying the pattern at every
# position of the text (it may start with no hex digit): the whole-text scan was half the
# stage's time on a long page with 7 colons somewhere in it.
_COLON_RUN_RE = re.compile(r":(?:[^:]{0,9}:)*")


def _ips(text: str):
    for m in _IPV4_RE.finditer(text) if _IPV4_NEED.search(text) else ():
        if _NOT_AN_ADDRESS_BEFORE.search(text, max(0, m.start() - 12), m.start()):
            continue
        yield m.start(), m.end()
    if "::" in text or text.count(":") >= 7:
        for m in _ipv6_candidates(text):
            s = m.group(0)
            if ("::" not in s and s.count(":") != 7) or s.strip(":") == "":
                continue
            try:
                ipaddress.IPv6Address(s)
            except ValueError:
                continue
            yield m.start(), m.end()


def _ipv6_candidates(text: str):
    """``_IPV6_RE.finditer(text)``, scanning only the windows around runs of colons.  The
    window ends one character after a match's furthest end, so the look-ahead sees the text."""
    for run in _COLON_RUN_RE.finditer(text):
        if run.end() - run.start() > 1:
            yield from _IPV6_RE.finditer(text, max(0, run.start() - 4), min(len(text), run.end() + 5))


# -- phone numbers ------------------------------------------------------------------------------
_SEP = r"[ .\-\u2010-\u2013]"
_NANP_RE = re.compile(
    rf"(?<![\w+\-./])(?:(?:\+1|1){_SEP}?)?"
    rf"(?:\(([2-9]\d\d)\)\s?|([2-9]\d\d)({_SEP}))"     # (415) 555-0132 | 415-555-0132
    rf"([2-9]\d\d)({_SEP})(\d{{4}})(?![\w\-]|[.,]\d)")
_INTL_RE = re.compile(
    rf"(?<![\w+])\+[1-9]\d{{0,2}}(?:{_SEP}?\(\d{{1,4}}\))?(?:{_SEP}\d{{1,5}}){{2,6}}(?![\w\-]|[.,]\d)")
# What every match holds: a North American number's exchange, separator and line number; an
# international one's "+" and first digit.
_NANP_NEED = re.compile(rf"[2-9]\d\d{_SEP}\d{{4}}")
_INTL_NEED = re.compile(r"\+[1-9]")
_NOT_A_PHONE_BEFORE = re.compile(r"(?:\bisbn(?:-1[03])?:?|\bissn:?|\bdoi:?|\border|\binvoice)\s*#?\s*$",
                                 re.IGNORECASE)


def _phones(text: str):
    for m in _NANP_RE.finditer(text) if _NANP_NEED.search(text) else ():
        sep1, sep2 = m.group(3), m.group(5)
        if sep1 is not None and sep1 != sep2:  # 415-555.0132 mixes separators: not a number's form
            continue
        if _NOT_A_PHONE_BEFORE.search(text, max(0, m.start() - 16), m.start()):
            continue
        yield m.start(), m.end()
    for m in _INTL_RE.finditer(text) if _INTL_NEED.search(text) else ():
        digits = sum(c.isdigit() for c in m.group(0))
        if not 8 <= digits <= 15:  # E.164 numbers have at most 15 digits
            continue
        yield m.start(), m.end()


_FINDERS = {"email": _emails, "ip_address": _ips, "phone_number": _phones}
# Cheap gates: a full pattern runs only on a text holding what every one of its matches holds
# (an "@"; ``_IPV4_NEED``, ``_NANP_NEED``, ``_INTL_NEED`` inside the finders).  The full patterns
# try their look-behinds and alternatives at every position, the gates a short pattern or a
# literal: on the sample mix the full scans of every document were nearly all of the stage's
# CPU, and fewer than one document in ten passes a gate.
_NEEDS = {"email": "@", "ip_address": None, "phone_number": None}


def find_pii(text: str, kinds=KINDS) -> list[Span]:
    """Non-overlapping spans of personal data in ``text``, sorted by start.  Where two kinds
    overlap (an IP inside an e-mail's domain), the earlier and then longer span wins."""
    found = []
    for kind in kinds:
        need = _NEEDS[kind]
        if need is not None and need not in text:
            continue
        found += [Span(s, e, kind) for s, e in _FINDERS[kind](text)]
    found.sort(key=lambda sp: (sp.start, -(sp.end - sp.start)))
    out: list[Span] = []
    for sp in found:
        if out and sp.start < out[-1].end:
            continue
        out.append(sp)
    return out


def redact(text: str, spans: list[Span], placeholders: dict[str, str]) -> str:
    """``text`` with each span replaced by ``placeholders[span.kind]``."""
    if not spans:
        return text
    pieces, pos = [], 0
    for sp in spans:
        pieces += [text[pos:sp.start], placeholders[sp.kind]]
        pos = sp.end
    pieces.append(text[pos:])
    return "".join(pieces)


def redact_pii(text: str, cfg: PiiConfig) -> tuple[str, list[Span]]:
    """(redacted text, spans in the original ``text``)."""
    spans = find_pii(text, cfg.kinds)
    return redact(text, spans, cfg.placeholders), spans


def counts_by_kind(spans) -> dict[str, int]:
    """Matches per kind of a span list (``Span`` s or their dicts)."""
    out: dict[str, int] = {}
    for sp in spans:
        kind = sp.kind if isinstance(sp, Span) else sp["kind"]
        out[kind] = out.get(kind, 0) + 1
    return out
