"""Build the full-scale MT-NLG blended sample index: time and peak memory, plus a peer ratio.

    .venv/bin/python -m bench.blending.blend_index [--scale 1.0] [--seq-length 2048] [--keep DIR]

What it builds, with the production code (``blending.blend_index``, ``blending.sample_index``,
``blending.index_cache``): 270B train tokens / seq 2048 = 131.8M samples over the 15 sources of
REFERENCE.md Table 1 with the paper's token counts and weights. Shards are simulated: each
source gets synthetic document lengths (lognormal around a per-source typical length, so the
document counts are realistic: books are long, abstracts short), since the index builder needs
only lengths. Every index is written to an on-disk cache (then memory-mapped), as in training.

Reported: wall time of the whole build, peak RSS (``getrusage``), the bytes cached; then the
second open (cache hit, memory-mapped); and side by side in this process, the vectorized blend
index against Megatron's rule as a plain Python loop on the first 2M samples (equal outputs
checked). ``--scale 0.1`` builds a tenth of everything for a quick look.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time

import numpy as np

from blending.blend_index import blend_indices, blend_indices_reference  # noqa: E402
from blending.index_cache import cached_arrays  # noqa: E402
from blending.sample_index import build_gpt_indices  # noqa: E402

# name: (tokens in billions, weight, typical document length in tokens)
SOURCES = {
    "books3": (25.7, 0.14336, 120_000), "openwebtext2": (14.8, 0.19336, 1_200),
    "stackexchange": (11.6, 0.05689, 700), "pubmed_abstracts": (4.4, 0.02897, 300),
    "wikipedia": (4.2, 0.04771, 800), "gutenberg_pg19": (2.7, 0.00873, 100_000),
    "bookcorpus2": (1.5, 0.01007, 80_000), "nih_exporter": (0.3, 0.00208, 450),
    "pile_cc": (49.8, 0.09446, 1_100), "arxiv": (20.8, 0.01359, 15_000),
    "github": (24.3, 0.01588, 2_500), "cc_2020_50": (68.7, 0.13017, 900),
    "cc_2021_04": (82.6, 0.15652, 900), "realnews": (21.9, 0.08962, 800),
    "cc_stories": (5.3, 0.00859, 5_000),
}
SIGMA = 1.0  # lognormal spread of document lengths


def synthetic_lengths(name: str, tokens: int, typical: int, seed: int) -> np.ndarray:
    """int32 lengths summing to exactly ``tokens`` (each >= 1)."""
    rng = np.random.default_rng([seed, len(name), sum(map(ord, name))])
    n = max(1, int(tokens / typical))
    x = rng.lognormal(mean=0.0, sigma=SIGMA, size=n)
    x *= (tokens - n) / x.sum()
    lengths = np.floor(x).astype(np.int64) + 1
    lengths[: tokens - int(lengths.sum())] += 1  # spread the rounding remainder
    return lengths.astype(np.int32)


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def build(cache_dir: str, scale: float, seq_length: int, seed: int) -> tuple[float, dict]:
    names = list(SOURCES)
    weights = np.array([SOURCES[n][1] for n in names])
    num_samples = int(270e9 * scale) // seq_length
    t0 = time.perf_counter()
    blend, _ = cached_arrays(cache_dir, "blend", {"weights": weights.tolist(),
                                                  "num_samples": num_samples},
                             lambda: dict(zip(("dataset_index", "dataset_sample_index"),
                                              blend_indices(weights, num_samples))))
    t_blend = time.perf_counter() - t0
    counts = np.bincount(blend["dataset_index"], minlength=len(names))
    info = {"samples": num_samples, "blend_s": t_blend, "sources": {}}
    for name, count in zip(names, counts):
        tokens_b, _, typical = SOURCES[name]
        ts = time.perf_counter()
        lengths = synthetic_lengths(name, int(tokens_b * 1e9 * scale), typical, seed)
        t_len = time.perf_counter() - ts

        def make(lengths=lengths, count=int(count), name=name):
            _, doc, sample, shuffle = build_gpt_indices(
                lengths, seq_length, count, np.random.SeedSequence([seed, len(name)]))
            return {"document_index": doc, "sample_index": sample, "shuffle_index": shuffle}

        ts = time.perf_counter()
        arrays, _ = cached_arrays(cache_dir, "gpt", {"source": name, "num_samples": int(count),
                                                     "seq_length": seq_length, "seed": seed,
                                                     "scale": scale}, make)
        info["sources"][name] = (len(lengths), int(count), len(arrays["sample_index"]) - 1,
                                 t_len, time.perf_counter() - ts)
        del lengths, arrays
    return time.perf_counter() - t0, info


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", type=float, default=1.0, help="fraction of the full-scale run")
    p.add_argument("--seq-length", type=int, default=2048)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--peer-samples", type=int, default=2_000_000)
    p.add_argument("--keep", help="cache folder to use and keep (default: a temp dir, removed)")
    args = p.parse_args(argv)
    cache_dir = args.keep or tempfile.mkdtemp(prefix="bench_blend_index-")
    try:
        total, info = build(cache_dir, args.scale, args.seq_length, args.seed)
        peak = peak_rss_gb()
        size = sum(os.path.getsize(os.path.join(cache_dir, f)) for f in os.listdir(cache_dir))
        print(f"full build: {info['samples']:,} samples of {args.seq_length} tokens, "
              f"15 sources (scale {args.scale:g})")
        print(f"{'source':<18}{'docs':>13}{'samples':>13}{'stream smp':>13}{'lengths s':>10}"
              f"{'index s':>9}")
        for name, (docs, n, stream, t_len, t_idx) in info["sources"].items():
            print(f"{name:<18}{docs:>13,}{n:>13,}{stream:>13,}{t_len:>10.1f}{t_idx:>9.1f}")
        print(f"blend index: {info['blend_s']:.1f} s")
        lengths_s = sum(v[3] for v in info["sources"].values())
        print(f"TOTAL build: {total:.1f} s ({total - lengths_s:.1f} s without making the "
              f"synthetic lengths), peak RSS {peak:.2f} GB, cache {size / 2**30:.2f} GiB")
        t0 = time.perf_counter()
        again, _ = build(cache_dir, args.scale, args.seq_length, args.seed)
        print(f"reopen from cache (memory-mapped; lengths regenerated): {again:.1f} s")
    finally:
        if not args.keep:
            shutil.rmtree(cache_dir, ignore_errors=True)

    n = args.peer_samples
    w = [v[1] for v in SOURCES.values()]
    t0 = time.perf_counter()
    fast = blend_indices(w, n)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    loop = blend_indices_reference(w, n)
    t_loop = time.perf_counter() - t0
    same = bool((fast[0] == loop[0]).all() and (fast[1] == loop[1]).all())
    print(f"blend index on {n:,} samples: vectorized {t_fast:.2f} s, Python loop {t_loop:.2f} s "
          f"-> {t_loop / t_fast:.1f}x faster, identical: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
