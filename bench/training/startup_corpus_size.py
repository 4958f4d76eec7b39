"""Training start-up against corpus size (issue 28): with verification stamps (`--verify-shards
stamps`, the default) a launch reads no shard, so start-up stays flat from 1 GB to 16 GB of
shards; `--verify-shards full` (the peer, same run) hashes every shard at every launch.

    python -m bench.training.startup_corpus_size --sizes-gb 1 4 16 --repeats 3 --workdir /work/tmp/b28

One curated RUN per size (the smaller ones are hard links to the first shards of the largest,
so the disk holds the largest size once), each blended with `build_manifest` (what `mtnlg
blend` runs: every shard hashed once, checked against stats/shards.parquet, stamped). Then for
every size, one warm-up launch (builds the blend index cache, as the first launch of a run
does) and `--repeats` launches per mode, alternating stamps / full; each launch is `mtnlg train
--nproc 2` (elastic agent, 2 gloo ranks) training the tiny model for one step. Reported per
launch: wall time, CPU seconds of the launcher and its ranks (user + sys), and the in-process
time of the manifest check alone (`load_manifest` with and without stamps). The workdir is
deleted at the end unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np
from bench.common import REPO, children_cpu

ROOT = str(REPO)
SHARD_MB = 512
DOC_TOKENS = 16384
SPEC = """name: bench
train_tokens: 1000000
epoch_cap: 1000.0
sources:
  - {name: a, weight: 0.5}
  - {name: b, weight: 0.5}
"""
SETTINGS = ["model.name=tiny", "seq_length=64", "global_batch_size=8", "micro_batch_size=1",
            "train_steps=1", "lr=1e-3", "warmup_tokens=0", "decay_tokens=1000000",
            "tensorboard=false", "validation.batches=0"]


def write_shards(run: str, count: int) -> list[dict]:
    """``count`` shards of SHARD_MB of random GPT-2 token ids, alternating sources a and b."""
    from blending.indexed_dataset import IndexedDatasetWriter

    rng = np.random.default_rng(0)
    rows = []
    for k in range(count):
        name = "ab"[k % 2]
        rel = f"shards/{name}/{name}_{k:05d}"
        with IndexedDatasetWriter(os.path.join(run, rel), np.uint16) as w:
            for _ in range(SHARD_MB * (1 << 20) // 2 // DOC_TOKENS):
                doc = rng.integers(0, 50256, DOC_TOKENS, dtype=np.uint16)
                doc[-1] = 50256
                w.add_document(doc)
            info = w.finalize()
        rows.append({"source": name, "shard": k, "prefix": rel, "documents": info.documents,
                     "tokens": info.tokens, "bin_sha256": info.bin_sha256,
                     "idx_sha256": info.idx_sha256})
        print(f"  shard {k + 1}/{count} written", flush=True)
    return rows


def finish_run(run: str, rows: list[dict]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from curation.tokenizer import TextTokenizer

    tok_path = os.path.join(ROOT, "data_manifests", "tokenizers", "gpt2")
    tok = TextTokenizer(tok_path)
    os.makedirs(os.path.join(run, "stats"), exist_ok=True)
    cols = ("source", "shard", "prefix", "documents", "tokens", "bin_sha256", "idx_sha256")
    pq.write_table(pa.table({c: [r[c] for r in rows] for c in cols}),
                   os.path.join(run, "stats", "shards.parquet"))
    with open(os.path.join(run, "run.json"), "w") as f:
        json.dump({"format_version": 1, "tokenizer": {
            "path": tok_path, "sha256": tok.sha256, "vocab_size": tok.vocab_size,
            "eod_id": tok.eod_id}}, f)


def make_runs(work: str, sizes_gb: list[int]) -> dict[int, str]:
    """RUN_<size>GB folders; the largest holds the files, the others hard links to its first
    shards (links are made before any stamp: a new link changes the inode's ctime)."""
    per_gb = 1024 // SHARD_MB
    largest = max(sizes_gb)
    big = os.path.join(work, f"run_{largest}gb")
    rows = write_shards(big, largest * per_gb)
    runs = {largest: big}
    for size in sorted(set(sizes_gb) - {largest}):
        run = os.path.join(work, f"run_{size}gb")
        for row in rows[:size * per_gb]:
            for ext in (".bin", ".idx"):
                dst = os.path.join(run, row["prefix"] + ext)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                os.link(os.path.join(big, row["prefix"] + ext), dst)
        finish_run(run, rows[:size * per_gb])
        runs[size] = run
    finish_run(big, rows)
    return runs


def blend(work: str, run: str, size: int) -> tuple[str, float]:
    from blending.build import build_manifest
    from blending.spec import load_blend_spec

    spec_path = os.path.join(work, "spec.yaml")
    with open(spec_path, "w") as f:
        f.write(SPEC)
    out = os.path.join(work, f"manifest_{size}gb", "manifest.json")
    t0 = time.perf_counter()
    build_manifest(load_blend_spec(spec_path), [run], out)
    return out, time.perf_counter() - t0


def check_manifest(manifest: str, trust_stamps: bool) -> float:
    from blending.manifest import load_manifest

    t0 = time.perf_counter()
    load_manifest(manifest, trust_stamps=trust_stamps)
    return time.perf_counter() - t0


def launch(manifest: str, out: str, mode: str) -> tuple[float, float, str]:
    """(wall s, CPU s of the launcher and its ranks, the manifest check's log line)."""
    shutil.rmtree(out, ignore_errors=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    env.update(OMP_NUM_THREADS="1", PYTHONPATH=ROOT)
    cmd = [sys.executable, "-m", "training.launch", "--manifest", manifest, "--nproc", "2",
           "--output", out, "--verify-shards", mode, *[a for s in SETTINGS for a in ("--set", s)]]
    before = children_cpu()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    cpu = children_cpu() - before
    if proc.returncode != 0:
        raise SystemExit(f"launch failed:\n{proc.stderr[-3000:]}")
    line = next((l.split(": ", 1)[1] for l in proc.stderr.splitlines()
                 if "shard files hashed" in l), "?")
    return wall, cpu, line


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    p.add_argument("--sizes-gb", type=int, nargs="+", default=[1, 4, 16])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--workdir", required=True, help="where the shards go (needs the largest "
                                                    "size free on disk)")
    p.add_argument("--keep", action="store_true", help="keep the workdir")
    args = p.parse_args(argv)
    os.makedirs(args.workdir, exist_ok=True)
    try:
        t0 = time.perf_counter()
        runs = make_runs(args.workdir, args.sizes_gb)
        print(f"corpus written in {time.perf_counter() - t0:.0f} s", flush=True)
        rows = []
        for size in sorted(args.sizes_gb):
            manifest, blend_s = blend(args.workdir, runs[size], size)
            out = os.path.join(args.workdir, "out")
            launch(manifest, out, "stamps")  # warm-up: builds the blend index cache
            times = {"stamps": [], "full": []}
            for r in range(args.repeats):
                for mode in (("stamps", "full") if r % 2 == 0 else ("full", "stamps")):
                    wall, cpu, line = launch(manifest, out, mode)
                    times[mode].append((wall, cpu))
                    print(f"{size:>3} GB {mode:<6} wall {wall:6.1f} s cpu {cpu:6.1f} s  {line}",
                          flush=True)
            check = {m: statistics.median(check_manifest(manifest, m == "stamps")
                                          for _ in range(args.repeats)) for m in times}
            rows.append((size, blend_s, check, {m: (statistics.median(w for w, _ in v),
                                                    statistics.median(c for _, c in v))
                                                for m, v in times.items()}))
        print("\n| corpus | blend (hash once + stamp) | manifest check, stamps / full | "
              "launch wall, stamps / full | launch CPU, stamps / full |\n|---|---:|---:|---:|---:|")
        for size, blend_s, check, med in rows:
            print(f"| {size} GB | {blend_s:.1f} s | {check['stamps']:.3f} s / {check['full']:.1f} s"
                  f" | {med['stamps'][0]:.1f} s / {med['full'][0]:.1f} s | {med['stamps'][1]:.1f}"
                  f" s / {med['full'][1]:.1f} s |")
    finally:
        if not args.keep:
            shutil.rmtree(args.workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
