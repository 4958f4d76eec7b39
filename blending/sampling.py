"""Deterministic blended sampling over a manifest, as Megatron-Core's GPT and blended datasets.

Two levels:

1. ``GPTSampleIndex`` (one per source): documents are shuffled per epoch with a seed and
   concatenated into one token stream (each document already ends with EOD). Sample ``j``
   of the stream is tokens ``[j*L, j*L + L + 1)`` with ``L = seq_length``: consecutive samples
   overlap by one token, the label of the last input position, exactly as Megatron's
   ``sample_index``. A source asked for more samples than one epoch holds is repeated in
   freshly shuffled epochs. The order samples are served in is itself shuffled (Megatron's
   ``shuffle_index``) so a batch does not hold neighbouring windows of one document.
2. ``blend_indices``: global sample ``i`` goes to the source whose running count is furthest
   below ``weight x max(i, 1)``, ties to the lowest index (Megatron's ``build_blending_indices``,
   reproduced exactly so the sample order matches Megatron's for the same weights).

Worked numbers: documents of 5 and 4 tokens, L = 3: a 9-token epoch gives
``(9 - 1) // 3 = 2`` samples, ``stream[0:4]`` and ``stream[3:7]``; a third sample needs a
second epoch.
"""
from __future__ import annotations

import zlib
from typing import Sequence

import numpy as np

from blending.indexed_dataset import IndexedDataset
from blending.manifest import Manifest, SourceEntry


def blend_indices(weights: Sequence[float], size: int) -> tuple[np.ndarray, np.ndarray]:
    """Megatron's greedy blend: (source index per sample, sample index within that source).

    Weights are normalised. This is a plain loop (about 1 s per million samples with 15
    sources): the rule depends on the running counts, and an exact vectorised form would
    have to reproduce Megatron's float ties bit for bit.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or len(w) == 0 or (w < 0).any() or not w.sum() > 0:
        raise ValueError(f"weights must be a non-empty, non-negative vector with a positive sum, "
                         f"got {list(weights)}")
    if size < 0:
        raise ValueError(f"size must be >= 0, got {size}")
    ws = [float(x) for x in w / w.sum()]
    n = len(ws)
    counts = [0] * n
    choice = np.empty(size, dtype=np.int16)
    within = np.empty(size, dtype=np.int64)
    others = range(1, n)
    w0 = ws[0]
    for i in range(size):
        m = i if i > 1 else 1  # max(i, 1), as Megatron
        best, best_err = 0, w0 * m - counts[0]
        for d in others:
            err = ws[d] * m - counts[d]
            if err > best_err:  # strictly greater: ties go to the lowest index
                best, best_err = d, err
        choice[i] = best
        within[i] = counts[best]
        counts[best] += 1
    return choice, within


def _rng(seed: int, name: str, purpose: int) -> np.random.Generator:
    # Seed from the source *name* so reordering a spec does not reshuffle every source.
    return np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(name.encode()), purpose]))


class GPTSampleIndex:
    """Fixed-length samples over one source's shards (see the module docstring)."""

    def __init__(self, source: SourceEntry, seq_length: int, num_samples: int, seed: int,
                 shuffle_samples: bool = True) -> None:
        if seq_length < 1:
            raise ValueError(f"seq_length must be >= 1, got {seq_length}")
        if num_samples < 0:
            raise ValueError(f"num_samples must be >= 0, got {num_samples}")
        self.name = source.name
        self.seq_length = seq_length
        self.num_samples = num_samples
        self.shards = [IndexedDataset(sh.prefix) for sh in source.shards]
        # Flat document table across shards: (shard, sequence within shard, length).
        self.doc_shard = np.concatenate([np.full(len(s), k, dtype=np.int32)
                                         for k, s in enumerate(self.shards)] or [np.empty(0, np.int32)])
        self.doc_local = np.concatenate([np.arange(len(s), dtype=np.int64) for s in self.shards]
                                        or [np.empty(0, np.int64)])
        self.doc_lengths = np.concatenate([s.sequence_lengths.astype(np.int64) for s in self.shards]
                                          or [np.empty(0, np.int64)])
        self.tokens_per_epoch = int(self.doc_lengths.sum())
        if num_samples and self.tokens_per_epoch == 0:
            raise ValueError(f"source {self.name!r} has no tokens but {num_samples} samples "
                             "were asked of it")
        # Smallest number of epochs whose stream holds num_samples windows of L+1 tokens.
        need = num_samples * seq_length + 1
        self.num_epochs = max(1, -(-need // self.tokens_per_epoch)) if num_samples else 0
        rng = _rng(seed, self.name, 0)
        n_docs = len(self.doc_lengths)
        self.document_index = (np.concatenate([rng.permutation(n_docs)
                                                for _ in range(self.num_epochs)])
                               if self.num_epochs else np.empty(0, dtype=np.int64))
        # Token offset in the stream where each document_index entry ends.
        self._ends = np.cumsum(self.doc_lengths[self.document_index])
        starts = np.arange(num_samples, dtype=np.int64) * seq_length
        # The entry holding each sample's first token (skips empty documents naturally).
        self._first = np.searchsorted(self._ends, starts, side="right")
        self.shuffle_index = (_rng(seed, self.name, 1).permutation(num_samples)
                              if shuffle_samples else np.arange(num_samples))

    def __len__(self) -> int:
        return self.num_samples

    def __getitem__(self, i: int) -> np.ndarray:
        """Sample served at position ``i`` (after the sample shuffle)."""
        return self.stream_sample(int(self.shuffle_index[i]))

    def stream_sample(self, j: int) -> np.ndarray:
        """Tokens ``[j*L, j*L + L + 1)`` of the shuffled-document stream, as int64."""
        if not 0 <= j < self.num_samples:
            raise IndexError(f"sample {j} out of range for {self.num_samples} samples "
                             f"of source {self.name!r}")
        want = self.seq_length + 1
        pos = j * self.seq_length
        k = int(self._first[j])
        offset = pos - (int(self._ends[k - 1]) if k else 0)
        out = np.empty(want, dtype=np.int64)
        filled = 0
        while filled < want:
            doc = int(self.document_index[k])
            take = min(int(self.doc_lengths[doc]) - offset, want - filled)
            if take > 0:
                out[filled:filled + take] = self.shards[self.doc_shard[doc]].get(
                    int(self.doc_local[doc]), offset, take)
                filled += take
            k += 1
            offset = 0
        return out

    def epoch_of(self, j: int) -> int:
        """Which pass over the source sample ``j`` of the stream starts in (0-based)."""
        return int(self._first[j]) // max(1, len(self.doc_lengths))


class BlendedDataset:
    """``num_samples`` samples of ``seq_length + 1`` tokens drawn from a manifest's sources.

    ``ds[i]`` is an int64 array (inputs ``[:-1]``, labels ``[1:]``); ``source_of(i)`` names the
    source. Everything is determined by (manifest, seq_length, num_samples, seed). Shards are
    memory-mapped; pickling carries the indices and reopens the shards by path.
    """

    def __init__(self, manifest: Manifest, seq_length: int, num_samples: int,
                 seed: int = 1234) -> None:
        if seq_length < 1:
            raise ValueError(f"seq_length must be >= 1, got {seq_length}")
        if num_samples < 0:
            raise ValueError(f"num_samples must be >= 0, got {num_samples}")
        self.seq_length, self.num_samples, self.seed = seq_length, num_samples, seed
        # Zero-weight sources never take part: Megatron's rule could pick one on an exact tie.
        self.sources = [s for s in manifest.sources if s.weight > 0]
        if not self.sources:
            raise ValueError("manifest has no source with a positive weight")
        self.weights = np.array([s.weight for s in self.sources]) / sum(s.weight
                                                                         for s in self.sources)
        self.dataset_index, self.dataset_sample_index = blend_indices(self.weights, num_samples)
        counts = np.bincount(self.dataset_index, minlength=len(self.sources))
        self.datasets = [GPTSampleIndex(s, seq_length, int(c), seed)
                         for s, c in zip(self.sources, counts)]

    def __len__(self) -> int:
        return self.num_samples

    def __getitem__(self, i: int) -> np.ndarray:
        if i < 0:
            i += self.num_samples
        if not 0 <= i < self.num_samples:
            raise IndexError(f"sample {i} out of range for {self.num_samples} samples")
        return self.datasets[self.dataset_index[i]][int(self.dataset_sample_index[i])]

    def source_of(self, i: int) -> str:
        return self.sources[self.dataset_index[i]].name

    def realized_shares(self) -> dict[str, float]:
        """Fraction of samples per source (compare with the weights)."""
        counts = np.bincount(self.dataset_index, minlength=len(self.sources))
        total = max(1, self.num_samples)
        return {s.name: float(c) / total for s, c in zip(self.sources, counts)}

    def epochs(self) -> dict[str, float]:
        """Passes over each source this many samples make (tokens used / tokens available)."""
        return {d.name: len(d) * self.seq_length / max(1, d.tokens_per_epoch)
                for d in self.datasets}
