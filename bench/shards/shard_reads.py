"""Random sample reads through BlendedDataset against raw numpy.memmap slicing of the shards.

    .venv/bin/python -m bench.shards.shard_reads [--tokens 60e6] [--seq-length 2048] [--reads 20000]

Writes real shards (3 sources, 2 shards each, uint16, synthetic lognormal document lengths,
``--tokens`` tokens in all) and a manifest, builds the blended index (cached, memory-mapped),
then times in this process, alternating, ``--repeat`` times:

* dataset: ``ds[i]`` for ``--reads`` uniformly random global samples ``i`` (blend index ->
  source sample index -> shuffle -> sample index -> one or more documents' tokens, int64);
* raw: for the same number of reads, one ``numpy.memmap`` slice of ``seq_length + 1`` tokens at
  a random offset of a random shard, converted to int64: the floor for any reader.

Both read files that are in the page cache (just written); reported are medians in samples/s
and the dataset's time over the raw time.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

from blending.indexed_dataset import IndexedDatasetWriter  # noqa: E402
from blending.build import build_manifest  # noqa: E402
from blending.sampling import BlendedDataset  # noqa: E402
from blending.spec import blend_spec_from_dict  # noqa: E402

SOURCES = {"alpha": (0.6, 1_200), "beta": (0.3, 600), "gamma": (0.1, 20_000)}  # weight, doc len


def write_run(root: str, tokens: int, rng: np.random.Generator) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    prefixes, rows = [], []
    for name, (weight, typical) in SOURCES.items():
        for k in range(2):
            n_tok = int(tokens * weight / 2)
            lengths = np.maximum(1, rng.lognormal(np.log(typical), 1.0,
                                                  n_tok // typical)).astype(np.int64)
            stream = rng.integers(0, 50256, int(lengths.sum()), dtype=np.uint16)
            prefix = os.path.join(root, "shards", name, f"{name}_{k:05d}")
            with IndexedDatasetWriter(prefix, np.uint16) as w:
                for doc in np.split(stream, np.cumsum(lengths)[:-1]):
                    w.add_document(doc)
            info = w.finalize()
            prefixes.append(prefix)
            rows.append({"source": name, "shard": k, "prefix": f"shards/{name}/{name}_{k:05d}",
                         "documents": info.documents, "tokens": info.tokens,
                         "bin_sha256": info.bin_sha256, "idx_sha256": info.idx_sha256})
    os.makedirs(os.path.join(root, "stats"))  # the checksums `mtnlg blend` verifies against
    pq.write_table(pa.Table.from_pylist(rows), os.path.join(root, "stats", "shards.parquet"))
    with open(os.path.join(root, "run.json"), "w") as f:
        json.dump({"format_version": 1, "tokenizer": {"path": "gpt2", "sha256": "0" * 64,
                                                       "vocab_size": 50257, "eod_id": 50256}}, f)
    return prefixes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", type=float, default=60e6)
    p.add_argument("--seq-length", type=int, default=2048)
    p.add_argument("--reads", type=int, default=20_000)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    L = args.seq_length
    with tempfile.TemporaryDirectory() as tmp:
        prefixes = write_run(os.path.join(tmp, "run"), int(args.tokens), rng)
        spec = blend_spec_from_dict({"name": "bench", "train_tokens": args.tokens * 2, "sources": [
            {"name": n, "weight": w} for n, (w, _) in SOURCES.items()]})
        manifest = build_manifest(spec, [os.path.join(tmp, "run")], os.path.join(tmp, "m.json"))
        num_samples = int(args.tokens * 2) // L
        t0 = time.perf_counter()
        BlendedDataset(manifest, L, num_samples, seed=1)
        built = time.perf_counter() - t0
        ds = BlendedDataset(manifest, L, num_samples, seed=1)  # the cached, memory-mapped one
        maps = [np.memmap(pr + ".bin", dtype=np.uint16, mode="r") for pr in prefixes]
        times: dict[str, list[float]] = {"dataset": [], "raw": []}
        checksum = 0
        for _ in range(args.repeat + 1):  # the first round warms up and is dropped
            picks = rng.integers(0, num_samples, args.reads)
            t0 = time.perf_counter()
            for i in picks:
                checksum += int(ds[int(i)][0])
            times["dataset"].append(time.perf_counter() - t0)
            shards = rng.integers(0, len(maps), args.reads)
            starts = rng.random(args.reads)
            t0 = time.perf_counter()
            for s, f in zip(shards, starts):
                mm = maps[s]
                off = int(f * (len(mm) - L - 1))
                checksum += int(mm[off:off + L + 1].astype(np.int64)[0])
            times["raw"].append(time.perf_counter() - t0)
        multi = sum(d.sample_index[j + 1, 0] != d.sample_index[j, 0]
                    for d in ds.datasets for j in range(0, len(d.sample_index) - 1, 97)) / \
            sum(len(range(0, len(d.sample_index) - 1, 97)) for d in ds.datasets)
    d_s = statistics.median(times["dataset"][1:])
    r_s = statistics.median(times["raw"][1:])
    print(f"{args.tokens / 1e6:.0f}M tokens in 6 uint16 shards, {num_samples:,} samples of {L}, "
          f"{multi:.0%} of samples span 2+ documents; index built in {built:.2f} s")
    print(f"BlendedDataset[i] : {args.reads / d_s:>10,.0f} samples/s ({d_s * 1e6 / args.reads:.1f} us)")
    print(f"raw memmap slice  : {args.reads / r_s:>10,.0f} samples/s ({r_s * 1e6 / args.reads:.1f} us)")
    print(f"dataset / raw time: {d_s / r_s:.2f}x  (checksum {checksum % 997})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
