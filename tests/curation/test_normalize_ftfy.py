"""``curation.normalize.fix_text`` is ftfy.fix_text exactly: it only skips lines ftfy leaves alone,
and in the lines it hands on (``infra.compat.ftfy.fix_segment``) only the steps that provably
return their input.  ``normalize_text`` equals the line-by-line whitespace cleanup it replaced."""
from __future__ import annotations

import ftfy
import ftfy.bad_codecs  # noqa: F401 - registers the sloppy-* codecs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curation.normalize import fix_text, normalize_text
from infra.compat import ftfy as fast

# Pieces that exercise every ftfy fixer, mixed with plain ASCII that the fast path skips.
PIECES = ["plain ascii words", "\n", "\r\n", "\r", "&amp;", "&lt;b&gt;", "&hellip;", "<p>", "<", "&",
          "\x1b[31m", "\x1b", "\x00", "\x07", "\x7f", "\x85", "\x9d", "\u2028", "\ufeff", "\u200b",
          "â€™", "Ã©", "Ã", "Â\xa0", "Ã\xa0", "ï¬", "ﬂ", "ＬＯＵＤ", "‘quoted’", "“double”", "\ud83d",
          "\ud83d\ude00", "e\u0301", "ñ", "—", "…", "\t", " ", "#tag", "é", "\x1a", "Ð¿Ñ€Ð¸"]
# Characters of ftfy's mojibake categories, so that generated text hits BADNESS_RE's alternatives.
MOJIBAKE = sorted(set("ÂÃÎÐØÙàâó√≈‚ÄвЂВГРСΒΓΞΟβā€œŠš¢£Ÿž\xa0\xad®©°·»–—´²³±µ×÷¦¤¨¬¯¸ƒˆˇ˘˛˜†‡‰"
                      "◊\ufffdªº¶§¥₧¡«¿΅΄‘‚“„•‹\uf8ff»˝”›™¼½¾∂∆∏∑∞∩∫≠≡≤≥№ÒÖÙÜòöøüŐŌŪŲÀÑÝĂĀĄĆČĎĐ"
                      "ßàñăąāćčďđęěēėğģįīķĺľłļœŕśşšťůźżžґﬁﬂÞΑΩΆΈΉΊΌΎΏΪΫЁЯαωάέήίΰаџ│┌┐┘├┤┬┼═╬▀▄█▌▐░▒▓"))
SPACES = [" ", "  ", "\t", "\n", "\n\n\n", "\r\n", "\r", "\x0b", "\x0c", "\x85", "\xa0", "\u2028",
          "\u2029", "\u3000", "\u200b", "\x00", "\x1c", "\ufeff", "\u00ad", " \n ", "\t\n\t"]


def reference_normalize_text(text: str, fixed: str | None = None) -> str:
    """``normalize_text`` as it was before issue 26 (ftfy itself, a cleanup line by line);
    ``fixed``: ``ftfy.fix_text(text)`` when the caller has it."""
    import re
    import unicodedata

    text = ftfy.fix_text(text) if fixed is None else fixed
    text = unicodedata.normalize("NFC", text)
    text = re.sub(r"\r\n?|[\u2028\u2029\x85\x0b\x0c]", "\n", text)
    text = re.sub(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b\ufeff\u00ad]", "", text)
    text = "\n".join(re.sub(r"[^\S\n]+", " ", line).strip() for line in text.split("\n"))
    return re.sub(r"\n{3,}", "\n\n", text).strip()


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_equals_ftfy_on_adversarial_text(pieces):
    text = "".join(pieces)
    assert fix_text(text) == ftfy.fix_text(text)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(MOJIBAKE + ["a", "Z", " ", "\n", ".", "&amp;", "é", "x\u0301"]), max_size=24))
def test_equals_ftfy_on_generated_mojibake(pieces):
    text = "".join(pieces)
    assert fix_text(text) == ftfy.fix_text(text)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(SPACES + ["word", "é", "“q”", "-"]), max_size=30))
def test_normalize_text_equals_the_line_by_line_cleanup(pieces):
    text = "".join(pieces)
    assert normalize_text(text) == reference_normalize_text(text)


def test_equals_ftfy_on_every_code_point():
    """Every code point of planes 0-2 but the surrogates (and a sample of the rest), seven at a
    time per line (so each stands next to others): fix_segment's guards and badness windows
    miss nothing ftfy acts on."""
    cps = [c for c in [*range(0x30000), *range(0x30000, 0x110000, 97)] if not 0xD800 <= c < 0xE000]
    text = "".join("".join(map(chr, cps[i:i + 7])) + "\n" for i in range(0, len(cps), 7))
    assert fix_text(text) == ftfy.fix_text(text)


def test_the_installed_ftfy_is_the_verified_one():
    assert fast.supported()  # else the fast path is silently off: re-verify for the new version
    assert fast._parts()[2] == 7  # BADNESS_RE's longest match: the windows searched


def test_badness_window_refuses_patterns_it_cannot_bound():
    import re

    assert fast._badness_window(re.compile("[é][a]|b[ü]")) == 2
    assert fast._badness_window(re.compile("[é]a+")) is None  # unbounded
    assert fast._badness_window(re.compile("[é](?=a)|b[ü]")) is None  # looks beyond the match
    assert fast._badness_window(re.compile("[é]a|ab")) is None  # an ASCII-only alternative
    assert fast._badness_window(re.compile("[é]a$|b[ü]")) is None  # an anchor at the end


def test_changed_ftfy_code_turns_the_fast_path_off(monkeypatch, caplog):
    fast.supported.cache_clear()
    monkeypatch.setitem(fast._SOURCES, "ftfy.badness.is_bad", "0" * 64)
    try:
        assert not fast.supported()
        assert "plain ftfy.fix_and_explain is used" in caplog.text
        for text in ("“quoted” Ã© &amp; <p>\n", "plain\n", "ﬂ\r\n"):
            assert fix_text(text) == ftfy.fix_text(text)
    finally:
        fast.supported.cache_clear()


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
        assert normalize_text(text) == reference_normalize_text(text, expected)
        changed += expected != text
    assert changed > 0  # the corpus does exercise ftfy
    # the same lines as mojibake of several encodings (what fix_encoding is there for)
    lines = "".join([line for text in texts for line in text.splitlines(True) if not line.isascii()][:1500])
    for encoding in ("sloppy-windows-1252", "macroman", "sloppy-windows-1251"):
        garbled = lines.encode("utf-8").decode(encoding, "replace")
        assert fix_text(garbled) == ftfy.fix_text(garbled)


def test_normalize_text_still_cleans_whitespace_and_controls():
    assert normalize_text("  a\u200b  b \r\n\n\n\nc\x00 ") == "a b\n\nc"
