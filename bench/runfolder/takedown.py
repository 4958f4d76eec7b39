"""Takedown of a few documents in a multi-shard run vs a full rebuild of that run.

    .venv/bin/python -m bench.runfolder.takedown --docs 2000 --max-tokens-per-shard 40000 --repeats 3

Once: ``mtnlg sample-data --docs N`` and one curate of it (the demo config, quality off, small
shards so every source has several), cached in ``--workdir``.  Then ``--repeats`` rounds, the
order of the two sides alternating per round:

- takedown: a fresh copy of the curated run (the copy is not timed), then ``mtnlg takedown
  --run COPY --ids FILE`` for ``--remove`` documents spread over as many shards as possible;
- rebuild: ``mtnlg curate`` of the same input into a fresh folder, which is what removing the
  documents costs without takedown (a rebuild that also skips the listed ids reads, filters,
  dedups and tokenizes the same input, so it costs the same within noise).

Both sides run as a subprocess of this script on the same machine with the same runner options
(``--workers`` SDK worker processes).  Printed: each side's wall seconds per round, medians, the
ratio rebuild / takedown, and shards rewritten of shards in the run (and bytes).  Also written to
``<workdir>/results.json``.
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
from pathlib import Path

import pandas as pd
import yaml
from bench.common import REPO


MTNLG = [sys.executable, "-m", "mtnlg.cli"]


def _run(cmd: list[str], log: Path) -> float:
    t = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=REPO)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}); see {log}")
    return wall


def _victims(run: Path, n: int) -> list[str]:
    """``n`` documents, one per shard round-robin over the shards (as spread out as possible)."""
    shards = pd.read_parquet(run / "stats" / "shards.parquet").sort_values("prefix")
    parts = [pd.read_parquet(run / "documents" / s / f"part-{k:05d}.parquet", columns=["id"])["id"]
             for s, k in zip(shards["source"], shards["shard"])]
    ids, i = [], 0
    while len(ids) < n:
        part = parts[i % len(parts)]
        j = i // len(parts)
        if j < len(part):
            ids.append(part.iloc[j])
        i += 1
    return ids


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--docs", type=int, default=2000)
    p.add_argument("--max-tokens-per-shard", type=int, default=40_000)
    p.add_argument("--remove", type=int, default=10, help="documents to take down")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--workdir", default="/tmp/bench_takedown")
    args = p.parse_args(argv)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    raw, base = work / "raw", work / "base"
    if not raw.exists():
        _run(MTNLG + ["sample-data", str(raw), "--docs", str(args.docs)], work / "sample.log")
    cfg = yaml.safe_load((REPO / "data_manifests" / "sources" / "demo.yaml").read_text())
    cfg["shards"]["max_tokens_per_shard"] = args.max_tokens_per_shard
    cfg["tokenizer"]["path"] = str(REPO / "data_manifests" / "tokenizers" / "gpt2")
    (work / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    curate = MTNLG + ["curate", "--config", str(work / "cfg.yaml"), "--input-root", str(raw),
                      f"--direct_num_workers={args.workers}"]
    if not (base / "run.json").exists():
        shutil.rmtree(base, ignore_errors=True)
        _run(curate + ["--output", str(base)], work / "base.log")
    shards = pd.read_parquet(base / "stats" / "shards.parquet")
    ids = _victims(base, args.remove)
    request = work / "ids.txt"
    request.write_text("\n".join(ids) + "\n")

    walls: dict[str, list[float]] = {"takedown": [], "rebuild": []}
    inner: list[float] = []  # the takedown's own work (run.json ``seconds``), without start-up
    rewritten = None
    for r in range(args.repeats):
        order = ("takedown", "rebuild") if r % 2 == 0 else ("rebuild", "takedown")
        for side in order:
            target = work / f"{side}-{r}"
            shutil.rmtree(target, ignore_errors=True)
            if side == "takedown":
                shutil.copytree(base, target)
                walls[side].append(_run(MTNLG + ["takedown", "--run", str(target), "--ids",
                                                 str(request)], work / f"{side}-{r}.log"))
                entry = json.loads((target / "run.json").read_text())["takedowns"][-1]
                rewritten = entry["shards_rewritten"]
                inner.append(entry["seconds"])
            else:
                walls[side].append(_run(curate + ["--output", str(target)], work / f"{side}-{r}.log"))
            print(f"round {r + 1} {side:<9} {walls[side][-1]:8.2f} s", flush=True)
            shutil.rmtree(target, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in walls.items()}
    size = {sh: sum(os.path.getsize(base / (sh + ext)) for ext in (".bin", ".idx"))
            for sh in shards["prefix"]}
    result = {
        "docs_read": json.loads((base / "run.json").read_text())["totals"]["read"],
        "shards": len(shards), "removed": len(ids), "shards_rewritten": len(rewritten),
        "bytes_rewritten": sum(size[s] for s in rewritten), "bytes_total": sum(size.values()),
        "walls": walls, "median": med, "takedown_work_seconds": inner,
        "takedown_work_median": statistics.median(inner),
        "ratio_rebuild_over_takedown": med["rebuild"] / med["takedown"],
        "workers": args.workers, "max_tokens_per_shard": args.max_tokens_per_shard,
    }
    (work / "results.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    print(f"takedown of {len(ids)} documents: {med['takedown']:.2f} s (median) vs rebuild "
          f"{med['rebuild']:.2f} s: {result['ratio_rebuild_over_takedown']:.1f}x faster; "
          f"{len(rewritten)} of {len(shards)} shards rewritten "
          f"({result['bytes_rewritten']:,} of {result['bytes_total']:,} shard bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
