"""Gopher / C4 style heuristic quality filters.

Thresholds are Gopher's (Rae et al. 2021, "Scaling Language Models", appendix A.1.1 "quality
filtering" and table A1 repetition thresholds) unless noted; C4 rules are from Raffel et al. 2020
section 2.2.  ``apply_heuristics`` runs rules cheapest first and returns the first failure.
"""
from __future__ import annotations

import re
import string
from collections import Counter
from dataclasses import dataclass, fields

from curation.document import FilterResult


@dataclass
class HeuristicsConfig:
    """Every threshold of the heuristic stage. ``None`` disables a rule."""

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
    default {2: 0.20, 3: 0.18, 4: 0.16}."""
    max_duplicate_ngram_char_ratio: dict[int, float] | None = None
    """Gopher table A1: characters in duplicated word n-grams / all characters, default
    {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10}."""
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
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None or isinstance(value, (bool, dict)):
                continue
            if value < 0:
                raise ValueError(f"HeuristicsConfig.{f.name} must be >= 0, got {value}")
            if "ratio" in f.name and value > 1:
                raise ValueError(f"HeuristicsConfig.{f.name} is a fraction and must be <= 1, got {value}")
        for name in ("max_top_ngram_char_ratio", "max_duplicate_ngram_char_ratio"):
            for n, ratio in getattr(self, name).items():
                if n < 1 or not 0 <= ratio <= 1:
                    raise ValueError(f"HeuristicsConfig.{name}[{n}] needs n >= 1 and a ratio in [0, 1], got {ratio}")
        for lo, hi in (("min_words", "max_words"), ("min_mean_word_length", "max_mean_word_length")):
            a, b = getattr(self, lo), getattr(self, hi)
            if a is not None and b is not None and a > b:
                raise ValueError(f"HeuristicsConfig.{lo} ({a}) must be <= HeuristicsConfig.{hi} ({b})")


STOP_WORDS = frozenset({"the", "be", "to", "of", "and", "that", "have", "with"})
BULLETS = ("•", "●", "○", "◦", "▪", "▫", "‣", "⁃", "-", "*", "–", "·")
ELLIPSES = ("...", "…")
_PUNCT = frozenset(string.punctuation + "“”‘’«»…–—")
_PARAGRAPH_RE = re.compile(r"\n\s*\n")


def _duplicates(elements: list[str]) -> tuple[int, int]:
    """(number of elements equal to an earlier one, their total characters), as Gopher."""
    seen: set[str] = set()
    count = chars = 0
    for el in elements:
        if el in seen:
            count += 1
            chars += len(el)
        else:
            seen.add(el)
    return count, chars


def _top_ngram_chars(words: list[str], n: int) -> int:
    """Characters covered by the most frequent word n-gram: len(ngram) x its count."""
    counts = Counter(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
    if not counts:
        return 0
    ngram, count = max(counts.items(), key=lambda kv: (kv[1], len(kv[0])))
    return len(ngram) * count if count > 1 else 0


def _duplicate_ngram_chars(words: list[str], n: int) -> int:
    """Characters in word n-grams that repeat an earlier one, skipping past each repeat so
    overlapping repeats are not counted twice (Gopher; datatrove's ``find_all_duplicate``)."""
    seen: set[str] = set()
    chars, i = 0, 0
    while i < len(words) - n + 1:
        ngram = "".join(words[i : i + n])
        if ngram in seen:
            chars += len(ngram)
            i += n
        else:
            seen.add(ngram)
            i += 1
    return chars


def apply_heuristics(text: str, cfg: HeuristicsConfig) -> FilterResult:
    """Run the enabled rules cheapest first; the first failing rule's reason, or kept."""
    words = text.split()
    n_words = len(words)
    if cfg.min_words is not None and n_words < cfg.min_words:
        return FilterResult.drop("too_few_words")
    if cfg.max_words is not None and n_words > cfg.max_words:
        return FilterResult.drop("too_many_words")
    if n_words == 0:
        return FilterResult.drop("too_few_words")  # every ratio below divides by the word count
    lowered = text.lower()
    if cfg.drop_lorem_ipsum and "lorem ipsum" in lowered:
        return FilterResult.drop("lorem_ipsum")
    if cfg.max_curly_bracket_ratio is not None and text.count("{") / n_words > cfg.max_curly_bracket_ratio:
        return FilterResult.drop("curly_bracket")

    # Mean length over words that are not pure punctuation (a lone "-" is not a word).
    content_words = [w for w in words if any(c not in _PUNCT for c in w)]
    mean_len = sum(len(w) for w in content_words) / len(content_words) if content_words else 0.0
    if cfg.min_mean_word_length is not None and mean_len < cfg.min_mean_word_length:
        return FilterResult.drop("short_mean_word_length")
    if cfg.max_mean_word_length is not None and mean_len > cfg.max_mean_word_length:
        return FilterResult.drop("long_mean_word_length")
    if cfg.max_symbol_word_ratio is not None:
        hashes = text.count("#")
        ellipses = text.count("...") + text.count("…")
        if max(hashes, ellipses) / n_words > cfg.max_symbol_word_ratio:
            return FilterResult.drop("symbol_word_ratio")

    lines = [ln.strip() for ln in text.split("\n")]
    lines = [ln for ln in lines if ln] or [""]
    if cfg.max_bullet_lines_ratio is not None:
        if sum(ln.startswith(BULLETS) for ln in lines) / len(lines) > cfg.max_bullet_lines_ratio:
            return FilterResult.drop("bullet_lines")
    if cfg.max_ellipsis_lines_ratio is not None:
        if sum(ln.endswith(ELLIPSES) for ln in lines) / len(lines) > cfg.max_ellipsis_lines_ratio:
            return FilterResult.drop("ellipsis_lines")
    if cfg.max_javascript_lines_ratio is not None:
        if sum("javascript" in ln.lower() for ln in lines) / len(lines) > cfg.max_javascript_lines_ratio:
            return FilterResult.drop("javascript_lines")
    if cfg.min_alpha_words_ratio is not None:
        if sum(any(c.isalpha() for c in w) for w in words) / n_words < cfg.min_alpha_words_ratio:
            return FilterResult.drop("low_alpha_words")
    if cfg.min_stop_words is not None:
        stops = sum(w.strip(string.punctuation).lower() in STOP_WORDS for w in words)
        if stops < cfg.min_stop_words:
            return FilterResult.drop("few_stop_words")

    # Repetition (Gopher table A1): lines, paragraphs, then n-grams, the most expensive.
    n_chars = max(len(text), 1)
    dup_lines, dup_line_chars = _duplicates(lines)
    if cfg.max_duplicate_lines_ratio is not None and dup_lines / len(lines) > cfg.max_duplicate_lines_ratio:
        return FilterResult.drop("duplicate_lines")
    if cfg.max_duplicate_lines_char_ratio is not None and dup_line_chars / n_chars > cfg.max_duplicate_lines_char_ratio:
        return FilterResult.drop("duplicate_line_chars")
    paragraphs = [p.strip() for p in _PARAGRAPH_RE.split(text) if p.strip()] or [""]
    dup_pars, dup_par_chars = _duplicates(paragraphs)
    if cfg.max_duplicate_paragraphs_ratio is not None and dup_pars / len(paragraphs) > cfg.max_duplicate_paragraphs_ratio:
        return FilterResult.drop("duplicate_paragraphs")
    if (cfg.max_duplicate_paragraphs_char_ratio is not None
            and dup_par_chars / n_chars > cfg.max_duplicate_paragraphs_char_ratio):
        return FilterResult.drop("duplicate_paragraph_chars")
    for n, limit in sorted(cfg.max_top_ngram_char_ratio.items()):
        if _top_ngram_chars(words, n) / n_chars > limit:
            return FilterResult.drop(f"top_{n}gram_chars")
    for n, limit in sorted(cfg.max_duplicate_ngram_char_ratio.items()):
        if _duplicate_ngram_chars(words, n) / n_chars > limit:
            return FilterResult.drop(f"duplicate_{n}gram_chars")
    return FilterResult.kept()
