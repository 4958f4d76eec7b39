"""Downstream-task decontamination, MT-NLG's rule (REFERENCE.md section 2).

Lowercase word 13-grams of every task text are indexed (task texts of 8 to 12 words are indexed
whole).  A training document containing an indexed n-gram is split: the n-gram plus
``cut_chars`` characters on each side is cut out, the cut widened outward to sentence
boundaries (``cut_window``), pieces shorter than ``min_piece_chars`` are dropped, and a document
split more than ``max_splits`` times is dropped entirely.  N-grams that occur ``>=
frequent_ngram_count`` times in the training corpus are common phrases; the caller counts them
over the whole corpus (a separate pass) and passes them as ``ignore`` to ``find_matches``.

Task texts and documents are read the same way: the pipeline's ``normalize_text`` (documents
before this stage, task texts in ``normalized_words``), then one word splitter (``words``), so a
task copied with typographic quotes, ligatures or decomposed accents still matches.  Document
words keep their character offsets, so a cut maps onto the original text.  The index is
``curation.ngram_index.TaskNgramIndex`` (hashed, every hit verified word for word).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import islice
from typing import Iterable, Mapping

from curation.ngram_index import TaskNgramIndex
from curation.word_hashes import APOSTROPHES

# A word is a run of letters/digits (apostrophes inside words kept).  Punctuation is not part of
# any word, so "Hello, world!" and "hello world" give the same n-gram.  Apostrophe look-alikes
# that ftfy leaves alone (acute accent, grave accent, prime; U+02BC is a letter to ``\w``) join
# a word too and read as "'", so "don\u00b4t" in a web page is the task's "don't", not "don t".
_APOSTROPHES = APOSTROPHES  # "'\u2019\u2018\u02bc\u00b4`\u2032"
_WORD_RE = re.compile(rf"\w+(?:[{_APOSTROPHES}]\w+)*")
_APOSTROPHE_VARIANT_RE = re.compile(f"[{_APOSTROPHES[1:]}]")

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
                raise ValueError(f"{name}: must be >= 1, got {getattr(self, name)}")
        for name in ("cut_chars", "min_piece_chars", "boundary_window_chars"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}: must be >= 0, got {getattr(self, name)}")
        if self.min_task_words > self.ngram_words:
            raise ValueError(f"min_task_words: must be <= ngram_words ({self.ngram_words}), "
                             f"got {self.min_task_words}")


def words(text: str) -> list[str]:
    """The lowercase words of ``text``, apostrophe variants inside a word read as ``'``
    (``didn\u00b4t`` is the word ``didn't``).  Each word is lowercased on its own (joined by
    newlines, which stop Greek final-sigma context), so a word reads the same in any text."""
    found = _WORD_RE.findall(text)
    if not found:
        return []
    joined = "\n".join(found).lower()
    if _APOSTROPHE_VARIANT_RE.search(joined):  # a substitution where they are: a translate
        joined = _APOSTROPHE_VARIANT_RE.sub("'", joined)  # visits every character
    return joined.split("\n")


def words_with_offsets(text: str) -> list[tuple[str, int, int]]:
    """``words(text)`` with their (start, end) character offsets in ``text``."""
    return [(w, *m.span()) for w, m in zip(words(text), _WORD_RE.finditer(text))]


def normalized_words(text: str) -> list[str]:
    """The words of ``text`` exactly as a document's words are seen by ``find_matches``: after
    the pipeline's normalisation (``curation.normalize.normalize_text``: ftfy, NFC, control
    characters, whitespace) and the same word splitting (``words``).  Task texts
    go through this, so a task copied with typographic quotes, ligatures or decomposed accents
    gives the n-grams its normalised copy in a document gives."""
    from curation.normalize import normalize_text

    return words(normalize_text(text))


def task_ngrams(text: str, n: int = NGRAM_WORDS, min_words: int = MIN_TASK_WORDS) -> list[str]:
    """The n-grams a task text contributes (of its ``normalized_words``): all word n-grams, or
    the whole text if it has ``min_words <= words < n``, or nothing if it is shorter."""
    ws = normalized_words(text)
    if len(ws) >= n:
        return [" ".join(ws[i : i + n]) for i in range(len(ws) - n + 1)]
    if len(ws) >= min_words:
        return [" ".join(ws)]
    return []


def build_task_ngrams(
    task_texts: Iterable[tuple[str, str]] | dict[str, Iterable[str]],
    n: int = NGRAM_WORDS,
    min_words: int = MIN_TASK_WORDS,
) -> TaskNgramIndex:
    """The index of ``(task, text)`` pairs or ``{task: [texts]}`` (``curation.ngram_index``).
    Every text is normalised like a document (``normalized_words``); an n-gram held by several
    tasks is attributed to the smallest task name (the same whatever order tasks come in)."""
    pairs = (
        ((task, t) for task, texts in task_texts.items() for t in texts)
        if isinstance(task_texts, dict)
        else task_texts
    )
    # raw text -> its words joined by spaces: a SQuAD context repeats for every question, and
    # normalising it once is enough (one string per text, not a list of word objects)
    joined: dict[str, str] = {}

    def task_words():
        for task, text in pairs:
            ws = joined.get(text)
            if ws is None:
                ws = joined[text] = " ".join(normalized_words(text))
            yield task, ws.split(" ") if ws else []

    return TaskNgramIndex.build(task_words(), n, min_words)


def frequent_ngrams(counts: Mapping[str, int], min_count: int = 10) -> frozenset[str]:
    """N-grams counted at least ``min_count`` times in the training corpus (the caller sums
    ``Match.ngram`` occurrences over all documents); pass the result as ``ignore``."""
    return frozenset(ng for ng, c in counts.items() if c >= min_count)


def find_matches(
    text: str, index: TaskNgramIndex | Mapping[str, str], ignore: frozenset[str] | set[str] = frozenset()
) -> list[Match]:
    """All occurrences in ``text`` of indexed n-grams not in ``ignore``, in text order.

    ``text`` is a normalised document (the pipeline normalises before this stage); ``index``
    a ``TaskNgramIndex`` (a plain ``{ngram: task}`` mapping is indexed on every call)."""
    if not isinstance(index, TaskNgramIndex):
        index = TaskNgramIndex.from_ngrams(index)
    if not len(index):
        return []
    hits = [h for h in index.lookup_text(text, words) if h[2] not in ignore]
    if not hits:  # most documents: no offsets needed
        return []
    spans = _word_spans(text, {k for i, n, _, _ in hits for k in (i, i + n - 1)})
    matches = [Match(spans[i][0], spans[i + n - 1][1], ngram, task) for i, n, ngram, task in hits]
    matches.sort(key=lambda m: (m.start_char, m.end_char))
    return matches


def find_matches_batch(texts: list[str], index: TaskNgramIndex) -> list[list[Match]]:
    """``[find_matches(t, index) for t in texts]``, the texts screened many at a time
    (``TaskNgramIndex.candidates``): only a text with a hash hit is matched on its own."""
    if not len(index):
        return [[] for _ in texts]
    return [find_matches(t, index) if maybe else [] for t, maybe in zip(texts, index.candidates(texts))]


def _word_spans(text: str, wanted: set[int]) -> dict[int, tuple[int, int]]:
    """{k: (start, end) of word k} for the word numbers ``wanted``, skipping the others in C
    (a span for every word of a 10 MB page with one hit cost more than finding the hits)."""
    found, words_, at = {}, _WORD_RE.finditer(text), 0
    for k in sorted(wanted):
        found[k] = next(islice(words_, k - at, None)).span()
        at = k + 1
    return found


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
