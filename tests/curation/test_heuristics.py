"""Each heuristic rule with a document it keeps and one it drops."""
from __future__ import annotations

import pytest

from curation.heuristics import HeuristicsConfig, apply_heuristics

GOOD = (
    "The history of the region is long and complex. Early settlers arrived in the valley more than "
    "two thousand years ago, and they built small farming villages along the river banks.\n"
    "Over the following centuries, trade with neighbouring peoples brought new crops, tools and ideas "
    "to the area.\n\nBy the middle ages, several towns had grown into busy market centres with "
    "churches, guild halls and stone bridges that still stand today, and visitors come to see them."
)
CFG = HeuristicsConfig()


def reason(text: str, **overrides) -> str | None:
    return apply_heuristics(text, HeuristicsConfig(**overrides) if overrides else CFG).reason


def test_good_document_kept():
    assert apply_heuristics(GOOD, CFG).keep


def test_word_count():
    assert reason("The cat sat on the mat with the hat.") == "too_few_words"
    assert reason(GOOD, min_words=10, max_words=20) == "too_many_words"
    assert reason("", min_words=None) == "too_few_words"


def test_mean_word_length():
    assert reason(" ".join(["a be to of and it"] * 20)) == "short_mean_word_length"
    assert reason(" ".join(["internationalization characteristically the"] * 30)) == "long_mean_word_length"


def test_symbol_ratio():
    tagged = GOOD + " " + " ".join(["#tag"] * 12)
    assert reason(tagged) == "symbol_word_ratio"
    assert reason(GOOD + " #one #two") is None


def test_bullet_and_ellipsis_lines():
    bullets = "\n".join(f"• item number {i} of the list with the things and more" for i in range(12))
    assert reason(bullets) == "bullet_lines"
    ellipsis = GOOD.replace(".\n", "...\n").replace("area.", "area...") + "\nAnd then…\nMore…\nEnd…"
    assert reason(ellipsis, max_symbol_word_ratio=None) == "ellipsis_lines"


def test_alpha_words_and_stop_words():
    numbers = GOOD + " " + " ".join(str(1000 + i) for i in range(40))
    assert reason(numbers) == "low_alpha_words"
    no_stop = " ".join(["quick brown foxes jump over lazy dogs"] * 10)
    assert reason(no_stop, max_top_ngram_char_ratio={}, max_duplicate_ngram_char_ratio={}) == "few_stop_words"


def test_c4_rules():
    assert reason(GOOD + " Lorem ipsum dolor sit amet.") == "lorem_ipsum"
    js = "\n".join([f"Please enable JavaScript to view page {i} of this site" for i in range(4)] + [GOOD])
    assert reason(js, max_duplicate_lines_ratio=None, max_duplicate_lines_char_ratio=None) == "javascript_lines"
    assert reason(GOOD + " {code}", max_curly_bracket_ratio=0.0) == "curly_bracket"
    assert reason(GOOD + " {code}") is None  # disabled by default: code sources are in the blend


def test_duplicate_lines_and_paragraphs():
    line = "This is the same line that repeats again and again on the page."
    assert reason(GOOD + "\n" + "\n".join([line] * 6)) == "duplicate_lines"
    para = ("This paragraph is repeated a few times, which is what boilerplate does on many of the "
            "pages that a web crawler collects from the internet.")
    text = GOOD + "\n\n" + "\n\n".join([para] * 3)
    assert reason(text, max_duplicate_lines_ratio=None, max_duplicate_lines_char_ratio=None) == "duplicate_paragraphs"
    assert reason(text, max_duplicate_lines_ratio=None, max_duplicate_lines_char_ratio=None,
                  max_duplicate_paragraphs_ratio=None) == "duplicate_paragraph_chars"


def test_ngram_repetition():
    spam = GOOD + " " + " ".join(["buy now"] * 40)
    assert reason(spam) == "top_2gram_chars"
    repeated = GOOD + " " + " ".join(["the quick brown fox jumps over the lazy dog"] * 6)
    assert reason(repeated, max_top_ngram_char_ratio={}, max_duplicate_ngram_char_ratio={5: 0.15}) == (
        "duplicate_5gram_chars")
    assert reason(GOOD + " the quick brown fox jumps over the lazy dog", max_top_ngram_char_ratio={},
                  max_duplicate_ngram_char_ratio={5: 0.15}) is None
    assert reason(GOOD, max_duplicate_ngram_char_ratio={5: 0.0}) is None  # nothing repeats in GOOD


def test_yaml_style_string_keys():
    cfg = HeuristicsConfig(max_top_ngram_char_ratio={"2": 0.2})
    assert cfg.max_top_ngram_char_ratio == {2: 0.2}


@pytest.mark.parametrize(
    "kwargs, setting",
    [({"min_words": -1}, "min_words"), ({"min_alpha_words_ratio": 1.5}, "min_alpha_words_ratio"),
     ({"min_words": 10, "max_words": 5}, "min_words"), ({"max_top_ngram_char_ratio": {0: 0.1}}, "max_top_ngram")],
)
def test_config_validation_names_setting(kwargs, setting):
    with pytest.raises(ValueError, match=f"HeuristicsConfig.{setting}"):
        HeuristicsConfig(**kwargs)
