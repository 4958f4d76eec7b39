"""Source table consistency, picklability of every config/object, readers never raise."""
from __future__ import annotations

import io
import pickle

import zstandard
from hypothesis import given, settings, strategies as st

from curation.decontamination import DecontaminationConfig, build_task_ngrams
from curation.heuristics import HeuristicsConfig
from curation.language import LanguageConfig, LanguageIdentifier
from curation.readers import read_pile, read_realnews, read_warc, reader_for
from curation.sources import (
    DEFAULT_SOURCE_PRIORITY, FAMILIES, PILE_SUBSET_TO_SOURCE, SOURCE_FAMILY, SOURCES, display_name,
)


def test_source_table():
    assert len(SOURCES) == 15 and len(PILE_SUBSET_TO_SOURCE) == 11
    assert PILE_SUBSET_TO_SOURCE["Wikipedia (en)"] == "wikipedia"
    assert PILE_SUBSET_TO_SOURCE["Gutenberg (PG-19)"] == "gutenberg_pg19"
    assert PILE_SUBSET_TO_SOURCE["Github"] == "github"
    assert set(DEFAULT_SOURCE_PRIORITY) == set(SOURCE_FAMILY)
    assert set(SOURCE_FAMILY.values()) == set(FAMILIES)
    assert display_name("cc_2020_50") == "CC-2020-50" and display_name("nope") == "nope"
    # curated Pile > news/stories > Pile-CC > raw snapshots
    p = DEFAULT_SOURCE_PRIORITY
    assert min(p[s] for s in PILE_SUBSET_TO_SOURCE.values() if s != "pile_cc") > p["realnews"] > p["pile_cc"]
    assert p["pile_cc"] > p["cc_2021_04"] > p["cc_2020_50"]


def test_everything_pickles():
    index = build_task_ngrams([("squad", "one two three four five six seven eight nine")])
    objs = [HeuristicsConfig(), LanguageConfig(), DecontaminationConfig(), LanguageIdentifier(), index,
            reader_for("warc")]
    for obj in objs:
        clone = pickle.loads(pickle.dumps(obj))
        assert type(clone) is type(obj)
    assert pickle.loads(pickle.dumps(index)).lengths == {9}


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=2000))
def test_readers_never_raise_on_arbitrary_bytes(data):
    for reader, name in ((read_pile, "f.jsonl.zst"), (read_pile, "f.jsonl"), (read_realnews, "f.jsonl")):
        list(reader(io.BytesIO(data), name))
    list(read_pile(io.BytesIO(zstandard.ZstdCompressor().compress(data)), "z.jsonl.zst"))
    list(read_warc(io.BytesIO(data), "f.warc", "cc_2020_50"))
    list(read_warc(io.BytesIO(b"WARC/1.0\r\n" + data), "g.warc", "cc_2020_50"))


def test_length_stats():
    from curation.document import Document
    from curation.stats import length_stats

    assert length_stats(Document("a", "books3", "two  words\n")) == {"chars": 11, "words": 2}
