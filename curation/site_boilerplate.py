"""Boilerplate that repeats across a site: lines found in many documents of one host.

A site's navigation, footer, cookie notice and share bar survive main-text extraction on some
pages; on one page they look like text, across the site they are the same lines again and
again.  CCNet (Wenzek et al., 2020) and Dolma remove such paragraphs by their hashes; here a
line is boilerplate when its normalised form occurs in more than ``host_documents`` distinct
documents of the same host (``www.`` aside), or, optionally, in more than ``corpus_documents``
distinct documents of the whole corpus.  Distinct by content: copies of one page (a print
version, the page under tracking parameters, a mirror) count once, or a page a host serves four
times would lose every line of every copy, its article included.  Such lines are removed from every document that holds them, before the
heuristic filters and the tokenizer see the text.

This module is the per-document half (no Beam): which lines a document offers for counting
(``line_hashes``) and the document without the lines the counts condemned (``remove_lines``).
The counting is the pipeline's (``pipelines.filters.site_boilerplate``).
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Iterable, NamedTuple
from urllib.parse import urlsplit

from infra.hashing import stable_hash

STAGE = "site_boilerplate"
EMPTIED = "empty_after_boilerplate"
"""Removal reason of a document with nothing left once its boilerplate lines are gone."""
CORPUS = ""
"""The host part of a corpus-wide key (no real host is empty)."""


@dataclass
class SiteBoilerplateConfig:
    """The optional site-boilerplate stage (``site_boilerplate:`` in a curate config)."""

    enabled: bool = False
    """Off unless a config turns it on: MT-NLG had no such stage (a reproduction leaves it off);
    the shipped ``mtnlg`` config turns it on."""
    host_documents: int = 3
    """A line whose normalised form occurs in MORE than this many distinct documents of one host
    (copies of a page count once: ``content_key``) is removed from all of them.  A site's navigation and footer are on nearly every page; a
    sentence an article shares with three others of its site is rare and seldom worth keeping."""
    corpus_documents: int = 0
    """Also remove a line found in more than this many documents of the whole corpus (any host),
    e.g. "Share this:"; 0 turns the corpus-wide rule off."""
    min_line_chars: int = 1
    """Lines whose normalised form is shorter than this are never counted nor removed."""
    partitions: int = 64
    """Hosts are spread over this many partitions, each counted and cleaned by one task that
    holds the line counts of its hosts (~60 bytes per distinct line of a document: 5.2 MB for
    the 15,625 sample documents a task holds at a million with 64; raise it with the corpus).  The documents wait in spill files under ``<out>/_tmp/``
    meanwhile, never in the runner's driver."""

    def __post_init__(self) -> None:
        if self.host_documents < 1:
            raise ValueError(f"host_documents: must be >= 1, got {self.host_documents}")
        if self.corpus_documents < 0:
            raise ValueError(f"corpus_documents: must be >= 0 (0: off), "
                             f"got {self.corpus_documents}")
        if self.min_line_chars < 1:
            raise ValueError(f"min_line_chars: must be >= 1, got {self.min_line_chars}")
        if self.partitions < 1:
            raise ValueError(f"partitions: must be >= 1, got {self.partitions}")

    def threshold(self, host: str) -> int:
        """Documents a line may occur in, under the key's host (``CORPUS``: corpus-wide)."""
        return self.corpus_documents if host == CORPUS else self.host_documents


class _LineChars(dict):
    """``str.translate`` table of ``normalize_line``: the marks, punctuation and symbols (Unicode
    categories M*, P*, S*) go, decimal digits (what ``re``'s ``\\d`` matches) become "0", every
    other character stays; filled per code point the first time it is met."""

    def __missing__(self, code: int):
        c = chr(code)
        out = None if unicodedata.category(c)[0] in "MPS" else "0" if c.isdecimal() else code
        self[code] = out
        return out


_LINE_CHARS = _LineChars()


def host_of(url: str | None) -> str | None:
    """The URL's host, lower case, without a leading ``www.``; None without a URL or a host."""
    if not url:
        return None
    try:
        host = urlsplit(url).hostname
    except ValueError:  # a malformed URL (e.g. an unbalanced IPv6 bracket) names no host
        return None
    host = (host or "").removeprefix("www.")
    return host or None


def normalize_line(line: str) -> str:
    """CCNet's line normalisation: lower case, accents off, digits as 0, punctuation and
    symbols off, spaces collapsed: "© 2019 ACME Inc." and "© 2021 Acme, Inc" are one line."""
    return " ".join(unicodedata.normalize("NFD", line.lower()).translate(_LINE_CHARS).split())


def normalized_lines(text: str) -> list[str]:
    """``normalize_line`` of each line of ``text.split("\\n")``, the lower case, decomposition and
    table applied to the whole text at once: none of them acts across a line break (a line break
    is uncased and a starter, and stays), and one call per text cost a third of a call per line
    plus a generator per character (tests/curation/test_read_steps_equal.py compares them)."""
    text = unicodedata.normalize("NFD", text.lower()).translate(_LINE_CHARS)
    return [" ".join(line.split()) for line in text.split("\n")]


def content_key(hashes: list[int]) -> int:
    """What makes two documents of a host one document for the counts: their normalised lines
    (``line_hashes``), in order; copies differing in case, digits (a date, a view count),
    punctuation or spacing have the same key."""
    return stable_hash(" ".join(map(str, hashes)))


def line_hashes(text: str, min_chars: int = 1) -> list[int]:
    """The distinct hashes of the document's normalised lines, in order of first occurrence
    (a line repeated inside one document counts once for its host)."""
    seen: dict[int, None] = {}
    for norm in normalized_lines(text):
        if len(norm) >= min_chars:
            seen.setdefault(stable_hash(norm))
    return list(seen)


class LineCounts:
    """How many distinct contents (``content_key``) hold each line, per key (a host, or
    ``CORPUS``), counted up to ``cap``: whether a line is over its threshold needs no more.
    A line of one content (most of them) costs an int, not a set."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._seen: dict[str, dict[int, int | set[int]]] = {}

    def add(self, key: str, content: int, hashes: Iterable[int]) -> None:
        lines = self._seen.setdefault(key, {})
        for h in hashes:
            got = lines.get(h)
            if got is None:
                lines[h] = content
            elif isinstance(got, int):
                if got != content:
                    lines[h] = {got, content}
            elif len(got) < self.cap:
                got.add(content)

    def above(self, threshold: int) -> dict[str, frozenset[int]]:
        """Per key, the lines held by more than ``threshold`` distinct contents (keys without
        any are left out)."""
        out = {}
        for key, lines in self._seen.items():
            over = frozenset(h for h, got in lines.items()
                             if not isinstance(got, int) and len(got) > threshold)
            if over:
                out[key] = over
        return out


def condemned_lines(docs: Iterable[tuple[str, list[int]]], cfg: SiteBoilerplateConfig
                    ) -> tuple[dict[str, frozenset[int]], frozenset[int]]:
    """``(host, line_hashes)`` of every document -> the lines over ``host_documents`` per host,
    and those over ``corpus_documents`` corpus-wide (empty when that rule is off).  All counts
    in memory: for a set that fits (a benchmark's); the pipeline counts per host partition."""
    per_host = LineCounts(cfg.host_documents + 1)
    corpus = LineCounts(cfg.corpus_documents + 1) if cfg.corpus_documents else None
    for host, hashes in docs:
        content = content_key(hashes)
        per_host.add(host, content, hashes)
        if corpus is not None:
            corpus.add(CORPUS, content, hashes)
    everywhere = (corpus.above(cfg.corpus_documents).get(CORPUS, frozenset()) if corpus is not None
                  else frozenset())
    return per_host.above(cfg.host_documents), everywhere


class Cleaned(NamedTuple):
    text: str
    lines_removed: int
    chars_removed: int
    """``len(before) - len(after)``: the lines and the line breaks that went with them."""


def remove_lines(text: str, boilerplate: set[int] | frozenset[int], min_chars: int = 1) -> Cleaned:
    """``text`` without its lines whose hash is in ``boilerplate``; blank lines left doubled by a
    removal collapse to one paragraph break, and the text is stripped."""
    if not boilerplate:
        return Cleaned(text, 0, 0)
    kept, removed = [], 0
    for line, norm in zip(text.split("\n"), normalized_lines(text)):
        if len(norm) >= min_chars and stable_hash(norm) in boilerplate:
            removed += 1
        else:
            kept.append(line)
    if not removed:
        return Cleaned(text, 0, 0)
    out = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
    return Cleaned(out, removed, len(text) - len(out))
