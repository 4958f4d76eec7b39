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
     ({"min_words": 10, "max_words": 5}, "min_words"), ({"max_top_ngram_char_ratio": {0: 0.1}}, "max_top_ngram_char_ratio")],
)
def test_config_validation_names_setting(kwargs, setting):
    with pytest.raises(ValueError, match=f"^{setting}: "):
        HeuristicsConfig(**kwargs)


# --- scores, decisions over scores, and the fast n-gram measures -------------------------------

import re  # noqa: E402
import string  # noqa: E402
from collections import Counter  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from curation.heuristics import RULES, SCORE_COLUMNS, decide, score_columns, score_document  # noqa: E402
from curation.repetition import WordNgrams  # noqa: E402


def reference_top_ngram_chars(words: list[str], n: int) -> int:
    """Gopher's definition, written plainly: the most frequent space-joined n-gram's
    characters x its count (ties to the longer), 0 when nothing repeats."""
    counts = Counter(" ".join(words[i:i + n]) for i in range(len(words) - n + 1))
    if not counts:
        return 0
    ngram, count = max(counts.items(), key=lambda kv: (kv[1], len(kv[0])))
    return len(ngram) * count if count > 1 else 0


def reference_duplicate_ngram_chars(words: list[str], n: int) -> int:
    """Gopher / datatrove ``find_all_duplicate``: n-grams joined without a separator, walking
    left to right and jumping past each repeat."""
    seen: set[str] = set()
    chars = i = 0
    while i < len(words) - n + 1:
        ngram = "".join(words[i:i + n])
        if ngram in seen:
            chars += len(ngram)
            i += n
        else:
            seen.add(ngram)
            i += 1
    return chars


def reference_word_scores(text: str) -> tuple[float, float, float]:
    """(mean content-word length, alpha-word ratio, stop words) word by word, as the rules read."""
    words = text.split()
    punct = set(string.punctuation + "“”‘’«»…–—")
    content = [w for w in words if any(c not in punct for c in w)]
    mean = sum(map(len, content)) / len(content) if content else 0.0
    alpha = sum(any(c.isalpha() for c in w) for w in words) / len(words)
    stops = sum(w.strip(string.punctuation).lower() in {"the", "be", "to", "of", "and", "that", "have", "with"}
                for w in words)
    return mean, alpha, float(stops)


def assert_matches_reference(text: str) -> None:
    words = text.split()
    g = WordNgrams(words)
    tops = g.top_ngram_chars((2, 3, 4))
    dups = g.duplicate_ngram_chars(range(1, 12))
    for n in (2, 3, 4):
        assert tops[n] == reference_top_ngram_chars(words, n), (n, text)
    for n in range(1, 12):
        assert dups[n] == reference_duplicate_ngram_chars(words, n), (n, text)
    if words:
        s = score_document(text)
        got = (s["heur_mean_word_length"], s["heur_alpha_words_ratio"], s["heur_stop_words"])
        assert got == reference_word_scores(text), text


# Small alphabets make repeats, boundary-shifted repeats ("ab c" vs "a bc") and ties common.
_token = st.text(alphabet="abAB.,-#…é²Ⅻ{", min_size=1, max_size=3)
_sep = st.sampled_from([" ", "  ", "\n", "\n\n", "\t", "\u3000", "\xa0", "\x1c"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_token, _sep), max_size=60))
def test_fast_measures_equal_the_plain_definitions(pieces):
    assert_matches_reference("".join(t + s for t, s in pieces))


def test_fast_measures_on_adversarial_text():
    cases = [
        "ab c d e f g h ab c d e f g h",           # plain repeat
        "ab c d e f g a bc d e f g",               # equal only without separators
        " ".join(["x"] * 50),                      # one word over and over
        " ".join(["a b"] * 30 + ["c"] * 5),        # overlapping repeats, jumps
        "the THE The tHe, (the) 'the' the. the— “the” İt wİth with",
        "½ ² Ⅻ ℵ 一二三 ３ _ __ -- … — «»",
        "\ud800 lone surrogate \udfff " * 6,        # utf-32 hashing must not choke
        "a" * 5000 + " " + "b" * 5000 + " " + "a" * 5000,
        "",
    ]
    for text in cases:
        assert_matches_reference(text)


def test_regex_whitespace_is_str_split_whitespace():
    """The whole-word regexes rely on re's \\s being str.isspace on every code point."""
    import sys
    for c in map(chr, range(0, sys.maxunicode + 1, 1)):
        if c.isspace() != bool(re.match(r"\s", c)):
            raise AssertionError(f"U+{ord(c):04X}")


def test_every_score_recorded_even_for_disabled_rules():
    scores = score_document(GOOD + " {code}")
    assert list(scores) == list(SCORE_COLUMNS)
    assert all(isinstance(v, float) for v in scores.values())
    assert scores["heur_curly_bracket_ratio"] > 0  # its rule is off by default, its score is not
    assert len(SCORE_COLUMNS) == 23 and SCORE_COLUMNS[0] == "heur_words"
    assert {r.score for r in RULES} == set(SCORE_COLUMNS)


def test_first_failing_rule_is_the_reason_and_order_is_the_rule_order():
    text = GOOD + " " + " ".join(["buy now"] * 40) + " " + " ".join(["#tag"] * 60)
    assert reason(text) == "symbol_word_ratio"  # symbols are checked before n-grams
    assert reason(text, max_symbol_word_ratio=None) == "top_2gram_chars"


def test_decide_reads_a_stats_row_and_refuses_missing_scores():
    row = {"id": "x", "outcome": "kept", **score_columns(score_document(GOOD))}
    assert decide(row, CFG).keep
    assert not decide(row, HeuristicsConfig(min_words=1000)).keep
    with pytest.raises(ValueError, match="heur_words"):
        decide(score_columns(None), CFG)
    with pytest.raises(ValueError, match="heur_words"):
        decide({**row, "heur_words": float("nan")}, CFG)


def test_rethreshold_from_stored_scores_equals_rerun():
    """Another config applied to stored scores decides as rerunning the rules would."""
    texts = [GOOD, GOOD + " {x} {y}", GOOD + " " + " ".join(["buy now"] * 12),
             "word " * 60, GOOD + "\n" + "\n".join(["same line here"] * 3), "…\n" * 80 + GOOD]
    configs = [CFG, HeuristicsConfig(min_words=80, max_curly_bracket_ratio=0.01),
               HeuristicsConfig(max_top_ngram_char_ratio={2: 0.05}, max_duplicate_lines_ratio=0.1),
               HeuristicsConfig(min_stop_words=None, drop_lorem_ipsum=False, max_duplicate_ngram_char_ratio={})]
    for text in texts:
        stored = dict(score_columns(score_document(text)))
        for cfg in configs:
            assert decide(stored, cfg) == apply_heuristics(text, cfg)


def test_ngram_sizes_outside_the_scored_ones_are_rejected_by_name():
    with pytest.raises(ValueError, match=r"^max_duplicate_ngram_char_ratio: n = 11"):
        HeuristicsConfig(max_duplicate_ngram_char_ratio={11: 0.1})
