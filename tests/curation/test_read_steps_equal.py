"""The cheap gates and shared passes of the read stage's per-document steps (issue 44 item 3)
give exactly what the plain code gives: on the sample corpus's texts and on generated text made
of the pieces each gate looks for."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import curation.pii as pii
from curation.document import Document


@pytest.fixture(scope="module")
def sample_texts(tmp_path_factory) -> list[str]:
    from mtnlg.sample_data import write_sample_corpus
    from test_filter_quality_of_filters import read_sample

    root = str(tmp_path_factory.mktemp("sample"))
    write_sample_corpus(root)
    texts = [r.text for r in read_sample(root) if isinstance(r, Document)]
    assert len(texts) > 700
    return texts


def _ungated_pii(text: str) -> list:
    """``find_pii`` with every gate open (the full patterns scan every text)."""
    always = re.compile("")
    saved = pii._IPV4_NEED, pii._NANP_NEED, pii._INTL_NEED, pii._NEEDS
    pii._IPV4_NEED = pii._NANP_NEED = pii._INTL_NEED = always
    pii._NEEDS = dict.fromkeys(pii.KINDS)
    try:
        return pii.find_pii(text)
    finally:
        pii._IPV4_NEED, pii._NANP_NEED, pii._INTL_NEED, pii._NEEDS = saved


def test_pii_gates_change_no_span_on_the_sample(sample_texts):
    from mtnlg.sample_data.pii_planted import planted_documents

    planted = [d["text"] for d in planted_documents()]
    found = 0
    for text in sample_texts + planted:
        spans = pii.find_pii(text)
        assert spans == _ungated_pii(text)
        found += len(spans)
    assert found > 0


PII_PIECES = ["1", "2", "5", "9", "0", "555", "415", "0132", "2021", ".", "-", "\u2011", " ", "+", "+44",
              "(", ")", "@", "a", "x.org", ":", "::", "\n", "v", "ISBN ", "\u0663"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PII_PIECES), max_size=40))
def test_pii_gates_change_no_span_on_generated_text(pieces):
    text = "".join(pieces)
    assert pii.find_pii(text) == _ungated_pii(text)


def _reference_normalize_line(line: str) -> str:
    """``normalize_line`` as it was: a category test per character, then the digits."""
    import unicodedata

    line = unicodedata.normalize("NFD", line.lower())
    line = "".join(c for c in line if unicodedata.category(c)[0] not in "MPS")
    return " ".join(re.sub(r"\d", "0", line).split())


def test_site_lines_normalised_as_line_by_line(sample_texts):
    import sys

    from curation.site_boilerplate import normalize_line, normalized_lines

    # every code point of planes 0-2 (surrogates aside) and every 97th above, 61 to a line, with
    # a cased letter and a final sigma
    points = [chr(c) for c in [*range(0x30000), *range(0x30000, sys.maxunicode + 1, 97)]
              if not 0xD800 <= c < 0xE000]
    lines = ["AΣ " + "".join(points[i:i + 61]) + " ΣΑΣ" for i in range(0, len(points), 61)]
    for text in sample_texts + ["\n".join(lines), "ΑΣ\nΣα\n\u0301x\nİ\n\n \u00a0\u2028"]:
        expected = [_reference_normalize_line(line) for line in text.split("\n")]
        assert normalized_lines(text) == expected
        assert [normalize_line(line) for line in text.split("\n")] == expected


def test_document_words_count_as_word_counts_and_a_counter(sample_texts, monkeypatch):
    import itertools
    import string
    from collections import Counter

    import numpy as np

    import curation.word_counts as wc

    monkeypatch.setattr(wc, "_CACHED_WORDS", 50)  # the flags cache emptied again and again
    monkeypatch.setattr(wc, "_WORD_FLAGS", wc._WordFlags())
    for text in sample_texts[::3] + ["", " \n ", "The, THE (the) tHe... -- … “ab” 12 ½ x² Ⅻ"]:
        got = wc.document_words(text)
        plain = wc.word_counts(text)
        assert got.words == text.split()
        assert np.array_equal(got.lengths, plain.lengths) and got.counts[1:] == plain[1:]
        occurrences = Counter(got.words)
        vocab = dict(zip(occurrences, itertools.count()))
        assert got.ids.tolist() == [vocab[w] for w in got.words]
        assert got.stop_words == sum(c for w, c in occurrences.items()
                                     if w.strip(string.punctuation) in wc.STOP_FORMS)
    assert len(wc._WORD_FLAGS) <= 50


def test_cached_block_predictions_change_no_language(sample_texts):
    import pickle

    import curation.language as language

    fresh = language.LanguageIdentifier()
    cached = language.LanguageIdentifier(cached_blocks=200)  # emptied again and again
    uncached = language.LanguageIdentifier(cached_blocks=0)  # language.cached_blocks: 0
    texts = sample_texts[::6] + sample_texts[::12]  # the second part repeats blocks of the first
    for text in texts:
        fresh._blocks.clear()  # every block predicted by fastText
        assert cached.identify(text) == fresh.identify(text) == uncached.identify(text)
    assert 0 < len(cached._blocks) <= 200 and uncached._blocks == {}
    assert pickle.loads(pickle.dumps(cached))._blocks == {}  # the cache stays in its process
    with pytest.raises(ValueError, match="cached_blocks"):
        language.LanguageConfig(cached_blocks=-1)


def test_badness_searched_near_its_characters_only(sample_texts):
    from ftfy.badness import is_bad

    from infra.compat.ftfy import _parts, may_be_bad

    assert _parts()[3] is not None  # the installed ftfy's pattern is read, not the fallback
    lines = [line for text in sample_texts for line in text.splitlines(True) if not line.isascii()][:1500]
    garbled = [line.encode("utf-8").decode(enc, "replace") for line in lines[:300]
               for enc in ("sloppy-windows-1252", "macroman", "sloppy-windows-1251")]
    points = [chr(c) for c in range(0x80, 0x3000)] + ["\ufffd", "\ufb01", "\u2122"]
    pairs = [a + b + " x" for a in points[::7] for b in ("Ã", "â€", " ", "a", "\u0153", "Â")]
    found = 0
    for text in lines + garbled + pairs + ["Ã ", "Â a", "x\nÃ y", "ÃƒÂ©"]:
        assert may_be_bad(text) == is_bad(text)
        found += is_bad(text)
    assert found > 100


LINE_PIECES = ["Ã ", "Â ", "Ã©", "â€™", "“q”", "’", "&amp;", "&eacute;", "<b>", "é", "e\u0301", "\u2028", "\r\n",
               "\ufb01", "\uff21", "\x85", "\x9c", "x", " ", "\n", "\n", "\n"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(LINE_PIECES), max_size=30))
def test_lines_fixed_together_as_ftfy_fixes_them(pieces):
    """Mojibake at a line start in mid-text ("^" alternatives), line breaks made by the fixers,
    entities before and after a "<" line: ``fix_text`` (whole parts or line by line) is ftfy's."""
    import ftfy

    from curation.normalize import fix_text

    text = "".join(pieces)
    assert fix_text(text) == ftfy.fix_text(text)
