"""``curation.bpe_words``: the same ids as ``tokenizers`` for byte-level BPE, on every code point."""
from __future__ import annotations

import sys

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from curation.bpe_words import PATTERN, WordEncoder, applies, unassigned
from curation.tokenizer import GPT2, load_tokenizer


@pytest.fixture(scope="module")
def hf():
    tok = load_tokenizer(GPT2)._load()
    return tok


def _hf_ids(tok, texts):
    return [e.ids for e in tok.encode_batch_fast(texts, add_special_tokens=False)]


@pytest.mark.slow  # ~282k code points through both engines: ~7 s
def test_both_regex_engines_split_every_code_point_alike(hf):
    """The pre-tokenizer's pattern only asks whether a character is a letter, a number or
    white space: probe every code point the fast path handles (all but those unassigned in
    this Python's Unicode database) in contexts that tell those apart and compare the splits of
    ``tokenizers`` (Oniguruma) and of the ``regex`` module.  After a letter, a digit, a symbol
    and a space, a code point joins the run before it exactly when it is of that class (a
    letter, a number, neither, white space), so one engine classifying it otherwise splits
    that line differently: checked by making the pattern misclassify one code point of each
    class (a letter, a No digit, NEL, U+3000, U+001C)."""
    split = regex.compile(PATTERN)
    points = [c for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF and not unassigned(chr(c))]
    for i in range(0, len(points), 20_000):
        text = "'s 't 're 've 'm 'll 'd\n" + "".join(f"a{c}1{c}!{c} {c}\n" for c in map(chr, points[i:i + 20_000]))
        ours = [m.span() for m in split.finditer(text)]
        theirs = [span for _, span in hf.pre_tokenizer.pre_tokenize_str(text)]
        if ours != theirs:
            bad = next(k for k, (a, b) in enumerate(zip(ours, theirs)) if a != b)
            raise AssertionError(f"splits differ near {text[ours[bad][0]:ours[bad][0] + 12]!r}")


ALPHABET = "ab zé’“”—-–.,;:!?'s'll'reT1 23\n\t  \u00a0\u3000Ω一😀\u0301ΣxY0_#@\x1c\x85\u2028\r"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=ALPHABET, max_size=60), min_size=1, max_size=8))
def test_same_ids_as_tokenizers(hf, texts):
    enc = WordEncoder(hf)
    want = _hf_ids(hf, texts)
    assert [enc.encode(t) for t in texts] == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=ALPHABET, max_size=40), min_size=2, max_size=12))
def test_memoised_chunks_give_the_ids_of_the_whole_text(hf, pieces):
    """A text's ids are its whitespace-led chunks' ids in order, whatever chunks were met
    before in other texts: encode the pieces, then texts made of them, with one encoder."""
    enc = WordEncoder(hf)
    texts = pieces + [" ".join(pieces), "".join(pieces), "\n".join(reversed(pieces)), " ".join(pieces)]
    assert [enc.encode(t) for t in texts] == _hf_ids(hf, texts)


def test_texts_with_code_points_newer_than_this_python_are_left_to_tokenizers(hf):
    # e.g. U+A7CE: unassigned in Unicode 14 (Python 3.11), a letter since Unicode 16
    newer = next(chr(c) for c in range(0xA7CE, 0x10FFFF) if unassigned(chr(c)))
    enc = WordEncoder(hf)
    assert enc.encode("a " + newer + " b") is None
    tok = load_tokenizer(GPT2)
    got = tok.encode_batch(["plain", "with " + newer, "also plain"])
    assert [g.tolist() for g in got] == _hf_ids(hf, ["plain", "with " + newer, "also plain"])


def test_text_tokenizer_uses_it_with_the_same_ids(hf):
    from mtnlg.sample_data.text_pool import code_files, non_english_texts, wiki_articles

    tok = load_tokenizer(GPT2)  # real text of the sample's assets: prose, code, other scripts
    texts = ([" ".join(a["paragraphs"]) for a in wiki_articles()[:40]]
             + [" ".join(t["sentences"]) for t in non_english_texts()] + [c["code"] for c in code_files()])
    assert tok._load() is not None and tok._words is not None
    got = tok.encode_batch(texts, append_eod=True)
    want = [np.array(ids + [tok.eod_id], dtype=np.int32) for ids in _hf_ids(hf, texts)]
    assert all(np.array_equal(a, b) for a, b in zip(got, want)) and len(got) == len(texts)
    assert tok.encode("<|endoftext|>").tolist() != [tok.eod_id]  # literal text, never EOD


def test_other_tokenizer_shapes_keep_the_tokenizers_path():
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    assert not applies(tok)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    assert not applies(tok)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    assert applies(tok)
    tok.normalizer = normalizers.NFKC()
    assert not applies(tok)
