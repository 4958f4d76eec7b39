"""Per-document steps on large documents (issue 45): the rewritten parts give the answers the
plain definitions give, and sane answers on documents of the giant kinds (no document here is
over ~1 MB; ``bench/hostile/doc_size.py`` measures the cost up to 10 MB)."""
from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from curation import minhash, pii
from curation.heuristics import HeuristicsConfig, decide, score_document
from curation.repetition import WordNgrams, _hash_groups, _walk
from test_heuristics import reference_duplicate_ngram_chars


def test_hash_groups_hold_every_repeated_hash_and_no_unique_one_apart_from_merged_low_bits():
    rng = np.random.default_rng(0)
    flat = rng.integers(0, 1 << 63, 5000, dtype=np.uint64) << np.uint64(1)
    flat[[10, 20, 30]] = flat[5]  # a value met four times
    flat[4000] = flat[3999] ^ np.uint64(1)  # differs only in the low bits the positions replace
    groups = _hash_groups(flat)
    values, counts = np.unique(flat, return_counts=True)
    truly = np.isin(flat, values[counts > 1])
    assert (groups[truly] >= 0).all() and len(set(groups[[5, 10, 20, 30]])) == 1
    assert set(np.flatnonzero((groups >= 0) & ~truly)) == {3999, 4000}  # merged: a collision
    assert groups[3999] == groups[4000] != groups[5]
    assert _hash_groups(np.arange(1, 100, dtype=np.uint64) << np.uint64(40)) is None


def test_walk_is_exact_whatever_strings_share_a_group():
    """Collisions (different strings in one group) must never change the measure: every
    position in one group, or groups by a weak hash, give the plain walk's answer."""
    rng = random.Random(3)
    for trial in range(30):
        words = [rng.choice(["a", "b", "ab", "ba", "c"]) for _ in range(rng.randint(5, 120))]
        joined, offsets = "".join(words), [0]
        for w in words:
            offsets.append(offsets[-1] + len(w))
        for n in (1, 2, 3, 5):
            m = len(words) - n + 1
            if m < 1:
                continue
            ngrams = [joined[offsets[i]:offsets[i + n]] for i in range(m)]
            want = reference_duplicate_ngram_chars(words, n)
            for groups in ([0] * m, [len(x) % 2 for x in ngrams], [hash(x) % 3 for x in ngrams]):
                assert _walk(joined, offsets, list(range(m)), groups, n) == want, (words, n)


def test_duplicate_ngrams_of_a_repetitive_long_document_equal_the_plain_walk():
    rng = random.Random(1)
    sentences = [" ".join(rng.choice("ab abc b c cd d e".split()) for _ in range(12)) for _ in range(40)]
    words = " ".join(rng.choice(sentences) for _ in range(1500)).split()  # ~18k words, mostly repeats
    got = WordNgrams(words).duplicate_ngram_chars(range(5, 11))
    for n in range(5, 11):
        assert got[n] == reference_duplicate_ngram_chars(words, n), n


def _giant_kinds(nbytes: int) -> dict[str, str]:
    rng = random.Random(0)
    han = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]
    cjk = "\n".join("".join(rng.choices(han, k=rng.randint(40, 300))) + "。" for _ in range(nbytes // 500))
    line = "".join(rng.choices("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", k=nbytes))
    spam = " ".join(["buy the cheap watches with a card"] * (nbytes // 34))
    return {"cjk": cjk, "line": line, "spam": spam}


def test_giant_documents_get_sane_scores_and_decisions():
    cfg = HeuristicsConfig()
    docs = _giant_kinds(300_000)
    s = score_document(docs["cjk"])  # words are whole paragraphs: far too long to be words
    assert s["heur_words"] == docs["cjk"].count("\n") + 1 and s["heur_mean_word_length"] > 40
    assert decide(s, cfg).reason == "long_mean_word_length"  # 600 "words" of 40-300 characters
    s = score_document(docs["line"])
    assert s["heur_words"] == 1 and s["heur_duplicate_5gram_char_ratio"] == 0
    assert decide(s, cfg).reason == "too_few_words"
    s = score_document(docs["spam"])
    assert s["heur_duplicate_10gram_char_ratio"] > 0.75 and s["heur_top_2gram_char_ratio"] > 0.3
    assert decide(s, cfg).reason == "top_2gram_chars"


def test_a_long_text_in_a_batch_gets_the_signature_and_set_it_gets_alone():
    """A text of more shingles than one step holds is reduced step by step (bounded memory),
    to exactly what ``text_signature`` and the shingle-hash set give."""
    rng = random.Random(2)
    vocab = [f"w{i}" for i in range(3000)]
    long_text = " ".join(rng.choices(vocab, k=3 * minhash._CHUNK))
    texts = ["a short text of only a few words here and there", long_text, "another short one " * 5]
    got = minhash.text_features(texts, with_sets=True, min_shingles=1)
    for text, feature in zip(texts, got):
        assert np.array_equal(feature[0], minhash.text_signature(text, min_shingles=1))
        assert np.array_equal(feature[1], np.unique(minhash.shingle_hashes(text)))


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="0123456789abcdefxyzAF:. -_\n", max_size=200))
def test_ipv6_windows_find_exactly_what_the_whole_text_scan_finds(text):
    whole = [m.span() for m in pii._IPV6_RE.finditer(text)]
    assert [m.span() for m in pii._ipv6_candidates(text)] == whole


def test_ipv6_windows_on_long_texts_and_run_edges():
    addresses = ["2001:db8::1", "fe80::1:2:3:4", "1:2:3:4:5:6:7:8", "::", "a::b::c", "12345:1:2"]
    rng = random.Random(4)
    filler = ["word", ":", "x:", "10:30", " ", "::1", "std::vector", "abcd:"]
    for _ in range(200):
        text = "".join(rng.choice(filler + addresses) + rng.choice(["", " ", "  " * 5, "z" * 9])
                       for _ in range(rng.randint(1, 40)))
        whole = [m.span() for m in pii._IPV6_RE.finditer(text)]
        assert [m.span() for m in pii._ipv6_candidates(text)] == whole, text


def test_word_spans_of_the_wanted_words_are_those_of_all_words():
    from curation.decontamination import _WORD_RE, _word_spans

    text = "It\u2019s a test: don't split words, ünïcode wörds and 42 numbers here " * 20
    every = [m.span() for m in _WORD_RE.finditer(text)]
    for wanted in ({0}, {len(every) - 1}, {3, 4, 5, 90, 91}, set(range(0, len(every), 7))):
        assert _word_spans(text, wanted) == {k: every[k] for k in wanted}
