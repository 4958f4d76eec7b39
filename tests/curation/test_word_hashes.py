"""Word hashes straight from a text's code points (``curation.word_hashes``) are the hashes of
the words ``curation.decontamination.words`` makes, for every code point; the batch screen
(``TaskNgramIndex.candidates``, ``find_matches_batch``) answers as one text at a time."""
from __future__ import annotations

import random

import numpy as np
import pytest

import curation.ngram_index as ngram_index
import curation.word_hashes as word_hashes_module
from curation.decontamination import build_task_ngrams, find_matches, find_matches_batch, words
from curation.word_hashes import APOSTROPHES, CONTEXT_CHARS, text_word_hashes, word_hashes


def _same(text: str) -> None:
    got = text_word_hashes(text)
    want = word_hashes(words(text))
    assert got is not None and got.tolist() == want.tolist()


def test_every_code_point_reads_as_the_word_splitter_reads_it():
    # each code point alone, after a word character and on both sides of an apostrophe
    # (joined only between two word characters), in the lower case of its word
    cps = [chr(c) for c in range(0x110000) if chr(c) not in CONTEXT_CHARS]
    for i in range(0, len(cps), 1 << 16):
        _same(" ".join(f"{c}'{c} a{c}" for c in cps[i:i + (1 << 16)]))


def test_apostrophes_and_edges():
    for a in APOSTROPHES:
        for text in (f"don{a}t", f"{a}x{a}", f"a{a}{a}b", f"{a}", f"x{a}", f"{a}y z", f"rock{a}n{a}roll",
                     f"a\u02bc{a}b", f"_{a}_", "", " ", "x"):
            _same(text)


def test_context_characters_are_left_to_the_word_splitter():
    assert text_word_hashes("ISTANBUL \u0130stanbul") is None
    assert text_word_hashes("\u039f\u0394\u039f\u03a3 x") is None
    index = build_task_ngrams([("t", "\u1f41 \u03bf\u03b4\u03bf\u03c2 one two three four five six")], 8, 8)
    text = "\u1f49 \u039f\u0394\u039f\u03a3 one two three four five six"  # final sigma in context
    assert [m.ngram for m in find_matches(text, index)] == [" ".join(words(text))]


def test_long_texts_are_cut_where_no_word_spans(monkeypatch):
    monkeypatch.setattr(word_hashes_module, "CHUNK", 16)
    rng = random.Random(0)
    for _ in range(50):
        text = "".join(rng.choice(["ab", "c'd", " ", "\n", "\t", "'", "x" * 20, "\u00e9", "."])
                       for _ in range(rng.randint(0, 60)))
        _same(text)


@pytest.mark.parametrize("chunk", [40, 1 << 20])
def test_batch_screen_answers_as_one_text_at_a_time(monkeypatch, chunk):
    monkeypatch.setattr(ngram_index, "CHUNK", chunk)  # small: texts grouped into several joins
    rng = random.Random(1)
    vocab = ["alpha", "beta", "gamma", "delta", "x'y", "\u00e9t\u00e9", "\u65e5\u672c", "Zeta"]
    tasks = [("race", " ".join(rng.choice(vocab) for _ in range(6))) for _ in range(5)]
    index = build_task_ngrams(tasks, 4, 3)
    texts = []
    for i in range(120):
        body = " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 12)))
        if i % 7 == 0:
            body = body + " " + tasks[i % 5][1]
        if i % 11 == 0:
            body = "\u039f\u03a3 " + body  # a context character: screened on its own
        texts.append(body)
    # an n-gram cut in two by the boundary of consecutive texts is in neither
    texts += [" ".join(tasks[0][1].split()[:3]), " ".join(tasks[0][1].split()[3:])]
    one = [ngram_index.TaskNgramIndex._any_hit(index, h) if (h := text_word_hashes(t)) is not None else True
           for t in texts]
    # a text too long to join is left to find_matches (True), as an empty one is ruled out
    assert index.candidates(texts) == [bool(t) and (o or len(t) >= chunk) for o, t in zip(one, texts)]
    assert find_matches_batch(texts, index) == [find_matches(t, index) for t in texts]
    assert any(find_matches_batch(texts, index)) and not any(find_matches_batch(texts[-2:], index))
    assert np.asarray(index.candidates([])).size == 0
