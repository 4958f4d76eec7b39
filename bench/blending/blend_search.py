"""Blend search on the sample: the proposal against the spec's weights, both trained alike.

    .venv/bin/python -m bench.blending.blend_search                      # curates the sample first
    .venv/bin/python -m bench.blending.blend_search --run demo_run/run   # an existing curated run

Runs the documented command (docs/blend-search.md)::

    mtnlg blend search --spec demo --run RUN --output WORK/search --split 90,10,0 \\
        --proxies 16 --steps 24 --valid-samples 8 --set schedule.micro_batch_size=1 \\
        --jobs 2 --verify --verify-seeds 2

and prints, from its ``results.json``: the target (mean per-source validation loss on the
held-out split) of the spec's weights and of the proposal, each trained with the proxies' budget
and config, for every verification seed, side by side with their difference; the per-source
losses; and the fit's held-out Spearman rank correlation.  The numbers are measured, not timed:
the wall clock is printed for orientation only (the 2-core VM is shared).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from bench.common import REPO

ROOT = str(REPO)


def _mtnlg(*args: str) -> None:
    env = {**os.environ, "PYTHONPATH": ROOT}
    subprocess.run([sys.executable, "-m", "mtnlg.cli", *args], check=True, cwd=ROOT, env=env)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", help="curated run (default: curate the sample into --workdir)")
    p.add_argument("--workdir", help="where the sample, run and search go (default: a temp dir)")
    p.add_argument("--proxies", type=int, default=16)
    p.add_argument("--steps", type=int, default=24)
    p.add_argument("--valid-samples", type=int, default=8)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--verify-seeds", type=int, default=2)
    p.add_argument("--target", default="mean")
    p.add_argument("--report-only", metavar="SEARCH",
                   help="only print the figures of a finished search folder")
    args = p.parse_args(argv)
    if args.report_only:
        with open(os.path.join(args.report_only, "results.json")) as f:
            report(json.load(f), None, None, args.report_only)
        return 0
    work = args.workdir or tempfile.mkdtemp(prefix="bench-blend-search-")
    t0 = time.perf_counter()
    run = args.run
    if run is None:
        _mtnlg("demo", "--skip-train", "--workdir", os.path.join(work, "demo"),
               "--progress-every", "0")
        run = os.path.join(work, "demo", "run")
    t_curate = time.perf_counter() - t0
    search = os.path.join(work, "search")
    cmd = ["blend", "search", "--spec", "demo", "--run", run, "--output", search,
           "--split", "90,10,0", "--proxies", str(args.proxies), "--steps", str(args.steps),
           "--valid-samples", str(args.valid_samples), "--jobs", str(args.jobs), "--verify",
           # the same global batch in micro-batches of one: the same losses, half the CPU
           # (mtnlg.blend_proxy.keep_freed_memory says why)
           "--set", "schedule.micro_batch_size=1",
           "--verify-seeds", str(args.verify_seeds), "--target", args.target]
    print("mtnlg " + " ".join(cmd), flush=True)
    t1 = time.perf_counter()
    _mtnlg(*cmd)
    t_search = time.perf_counter() - t1
    res = json.loads(open(os.path.join(search, "results.json")).read())
    report(res, t_curate, t_search, search)
    return 0


def report(res: dict, t_curate: float, t_search: float, search: str) -> None:
    fit, checks = res["fit"], res["verification"]
    better = "lower" if res["minimize"] else "higher"
    print(f"\n== blend search on the sample: target {res['target']} ({better} is better)")
    print(f"proxies: {sum(1 for p in res['proxies'] if p['role'] == 'proxy')} over "
          f"{len(res['sources'])} sources, {res['settings']['train']['schedule']['train_steps']} "
          f"steps each; fit {fit['kind']}; held-out Spearman "
          f"{fit['held_out_spearman']:.3f} over {fit['n_held_out']} held-out proxies "
          f"({fit['held_out_kind']}, fitted on the others)")
    if fit.get("cv_spearman"):
        print("5-fold out-of-fold Spearman over all proxies (auto's model choice, so "
              "optimistic): " + ", ".join(f"{k} {v:.3f}" for k, v in fit["cv_spearman"].items()
                                          if v is not None))
    print(f"{'seed':>6}{'spec':>10}{'proposal':>10}{'diff':>10}")
    for v in checks:
        print(f"{v['seed']:>6}{v['spec']:>10.4f}{v['proposal']:>10.4f}"
              f"{v['proposal'] - v['spec']:>+10.4f}")
    if checks:
        a = sum(v["spec"] for v in checks) / len(checks)
        b = sum(v["proposal"] for v in checks) / len(checks)
        print(f"{'mean':>6}{a:>10.4f}{b:>10.4f}{b - a:>+10.4f}")
    measured = [p["target"] for p in res["proxies"] if p["role"] == "proxy"]
    print(f"proxies' measured target: best {min(measured):.4f}, median "
          f"{sorted(measured)[len(measured) // 2]:.4f}, worst {max(measured):.4f}")
    print(f"\nper source (seed {checks[0]['seed'] if checks else '-'}): weight spec -> "
          "proposal, validation loss spec -> proposal")
    for i, n in enumerate(res["sources"]):
        line = f"  {n:<18}{res['spec_weights'][i]:>8.4f} -> {res['proposal']['weights'][i]:<8.4f}"
        if checks:
            a, b = checks[0]["spec_per_source"].get(n), checks[0]["proposal_per_source"].get(n)
            if a is not None and b is not None:
                line += f"{a:>9.4f} -> {b:.4f} ({b - a:+.4f})"
        print(line)
    if t_search is not None:
        print(f"\nwall clock (shared VM, orientation only): curate {t_curate:.0f}s, search "
              f"{t_search:.0f}s; proxy runs {res['proxy_seconds']:.0f}s summed over "
              f"{res['settings']['jobs']} jobs")
    print(f"report: {os.path.join(search, 'report.html')}")


if __name__ == "__main__":
    sys.exit(main())
