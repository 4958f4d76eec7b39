"""One local Beam worker: the job in this process (``in_memory``, curate's default for one
worker) against one worker process (``multi_processing``, the default before) and against two
(the default on a 2-core machine), same machine, same run, rotating order, medians.

    python -m bench.job.local_running_mode --repeats 3 [--quality]

Both sides run ``mtnlg curate --config demo`` on the same embedded sample (``mtnlg sample-data``,
default size; with ``--quality``, the quality filter on, its model trained once by ``mtnlg
quality train`` as the demo does) and must write the same shard bytes; the difference is
what worker processes cost (their start, and a gRPC hop with encoding and decoding for every
element between the runner and a worker). CPU is the
machine's busy time (/proc/stat) over the run: nothing else should run meanwhile.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from bench.common import busy_seconds

SIDES = (("multi_processing", 1), ("multi_processing", 2), ("in_memory", 1))


def shard_digest(run: str) -> str:
    h = hashlib.sha256()
    for dirpath, dirs, files in sorted(os.walk(os.path.join(run, "shards"))):
        dirs.sort()
        for name in sorted(files):
            with open(os.path.join(dirpath, name), "rb") as f:
                h.update(name.encode() + f.read())
    return h.hexdigest()


def curate(sample: str, out: str, mode: str, workers: int, extra: list[str]) -> tuple[float, float, str]:
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cpu0, t0 = busy_seconds(), time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mtnlg.cli", "curate", "--config", "demo",
                           "--input-root", sample, "--output", out, f"--direct_num_workers={workers}",
                           f"--direct_running_mode={mode}", "--progress-every", "0", *extra],
                          env=env, capture_output=True, text=True, timeout=1200)
    wall, cpu = time.perf_counter() - t0, busy_seconds() - cpu0
    if proc.returncode != 0:
        raise SystemExit(f"curate ({mode}) failed:\n{proc.stdout[-2000:]}{proc.stderr[-3000:]}")
    return wall, cpu, shard_digest(out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--docs", type=int, default=None, help="sample size (default: the generator's)")
    p.add_argument("--quality", action="store_true", help="the quality filter on (as in the demo)")
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench_running_mode_")
    try:
        sample = os.path.join(tmp, "sample")
        subprocess.run([sys.executable, "-m", "mtnlg.cli", "sample-data", sample]
                       + (["--docs", str(args.docs)] if args.docs else []),
                       check=True, capture_output=True)
        extra = []
        if args.quality:
            model = os.path.join(tmp, "quality")
            subprocess.run([sys.executable, "-m", "mtnlg.cli", "quality", "train", "--config", "demo",
                            "--input-root", sample, "--output", model], check=True, capture_output=True)
            extra = ["--quality-model", os.path.join(model, "model.bin")]
        runs: dict[tuple[str, int], list[tuple[float, float]]] = {side: [] for side in SIDES}
        digests = set()
        for r in range(args.repeats):
            for side in SIDES[r % len(SIDES):] + SIDES[:r % len(SIDES)]:
                mode, workers = side
                wall, cpu, digest = curate(sample, os.path.join(tmp, f"{mode}{workers}"), mode,
                                           workers, extra)
                runs[side].append((wall, cpu))
                digests.add(digest)
                print(f"run {r + 1}: {mode:<16} x{workers}  wall {wall:6.1f} s  CPU {cpu:6.1f} s",
                      flush=True)
        if len(digests) != 1:
            raise SystemExit("the sides wrote different shards")
        med = {side: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
               for side, v in runs.items()}
        print(f"\nmtnlg curate --config demo{' --quality-model M' if args.quality else ''}, sample corpus,"
              f" {args.repeats} runs per side, medians (same shard bytes)\n")
        print("| running mode | workers | wall (s) | CPU (s) |\n|---|---:|---:|---:|")
        for (mode, workers), (w, c) in med.items():
            print(f"| {mode} | {workers} | {w:.1f} | {c:.1f} |")
        mw, mc = med[("in_memory", 1)]
        for side in SIDES[:2]:
            print(f"in_memory x1 vs {side[0]} x{side[1]}: {med[side][0] / mw:.2f}x wall, "
                  f"{med[side][1] / mc:.2f}x CPU")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
