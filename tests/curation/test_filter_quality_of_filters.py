"""Precision and recall of the language and heuristic filters on the sample's planted truth.

The default sample corpus (``python -m mtnlg.sample_data``, seed 0, 800 documents) is read with
the real readers and passed through normalize -> language id -> heuristics with the default
config (``skip_sources`` included), exactly as the curate job's per-document stages do.  Each
planted ``spam`` / ``non_english`` document and each ``clean`` document is then scored as
removed or kept by the filter chain (read-stage removals such as a Common Crawl page whose
extraction is empty count as removed: that is where boilerplate-only pages go).

Floors, and why: the planted categories are unambiguous by construction (real foreign-language
text; spam built to trip Gopher's repetition / symbol / stop-word rules; clean = 200-900 words
of real English prose or code), so a correctly wired chain catches essentially all of them.
Measured on seed 0: language recall 12/12, spam recall 24/24, 0 of 695 parsed clean documents
removed.  Recall floors of 0.9 leave room for a different generator seed while failing when one
rule family breaks (e.g. language id off loses half the non-English recall); the precision floor
of 0.95 and a clean false-removal rate of at most 2% fail if a rule starts eating prose.
"""
from __future__ import annotations

import dataclasses
import glob
import os

import pytest

from curation.document import Document, Removal
from curation.heuristics import HeuristicsConfig, apply_heuristics
from curation.language import LanguageConfig, keep_language, make_identifier
from curation.normalize import normalize_text
from curation.readers import read_cc_stories, read_pile, read_realnews, read_warc
from pipelines.config.job import CurateConfig

RECALL_FLOOR = 0.9
PRECISION_FLOOR = 0.95
CLEAN_FALSE_REMOVAL_CEILING = 0.02


def read_sample(root: str) -> list:
    """Every reader record of the sample corpus (documents, removals, dead letters)."""
    out = []
    for p in sorted(glob.glob(f"{root}/pile/*.jsonl.zst")):
        with open(p, "rb") as f:
            out += read_pile(f, p, id_path=os.path.relpath(p, root))
    for slug, snap in (("cc_2020_50", "CC-2020-50"), ("cc_2021_04", "CC-2021-04")):
        for p in sorted(glob.glob(f"{root}/common_crawl/{snap}/*.warc.gz")):
            with open(p, "rb") as f:
                out += read_warc(f, p, slug, id_path=os.path.relpath(p, root))
    for p in sorted(glob.glob(f"{root}/realnews/*.jsonl")):
        with open(p, "rb") as f:
            out += read_realnews(f, p, id_path=os.path.relpath(p, root))
    for p in sorted(glob.glob(f"{root}/cc_stories/*.txt")):
        with open(p, "rb") as f:
            out += read_cc_stories(f, p, id_path=os.path.relpath(p, root))
    return out


def verdicts(records: list) -> dict[str, str]:
    """id -> ``kept`` | ``read/<reason>`` | ``language/<reason>`` | ``heuristics/<reason>``."""
    skip_sources = next(f for f in dataclasses.fields(CurateConfig) if f.name == "skip_sources")
    skip = {k: set(v) for k, v in skip_sources.default_factory().items()}
    lang_cfg, heur_cfg = LanguageConfig(), HeuristicsConfig()
    ident = make_identifier(lang_cfg)
    out: dict[str, str] = {}
    for rec in records:
        if isinstance(rec, Removal):
            out[rec.doc.id] = f"read/{rec.reason}"
        if not isinstance(rec, Document):
            continue
        text = normalize_text(rec.text)
        verdict = "kept"
        if rec.source not in skip["language"]:
            r = keep_language(*ident.predict(text), lang_cfg)
            verdict = "kept" if r.keep else f"language/{r.reason}"
        if verdict == "kept" and rec.source not in skip["heuristics"]:
            r = apply_heuristics(text, heur_cfg)
            verdict = "kept" if r.keep else f"heuristics/{r.reason}"
        out[rec.id] = verdict
    return out


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    from mtnlg.sample_data import write_sample_corpus

    root = str(tmp_path_factory.mktemp("sample"))
    truth = write_sample_corpus(root)
    return truth, verdicts(read_sample(root))


def _pr(truth: dict, got: dict[str, str], positive: str, removed_by: tuple[str, ...]):
    """Precision/recall of 'removed' (by a verdict starting with ``removed_by``) for planted
    ``positive`` documents against ``clean`` ones, over documents the readers parsed."""
    cats = {i: c for i, c in truth["primary"].items() if c in (positive, "clean") and i in got}
    removed = {i for i in cats if got[i].startswith(removed_by)}
    tp = sum(cats[i] == positive for i in removed)
    positives = sum(c == positive for c in cats.values())
    precision = tp / len(removed) if removed else 1.0
    recall = tp / positives
    return precision, recall, positives, len(removed)


def test_language_filter_precision_recall(sample):
    truth, got = sample
    precision, recall, n_pos, n_removed = _pr(truth, got, "non_english", ("language/", "read/"))
    print(f"language: precision {precision:.3f} recall {recall:.3f} ({n_pos} non-English, {n_removed} removed)")
    assert n_pos >= 10, "the sample must plant enough non-English documents to measure"
    assert recall >= RECALL_FLOOR
    assert precision >= PRECISION_FLOOR


def test_spam_filter_precision_recall(sample):
    truth, got = sample
    precision, recall, n_pos, n_removed = _pr(truth, got, "spam", ("heuristics/", "language/", "read/"))
    print(f"spam: precision {precision:.3f} recall {recall:.3f} ({n_pos} spam, {n_removed} removed)")
    assert n_pos >= 10
    assert recall >= RECALL_FLOOR
    assert precision >= PRECISION_FLOOR


def test_heuristics_alone_catch_spam_that_reaches_them(sample):
    """Spam that passes the language stage must be caught by the heuristics themselves."""
    truth, got = sample
    reached = [i for i, c in truth["primary"].items()
               if c == "spam" and i in got and not got[i].startswith(("read/", "language/"))]
    caught = [i for i in reached if got[i].startswith("heuristics/")]
    assert reached, "some spam must reach the heuristic stage"
    assert len(caught) / len(reached) >= RECALL_FLOOR


def test_clean_documents_are_rarely_removed(sample):
    truth, got = sample
    clean = [i for i, c in truth["primary"].items() if c == "clean" and i in got]
    wrongly = {i: got[i] for i in clean if got[i] != "kept"}
    rate = len(wrongly) / len(clean)
    print(f"clean removed: {len(wrongly)}/{len(clean)} = {rate:.3%}")
    assert rate <= CLEAN_FALSE_REMOVAL_CEILING, sorted(wrongly.items())[:10]


def test_too_short_documents_are_removed_before_tokenization(sample):
    truth, got = sample
    short = [i for i, c in truth["primary"].items() if c == "too_short" and i in got]
    removed = [i for i in short if got[i] != "kept"]
    # The rest sit in sources the heuristics skip (code); tokenize's min_tokens removes them.
    assert len(removed) / len(short) >= 0.5
