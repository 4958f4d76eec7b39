"""Downstream-task decontamination, MT-NLG's rule (REFERENCE.md section 2).

Lowercase word 13-grams of every task text are indexed (task texts of 8 to 12 words are indexed
whole).  A training document containing an indexed n-gram is split: the n-gram plus
``cut_chars`` characters on each side is cut out, the cut widened outward to sentence
boundaries (``cut_window``), pieces shorter than ``min_piece_chars`` are dropped, and a document
split more than ``max_splits`` times is dropped entirely.  N-grams that occur ``>=
frequent_ngram_count`` times in the training corpus are common phrases; the caller counts them
over the whole corpus (a separate pass) and passes them as ``ignore`` to ``find_matches``.

Words are tokenized with their character offsets, so a cut maps onto the original text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping

# A word is a run of letters/digits (apostrophes inside words kept).  Punctuation is not part of
# any word, so "Hello, world!" and "hello world" give the same n-gram.
_WORD_RE = re.compile(r"\w+(?:'\w+)*")

# A sentence ends at [.!?] (plus closing quotes/brackets) followed by whitespace, or at a
# paragraph break (a line holding only whitespace).  Abbreviations ("Dr. Smith") also count as
# ends: a cut that stops early at one is still a full sentence of extra margin on that side.
_CLOSERS = "\"'\u201d\u2019)\\]"  # inside a character class: ] escaped
_TERMINATOR = rf"[.!?][{_CLOSERS}]*"
# Where the next sentence starts: after a terminator and its whitespace, or after a blank line.
_SENTENCE_START_RE = re.compile(rf"{_TERMINATOR}\s+|\n[ \t]*\n\s*")
# Where a sentence ends: right after a terminator (followed by whitespace), or at a blank line.
_SENTENCE_END_RE = re.compile(rf"{_TERMINATOR}(?=\s)|(?=\n[ \t]*\n)")

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
    """Parameters of the split rule (the first six confirmed from NVIDIA's code, REFERENCE.md)."""

    ngram_words: int = NGRAM_WORDS
    """Words per n-gram."""
    min_task_words: int = MIN_TASK_WORDS
    """Task texts shorter than ``ngram_words`` are matched whole if they have at least this many
    words; shorter ones are ignored (too generic)."""
    cut_chars: int = 200
    """Characters removed on each side of a match (before widening to a sentence boundary)."""
    min_piece_chars: int = 200
    """Pieces shorter than this (after whitespace stripping) are dropped."""
    max_splits: int = 10
    """A document split more than this many times is dropped."""
    frequent_ngram_count: int = 10
    """N-grams occurring this many times or more in the training corpus (all occurrences in all
    documents, as NVIDIA's code counts them) are common phrases and ignored."""
    boundary_window_chars: int = 200
    """How much further than ``cut_chars`` a cut may reach to end on a sentence boundary; with
    no boundary in reach it widens only to the nearest whitespace (never cuts inside a word)."""

    def __post_init__(self) -> None:
        for name in ("ngram_words", "min_task_words", "max_splits", "frequent_ngram_count"):
            if getattr(self, name) < 1:
                raise ValueError(f"DecontaminationConfig.{name} must be >= 1, got {getattr(self, name)}")
        for name in ("cut_chars", "min_piece_chars", "boundary_window_chars"):
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
    words = _WORD_RE.findall(text.lower())
    if len(words) >= n:
        return [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)]
    if len(words) >= min_words:
        return [" ".join(words)]
    return []


class TaskNgramIndex(dict):
    """``{ngram: task}`` that also knows which n-gram lengths (in words) it holds, so a
    document is scanned only for those lengths, and the first two words of every n-gram, a
    cheap filter that skips joining n-grams at positions that cannot match.  A plain dict works
    too (both recomputed per call)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lengths: set[int] = set()
        self.heads: set[str] = set()
        for k in self:
            self._note(k)

    def _note(self, key: str) -> None:
        words = key.split(" ")
        self.lengths.add(len(words))
        self.heads.add(" ".join(words[:2]))

    def __setitem__(self, key: str, value: str) -> None:
        super().__setitem__(key, value)
        self._note(key)

    def __reduce__(self):  # rebuild through __init__ so the sets exist before items arrive
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
    if isinstance(index, TaskNgramIndex):
        lengths, heads = index.lengths, index.heads
    else:
        lengths = {k.count(" ") + 1 for k in index}
        heads = {" ".join(k.split(" ")[:2]) for k in index}
    words = words_with_offsets(text)
    tokens = [w for w, _, _ in words]
    matches = []
    # Positions whose first two words start some indexed n-gram; only there is an n-gram joined.
    if min(lengths) < 2:  # one-word n-grams (min_task_words=1): no two-word head to test
        starts = list(range(len(tokens)))
    else:
        starts = [i for i in range(len(tokens) - 1) if tokens[i] + " " + tokens[i + 1] in heads]
    for n in sorted(lengths):
        for i in starts:
            if i + n > len(tokens):
                break
            ngram = " ".join(tokens[i : i + n])
            task = index.get(ngram)
            if task is not None and ngram not in ignore:
                matches.append(Match(words[i][1], words[i + n - 1][2], ngram, task))
    matches.sort(key=lambda m: (m.start_char, m.end_char))
    return matches


def _to_whitespace_back(text: str, pos: int) -> int:
    while pos > 0 and not text[pos - 1].isspace():
        pos -= 1
    return pos


def _to_whitespace_forward(text: str, pos: int) -> int:
    while pos < len(text) and not text[pos].isspace():
        pos += 1
    return pos


def cut_window(text: str, m: Match, cut_chars: int = 200, window: int = 200) -> tuple[int, int]:
    """The span ``[start, end)`` cut out for match ``m``.

    The match +- ``cut_chars`` (clamped to the text), then widened outward to sentence
    boundaries so both neighbouring pieces hold whole sentences:

    - start moves back to the start of the sentence containing it: just after the last sentence
      end (``[.!?]`` + closing quotes, then whitespace) or paragraph break at or before it, at
      most ``window`` characters back; the text start is a boundary.
    - end moves forward to the end of the sentence containing it: just after the next ``[.!?]``
      (+ closing quotes) that is followed by whitespace, or the next paragraph break, at most
      ``window`` characters on; the text end is a boundary.

    With no boundary in reach a side widens only to the nearest whitespace, so no piece starts
    or ends inside a word (a half word would be a fake token in training).
    """
    start = max(0, m.start_char - cut_chars)
    if start > 0:
        lo = max(0, start - window)
        best = -1
        for b in _SENTENCE_START_RE.finditer(text, lo, start):
            best = b.end()
        start = best if best >= 0 else (0 if lo == 0 else _to_whitespace_back(text, start))
    end = min(len(text), m.end_char + cut_chars)
    if end < len(text):
        hi = end + window
        found = next((b.end() for b in _SENTENCE_END_RE.finditer(
            text, max(end - 1, m.end_char), min(len(text), hi + 1)) if end <= b.end() <= hi), None)
        if found is not None:
            end = found
        else:
            end = len(text) if hi >= len(text) else _to_whitespace_forward(text, end)
    return start, end


def split_document(
    text: str,
    matches: list[Match],
    cut_chars: int = 200,
    min_piece_chars: int = 200,
    max_splits: int = 10,
    boundary_window_chars: int = 200,
) -> tuple[list[str] | None, dict]:
    """Cut every match out of ``text`` (each cut: ``cut_window``).

    Overlapping or touching cuts merge, and each merged cut is one split.  Pieces are
    whitespace-stripped and those shorter than ``min_piece_chars`` dropped.  Returns
    ``(pieces, info)``: ``pieces`` is ``None`` when the document is dropped (more than
    ``max_splits`` splits), may be ``[]`` when every piece was too short, and is ``[text]`` (the
    same object) when there are no matches.  ``info`` has ``matches``, ``splits``,
    ``pieces_dropped``, ``chars_removed``, ``tasks`` and ``cuts`` (``[start, end, task, ngram]``
    per merged cut, the first match's task and n-gram).
    """
    info = {"matches": len(matches), "splits": 0, "pieces_dropped": 0, "chars_removed": 0,
            "tasks": sorted({m.task for m in matches}), "cuts": []}
    if not matches:
        return [text], info
    cuts: list[list] = []
    for m in sorted(matches, key=lambda m: m.start_char):
        start, end = cut_window(text, m, cut_chars, boundary_window_chars)
        if cuts and start <= cuts[-1][1]:
            cuts[-1][1] = max(cuts[-1][1], end)
        else:
            cuts.append([start, end, m.task, m.ngram])
    info["splits"], info["cuts"] = len(cuts), cuts
    if len(cuts) > max_splits:
        info["chars_removed"] = len(text)
        return None, info
    pieces, prev = [], 0
    for start, end, *_ in cuts + [[len(text), len(text)]]:
        piece = text[prev:start].strip()
        if piece:
            if len(piece) >= min_piece_chars:
                pieces.append(piece)
            else:
                info["pieces_dropped"] += 1
        prev = end
    info["chars_removed"] = len(text) - sum(len(p) for p in pieces)
    return pieces, info
