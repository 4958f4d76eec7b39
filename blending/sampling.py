"""Deterministic blended sampling over a manifest, as Megatron-Core's GPT and blended datasets.

Two levels, each an index built once with numpy, cached on disk and memory-mapped on reuse:

1. ``GPTSampleIndex`` (one per source): fixed ``seq_length`` samples over the source's
   shuffled document stream, repeated in epochs as needed (``blending.sample_index`` has the
   arrays, the epoch rule and worked numbers). Sample ``j`` is ``seq_length + 1`` tokens;
   consecutive samples share one token, as Megatron's.
2. The blend index (``blending.blend_index``): global sample ``i`` goes to the source whose
   running count is furthest below ``weight x max(i, 1)``, ties to the lowest index, exactly
   Megatron's ``build_blending_indices``, so the order matches Megatron's for the same weights.

Caching: ``BlendedDataset(..., cache_dir=...)`` stores every index under a name derived from
the shard checksums, weights and (seq_length, num_samples, seed) (``blending.index_cache``).
By default the cache is ``<manifest folder>/index_cache``; ``cache_dir=None`` builds in memory.
"""
from __future__ import annotations

import os
import zlib

import numpy as np

from blending.blend_index import blend_indices, normalized_weights
from blending.index_cache import cached_arrays
from blending.indexed_dataset import IndexedDataset
from blending.manifest import Manifest, SourceEntry
from blending.sample_index import build_gpt_indices, plan_epochs

__all__ = ["BlendedDataset", "GPTSampleIndex", "blend_indices"]

INDEX_VERSION = 2  # bump when the arrays' meaning changes: it is part of every cache key

_AUTO = "auto"


def _seed_sequence(seed: int, name: str) -> np.random.SeedSequence:
    # Seed from the source *name* so reordering a spec does not reshuffle every source.
    return np.random.SeedSequence([seed, zlib.crc32(name.encode())])


def default_cache_dir(manifest: Manifest) -> str | None:
    return os.path.join(os.path.dirname(manifest.path), "index_cache") if manifest.path else None


class _Cached:
    """Pickle arrays that live in the cache as their paths (DataLoader workers re-map them)."""

    _arrays: tuple[str, ...] = ()
    _paths: dict[str, str] | None = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        if self._paths is not None:
            for name in self._arrays:
                state.pop(name, None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self._paths is not None:
            for name in self._arrays:
                setattr(self, name, np.load(self._paths[name], mmap_mode="r").view(np.ndarray))


class GPTSampleIndex(_Cached):
    """Fixed-length samples over one source's shards (see ``blending.sample_index``)."""

    _arrays = ("document_index", "sample_index", "shuffle_index")

    def __init__(self, source: SourceEntry, seq_length: int, num_samples: int, seed: int,
                 shuffle_samples: bool = True, cache_dir: str | None = None,
                 doc_range: tuple[int, int] | None = None, split: str = "train") -> None:
        if seq_length < 1:
            raise ValueError(f"seq_length must be >= 1, got {seq_length}")
        if num_samples < 0:
            raise ValueError(f"num_samples must be >= 0, got {num_samples}")
        self.name = source.name
        self.seq_length, self.num_samples = seq_length, num_samples
        self.shards = [IndexedDataset(sh.prefix) for sh in source.shards]
        # Flat document ids run across shards in manifest order; shard k owns
        # [doc_starts[k], doc_starts[k + 1]).
        self.doc_starts = np.cumsum([0] + [len(s) for s in self.shards], dtype=np.int64)
        lengths = [s.sequence_lengths for s in self.shards]
        self.doc_lengths = (np.concatenate(lengths) if lengths else np.empty(0, np.int32))
        # A held-out split uses the documents [first, last) of the source only; document ids
        # in the indices count from `first`.
        self.first_doc, last = doc_range if doc_range is not None else (0, len(self.doc_lengths))
        self.doc_lengths = self.doc_lengths[self.first_doc:last]
        self.tokens_per_epoch = int(self.doc_lengths.sum(dtype=np.int64))
        if num_samples and self.tokens_per_epoch == 0:
            raise ValueError(f"source {self.name!r} has no tokens but {num_samples} samples "
                             "were asked of it")
        self.plan = plan_epochs(self.tokens_per_epoch, seq_length, num_samples)
        self.num_epochs = self.plan.num_epochs
        params = {"version": INDEX_VERSION, "source": self.name, "seq_length": seq_length,
                  "num_samples": num_samples, "seed": seed, "shuffle": shuffle_samples,
                  "shards": [[sh.bin_sha256, sh.idx_sha256] for sh in source.shards]}
        seed_name = self.name
        if doc_range is not None:  # (train with no split keeps the old cache key and order)
            params["split"] = [split, self.first_doc, last]
            seed_name = self.name if split == "train" else f"{self.name}/{split}"

        def build() -> dict[str, np.ndarray]:
            _, doc, sample, shuffle = build_gpt_indices(
                self.doc_lengths, seq_length, num_samples, _seed_sequence(seed, seed_name),
                shuffle_samples)
            return {"document_index": doc, "sample_index": sample, "shuffle_index": shuffle}

        arrays, self._paths = cached_arrays(cache_dir, "gpt", params, build)
        self.document_index = arrays["document_index"]
        self.sample_index = arrays["sample_index"]
        self.shuffle_index = arrays["shuffle_index"]

    def __len__(self) -> int:
        return self.num_samples

    def __getitem__(self, i: int) -> np.ndarray:
        """Sample served at position ``i`` (after the sample shuffle)."""
        if not 0 <= i < self.num_samples:
            raise IndexError(f"sample {i} out of range for {self.num_samples} samples "
                             f"of source {self.name!r}")
        return self.stream_sample(int(self.shuffle_index[i]))

    def _tokens(self, doc: int, offset: int, length: int) -> np.ndarray:
        doc += self.first_doc
        k = 0 if len(self.shards) == 1 else int(np.searchsorted(self.doc_starts, doc,
                                                                  side="right")) - 1
        return self.shards[k].get(doc - int(self.doc_starts[k]), offset, length)

    def stream_sample(self, j: int) -> np.ndarray:
        """Tokens ``[j*L, j*L + L + 1)`` of the shuffled-document stream, as int64."""
        if not 0 <= j < len(self.sample_index) - 1:
            raise IndexError(f"stream sample {j} out of range for {len(self.sample_index) - 1} "
                             f"samples of source {self.name!r}")
        k0, off0 = (int(x) for x in self.sample_index[j])
        k1, off1 = (int(x) for x in self.sample_index[j + 1])
        if k0 == k1:  # the common case at seq 2048: one document holds the whole sample
            return self._tokens(int(self.document_index[k0]), off0,
                                off1 - off0 + 1).astype(np.int64)
        parts = [self._tokens(int(self.document_index[k0]), off0,
                              int(self.doc_lengths[self.document_index[k0]]) - off0)]
        for k in range(k0 + 1, k1):
            d = int(self.document_index[k])
            parts.append(self._tokens(d, 0, int(self.doc_lengths[d])))
        parts.append(self._tokens(int(self.document_index[k1]), 0, off1 + 1))
        return np.concatenate(parts).astype(np.int64)

    def epoch_of(self, j: int) -> int:
        """Which pass over the source stream sample ``j`` starts in (0-based)."""
        return int(self.sample_index[j, 0]) // max(1, len(self.doc_lengths))


class BlendedDataset(_Cached):
    """``num_samples`` samples of ``seq_length + 1`` tokens drawn from a manifest's sources.

    ``ds[i]`` is an int64 array (inputs ``[:-1]``, labels ``[1:]``); ``source_of(i)`` names the
    source. Everything is determined by (manifest, seq_length, num_samples, seed). Shards and
    cached indices are memory-mapped; pickling carries paths, not arrays, when cached.
    ``cache_dir``: where indices are cached (default ``<manifest folder>/index_cache``;
    None: build in memory, nothing written).
    """

    _arrays = ("dataset_index", "dataset_sample_index")

    def __init__(self, manifest: Manifest, seq_length: int, num_samples: int,
                 seed: int = 1234, cache_dir: str | None = _AUTO, split: str = "train") -> None:
        if seq_length < 1:
            raise ValueError(f"seq_length must be >= 1, got {seq_length}")
        if num_samples < 0:
            raise ValueError(f"num_samples must be >= 0, got {num_samples}")
        if cache_dir == _AUTO:
            cache_dir = default_cache_dir(manifest)
        self.seq_length, self.num_samples, self.seed = seq_length, num_samples, seed
        self.cache_dir = cache_dir
        # Zero-weight sources never take part: Megatron's rule could pick one on an exact tie;
        # nor do sources whose split holds no document (a tiny source's valid range).
        self.split = split
        ranges = {s.name: manifest.split_range(s, split) for s in manifest.sources}
        self.sources = [s for s in manifest.sources
                        if s.weight > 0 and ranges[s.name][1] > ranges[s.name][0]]
        if not self.sources:
            raise ValueError(f"manifest has no source with a positive weight and documents in "
                             f"its {split!r} split")
        self.weights = normalized_weights([s.weight for s in self.sources])
        params = {"version": INDEX_VERSION, "num_samples": num_samples,
                  "weights": [float(s.weight) for s in self.sources]}
        if manifest.split is not None:
            params["split"] = split

        def build() -> dict[str, np.ndarray]:
            idx, within = blend_indices(self.weights, num_samples)
            return {"dataset_index": idx, "dataset_sample_index": within}

        arrays, self._paths = cached_arrays(cache_dir, "blend", params, build)
        self.dataset_index = arrays["dataset_index"]
        self.dataset_sample_index = arrays["dataset_sample_index"]
        self.counts = np.bincount(self.dataset_index, minlength=len(self.sources))
        with_split = manifest.split is not None
        self.datasets = [GPTSampleIndex(s, seq_length, int(c), seed, cache_dir=cache_dir,
                                        doc_range=ranges[s.name] if with_split else None,
                                        split=split)
                         for s, c in zip(self.sources, self.counts)]

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
        total = max(1, self.num_samples)
        return {s.name: float(c) / total for s, c in zip(self.sources, self.counts)}

    def epochs(self) -> dict[str, float]:
        """Passes over each source this many samples make (tokens used / tokens available)."""
        return {d.name: len(d) * self.seq_length / max(1, d.tokens_per_epoch)
                for d in self.datasets}
