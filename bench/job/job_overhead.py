"""Beam's fixed cost per curate job: CPU of a whole job on a small corpus, where nearly all of it
is pipeline construction and per-step overhead rather than documents.

    .venv/bin/python -m bench.job.job_overhead                      # this tree vs its patches off
    git worktree add /tmp/base ba8f8ba
    .venv/bin/python -m bench.job.job_overhead --baseline /tmp/base # + another checkout

Sides, run alternately ``--repeats`` times each on the same input (``mtnlg sample-data --docs
N``, the demo config, one ``mtnlg curate`` per run in a child process, ``--mode`` in_memory: one
process; multi_processing: the driver + 2 SDK workers):

* ``this tree``: as shipped.
* ``patches off``: this tree with ``MTNLG_BEAM_SPEED_PATCHES=0`` (Beam's own S3 clients and
  signature inspection, ``infra/compat/beam_speed.py``).
* ``baseline`` (``--baseline TREE``): another checkout's curate, its tree first on PYTHONPATH.

Reported per side: CPU seconds (user + sys of the job's whole process tree, from
``bench.common.children_cpu``), wall seconds, and the job's number of leaf transforms; medians
and the ratio to ``this tree``.  The results (kept ids, accounting) are checked equal.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from bench.common import REPO, children_cpu



# Counts the job's leaf transforms (a separate, untimed run of the driver code up to run()).
COUNT = """
import sys, apache_beam as beam
def run(self, *a, **k):
    proto = self.to_runner_api()
    print(sum(1 for t in proto.components.transforms.values() if not t.subtransforms))
    raise SystemExit(0)
beam.Pipeline.run = run
from pipelines import curate
curate.run(sys.argv[1:])
"""


def _kept(run: Path) -> list[str]:
    import pyarrow.parquet as pq

    return sorted(i for p in run.glob("documents/*/*.parquet")
                  for i in pq.read_table(p, columns=["id"]).column("id").to_pylist())


def _run(args, side: str, tree: Path, sample: Path, out: Path, env: dict) -> dict:
    cmd = [sys.executable, "-m", "pipelines.curate", "--config", "demo", "--input-root", str(sample),
           "--output", str(out), "--overwrite", "--progress-every", "0",
           f"--direct_running_mode={args.mode}", "--direct_num_workers=" + ("1" if args.mode == "in_memory" else "2")]
    before = children_cpu()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    cpu = children_cpu() - before
    if proc.returncode != 0:
        raise SystemExit(f"{side}: curate failed\n{proc.stderr[-3000:]}")
    info = json.loads((out / "run.json").read_text())
    return {"cpu": cpu,
            "wall": wall, "accounting_ok": info["accounting_ok"], "totals": info["totals"],
            "kept": _kept(out)}


def _leaves(tree: Path, sample: Path, out: Path, env: dict) -> int:
    proc = subprocess.run([sys.executable, "-c", COUNT, "--config", "demo", "--input-root", str(sample),
                           "--output", str(out), "--overwrite"], cwd=tree, env=env, capture_output=True,
                          text=True)
    return int(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--docs", type=int, default=200, help="sample documents (mtnlg sample-data --docs)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--mode", choices=("in_memory", "multi_processing"), default="in_memory")
    p.add_argument("--baseline", type=Path, default=None, help="another checkout to run side by side")
    p.add_argument("--workdir", type=Path, default=Path("/tmp/mtnlg-bench-overhead"))
    args = p.parse_args(argv)

    args.workdir.mkdir(parents=True, exist_ok=True)
    sample = args.workdir / f"sample-{args.docs}"
    if not (sample / "ground_truth.json").exists():
        subprocess.run([sys.executable, "-m", "mtnlg.cli", "sample-data", str(sample), "--docs", str(args.docs)],
                       cwd=REPO, check=True, capture_output=True)
    base_env = {k: v for k, v in os.environ.items() if k != "MTNLG_BEAM_SPEED_PATCHES"}
    sides = {"this tree": (REPO, {**base_env, "PYTHONPATH": str(REPO)}),
             "patches off": (REPO, {**base_env, "PYTHONPATH": str(REPO), "MTNLG_BEAM_SPEED_PATCHES": "0"})}
    if args.baseline:
        sides["baseline"] = (args.baseline.resolve(), {**base_env, "PYTHONPATH": str(args.baseline.resolve())})
    runs: dict[str, list[dict]] = {s: [] for s in sides}
    order = list(sides)
    for r in range(args.repeats):
        for side in order if r % 2 == 0 else order[::-1]:
            tree, env = sides[side]
            res = _run(args, side, tree, sample, args.workdir / f"run-{side.replace(' ', '-')}", env)
            runs[side].append(res)
            print(f"  {side:12s} run {r + 1}: CPU {res['cpu']:.1f} s, wall {res['wall']:.1f} s", flush=True)
    ref = runs["this tree"][0]
    for side, rs in runs.items():
        for res in rs:
            assert res["accounting_ok"] and res["kept"] == ref["kept"] and res["totals"] == ref["totals"], side
    mid = statistics.median(x["cpu"] for x in runs["this tree"])
    print(f"\n{args.docs}-document sample ({ref['totals']['read']} read), demo config, {args.mode}, "
          f"{args.repeats} runs per side, alternating; same kept ids and accounting on every side\n")
    print("| side | leaf transforms | CPU s (runs) | median CPU s | vs this tree | median wall s |")
    print("|---|---:|---|---:|---:|---:|")
    for side, rs in runs.items():
        tree, env = sides[side]
        leaves = _leaves(tree, sample, args.workdir / "count", env)
        cpu = statistics.median(x["cpu"] for x in rs)
        each = ", ".join(f"{x['cpu']:.1f}" for x in rs)
        print(f"| {side} | {leaves} | {each} | {cpu:.1f} | "
              f"{cpu / mid:.2f}x | {statistics.median(x['wall'] for x in rs):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
