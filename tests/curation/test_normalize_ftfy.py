"""``curation.normalize.fix_text`` is ftfy.fix_text exactly: it only skips lines ftfy leaves alone."""
from __future__ import annotations

import ftfy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curation.normalize import fix_text, normalize_text

# Pieces that exercise every ftfy fixer, mixed with plain ASCII that the fast path skips.
PIECES = ["plain ascii words", "\n", "\r\n", "\r", "&amp;", "&lt;b&gt;", "&hellip;", "<p>", "<", "&",
          "\x1b[31m", "\x1b", "\x00", "\x07", "\x7f", "\x85", "\x9d", "\u2028", "\ufeff", "\u200b",
          "â€™", "Ã©", "Ã", "Â\xa0", "Ã\xa0", "ï¬", "ﬂ", "ＬＯＵＤ", "‘quoted’", "“double”", "\ud83d",
          "\ud83d\ude00", "e\u0301", "ñ", "—", "…", "\t", " ", "#tag", "é", "\x1a", "Ð¿Ñ€Ð¸"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_equals_ftfy_on_adversarial_text(pieces):
    text = "".join(pieces)
    assert fix_text(text) == ftfy.fix_text(text)


@pytest.mark.parametrize("text", [
    "",
    "all ascii\nlines only\n",
    "first &amp; entity\nthen <b>html</b>\nthen &amp; again stays escaped\n",  # sticky "<" rule
    "line\r\nwith crlf &amp; entity â€™ mojibake\n" * 3,
    "x" * 1_000_050 + "â€™ beyond the first segment",  # a segment longer than max_decode_length
])
def test_equals_ftfy_on_edge_cases(text):
    assert fix_text(text) == ftfy.fix_text(text)


def test_equals_ftfy_on_the_sample_corpus(tmp_path):
    from mtnlg.sample_data import write_sample_corpus
    from test_filter_quality_of_filters import read_sample
    from curation.document import Document

    write_sample_corpus(str(tmp_path))
    texts = [r.text for r in read_sample(str(tmp_path)) if isinstance(r, Document)]
    assert len(texts) > 700
    changed = 0
    for text in texts:
        expected = ftfy.fix_text(text, normalization="NFC")
        assert fix_text(text) == expected
        changed += expected != text
    assert changed > 0  # the corpus does exercise ftfy


def test_normalize_text_still_cleans_whitespace_and_controls():
    assert normalize_text("  a\u200b  b \r\n\n\n\nc\x00 ") == "a b\n\nc"
