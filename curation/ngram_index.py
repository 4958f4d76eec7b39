"""A compact index of task n-grams: sorted 64-bit hashes, every hit verified word for word.

The decontamination index holds every 13-gram of every evaluation text (about a million for a
few thousand passages, tens of millions for the full MT-NLG task list).  As a Python dict
``{ngram: task}`` that is ~150 bytes per n-gram, slow to build, pickle and ship; here it is
four flat arrays (24 bytes per n-gram) plus the task texts themselves:

- ``hashes`` (uint64, sorted): the hash of each distinct n-gram, for ``np.searchsorted``;
- ``starts`` / ``sizes``: where the n-gram's words (lowercase, joined by single spaces) sit in
  ``text``, the UTF-8 bytes of all distinct task texts;
- ``task_ids``: which task the n-gram is attributed to (the smallest task name among the tasks
  holding it, so the attribution does not depend on the order task files are read in).

A document is scanned by hashing all its n-gram windows at once (``ngram_hashes``: a polynomial
rolling hash over per-word hashes, ``curation.word_hashes``, all vectorised in numpy) and looking
them up in one ``searchsorted``; only a document with a hit is split into word strings
(``lookup_text``).  A 64-bit hash alone is not enough: at a 100M-n-gram index and ~1e11 document
windows (MT-NLG's corpus) about one false hit is expected, and a false hit would cut text out
of a clean document.  So every hash hit is VERIFIED by comparing the document's words with the
stored words of each index entry carrying that hash; a match is never wrong, and a collision
costs one extra byte comparison.  Hashes equal within the index (a collision between two task
n-grams) are kept side by side and told apart the same way.
"""
from __future__ import annotations

import math
from typing import Iterable, Iterator, Mapping, Sequence

import numpy as np

from curation.word_hashes import (CHUNK, CONTEXT_CHARS, powers, text_word_hashes, text_words,
                                  word_hashes)

# An odd 64-bit constant (2^64 / golden ratio) added n times: windows of different lengths apart.
_LENGTH = 0x9E3779B97F4A7C15
_EMPTY = np.empty(0, dtype=np.uint64)


def window_hashes(wh: np.ndarray, lengths) -> dict[int, np.ndarray]:
    """``{n: ngram_hashes(wh, n)}`` for every ``n`` in ``lengths``, from one prefix sum."""
    out, k = {}, len(wh)
    if not k:
        return {n: _EMPTY for n in lengths}
    up, down = powers(k + 1)
    prefix = np.zeros(k + 1, dtype=np.uint64)
    np.cumsum(wh * up[:k], out=prefix[1:])  # uint64 arithmetic wraps mod 2^64, unchecked
    for n in lengths:
        m = k - n + 1
        if m <= 0 or n <= 0:
            out[n] = _EMPTY
            continue
        h = prefix[n:] - prefix[:m]
        h *= down[:m]
        h += np.uint64(_LENGTH * n % (1 << 64))
        out[n] = h
    return out


def ngram_hashes(wh: np.ndarray, n: int) -> np.ndarray:
    """The hash of every ``n``-word window of the word hashes ``wh`` (``len(wh) - n + 1``
    values): ``h = n * L + sum(w[i + j] * R^j for j < n) mod 2^64`` (``R`` odd: invertible,
    so two windows that differ in one word never hash alike unless those words' hashes do;
    ``curation.word_hashes`` mixes every word hash).  Computed for all windows at once from
    the prefix sums of ``w[k] * R^k``, divided by ``R^i`` (``window_hashes``)."""
    return window_hashes(wh, [n])[n]


class TaskNgramIndex:
    """Distinct task n-grams -> task, in flat arrays (see the module docstring).

    Build with ``build`` (n-grams of word lists) or ``from_ngrams`` (a ``{ngram: task}``
    mapping); query with ``lookup`` (all windows of a document) or the mapping methods
    (``get``, ``in``, ``len``, ``items``).  ``lengths`` are the n-gram lengths (in words) it
    holds, ``tasks`` every task seen (also those whose texts were all too short)."""

    def __init__(self, tasks: list[str], hashes: np.ndarray, task_ids: np.ndarray, starts: np.ndarray,
                 sizes: np.ndarray, text: bytes, lengths: set[int]) -> None:
        self.tasks, self.hashes, self.task_ids = tasks, hashes, task_ids
        self.starts, self.sizes, self.text, self.lengths = starts, sizes, text, lengths
        self._present = None

    # -- building ---------------------------------------------------------------------------

    @classmethod
    def build(cls, task_words: Iterable[tuple[str, Sequence[str]]], n: int, min_words: int) -> "TaskNgramIndex":
        """Index every ``n``-word window of each ``(task, words)``; a text with ``min_words <=
        len(words) < n`` is one entry of its own length, a shorter one contributes nothing."""
        def windows():
            for task, words in task_words:
                yield task, words, (n if len(words) >= n else len(words) if len(words) >= min_words else 0)
        return cls._from_texts(windows())

    @classmethod
    def from_ngrams(cls, mapping: Mapping[str, str]) -> "TaskNgramIndex":
        """An index holding exactly the keys of ``{ngram: task}`` (words joined by spaces)."""
        return cls._from_texts((task, ngram.split(" "), ngram.count(" ") + 1) for ngram, task in mapping.items())

    @classmethod
    def _from_texts(cls, items: Iterable[tuple[str, Sequence[str], int]]) -> "TaskNgramIndex":
        # 1. distinct texts, each with the smallest task name holding it (n-grams of one text
        #    are the same whoever holds it, so the per-n-gram minimum is taken over these).
        owner: dict[tuple[str, int], str] = {}
        seen_tasks: set[str] = set()
        for task, words, k in items:
            seen_tasks.add(task)
            if k > 0:
                key = (" ".join(words), k)
                if key not in owner or task < owner[key]:
                    owner[key] = task
        tasks = sorted(seen_tasks)
        task_id = {t: i for i, t in enumerate(tasks)}
        # 2. one entry per window: hash, task, and where its words sit in the text bytes.
        parts, hashes, tids, starts, sizes, base, lengths = [], [], [], [], [], 0, set()
        for (joined, k), task in owner.items():
            words = joined.split(" ")
            encoded = joined.encode("utf-8")
            wbytes = (np.fromiter(map(len, words), np.int64, len(words)) if len(encoded) == len(joined)
                      else np.fromiter((len(w.encode("utf-8")) for w in words), np.int64, len(words)))
            wstart = np.cumsum(wbytes + 1) - wbytes - 1  # byte offset of each word in `encoded`
            h = ngram_hashes(word_hashes(words), k)
            m = len(h)
            hashes.append(h)
            tids.append(np.full(m, task_id[task], dtype=np.int32))
            starts.append(base + wstart[:m])
            sizes.append((wstart[k - 1:k - 1 + m] + wbytes[k - 1:k - 1 + m] - wstart[:m]).astype(np.int32))
            parts.append(encoded)
            base += len(encoded) + 1
            lengths.add(k)
        if not hashes:
            return cls(tasks, _EMPTY, np.empty(0, np.int32), np.empty(0, np.int64), np.empty(0, np.int32),
                       b"", set())
        h, t = np.concatenate(hashes), np.concatenate(tids)
        s, z = np.concatenate(starts), np.concatenate(sizes)
        text = b"\n".join(parts)
        # 3. sort by (hash, task) and keep the first entry of every distinct n-gram: the
        #    smallest task wins; equal hashes with different words (collisions) both stay.
        order = np.lexsort((t, h))
        h, t, s, z = h[order], t[order], s[order], z[order]
        keep = np.ones(len(h), dtype=bool)
        run_hash, run_ngrams = None, set()
        for p in (np.flatnonzero(h[1:] == h[:-1]) + 1).tolist():
            if h[p] != run_hash:  # a new run of equal hashes starts at p - 1
                run_hash, run_ngrams = h[p], {text[s[p - 1]:s[p - 1] + z[p - 1]]}
            ngram = text[s[p]:s[p] + z[p]]
            if ngram in run_ngrams:
                keep[p] = False
            else:
                run_ngrams.add(ngram)
        return cls(tasks, h[keep], t[keep], s[keep], z[keep], text, lengths)

    # -- querying ---------------------------------------------------------------------------

    def lookup_text(self, text: str, split) -> list[tuple[int, int, str, str]]:
        """``lookup(split(text))``, where ``split`` is the word splitter the word hashes follow
        (``curation.decontamination.words``): the text's word hashes come from its code points
        (``text_word_hashes``) and only a text with a hash hit is split into words, whose hits
        ``lookup`` then verifies."""
        if not len(self.hashes) or not text:
            return []
        wh = text_word_hashes(text)
        if wh is not None and not self._any_hit(wh):
            return []  # most documents: no word strings at all
        return self.lookup(split(text))

    def candidates(self, texts: Sequence[str]) -> list[bool]:
        """For each text, whether ``lookup_text`` may find anything in it: False when no window
        of its words hashes to an index entry.  Texts are hashed many at a time (joined by
        newlines, which no word spans; windows across two texts ignored), so a batch of short
        documents costs a few numpy passes, not a few per document.  A text longer than
        ``CHUNK`` or holding one of ``CONTEXT_CHARS`` is True (``lookup_text`` decides)."""
        out = [True] * len(texts)
        if not len(self.hashes):
            return [False] * len(texts)
        group: list[int] = []
        size = 0
        for i, t in enumerate(texts):
            if not t:
                out[i] = False
            elif len(t) < CHUNK and not any(c in t for c in CONTEXT_CHARS):
                if size + len(t) >= CHUNK:
                    self._candidates(texts, group, out)
                    group, size = [], 0
                group.append(i)
                size += len(t) + 1
        self._candidates(texts, group, out)
        return out

    def _candidates(self, texts: Sequence[str], group: list[int], out: list[bool]) -> None:
        if not group:
            return
        wh, word_starts = text_words("\n".join(texts[i] for i in group))
        lengths = np.fromiter((len(texts[i]) + 1 for i in group), dtype=np.int64, count=len(group))
        text_of = np.searchsorted(np.cumsum(lengths) - lengths, word_starts, side="right") - 1
        hit = np.zeros(len(group), dtype=bool)
        present, shift = self._presence()
        for n, h in window_hashes(wh, sorted(self.lengths)).items():
            maybe = np.flatnonzero(present[h >> shift])
            maybe = maybe[text_of[maybe] == text_of[maybe + n - 1]]  # windows inside one text
            if len(maybe):
                pos = np.minimum(np.searchsorted(self.hashes, h[maybe]), len(self.hashes) - 1)
                hit[text_of[maybe[self.hashes[pos] == h[maybe]]]] = True
        for i, h in zip(group, hit.tolist()):
            out[i] = h

    def _any_hit(self, wh: np.ndarray) -> bool:
        present, shift = self._presence()
        for h in window_hashes(wh, sorted(self.lengths)).values():
            maybe = h[present[h >> shift]]  # a table look-up per window, a search per candidate
            if len(maybe):
                pos = np.minimum(np.searchsorted(self.hashes, maybe), len(self.hashes) - 1)
                if (self.hashes[pos] == maybe).any():
                    return True
        return False

    def _presence(self) -> tuple[np.ndarray, np.uint64]:
        """A table of which top-``bits`` hash prefixes the index holds (about 1 in 64 set, at
        most 2^26 entries), built on first use: most windows are ruled out by one look-up
        instead of a binary search of the hashes."""
        if self._present is None:
            bits = int(min(26, max(16, math.ceil(math.log2(max(2, len(self.hashes)))) + 6)))
            shift = np.uint64(64 - bits)
            present = np.zeros(1 << bits, dtype=bool)
            present[self.hashes >> shift] = True
            self._present = (present, shift)
        return self._present

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_present": None}  # rebuilt where used

    def lookup(self, words: Sequence[str]) -> list[tuple[int, int, str, str]]:
        """Every window of ``words`` that is an indexed n-gram: ``(first word, length, ngram,
        task)``, by length then position."""
        if not len(self.hashes) or not words:
            return []
        out = []
        for n, h in window_hashes(word_hashes(words), sorted(self.lengths)).items():
            if not len(h):
                continue
            pos = np.searchsorted(self.hashes, h)
            hit = self.hashes[np.minimum(pos, len(self.hashes) - 1)] == h
            for i in np.flatnonzero(hit).tolist():
                ngram = " ".join(words[i:i + n])
                task = self._verified(int(pos[i]), ngram)
                if task is not None:
                    out.append((i, n, ngram, task))
        return out

    def _verified(self, k: int, ngram: str) -> str | None:
        """The task of the entry at ``k`` (or a later one with the same hash) whose words are
        ``ngram``; None for a hash collision with no such entry."""
        b, h = ngram.encode("utf-8"), self.hashes[k]
        while k < len(self.hashes) and self.hashes[k] == h:
            s = int(self.starts[k])
            if self.sizes[k] == len(b) and self.text[s:s + len(b)] == b:
                return self.tasks[self.task_ids[k]]
            k += 1
        return None

    def get(self, ngram: str, default: str | None = None) -> str | None:
        words = ngram.split(" ")
        h = ngram_hashes(word_hashes(words), len(words))
        k = int(np.searchsorted(self.hashes, h[0])) if len(h) else len(self.hashes)
        if k >= len(self.hashes) or self.hashes[k] != h[0]:
            return default
        task = self._verified(k, ngram)
        return default if task is None else task

    def __getitem__(self, ngram: str) -> str:
        task = self.get(ngram)
        if task is None:
            raise KeyError(ngram)
        return task

    def __contains__(self, ngram: object) -> bool:
        return isinstance(ngram, str) and self.get(ngram) is not None

    def __len__(self) -> int:
        return len(self.hashes)

    def items(self) -> Iterator[tuple[str, str]]:
        for s, z, t in zip(self.starts.tolist(), self.sizes.tolist(), self.task_ids.tolist()):
            yield self.text[s:s + z].decode("utf-8"), self.tasks[t]

    def ngrams_per_task(self) -> dict[str, int]:
        """Distinct n-grams attributed to each task (0 for a task with none)."""
        counts = np.bincount(self.task_ids, minlength=len(self.tasks))
        return {t: int(c) for t, c in zip(self.tasks, counts)}

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays and the task text."""
        return sum(a.nbytes for a in (self.hashes, self.task_ids, self.starts, self.sizes)) + len(self.text)
