"""The blend's sources: slugs, display names, families, and the dedup keep priority.

A *slug* (``books3``, ``cc_2020_50``) is what ``Document.source`` holds and what document ids
start with; the *display name* is the paper's Table 1 name used in reports.  The family says
which reader produces the source.
"""
from __future__ import annotations

from dataclasses import dataclass

FAMILIES = ("pile", "common_crawl", "realnews", "cc_stories")


@dataclass(frozen=True)
class SourceInfo:
    slug: str
    display_name: str
    family: str
    pile_set_name: str | None = None  # the ``meta.pile_set_name`` value, Pile sources only


SOURCES: tuple[SourceInfo, ...] = (
    SourceInfo("books3", "Books3", "pile", "Books3"),
    SourceInfo("openwebtext2", "OpenWebText2", "pile", "OpenWebText2"),
    SourceInfo("stackexchange", "Stack Exchange", "pile", "StackExchange"),
    SourceInfo("pubmed_abstracts", "PubMed Abstracts", "pile", "PubMed Abstracts"),
    SourceInfo("wikipedia", "Wikipedia", "pile", "Wikipedia (en)"),
    SourceInfo("gutenberg_pg19", "Gutenberg (PG-19)", "pile", "Gutenberg (PG-19)"),
    SourceInfo("bookcorpus2", "BookCorpus2", "pile", "BookCorpus2"),
    SourceInfo("nih_exporter", "NIH ExPorter", "pile", "NIH ExPorter"),
    SourceInfo("pile_cc", "Pile-CC", "pile", "Pile-CC"),
    SourceInfo("arxiv", "ArXiv", "pile", "ArXiv"),
    SourceInfo("github", "GitHub", "pile", "Github"),
    SourceInfo("cc_2020_50", "CC-2020-50", "common_crawl"),
    SourceInfo("cc_2021_04", "CC-2021-04", "common_crawl"),
    SourceInfo("realnews", "RealNews", "realnews"),
    SourceInfo("cc_stories", "CC-Stories", "cc_stories"),
)

SOURCE_BY_SLUG: dict[str, SourceInfo] = {s.slug: s for s in SOURCES}
DISPLAY_NAMES: dict[str, str] = {s.slug: s.display_name for s in SOURCES}
SOURCE_FAMILY: dict[str, str] = {s.slug: s.family for s in SOURCES}

# ``meta.pile_set_name`` -> slug, for the eleven Pile subsets in the MT-NLG blend.
PILE_SUBSET_TO_SOURCE: dict[str, str] = {
    s.pile_set_name: s.slug for s in SOURCES if s.pile_set_name is not None
}

# Accounting bucket for Pile records whose subset is not in the blend (FreeLaw, DM Mathematics,
# ...) and for Pile input whose subset cannot be determined (a dead letter).  These records are
# read and counted, never kept.
PILE_UNUSED_SOURCE = "pile_other"

# Dedup keep priority: higher wins when documents from different sources are duplicates.
# The paper says only that "higher-quality datasets" win; the exact order is not confirmed
# (REFERENCE.md section 2), so this is a default a config may override.  Rationale: curated
# Pile subsets (books, reference, code, papers) > news and stories (curated, but web-sourced)
# > Pile-CC (filtered web) > raw Common Crawl snapshots (newest snapshot kept over older).
DEFAULT_SOURCE_PRIORITY: dict[str, int] = {
    "wikipedia": 100,
    "books3": 95,
    "gutenberg_pg19": 95,
    "bookcorpus2": 90,
    "arxiv": 90,
    "pubmed_abstracts": 90,
    "nih_exporter": 85,
    "github": 85,
    "stackexchange": 80,
    "openwebtext2": 75,
    "realnews": 60,
    "cc_stories": 60,
    "pile_cc": 40,
    "cc_2021_04": 20,
    "cc_2020_50": 10,
}


def display_name(slug: str) -> str:
    """The report name of a source slug; unknown slugs are returned unchanged."""
    return DISPLAY_NAMES.get(slug, slug)
