"""Gopher / C4 heuristic quality filters: every rule records a score, the config decides.

Thresholds are Gopher's (Rae et al. 2021, "Scaling Language Models", appendix A.1.1 "quality
filtering" and table A1 repetition thresholds) unless noted; C4 rules are from Raffel et al. 2020
section 2.2.

Two pure steps, so that a run can be re-thresholded from its stats alone ("score once, decide
in config", as dolma's taggers and datatrove's stats blocks do):

* ``score_document(text)`` computes every rule's score, whether or not the config enables the
  rule: a dict keyed by ``SCORE_COLUMNS``, which are also the float64 columns of
  ``stats/documents.parquet`` (docs/run-layout.md).
* ``decide(scores, cfg)`` walks ``RULES`` in order (cheapest first, the order the rules have
  always run in) and returns the first failing rule's reason, or kept.  It reads nothing but
  the scores, so a stats row decides exactly as the document did.

``apply_heuristics(text, cfg)`` is both in one call.
"""
from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, fields
from typing import Mapping

from curation.document import FilterResult
from curation.repetition import WordNgrams
from curation.word_counts import STOP_FORMS, STOP_WORDS, document_words  # noqa: F401 - STOP_WORDS re-exported

TOP_NGRAM_SIZES = (2, 3, 4)
"""n of the most-frequent-n-gram rules (Gopher table A1); every one is always scored."""
DUPLICATE_NGRAM_SIZES = (5, 6, 7, 8, 9, 10)
"""n of the duplicated-n-gram rules (Gopher table A1); every one is always scored."""


@dataclass
class HeuristicsConfig:
    """Every threshold of the heuristic stage. ``None`` disables a rule (its score is still
    recorded, so it can be enabled later from the stats)."""

    min_words: int | None = 50
    """Gopher: 50. MT-NLG's own 128-token floor is applied at tokenization."""
    max_words: int | None = 100_000
    """Gopher: 100,000."""
    min_mean_word_length: float | None = 3.0
    """Gopher: mean word length in [3, 10] characters."""
    max_mean_word_length: float | None = 10.0
    max_symbol_word_ratio: float | None = 0.1
    """Gopher: ratio of '#' and '...' (and the ellipsis character) to words <= 0.1."""
    max_bullet_lines_ratio: float | None = 0.9
    """Gopher: at most 90% of lines start with a bullet point."""
    max_ellipsis_lines_ratio: float | None = 0.3
    """Gopher: at most 30% of lines end with an ellipsis."""
    min_alpha_words_ratio: float | None = 0.8
    """Gopher: at least 80% of words contain an alphabetic character."""
    min_stop_words: int | None = 2
    """Gopher: at least 2 of the English stop words the, be, to, of, and, that, have, with."""
    max_duplicate_lines_ratio: float | None = 0.3
    """Gopher table A1: fraction of lines that duplicate an earlier line."""
    max_duplicate_paragraphs_ratio: float | None = 0.3
    """Gopher table A1: fraction of paragraphs that duplicate an earlier paragraph."""
    max_duplicate_lines_char_ratio: float | None = 0.2
    """Gopher table A1: characters in duplicated lines / all characters."""
    max_duplicate_paragraphs_char_ratio: float | None = 0.2
    """Gopher table A1: characters in duplicated paragraphs / all characters."""
    max_top_ngram_char_ratio: dict[int, float] | None = None
    """Gopher table A1: characters in the most frequent word n-gram / all characters,
    default {2: 0.20, 3: 0.18, 4: 0.16}; n must be one of ``TOP_NGRAM_SIZES``."""
    max_duplicate_ngram_char_ratio: dict[int, float] | None = None
    """Gopher table A1: characters in duplicated word n-grams / all characters, default
    {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10}; n must be one of
    ``DUPLICATE_NGRAM_SIZES``."""
    drop_lorem_ipsum: bool = True
    """C4: drop any page containing "lorem ipsum"."""
    max_javascript_lines_ratio: float | None = 0.5
    """C4 drops *lines* mentioning javascript; we drop a document when more than this fraction
    of its lines mention it (line editing would change text after exact-dedup hashing)."""
    max_curly_bracket_ratio: float | None = None
    """C4 drops pages containing '{' (code); disabled by default because GitHub, ArXiv and
    StackExchange are code/LaTeX sources in the MT-NLG blend."""

    def __post_init__(self) -> None:
        if self.max_top_ngram_char_ratio is None:
            self.max_top_ngram_char_ratio = {2: 0.20, 3: 0.18, 4: 0.16}
        if self.max_duplicate_ngram_char_ratio is None:
            self.max_duplicate_ngram_char_ratio = {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10}
        # YAML gives string keys; accept "2": 0.2 as well as 2: 0.2.
        self.max_top_ngram_char_ratio = {int(k): float(v) for k, v in self.max_top_ngram_char_ratio.items()}
        self.max_duplicate_ngram_char_ratio = {
            int(k): float(v) for k, v in self.max_duplicate_ngram_char_ratio.items()
        }
        for f in fields(self):  # checks: ValueError("<field>: <message>")
            value = getattr(self, f.name)
            if value is None or isinstance(value, (bool, dict)):
                continue
            if value < 0:
                raise ValueError(f"{f.name}: must be >= 0, got {value}")
            if "ratio" in f.name and value > 1:
                raise ValueError(f"{f.name}: is a fraction and must be <= 1, got {value}")
        for name, sizes in (("max_top_ngram_char_ratio", TOP_NGRAM_SIZES),
                            ("max_duplicate_ngram_char_ratio", DUPLICATE_NGRAM_SIZES)):
            for n, ratio in getattr(self, name).items():
                if n not in sizes:
                    raise ValueError(f"{name}: n = {n} is not scored; choose n from {list(sizes)}")
                if not 0 <= ratio <= 1:
                    raise ValueError(f"{name}: [{n}] needs a ratio in [0, 1], got {ratio}")
        for lo, hi in (("min_words", "max_words"), ("min_mean_word_length", "max_mean_word_length")):
            a, b = getattr(self, lo), getattr(self, hi)
            if a is not None and b is not None and a > b:
                raise ValueError(f"{lo}: ({a}) must be <= {hi} ({b})")


@dataclass(frozen=True)
class Rule:
    """One heuristic: drop with ``reason`` when ``score`` is below (``bound="min"``) or above
    (``"max"``) the threshold ``cfg.<setting>`` (``cfg.<setting>[n]`` for the n-gram rules), or,
    for a switch (``"flag"``), when the setting is on and the score is non-zero.  A rule with no
    setting has the fixed threshold ``fixed``."""

    reason: str
    score: str
    setting: str | None
    bound: str
    n: int | None = None
    fixed: float | None = None

    def threshold(self, cfg: HeuristicsConfig):
        if self.setting is None:
            return self.fixed
        value = getattr(cfg, self.setting)
        return value.get(self.n) if self.n is not None else value

    def fails(self, value: float, limit) -> bool:
        if self.bound == "flag":
            return bool(limit) and value > 0
        return value < limit if self.bound == "min" else value > limit


def _ratio_rule(reason: str, name: str, bound: str = "max") -> Rule:
    return Rule(reason, f"heur_{name}", f"{bound}_{name}", bound)


RULES: tuple[Rule, ...] = (
    Rule("too_few_words", "heur_words", "min_words", "min"),
    Rule("too_many_words", "heur_words", "max_words", "max"),
    # Every ratio below divides by the word count: an empty document goes whatever the config.
    Rule("too_few_words", "heur_words", None, "min", fixed=1.0),
    Rule("lorem_ipsum", "heur_lorem_ipsum", "drop_lorem_ipsum", "flag"),
    _ratio_rule("curly_bracket", "curly_bracket_ratio"),
    Rule("short_mean_word_length", "heur_mean_word_length", "min_mean_word_length", "min"),
    Rule("long_mean_word_length", "heur_mean_word_length", "max_mean_word_length", "max"),
    _ratio_rule("symbol_word_ratio", "symbol_word_ratio"),
    _ratio_rule("bullet_lines", "bullet_lines_ratio"),
    _ratio_rule("ellipsis_lines", "ellipsis_lines_ratio"),
    _ratio_rule("javascript_lines", "javascript_lines_ratio"),
    _ratio_rule("low_alpha_words", "alpha_words_ratio", "min"),
    Rule("few_stop_words", "heur_stop_words", "min_stop_words", "min"),
    _ratio_rule("duplicate_lines", "duplicate_lines_ratio"),
    _ratio_rule("duplicate_line_chars", "duplicate_lines_char_ratio"),
    _ratio_rule("duplicate_paragraphs", "duplicate_paragraphs_ratio"),
    _ratio_rule("duplicate_paragraph_chars", "duplicate_paragraphs_char_ratio"),
    *(Rule(f"top_{n}gram_chars", f"heur_top_{n}gram_char_ratio", "max_top_ngram_char_ratio", "max", n)
      for n in TOP_NGRAM_SIZES),
    *(Rule(f"duplicate_{n}gram_chars", f"heur_duplicate_{n}gram_char_ratio",
           "max_duplicate_ngram_char_ratio", "max", n) for n in DUPLICATE_NGRAM_SIZES),
)
SCORE_COLUMNS: tuple[str, ...] = tuple(dict.fromkeys(r.score for r in RULES))
"""Every score, in rule order: the keys of ``Document.heuristic_scores`` and the float64
columns the per-document stats carry (null where the heuristics did not score a document)."""


def decide(scores: Mapping[str, float | None], cfg: HeuristicsConfig) -> FilterResult:
    """The first enabled rule whose score fails its threshold, or kept.

    ``scores`` is ``score_document``'s dict or a ``stats/documents.parquet`` row: applying another
    config to stored scores gives the decision a rerun with that config would give."""
    for rule in RULES:
        limit = rule.threshold(cfg)
        if limit is None:
            continue
        value = scores.get(rule.score)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            raise ValueError(f"no {rule.score} score: the document was not scored by the heuristics "
                             "stage (removed earlier, or its source skips heuristics)")
        if rule.fails(value, limit):
            return FilterResult.drop(rule.reason)
    return FilterResult.kept()


def apply_heuristics(text: str, cfg: HeuristicsConfig) -> FilterResult:
    """``decide(score_document(text), cfg)``."""
    return decide(score_document(text), cfg)


def score_columns(scores: Mapping[str, float] | None) -> dict[str, float | None]:
    """The stats row's score columns for ``Document.heuristic_scores`` (all null for None)."""
    if scores is None:
        return dict.fromkeys(SCORE_COLUMNS)
    return {c: scores.get(c) for c in SCORE_COLUMNS}


BULLETS = ("•", "●", "○", "◦", "▪", "▫", "‣", "⁃", "-", "*", "–", "·")
ELLIPSES = ("...", "…")
_PARAGRAPH_RE = re.compile(r"\n\s*\n")
_STOP_FORMS = STOP_FORMS  # STOP_WORDS' case variants (curation.word_counts)


def _duplicates(elements: list[str]) -> tuple[int, int]:
    """(number of elements equal to an earlier one, their total characters), as Gopher: every
    occurrence after the first of each distinct element."""
    distinct = set(elements)
    return len(elements) - len(distinct), sum(map(len, elements)) - sum(map(len, distinct))


def score_document(text: str) -> dict[str, float]:
    """Every heuristic score of ``text`` (keys ``SCORE_COLUMNS``); an empty text scores 0."""
    scores = dict.fromkeys(SCORE_COLUMNS, 0.0)
    # One word split for every rule: ids, lengths and per-word counts (curation.word_counts).
    doc_words = document_words(text)
    words, counted = doc_words.words, doc_words.counts
    n_words = len(words)
    lowered = text.lower()
    scores["heur_words"] = float(n_words)
    scores["heur_lorem_ipsum"] = 1.0 if "lorem ipsum" in lowered else 0.0
    if n_words == 0:
        return scores
    scores["heur_curly_bracket_ratio"] = text.count("{") / n_words

    # Mean length is over words that are not pure punctuation (a lone "-" is not a word).
    content = n_words - counted.punct_words
    content_chars = int(counted.lengths.sum()) - counted.punct_word_chars
    scores["heur_mean_word_length"] = content_chars / content if content else 0.0
    scores["heur_alpha_words_ratio"] = (n_words - counted.no_alpha_words) / n_words
    scores["heur_stop_words"] = float(doc_words.stop_words)
    ellipses = text.count("...") + text.count("…")
    scores["heur_symbol_word_ratio"] = max(text.count("#"), ellipses) / n_words

    lines = [ln.strip() for ln in text.split("\n")]
    lines = [ln for ln in lines if ln] or [""]
    n_lines = len(lines)
    scores["heur_bullet_lines_ratio"] = sum(map(str.startswith, lines, itertools.repeat(BULLETS))) / n_lines
    scores["heur_ellipsis_lines_ratio"] = sum(map(str.endswith, lines, itertools.repeat(ELLIPSES))) / n_lines
    if "javascript" in lowered:  # a line's lowercase is a piece of the text's lowercase
        scores["heur_javascript_lines_ratio"] = sum(1 for ln in lines if "javascript" in ln.lower()) / n_lines

    # Repetition (Gopher table A1): lines, paragraphs, then word n-grams.
    n_chars = max(len(text), 1)
    dup_lines, dup_line_chars = _duplicates(lines)
    scores["heur_duplicate_lines_ratio"] = dup_lines / n_lines
    scores["heur_duplicate_lines_char_ratio"] = dup_line_chars / n_chars
    paragraphs = [p.strip() for p in _PARAGRAPH_RE.split(text) if p.strip()] or [""]
    dup_pars, dup_par_chars = _duplicates(paragraphs)
    scores["heur_duplicate_paragraphs_ratio"] = dup_pars / len(paragraphs)
    scores["heur_duplicate_paragraphs_char_ratio"] = dup_par_chars / n_chars

    ngrams = WordNgrams(words, doc_words.ids, doc_words.lengths)
    for n, chars in ngrams.top_ngram_chars(TOP_NGRAM_SIZES).items():
        scores[f"heur_top_{n}gram_char_ratio"] = chars / n_chars
    for n, chars in ngrams.duplicate_ngram_chars(DUPLICATE_NGRAM_SIZES).items():
        scores[f"heur_duplicate_{n}gram_char_ratio"] = chars / n_chars
    return scores
