"""Gopher's word n-gram repetition measures, vectorised (the hot spot of the heuristic stage).

Both measures give exactly what the plain definitions give (kept as the reference in
``tests/curation/test_heuristics.py``); they differ only in cost:

* ``top_ngram_chars``: characters covered by the most frequent word n-gram, ``len(" ".join(g))
  x count`` (0 when nothing repeats), ties broken by the longer n-gram.  Words never contain
  whitespace, so two n-grams are equal as space-joined strings exactly when their word tuples
  are equal: an n-gram becomes one exact integer built from word ids (or, for very large
  vocabularies, the id of its (n-1)-gram prefix and its last word), and the most frequent one is
  found by sorting integers instead of counting one joined string per position and size.
* ``duplicate_ngram_chars``: characters in n-grams that repeat an earlier one, walking left to
  right and jumping past each repeat (Gopher; datatrove's ``find_all_duplicate``).  The n-gram
  is its words joined WITHOUT a separator, as in those implementations, so ``"ab c"`` repeats
  ``"a bc"``.  A polynomial hash of each such string (mod 2**64, every position and size at once
  from prefix sums over the characters) finds the positions whose string may occur twice; only
  those are walked in Python, and each repeat is confirmed by comparing the strings, so a hash
  collision can cost time but never change the result.
"""
from __future__ import annotations

import numpy as np

_BASE = 0x9E3779B97F4A7C15  # odd, so it has an inverse mod 2**64
_INV_BASE = pow(_BASE, -1, 1 << 64)
_LOW_BITS = 16  # powers are looked up as low[t & 0xFFFF] * high[t >> 16]: bounded tables
_CHUNK = 1 << 20  # characters hashed per numpy pass, so long documents stay bounded in memory
_POWERS: dict[int, tuple[np.ndarray, np.ndarray]] = {}
_SIZE_MIX = 0xD6E8FEB86659FD93  # separates the sizes that share one sort


def _powers(base: int, exponents: np.ndarray) -> np.ndarray:
    """base ** exponents mod 2**64, elementwise (uint64 arithmetic wraps, which is the mod)."""
    low, high = _POWERS.get(base, (None, None))
    if low is None:
        low = np.ones(1, np.uint64)
        while len(low) < 1 << _LOW_BITS:  # doubling: low[k:2k] = low[:k] * base^k
            low = np.concatenate([low, low * np.uint64(pow(base, len(low), 1 << 64))])
        high = np.ones(1, np.uint64)
    largest = int(exponents.max()) if len(exponents) else 0
    need = (largest >> _LOW_BITS) + 1
    if len(high) < need:
        step, grown = pow(base, 1 << _LOW_BITS, 1 << 64), [int(v) for v in high]
        while len(grown) < need:
            grown.append(grown[-1] * step % (1 << 64))
        high = np.array(grown, np.uint64)
    _POWERS[base] = (low, high)
    if need == 1:
        return low[exponents]  # high[0] == 1: the same values, one look-up
    return low[exponents & ((1 << _LOW_BITS) - 1)] * high[exponents >> _LOW_BITS]


def _power_range(base: int, start: int, stop: int) -> np.ndarray:
    """base ** arange(start, stop) mod 2**64: a slice of the table when it holds the range."""
    low = _POWERS.get(base, (None, None))[0]
    if low is not None and stop <= len(low):
        return low[start:stop]
    return _powers(base, np.arange(start, stop))


class WordNgrams:
    """The words of one document, prepared once for every n-gram size."""

    def __init__(self, words: list[str], word_ids: np.ndarray | None = None,
                 lengths: np.ndarray | None = None) -> None:
        self.words = words
        self.n_words = len(words)
        if lengths is None:
            lengths = np.fromiter(map(len, words), np.int64, self.n_words)
        self.offsets = np.zeros(self.n_words + 1, np.int64)
        np.cumsum(lengths, out=self.offsets[1:])
        if word_ids is None:
            vocab: dict[str, int] = {}
            word_ids = np.fromiter((vocab.setdefault(w, len(vocab)) for w in words), np.int64, self.n_words)
        self.word_ids = word_ids

    # --- most frequent n-gram (space-joined, i.e. word-tuple equality) -----------------------

    def top_ngram_chars(self, sizes) -> dict[int, int]:
        """{n: characters of the most frequent n-gram x its count, 0 if none repeats}."""
        out = {n: 0 for n in sizes}
        if not out or self.n_words < 2:
            return out
        ids = self.word_ids
        vocab = int(ids.max()) + 1
        if vocab == self.n_words:  # every word differs: no word n-gram repeats
            return out
        exact = vocab ** max(sizes) < 1 << 62  # the whole n-gram fits one int64
        keys = ids
        for n in range(2, max(sizes) + 1):
            m = self.n_words - n + 1
            if m <= 0:
                break
            keys = keys[:-1] * vocab + ids[n - 1:]
            if not exact:  # renumber the n-grams densely (< n_words) before the next product
                keys = np.unique(keys, return_inverse=True)[1].reshape(-1)
            top = self._top_chars(keys, n, m)
            if top is None:  # no n-gram repeats, so no longer one does either
                break
            if n in out:
                out[n] = top
        return out

    def _top_chars(self, keys: np.ndarray, n: int, m: int) -> int | None:
        """The n-gram measure, or None when no n-gram repeats."""
        ordered = np.sort(keys)
        change = np.empty(m, bool)
        change[0] = True
        np.not_equal(ordered[1:], ordered[:-1], out=change[1:])
        starts = np.flatnonzero(change)
        if len(starts) == m:
            return None
        runs = np.empty(len(starts), np.int64)
        np.subtract(starts[1:], starts[:-1], out=runs[:-1])
        runs[-1] = m - starts[-1]
        top = int(runs.max())
        winners = ordered[starts[runs == top]]  # ascending
        if len(winners) == 1:
            at = keys == winners[0]
        else:
            at = winners[np.minimum(np.searchsorted(winners, keys), len(winners) - 1)] == keys
        spans = self.offsets[n:n + m][at] - self.offsets[:m][at]
        return (int(spans.max()) + n - 1) * top

    # --- duplicated n-grams (joined without separator, Gopher's definition) ------------------

    def duplicate_ngram_chars(self, sizes) -> dict[int, int]:
        """{n: characters in n-grams repeating an earlier one, skipping past each repeat}."""
        out = {n: 0 for n in sizes}
        sizes = [n for n in sizes if self.n_words - n + 1 > 1]
        if not sizes:
            return out
        joined = "".join(self.words)
        prefix, weight = self._prefix_hashes(joined)
        keys = []
        for n in sizes:
            m = self.n_words - n + 1
            keys.append((prefix[n:n + m] - prefix[:m]) * weight[:m] ^ np.uint64(_SIZE_MIX * n % (1 << 64)))
        groups = _hash_groups(np.concatenate(keys))
        if groups is None:
            return out
        offsets = self.offsets.tolist()
        at = 0
        for n, k in zip(sizes, keys):
            group = groups[at:at + len(k)]
            at += len(k)
            candidates = np.flatnonzero(group >= 0)
            if len(candidates):
                out[n] = _walk(joined, offsets, candidates.tolist(), group[candidates].tolist(), n)
        return out

    def _prefix_hashes(self, joined: str) -> tuple[np.ndarray, np.ndarray]:
        """(P, W): P[k] = sum over characters t before word k of code[t] * base^-t, and
        W[k] = base^offsets[k], so the n-gram at word i hashes to (P[i+n] - P[i]) * W[i], which
        depends only on its characters, not on where it stands."""
        codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), np.uint32)
        offsets = self.offsets
        prefix = np.zeros(len(offsets), np.uint64)
        carried = 0
        for start in range(0, len(codes), _CHUNK):
            chunk = codes[start:start + _CHUNK].astype(np.uint64)
            sums = np.cumsum(chunk * _power_range(_INV_BASE, start, start + len(chunk)))
            # word boundaries o with start < o <= start + len(chunk) end inside this chunk
            lo = np.searchsorted(offsets, start, side="right")
            hi = np.searchsorted(offsets, start + len(chunk), side="right")
            prefix[lo:hi] = sums[offsets[lo:hi] - start - 1] + np.uint64(carried)
            carried = (carried + int(sums[-1])) % (1 << 64)
        return prefix, _powers(_BASE, offsets)


def _hash_groups(flat: np.ndarray) -> np.ndarray | None:
    """For each hash of ``flat``, the number of its group of equal hashes, or -1 where no other
    hash equals it (None: all differ).

    Each hash keeps its high bits and carries its own position in the low ones, so one sort of
    plain values (not an argsort: 3x cheaper) both groups equal hashes and says where each came
    from.  Cutting the low bits only merges more hashes into one group (the walk compares the
    strings, so that costs time, never a result).  This replaced a binary search of every hash
    among the repeated ones, which cost ~1 s per MB on a 10 MB document whose n-grams mostly
    repeat (every search a cache miss), against a sort's ~0.05 s."""
    bits = max(1, (len(flat) - 1).bit_length())
    low = np.uint64((1 << bits) - 1)
    packed = flat & ~low
    packed |= np.arange(len(flat), dtype=np.uint64)
    packed.sort()
    high = packed >> np.uint64(bits)
    same = high[1:] == high[:-1]
    if not same.any():
        return None
    many = np.zeros(len(flat), bool)
    many[1:] = same
    many[:-1] |= same
    index = np.int32 if len(flat) < 1 << 31 else np.int64  # half the memory traffic
    where = (packed[many] & low).astype(index)  # positions of the hashes met more than once
    high = high[many]
    first = np.ones(len(where), bool)  # each group's first: its lowest position (sorted by it)
    np.not_equal(high[1:], high[:-1], out=first[1:])
    # Groups are numbered in order of their first position, so the walk meets them in
    # ascending order (its state stays in cache: numbers in order of the hashes cost ~10% more).
    rank = np.zeros(len(flat), bool)
    rank[where[first]] = True
    rank = np.cumsum(rank, dtype=index)
    groups = np.full(len(flat), -1, index)
    groups[where] = rank[where[first]][np.cumsum(first, dtype=index) - 1] - 1
    return groups


def _walk(joined: str, offsets: list[int], candidates: list[int], groups: list[int], n: int) -> int:
    """The reference left-to-right walk, visiting only positions whose string may repeat: any
    other position holds a first occurrence that no later string equals, so it neither counts
    nor matters to what has been seen before a candidate.

    Equal strings have equal hashes, so a string repeats exactly when an earlier visited
    position of its hash group holds the same string: each group keeps its first visited
    position and only a possible repeat compares strings (a group whose strings differ, a hash
    collision, keeps the set of its strings instead)."""
    first: dict[int, int] = {}
    mixed: dict[int, set[str]] = {}
    chars = next_free = 0
    for i, g in zip(candidates, groups):
        if i < next_free:  # jumped over by the repeat before it
            continue
        f = first.setdefault(g, i)
        if f == i:  # the first visited position of its group
            continue
        a, b = offsets[i], offsets[i + n]
        ngram = joined[a:b]
        strings = mixed.get(g)
        if strings is None:
            earlier = joined[offsets[f]:offsets[f + n]]
            if ngram == earlier:
                chars += b - a
                next_free = i + n
                continue
            strings = mixed[g] = {earlier}
        if ngram in strings:
            chars += b - a
            next_free = i + n
        else:
            strings.add(ngram)
    return chars
