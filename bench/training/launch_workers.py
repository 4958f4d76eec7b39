"""Cost of starting a node's ranks under `mtnlg train --nproc N`: this tree (the elastic agent
forks the ranks from a forkserver that imported torch and the trainer once) against a baseline
tree (e.g. 5655c24, the commit before: each rank a fresh `python -m training.launch` that
imports them itself), same machine, same run, alternating order, medians.

    git archive 5655c24 | tar -x -C /tmp/launch_baseline
    python -m bench.training.launch_workers --baseline /tmp/launch_baseline --nproc 4 --repeats 3

Each launch trains the tiny model for 2 steps on the same small manifest (gloo, CPU, one
OpenMP thread per rank) with one restart allowed and no failure; both sides do the same
training, so the difference is what starting the ranks costs. CPU is the machine's busy time
(/proc/stat) over the launch: nothing else should run meanwhile.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench.common import REPO, busy_seconds, test_helpers

ROOT = str(REPO)
test_helpers("training")

SETTINGS = {"model.name": "tiny", "seq_length": 32, "global_batch_size": 8,
            "micro_batch_size": 1, "lr": 3e-3, "warmup_tokens": 0, "dtype": "float32",
            "seed": 7, "tensorboard": False, "validation.batches": 0}


def launch(tree: str, manifest: str, out: str, nproc: int) -> tuple[float, float]:
    sets = [f"--set={k}={v}" for k, v in SETTINGS.items()]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "WORLD_SIZE", "RANK")}
    env.update(OMP_NUM_THREADS="1", PYTHONPATH=tree)
    cpu0, t0 = busy_seconds(), time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "training.launch", "--manifest", manifest,
                           "--nproc", str(nproc), "--steps", "2", "--max-restarts", "1",
                           "--output", out, *sets], cwd=tree, env=env, capture_output=True,
                          text=True, timeout=600)
    wall, cpu = time.perf_counter() - t0, busy_seconds() - cpu0
    if proc.returncode != 0:
        raise SystemExit(f"launch from {tree} failed:\n{proc.stdout[-2000:]}{proc.stderr[-3000:]}")
    return wall, cpu


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--baseline", required=True, help="a checkout of the baseline commit")
    p.add_argument("--nproc", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    from training_fixtures import write_manifest

    work = tempfile.mkdtemp(prefix="bench_launch_")
    manifest = write_manifest(os.path.join(work, "blend"), repeat=5)
    sides = {"this tree": ROOT, "baseline": os.path.abspath(args.baseline)}
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    for i in range(args.repeats):
        order = list(sides) if i % 2 == 0 else list(sides)[::-1]
        for name in order:
            out = os.path.join(work, f"{name.replace(' ', '_')}_{i}")
            results[name].append(launch(sides[name], manifest, out, args.nproc))
            print(f"repeat {i} {name:9s}: {results[name][-1][0]:6.1f} s wall, "
                  f"{results[name][-1][1]:6.1f} s CPU", flush=True)
    med = {name: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r))
           for name, r in results.items()}
    (w1, c1), (w0, c0) = med["this tree"], med["baseline"]
    print(f"\n`mtnlg train --nproc {args.nproc} --steps 2`, medians of {args.repeats}:")
    print(f"  this tree  {w1:6.1f} s wall  {c1:6.1f} s CPU")
    print(f"  baseline   {w0:6.1f} s wall  {c0:6.1f} s CPU")
    print(f"  ratio      {w0 / w1:6.2f}x wall {c0 / c1:6.2f}x CPU; {(c0 - c1) / args.nproc:.1f} s "
          f"CPU less per rank")
    return 0


if __name__ == "__main__":
    sys.exit(main())
