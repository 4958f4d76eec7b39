"""Start-up cost of an 8-rank training launch on a corpus where hashing dominates: this tree
(manifest checks once per node, blend index built once per node and memory-mapped) against a
baseline tree (e.g. the commit before issue 17: every rank hashes every shard and builds the
index), same machine, same run, alternating order, medians.

    git archive <baseline-commit> | tar -x -C /tmp/baseline
    python -m bench.training.train_startup --baseline /tmp/baseline --corpus-mb 768 --repeats 3

Each launch is `torchrun --nproc-per-node 8 -m training.launch` (gloo, CPU) training the tiny
model for one step; both sides do the same work apart from start-up, so the difference of the
wall-clock times is the start-up saving. The blend index cache is deleted before every launch.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from bench.common import REPO

ROOT = str(REPO)
def make_corpus(directory: str, megabytes: int, shards: int = 12) -> str:
    """``shards`` shards of random GPT-2 token ids (uint16), ``megabytes`` in all, and a
    manifest over them (two sources)."""
    from blending.indexed_dataset import IndexedDatasetWriter
    from blending.manifest import Manifest, ShardEntry, SourceEntry, TokenizerInfo, \
        write_manifest
    from curation.tokenizer import TextTokenizer

    tok_path = os.path.join(ROOT, "data_manifests", "tokenizers", "gpt2")
    tok = TextTokenizer(tok_path)
    rng = np.random.default_rng(0)
    tokens_per_shard = megabytes * (1 << 20) // 2 // shards
    sources = {"a": [], "b": []}
    for k in range(shards):
        name = "ab"[k % 2]
        prefix = os.path.join(directory, "shards", name, f"{name}_{k:05d}")
        with IndexedDatasetWriter(prefix, np.uint16) as w:
            for _ in range(tokens_per_shard // 2048):
                doc = rng.integers(0, 50256, 2048, dtype=np.int64)
                doc[-1] = tok.eod_id
                w.add_document(doc)
            info = w.finalize()
        sources[name].append(ShardEntry(os.path.abspath(prefix), info.documents, info.tokens,
                                        info.bin_sha256, info.idx_sha256))
    # target tokens and epochs as build_manifest records them (the trainer checks them)
    entries = tuple(SourceEntry(n, n, "bench", 0.5, 0.5e6, sum(s.tokens for s in sh),
                                sum(s.documents for s in sh),
                                0.5e6 / sum(s.tokens for s in sh), tuple(sh))
                    for n, sh in sources.items())
    path = os.path.join(directory, "manifest.json")
    write_manifest(Manifest("bench", 1e6, 100.0, TokenizerInfo(tok_path, tok.sha256,
                                                               tok.vocab_size, tok.eod_id),
                            entries, path=path), path)
    return path


SETTINGS = ["seq_length=64", "global_batch_size=8", "micro_batch_size=1", "train_steps=1",
            "lr=1e-3", "warmup_tokens=0", "decay_tokens=1000000"]


def launch(src: str, manifest: str, out: str, new_config: bool) -> float:
    shutil.rmtree(os.path.join(os.path.dirname(manifest), "index_cache"), ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    sets = SETTINGS + (["model.name=tiny", "tensorboard=false"] if new_config else ["model=tiny"])
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    env.update(OMP_NUM_THREADS="1", PYTHONPATH=src)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=8",
           "-m", "training.launch", "--manifest", manifest, "--output", out,
           *[a for s in sets for a in ("--set", s)]]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"launch from {src} failed:\n{proc.stderr[-3000:]}")
    return dt


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    p.add_argument("--baseline", required=True, help="source tree of the baseline commit")
    p.add_argument("--corpus-mb", type=int, default=768)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--workdir", help="where the corpus goes (default: a temp dir)")
    args = p.parse_args(argv)
    work = args.workdir or tempfile.mkdtemp(prefix="bench-startup-")
    manifest = make_corpus(work, args.corpus_mb)
    print(f"corpus: {args.corpus_mb} MB in 12 shards, manifest {manifest}", flush=True)
    sides = {"baseline": (args.baseline, False), "this tree": (ROOT, True)}
    times: dict[str, list[float]] = {k: [] for k in sides}
    for r in range(args.repeats):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        for name in order:
            src, new = sides[name]
            t = launch(src, manifest, os.path.join(work, "out"), new)
            times[name].append(t)
            print(f"repeat {r + 1}: {name:<9} {t:7.1f} s", flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    print("\n| side | launches (s) | median (s) |\n|---|---|---:|")
    for k, v in times.items():
        print(f"| {k} | {', '.join(f'{x:.1f}' for x in v)} | {med[k]:.1f} |")
    print(f"\nstart-up saved: {med['baseline'] - med['this tree']:.1f} s per launch; "
          f"baseline / this tree = {med['baseline'] / med['this tree']:.2f}x")
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
