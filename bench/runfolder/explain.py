"""`mtnlg explain` on a finished run: seconds per document, through the id index and by a scan.

    .venv/bin/python -m bench.runfolder.explain RUN [--per-fate 5] [--scan]

Picks documents of every fate (kept, each removal stage, dead letters; ids chosen with pandas
before timing) and times ``mtnlg.commands.explain_story.explain`` on each, in process (CPU and
wall), plus one full CLI call (`python -m mtnlg.cli explain`, interpreter start and imports
included).  ``--scan`` also times the same documents with the index hidden (every stats file
searched), alternating the two.  Prints per-fate medians, files read, and the index's size.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from bench.common import REPO, children_cpu

ROOT = str(REPO)
def main() -> int:
    import pandas as pd

    from mtnlg.commands.explain_story import explain
    from mtnlg.commands import explain_lookup

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run")
    p.add_argument("--per-fate", type=int, default=5)
    p.add_argument("--scan", action="store_true")
    args = p.parse_args()

    rows = pd.read_parquet(os.path.join(args.run, "stats", "documents"), columns=["id", "outcome", "stage"])
    fates = rows.assign(fate=rows.outcome.where(rows.outcome != "removed", "removed:" + rows.stage))
    picks = {f: g.id.sample(min(args.per_fate, len(g)), random_state=0).tolist() for f, g in fates.groupby("fate")}
    index_dir = os.path.join(args.run, "stats", "id_index")
    index_bytes = sum(os.path.getsize(os.path.join(index_dir, f)) for f in os.listdir(index_dir))
    stats_dir = os.path.join(args.run, "stats", "documents")
    print(f"run: {len(rows):,} documents; stats/documents {len(os.listdir(stats_dir))} files "
          f"{sum(os.path.getsize(os.path.join(stats_dir, f)) for f in os.listdir(stats_dir)) / 1e6:.1f} MB; "
          f"stats/id_index {len(os.listdir(index_dir))} files {index_bytes / 1e6:.1f} MB")
    explain(args.run, picks[next(iter(picks))][0])  # warm the imports
    print(f"\n{'fate':<28}{'docs':>5}{'indexed wall s':>16}{'CPU s':>8}{'files':>7}"
          + (f"{'scan wall s':>13}{'scan CPU':>10}{'scan files':>12}" if args.scan else ""))
    for fate, ids in picks.items():
        walls, cpus, files, swalls, scpus, sfiles = [], [], [], [], [], []

        def timed(scan: bool, doc_id: str):
            orig = explain_lookup.has_index
            if scan:
                explain_lookup.has_index = lambda run_dir: False
            try:
                c0, t0 = time.process_time(), time.perf_counter()
                r = explain(args.run, doc_id)
                return time.perf_counter() - t0, time.process_time() - c0, len(r["read"]["files"])
            finally:
                explain_lookup.has_index = orig

        for k, doc_id in enumerate(ids):  # the two modes alternate which goes first (page cache)
            order = (False, True) if k % 2 == 0 else (True, False)
            for scan in order if args.scan else (False,):
                w, c, n = timed(scan, doc_id)
                (swalls if scan else walls).append(w)
                (scpus if scan else cpus).append(c)
                (sfiles if scan else files).append(n)
        line = (f"{fate:<28}{len(ids):>5}{statistics.median(walls):>16.3f}{statistics.median(cpus):>8.3f}"
                f"{statistics.median(files):>7.0f}")
        if args.scan:
            line += f"{statistics.median(swalls):>13.3f}{statistics.median(scpus):>10.3f}{statistics.median(sfiles):>12.0f}"
        print(line)
    doc_id = picks.get("removed:fuzzy_dedup", next(iter(picks.values())))[0]
    before, t0 = children_cpu(), time.perf_counter()
    subprocess.run([sys.executable, "-m", "mtnlg.cli", "explain", "--run", args.run, doc_id],
                   check=True, capture_output=True, env={**os.environ, "PYTHONPATH": ROOT})
    cpu = children_cpu() - before
    print(f"\none CLI call (python -m mtnlg.cli explain, a near duplicate, imports included): "
          f"{time.perf_counter() - t0:.2f} s wall, {cpu:.2f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
