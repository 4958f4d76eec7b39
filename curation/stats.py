"""Small, consistent length measures for stats rows and histograms (see docs/run-layout.md)."""
from __future__ import annotations

from curation.document import Document


def count_words(text: str) -> int:
    """Whitespace-separated words, the ``words`` column of stats/documents.parquet."""
    return len(text.split())


def count_chars(text: str) -> int:
    """Unicode code points, the ``chars`` column."""
    return len(text)


def length_stats(doc: Document) -> dict[str, int]:
    """``{"chars": ..., "words": ...}`` of a document's current text."""
    return {"chars": count_chars(doc.text), "words": count_words(doc.text)}
