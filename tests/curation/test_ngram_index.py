"""The compact task n-gram index: the same answers as a plain {ngram: task} dict, hash
collisions never turn into matches, stable hashes, small and picklable."""
from __future__ import annotations

import pickle

import numpy as np
from hypothesis import given, settings, strategies as st

import curation.ngram_index as ngram_index
from curation.decontamination import build_task_ngrams, find_matches, task_ngrams, words
from curation.ngram_index import TaskNgramIndex, ngram_hashes, word_hashes

VOCAB = ["a", "b", "c", "é", "ß", "日本", "x'y"]  # few words: many repeated n-grams; multi-byte UTF-8
TASKS = ["anli", "boolq", "race"]


def reference(texts: list[tuple[str, str]], n: int, min_words: int) -> dict[str, str]:
    """What the index must hold: every n-gram, attributed to the smallest task name."""
    ref: dict[str, str] = {}
    for task, text in texts:
        for g in task_ngrams(text, n, min_words):
            ref[g] = min(task, ref.get(g, task))
    return ref


def reference_matches(doc: str, ref: dict[str, str]) -> list[tuple[str, str]]:
    ws = words(doc)
    found = [(i, i + k, " ".join(ws[i:i + k])) for k in sorted({g.count(" ") + 1 for g in ref})
             for i in range(len(ws) - k + 1)]
    return [(g, ref[g]) for _, _, g in sorted(found) if g in ref]


_texts = st.lists(st.tuples(st.sampled_from(TASKS), st.lists(st.sampled_from(VOCAB), min_size=1, max_size=16)
                            .map(" ".join)), min_size=1, max_size=6)


@settings(max_examples=120, deadline=None)
@given(texts=_texts, doc=st.lists(st.sampled_from(VOCAB), max_size=60).map(" ".join),
       n=st.integers(2, 5), short=st.integers(0, 3))
def test_same_answers_as_a_dict(texts, doc, n, short):
    min_words = max(1, n - short)
    ref = reference(texts, n, min_words)
    index = build_task_ngrams(texts, n, min_words)
    assert dict(index.items()) == ref and len(index) == len(ref)
    assert all(index[g] == t and g in index for g, t in ref.items())
    assert [(m.ngram, m.task) for m in find_matches(doc, index)] == reference_matches(doc, ref)
    assert index.ngrams_per_task() == {t: sum(v == t for v in ref.values()) for t in sorted({t for t, _ in texts})}


def test_hash_collisions_never_match(monkeypatch):
    """With a word hash that maps every word to the same value, every window of every length
    collides with every index entry of that length; verification must still answer exactly."""
    monkeypatch.setattr(ngram_index, "word_hashes", lambda ws: np.zeros(len(ws), dtype=np.uint64))
    monkeypatch.setattr(ngram_index, "text_word_hashes", lambda text: np.zeros(len(words(text)), dtype=np.uint64))
    texts = [("race", "a b c d e f"), ("boolq", "f e d c b a"), ("anli", "b c d e f a"), ("race", "a a a")]
    index = build_task_ngrams(texts, 3, 3)
    ref = reference(texts, 3, 3)
    assert len(set(index.hashes.tolist())) == 1 and len(index) == len(ref)  # all entries share one hash
    assert dict(index.items()) == ref
    doc = "f e d x c b a a a b c d e f a b"
    assert [(m.ngram, m.task) for m in find_matches(doc, index)] == reference_matches(doc, ref)
    assert index.get("d x c") is None and "c b x" not in index


def test_from_ngrams_holds_exactly_the_keys():
    mapping = {"one two three": "piqa", "one two": "hans", "x y z w": "wic"}
    index = TaskNgramIndex.from_ngrams(mapping)
    assert dict(index.items()) == mapping and index.lengths == {2, 3, 4}
    assert [(m.ngram, m.task) for m in find_matches("One two three, x y z w!", mapping)] == [
        ("one two", "hans"), ("one two three", "piqa"), ("x y z w", "wic")]


def test_hashes_are_stable_across_processes():
    # golden values: the words' code point hashes (curation.word_hashes) and their combination
    # never change with PYTHONHASHSEED, the platform or the run
    from curation.word_hashes import _R

    wh = word_hashes(["the", "café"])
    assert wh.tolist() == [0xD2C966A8BEEBCB6C, 0x70E862F86FE30625]
    length, mask = 0x9E3779B97F4A7C15, 2**64 - 1
    assert ngram_hashes(wh, 2).tolist() == [(2 * length + wh[0].item() + wh[1].item() * _R) & mask] == [0xE99B9397A7A2E1EF]
    assert ngram_hashes(wh, 3).size == 0


def test_empty_index_and_documents():
    index = build_task_ngrams([("lambada", "too short")])
    assert len(index) == 0 and index.tasks == ["lambada"] and index.ngrams_per_task() == {"lambada": 0}
    assert find_matches("anything at all here", index) == [] and index.lookup([]) == []
    assert find_matches("", build_task_ngrams([("race", "a b c d e f g h")])) == []


def test_compact_and_picklable():
    texts = [("race", " ".join(f"w{i * 100 + j}" for j in range(60))) for i in range(50)]
    index = build_task_ngrams(texts)
    assert len(index) == 50 * (60 - 12)
    assert index.nbytes <= 24 * len(index) + len(index.text)
    clone = pickle.loads(pickle.dumps(index))
    assert dict(clone.items()) == dict(index.items()) and clone.lengths == {13}
