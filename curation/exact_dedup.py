"""Exact deduplication: a content hash per document and the deterministic keep rule.

The hash is taken over a canonical form (lowercased, whitespace collapsed) so that documents
differing only in case or spacing collide.  The keep rule decides which member of a duplicate
group (exact or fuzzy) survives; the fuzzy-dedup stage uses the same rule.
"""
from __future__ import annotations

import re

import xxhash

from curation.document import Document
from curation.sources import DEFAULT_SOURCE_PRIORITY

_WS_RE = re.compile(r"\s+")


def canonical_text(text: str) -> str:
    """Lowercase, collapse all whitespace runs to one space, strip."""
    return _WS_RE.sub(" ", text.lower()).strip()


def text_hash(text: str) -> str:
    """xxh3-128 hex digest (32 chars) of the canonical text; stable across processes and runs."""
    return xxhash.xxh3_128_hexdigest(canonical_text(text).encode("utf-8"))


def text_digest(text: str) -> bytes:
    """The same hash as 16 raw bytes (``text_digest(t).hex() == text_hash(t)``): the exact-dedup
    key that is shuffled."""
    return xxhash.xxh3_128_digest(canonical_text(text).encode("utf-8"))


def priority_map(priority: list[str] | None) -> dict[str, int] | None:
    """Config's highest-first list of sources -> ``keep_rank``'s {source: priority}."""
    if priority is None:
        return None
    return {source: len(priority) - i for i, source in enumerate(priority)}


def outranked_older(new_sources, older_sources, priority: list[str] | None = None) -> list[tuple[str, str]]:
    """(new source, older source) pairs in which the keep rule ranks the new source higher.

    ``curate --dedup-against`` keeps an older run's documents whatever their rank (they are in
    the corpus already), so for these pairs its result differs from one joint run, which would
    keep the new document and drop the older one."""
    prio = DEFAULT_SOURCE_PRIORITY if priority is None else priority_map(priority)
    return sorted({(n, o) for n in new_sources for o in older_sources
                   if prio.get(n, -1) > prio.get(o, -1)})


def keep_rank(doc: Document, priority: dict[str, int] | None = None) -> tuple:
    """Sort key of the keep rule: the group member with the SMALLEST key is kept.

    Order: source priority (higher wins; unknown sources rank lowest, -1), then quality score
    (higher wins; unscored documents rank below scored ones), then longer text, then the
    lexicographically smallest id, which makes the choice total and deterministic.
    ``min(group, key=lambda d: keep_rank(d, priority))`` is the survivor.
    """
    prio = DEFAULT_SOURCE_PRIORITY if priority is None else priority
    score = doc.quality_score
    return (
        -prio.get(doc.source, -1),
        0 if score is not None else 1,
        -(score if score is not None else 0.0),
        -len(doc.text),
        doc.id,
    )
