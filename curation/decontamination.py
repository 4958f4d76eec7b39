"""Downstream-task decontamination, MT-NLG's rule (REFERENCE.md section 2).

Lowercase word 13-grams of every task text are indexed (task texts of 8 to 12 words are indexed
whole).  A training document containing an indexed n-gram is split: the n-gram plus
``cut_chars`` characters on each side is cut out, pieces shorter than ``min_piece_chars`` are
dropped, and a document split more than ``max_splits`` times is dropped entirely.  N-grams that
occur ``>= 10`` times in the training corpus are common phrases; the caller counts them and
passes them as ``ignore`` to ``find_matches``.

Words are tokenized with their character offsets, so a cut maps onto the original text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping

# A word is a run of letters/digits (apostrophes inside words kept).  Punctuation is not part of
# any word, so "Hello, world!" and "hello world" give the same n-gram.
_WORD_RE = re.compile(r"\w+(?:'\w+)*")

NGRAM_WORDS = 13
MIN_TASK_WORDS = 8


@dataclass(frozen=True)
class Match:
    start_char: int
    end_char: int  # exclusive
    ngram: str  # the lowercase words joined by single spaces
    task: str


@dataclass
class DecontaminationConfig:
    """Parameters of the split rule (all confirmed from NVIDIA's code, REFERENCE.md)."""

    ngram_words: int = NGRAM_WORDS
    """Words per n-gram."""
    min_task_words: int = MIN_TASK_WORDS
    """Task texts shorter than ``ngram_words`` are matched whole if they have at least this many
    words; shorter ones are ignored (too generic)."""
    cut_chars: int = 200
    """Characters removed on each side of a match."""
    min_piece_chars: int = 200
    """Pieces shorter than this after cutting are dropped."""
    max_splits: int = 10
    """A document split more than this many times is dropped."""
    frequent_ngram_count: int = 10
    """N-grams seen this many times or more in the training corpus are ignored."""

    def __post_init__(self) -> None:
        for name in ("ngram_words", "min_task_words", "max_splits", "frequent_ngram_count"):
            if getattr(self, name) < 1:
                raise ValueError(f"DecontaminationConfig.{name} must be >= 1, got {getattr(self, name)}")
        for name in ("cut_chars", "min_piece_chars"):
            if getattr(self, name) < 0:
                raise ValueError(f"DecontaminationConfig.{name} must be >= 0, got {getattr(self, name)}")
        if self.min_task_words > self.ngram_words:
            raise ValueError("DecontaminationConfig.min_task_words must be <= ngram_words")


def words_with_offsets(text: str) -> list[tuple[str, int, int]]:
    """Lowercase words with their (start, end) character offsets in ``text``."""
    return [(m.group(0).lower(), m.start(), m.end()) for m in _WORD_RE.finditer(text)]


def task_ngrams(text: str, n: int = NGRAM_WORDS, min_words: int = MIN_TASK_WORDS) -> list[str]:
    """The n-grams a task text contributes: all word n-grams, or the whole text if it has
    ``min_words <= words < n``, or nothing if it is shorter."""
    words = [w for w, _, _ in words_with_offsets(text)]
    if len(words) >= n:
        return [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)]
    if len(words) >= min_words:
        return [" ".join(words)]
    return []


class TaskNgramIndex(dict):
    """``{ngram: task}`` that also knows which n-gram lengths (in words) it holds, so a
    document is scanned only for those lengths.  A plain dict works too (lengths recomputed)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lengths: set[int] = {k.count(" ") + 1 for k in self}

    def __setitem__(self, key: str, value: str) -> None:
        super().__setitem__(key, value)
        self.lengths.add(key.count(" ") + 1)

    def __reduce__(self):  # rebuild through __init__ so ``lengths`` exists before items arrive
        return (type(self), (dict(self),))


def build_task_ngrams(
    task_texts: Iterable[tuple[str, str]] | dict[str, Iterable[str]],
    n: int = NGRAM_WORDS,
    min_words: int = MIN_TASK_WORDS,
) -> TaskNgramIndex:
    """Index ``{ngram: task}`` from ``(task, text)`` pairs or ``{task: [texts]}``.
    An n-gram found in several tasks keeps the first task seen."""
    pairs = (
        ((task, t) for task, texts in task_texts.items() for t in texts)
        if isinstance(task_texts, dict)
        else task_texts
    )
    index = TaskNgramIndex()
    for task, text in pairs:
        for ngram in task_ngrams(text, n, min_words):
            if ngram not in index:
                index[ngram] = task
    return index


def frequent_ngrams(counts: Mapping[str, int], min_count: int = 10) -> frozenset[str]:
    """N-grams counted at least ``min_count`` times in the training corpus (the caller sums
    ``Match.ngram`` occurrences over all documents); pass the result as ``ignore``."""
    return frozenset(ng for ng, c in counts.items() if c >= min_count)


def find_matches(
    text: str, index: dict[str, str], ignore: frozenset[str] | set[str] = frozenset()
) -> list[Match]:
    """All occurrences in ``text`` of indexed n-grams not in ``ignore``, in text order."""
    if not index:
        return []
    lengths = getattr(index, "lengths", None) or {k.count(" ") + 1 for k in index}
    words = words_with_offsets(text)
    tokens = [w for w, _, _ in words]
    matches = []
    for n in sorted(lengths):
        for i in range(len(tokens) - n + 1):
            ngram = " ".join(tokens[i : i + n])
            task = index.get(ngram)
            if task is not None and ngram not in ignore:
                matches.append(Match(words[i][1], words[i + n - 1][2], ngram, task))
    matches.sort(key=lambda m: (m.start_char, m.end_char))
    return matches


def _cut_window(text: str, m: Match, cut_chars: int) -> tuple[int, int]:
    """The match +- cut_chars, widened outward to whitespace so no piece starts or ends inside
    a word (a half word would be a fake token in training)."""
    start = max(0, m.start_char - cut_chars)
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    end = min(len(text), m.end_char + cut_chars)
    while end < len(text) and not text[end].isspace():
        end += 1
    return start, end


def split_document(
    text: str,
    matches: list[Match],
    cut_chars: int = 200,
    min_piece_chars: int = 200,
    max_splits: int = 10,
) -> tuple[list[str] | None, dict]:
    """Cut every match +- ``cut_chars`` out of ``text``.

    Cut windows are widened to whitespace (see ``_cut_window``); overlapping windows merge, and
    each merged window is one split.  Pieces are whitespace-stripped and those shorter than
    ``min_piece_chars`` dropped.  Returns ``(pieces, info)``: ``pieces`` is ``None`` when the
    document is dropped (more than ``max_splits`` splits), may be ``[]`` when every piece was
    too short, and is ``[text]`` (the same object) when there are no matches.
    ``info`` has ``matches``, ``splits``, ``pieces_dropped``, ``chars_removed`` and ``tasks``.
    """
    info = {"matches": len(matches), "splits": 0, "pieces_dropped": 0, "chars_removed": 0,
            "tasks": sorted({m.task for m in matches})}
    if not matches:
        return [text], info
    windows: list[list[int]] = []
    for m in sorted(matches, key=lambda m: m.start_char):
        start, end = _cut_window(text, m, cut_chars)
        if windows and start <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], end)
        else:
            windows.append([start, end])
    info["splits"] = len(windows)
    if len(windows) > max_splits:
        info["chars_removed"] = len(text)
        return None, info
    pieces, prev = [], 0
    for start, end in windows + [[len(text), len(text)]]:
        piece = text[prev:start].strip()
        if piece:
            if len(piece) >= min_piece_chars:
                pieces.append(piece)
            else:
                info["pieces_dropped"] += 1
        prev = end
    info["chars_removed"] = len(text) - sum(len(p) for p in pieces)
    return pieces, info
