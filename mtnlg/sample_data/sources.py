"""Names that tie the sample corpus to the blend: Pile subset names, source slugs, file layout.

``SOURCE_SLUGS`` maps every blend source name (as written in the raw data, e.g. a Pile
``meta.pile_set_name``) to the slug used as the first component of document ids.  Readers in
``curation/`` must produce exactly these ids; the lead may move the mapping to a shared module.
"""
from __future__ import annotations

# Blend source name -> id slug.  Pile names are the exact ``meta.pile_set_name`` strings.
SOURCE_SLUGS: dict[str, str] = {
    "Books3": "books3",
    "OpenWebText2": "openwebtext2",
    "StackExchange": "stackexchange",
    "PubMed Abstracts": "pubmed_abstracts",
    "Wikipedia (en)": "wikipedia",
    "Gutenberg (PG-19)": "gutenberg_pg19",
    "BookCorpus2": "bookcorpus2",
    "NIH ExPorter": "nih_exporter",
    "Pile-CC": "pile_cc",
    "ArXiv": "arxiv",
    "Github": "github",
    "CC-2020-50": "cc_2020_50",
    "CC-2021-04": "cc_2021_04",
    "RealNews": "realnews",
    "CC-Stories": "cc_stories",
}

# The 11 Pile subsets the MT-NLG blend uses, in blend order.
PILE_SUBSETS: tuple[str, ...] = tuple(list(SOURCE_SLUGS)[:11])

# A Pile subset the blend does not use: readers must skip and count it, not crash.
UNUSED_PILE_SUBSET = "FreeLaw"
UNUSED_PILE_SLUG = "freelaw"

CC_SNAPSHOTS: tuple[str, ...] = ("CC-2020-50", "CC-2021-04")

# Blend weights (paper Table 1 / Megatron-DeepSpeed scripts) used only to size each source.
BLEND_WEIGHTS: dict[str, float] = {
    "Books3": 0.14336, "OpenWebText2": 0.19336, "StackExchange": 0.05689,
    "PubMed Abstracts": 0.02897, "Wikipedia (en)": 0.04771, "Gutenberg (PG-19)": 0.00873,
    "BookCorpus2": 0.01007, "NIH ExPorter": 0.00208, "Pile-CC": 0.09446, "ArXiv": 0.01359,
    "Github": 0.01588, "CC-2020-50": 0.13017, "CC-2021-04": 0.15652, "RealNews": 0.08962,
    "CC-Stories": 0.00859,
}

SLUG_TO_NAME: dict[str, str] = {v: k for k, v in SOURCE_SLUGS.items()}
SLUG_TO_NAME[UNUSED_PILE_SLUG] = UNUSED_PILE_SUBSET

PILE_SLUGS = tuple(SOURCE_SLUGS[n] for n in PILE_SUBSETS) + (UNUSED_PILE_SLUG,)
CC_SLUGS = ("cc_2020_50", "cc_2021_04")
TEXT_SLUGS = PILE_SLUGS + ("realnews", "cc_stories")  # sources whose raw text is the document


def slug_for(name: str) -> str:
    """The id slug for a source or Pile subset name (unknown Pile subsets: slugified name)."""
    if name in SOURCE_SLUGS:
        return SOURCE_SLUGS[name]
    return "".join(c if c.isalnum() else "_" for c in name.lower()).strip("_")
