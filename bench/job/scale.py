"""The whole curate job at growing sizes: wall, CPU, memory of every process, serial stretches.

    .venv/bin/python -m bench.job.scale --docs 25000 100000            # this machine
    .venv/bin/python -m bench.job.scale --docs 100000 400000 1000000   # the scale run
    # this tree against another checkout, alternating, same inputs, results compared:
    git worktree add /tmp/base 2d2ed92
    .venv/bin/python -m bench.job.scale --docs 100000 --baseline /tmp/base --repeats 3

For each size N: ``mtnlg sample-data --docs N`` (cached in ``--workdir``), then ``mtnlg curate``
with the demo config (quality off) on the default local runner (FnApiRunner, multi-processing,
``--workers`` SDK worker processes), in a child process whose whole process tree (the driver and
every worker) is sampled every ``--interval`` seconds from /proc: resident memory and CPU time per
process.  Reported per size: wall, documents read per second, CPU user+sys (all processes), peak
RSS per process, time and CPU per stage (each Beam stage's bundles attributed to the curate
stage in its name, from the runner's bundle log; CPU = every process's CPU while that stage
ran), and the longest stretch where exactly one process was busy (>= ``--busy`` of a core) with
the stage it was in.  Then, between consecutive sizes, the ratios and each process role's peak
RSS growth per document (the goal of issue 26: <= 1 KB per document).  Results also go to
``<workdir>/results.json``.  Linux only (/proc).

``--baseline TREE``: each size also runs the curate job of another checkout (e.g. the commit
before a change, ``git worktree add``), alternating with this tree ``--repeats`` times, on the
same input; it prints both sides' CPU per document (medians) and their ratio, and checks that
the results are the same: kept document ids, every shard's sha256, run.json's accounting.
``--baseline-config``: the baseline side's config, when the two trees need different files for
the same settings (e.g. this tree's ``id_index: false`` is a key the baseline does not know).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from bench.common import REPO, TICK, tree_pids


STAGES = ("read", "dedup", "decontaminate", "tokenize")
STAGE_RE = re.compile(r"(?:^|[(/_])(read|dedup|decontaminate|tokenize)[/-]")
PAGE = os.sysconf("SC_PAGE_SIZE")

# Runs curate in this child with the runner's bundle log (one line per Beam stage execution).
DRIVER = """
import logging, sys, time
log = logging.getLogger("apache_beam.runners.portability.fn_api_runner.fn_runner.run_bundle")
h = logging.FileHandler(sys.argv[1]); h.setFormatter(logging.Formatter("%(created).3f %(message)s"))
log.addHandler(h); log.setLevel(logging.DEBUG); log.propagate = False
logging.getLogger().setLevel(logging.WARNING)
from pipelines import curate
rc = curate.run(sys.argv[2:])
with open(sys.argv[1], "a") as f:
    f.write(f"{time.time():.3f} END\\n")
sys.exit(rc)
"""


def _proc(pid: int) -> tuple[float, int, str] | None:
    """(cpu seconds user+sys, rss bytes, role) of a live process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/statm") as f:
            rss = int(f.read().split()[1]) * PAGE
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
    except (OSError, IndexError, ValueError):
        return None
    cpu = (int(fields[11]) + int(fields[12])) / TICK
    role = "worker" if "sdk_worker_main" in cmd else "driver" if "curate" in cmd else "other"
    return cpu, rss, role


class Sampler(threading.Thread):
    def __init__(self, pid: int, interval: float) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.samples: list[tuple[float, dict[int, tuple[float, int, str]]]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            now = time.time()
            snap = {p: s for p in tree_pids(self.pid) if (s := _proc(p)) is not None}
            self.samples.append((now, snap))
            self.stop.wait(self.interval)


def _stage_spans(bundle_log: Path) -> list[tuple[float, float, str]]:
    """(start, end, curate stage) of every Beam stage execution, from the bundle log."""
    events = []
    for line in bundle_log.read_text(errors="replace").splitlines():
        t, _, msg = line.partition(" ")
        try:
            t = float(t)
        except ValueError:
            continue
        if msg.startswith("END"):
            events.append((t, None))
        elif msg.startswith("Running bundle for stage"):
            m = STAGE_RE.search(msg)
            events.append((t, m.group(1) if m else "other"))
    return [(t, events[i + 1][0], s) for i, (t, s) in enumerate(events[:-1]) if s is not None]


def cpu_by_stage(samples, spans) -> dict[str, float]:
    """CPU seconds of every process of the job, attributed to the stage running at the time."""
    out: dict[str, float] = {}
    for (t0, a), (t1, b) in zip(samples, samples[1:]):
        used = sum(max(0.0, b[p][0] - a[p][0]) for p in b if p in a)
        used += sum(b[p][0] for p in b if p not in a)  # a process started in between
        stage = _stage_at(spans, t0)
        out[stage] = round(out.get(stage, 0.0) + used, 1)
    return out


def _stage_at(spans, t: float) -> str:
    for a, b, s in spans:
        if a <= t < b:
            return s
    return "startup/commit"


def analyse(samples, spans, busy: float) -> dict:
    peaks: dict[int, dict] = {}
    cpu_by_pid: dict[int, float] = {}
    single, longest, cur, cur_stage = 0.0, (0.0, None, None), 0.0, None
    single_by_stage: dict[str, float] = {}
    for (t0, a), (t1, b) in zip(samples, samples[1:]):
        dt = t1 - t0
        busy_pids = [p for p in b if p in a and (b[p][0] - a[p][0]) / dt >= busy]
        if len(busy_pids) == 1:
            single += dt
            key = f"{_stage_at(spans, t0)}:{b[busy_pids[0]][2]}"
            single_by_stage[key] = single_by_stage.get(key, 0.0) + dt
            if cur == 0:
                cur_stage = _stage_at(spans, t0)
            cur += dt
            if cur > longest[0]:
                longest = (cur, cur_stage, b[busy_pids[0]][2])
        else:
            cur = 0.0
    stage_peaks: dict[str, dict[str, int]] = {}
    for t, snap in samples:
        stage = _stage_at(spans, t)
        for p, (cpu, rss, role) in snap.items():
            d = peaks.setdefault(p, {"role": role, "peak_rss": 0})
            d["peak_rss"] = max(d["peak_rss"], rss)
            cpu_by_pid[p] = cpu
            sp = stage_peaks.setdefault(stage, {})
            sp[role] = max(sp.get(role, 0), rss >> 20)
    return {"processes": [{"pid": p, **d, "cpu": round(cpu_by_pid[p], 1)} for p, d in sorted(peaks.items())],
            "peak_rss_mb_by_stage": stage_peaks,
            "single_busy_seconds": round(single, 1),
            "single_busy_by_stage": {k: round(v, 1) for k, v in sorted(single_by_stage.items())},
            "longest_single_busy": {"seconds": round(longest[0], 1), "stage": longest[1], "role": longest[2]}}


def ensure_sample(workdir: Path, docs: int) -> Path:
    out = workdir / f"sample-{docs}"
    if not (out / "ground_truth.json").exists():
        print(f"mtnlg sample-data --docs {docs} -> {out}", flush=True)
        subprocess.run([sys.executable, "-m", "mtnlg.cli", "sample-data", str(out), "--docs", str(docs)],
                       check=True, cwd=REPO)
    return out


def run_size(args, docs: int, tree: Path = REPO, tag: str = "", config: str | None = None) -> dict:
    sample = ensure_sample(args.workdir, docs)
    run = args.workdir / f"run-{docs}{tag}"
    bundle_log = args.workdir / f"bundles-{docs}{tag}.log"
    bundle_log.unlink(missing_ok=True)
    cmd = [sys.executable, "-c", DRIVER, str(bundle_log), "--config", config or args.config, "--input-root",
           str(sample), "--output", str(run), f"--direct_num_workers={args.workers}",
           "--direct_running_mode=multi_processing"] + (["--staged"] if args.mode == "staged" else [])
    print(f"curate {docs} documents ({args.mode} job, {args.workers} workers, tree {tree}) -> {run}",
          flush=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.Popen(cmd, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env)
    sampler = Sampler(proc.pid, args.interval)
    sampler.start()
    output = proc.communicate()[0]
    wall = time.time() - t0
    sampler.stop.set()
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        print(output[-4000:])
        raise SystemExit(f"curate failed with exit code {proc.returncode}")
    info = json.loads((run / "run.json").read_text())
    spans = _stage_spans(bundle_log)
    stage_wall = {s: round(sum(b - a for a, b, x in spans if x == s), 1) for s in STAGES}
    result = analyse(sampler.samples, spans, args.busy)
    stage_cpu = cpu_by_stage(sampler.samples, spans)
    sampled_cpu = sum(p["cpu"] for p in result["processes"])
    rusage_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    read = info["totals"]["read"]
    return {
        "docs_requested": docs, "read": read, "kept": info["totals"]["kept"],
        "accounting_ok": info["accounting_ok"], "wall_s": round(wall, 1),
        "docs_per_s": round(read / wall, 1), "cpu_s": round(max(sampled_cpu, rusage_cpu), 1),
        "cpu_ms_per_doc": round(1000 * max(sampled_cpu, rusage_cpu) / read, 2),
        "stage_wall_s": stage_wall, "stage_cpu_s": stage_cpu,
        "stage_worker_s": info.get("stage_seconds", {}), "tree": str(tree), "run": str(run),
        "peak_rss_mb": {"driver": max((p["peak_rss"] for p in result["processes"] if p["role"] == "driver"), default=0) >> 20,
                        "worker_max": max((p["peak_rss"] for p in result["processes"] if p["role"] == "worker"), default=0) >> 20},
        **result, "load_avg_at_end": os.getloadavg(),
    }


def _peaks(r: dict) -> dict[str, int]:
    """Peak RSS (bytes) per process role; workers: the largest worker."""
    out: dict[str, int] = {}
    for proc in r["processes"]:
        role = proc["role"] if proc["role"] != "other" else "other"
        out[role] = max(out.get(role, 0), proc["peak_rss"])
    return out


def report(results: list[dict]) -> None:
    print("\n| docs read | wall s | docs/s | CPU s | CPU ms/doc | peak RSS driver MB | peak RSS worker MB | "
          "single-busy s (longest, stage) | lost |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        lb = r["longest_single_busy"]
        print(f"| {r['read']:,} | {r['wall_s']} | {r['docs_per_s']} | {r['cpu_s']} | {r['cpu_ms_per_doc']} | "
              f"{r['peak_rss_mb']['driver']} | {r['peak_rss_mb']['worker_max']} | "
              f"{r['single_busy_seconds']} ({lb['seconds']}, {lb['stage']}) | "
              f"{0 if r['accounting_ok'] else 'ACCOUNTING FAILED'} |")
    print("\ntime per stage: wall s / CPU s of all processes; peak RSS per stage (MB, driver/worker):")
    for r in results:
        print(f"  {r['read']:>9,}: " + ", ".join(
            f"{s} {r['stage_wall_s'][s]}/{r['stage_cpu_s'].get(s, 0)}" for s in STAGES)
            + f", start-up+commit CPU {r['stage_cpu_s'].get('startup/commit', 0)}")
        print("  " + " " * 11 + ", ".join(
            f"{s} {r['peak_rss_mb_by_stage'].get(s, {}).get('driver', 0)}/"
            f"{r['peak_rss_mb_by_stage'].get(s, {}).get('worker', 0)}" for s in STAGES))
    print("\nseconds with exactly one busy process, by stage:process")
    for r in results:
        print(f"  {r['read']:>9,}: " + ", ".join(f"{k} {v}" for k, v in r["single_busy_by_stage"].items()))
    for a, b in zip(results, results[1:]):
        k = b["read"] / a["read"]
        pa, pb = _peaks(a), _peaks(b)
        growth = ", ".join(f"{role} {(pb[role] - pa.get(role, 0)) / (b['read'] - a['read']) / 1024:+.2f} KB"
                           for role in sorted(pb) if role != "other")
        print(f"\n{a['read']:,} -> {b['read']:,} documents ({k:.2f}x): wall {b['wall_s'] / a['wall_s']:.2f}x, "
              f"CPU {b['cpu_s'] / a['cpu_s']:.2f}x, peak RSS driver "
              f"{b['peak_rss_mb']['driver'] / max(1, a['peak_rss_mb']['driver']):.2f}x, worker "
              f"{b['peak_rss_mb']['worker_max'] / max(1, a['peak_rss_mb']['worker_max']):.2f}x; "
              f"peak RSS growth per document: {growth}; "
              f"single-busy {100 * b['single_busy_seconds'] / b['wall_s']:.1f}% of the run, longest "
              f"{100 * b['longest_single_busy']['seconds'] / b['wall_s']:.1f}%")


def same_results(a: str, b: str) -> dict[str, bool]:
    """Whether two runs kept the same documents, wrote the same shards and accounted alike."""
    import pyarrow.parquet as pq

    def kept(run):
        return sorted(i for f in sorted(Path(run, "documents").glob("*/*.parquet"))
                      for i in pq.read_table(f, columns=["id"]).column("id").to_pylist())

    def shards(run):
        return sorted((r["prefix"], r["bin_sha256"], r["idx_sha256"])
                      for r in pq.read_table(Path(run, "stats", "shards.parquet")).to_pylist())

    def accounting(run):
        info = json.loads(Path(run, "run.json").read_text())
        return info["sources"], info["totals"], info["accounting_ok"]

    return {"kept ids": kept(a) == kept(b), "shard sha256": shards(a) == shards(b),
            "run.json accounting": accounting(a) == accounting(b)}


def compare(args, docs: int) -> list[dict]:
    """This tree and ``--baseline`` alternately, ``--repeats`` times each, on the same input."""
    import statistics

    runs = []
    for i in range(args.repeats):
        order = [("base", args.baseline), ("this", REPO)][:: 1 if i % 2 == 0 else -1]
        for tag, tree in order:
            r = run_size(args, docs, tree, f"-{tag}", args.baseline_config if tag == "base" else None)
            r["side"] = tag
            runs.append(r)
            (args.workdir / "compare.json").write_text(json.dumps(runs, indent=1))
    same = same_results(runs[-1]["run"], runs[-2]["run"])
    print(f"\n{docs:,} documents, {args.repeats} alternating runs per side (this tree vs {args.baseline}):")
    print("| side | CPU ms/doc (runs) | median | wall s (runs) | peak RSS driver / worker MB (max) |")
    print("|---|---|---:|---|---|")
    med = {}
    for tag in ("base", "this"):
        rs = [r for r in runs if r["side"] == tag]
        med[tag] = statistics.median(r["cpu_ms_per_doc"] for r in rs)
        print(f"| {tag} | {', '.join(str(r['cpu_ms_per_doc']) for r in rs)} | {med[tag]:.2f} | "
              f"{', '.join(str(r['wall_s']) for r in rs)} | "
              f"{max(r['peak_rss_mb']['driver'] for r in rs)} / {max(r['peak_rss_mb']['worker_max'] for r in rs)} |")
    print(f"CPU per document, base / this: {med['base'] / med['this']:.2f}x; same results: {same}")
    for tag in ("base", "this"):
        r = [x for x in runs if x["side"] == tag][-1]
        print(f"  {tag} CPU s per stage: " + ", ".join(f"{k} {v}" for k, v in r["stage_cpu_s"].items()))
    return runs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--docs", type=int, nargs="+", default=[25_000, 100_000])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--config", default=str(REPO / "data_manifests" / "sources" / "demo.yaml"))
    p.add_argument("--workdir", type=Path, default=Path("/tmp/mtnlg-bench-scale"))
    p.add_argument("--mode", choices=("single", "staged"), default="single")
    p.add_argument("--interval", type=float, default=0.5)
    p.add_argument("--busy", type=float, default=0.5, help="a process is busy above this many cores")
    p.add_argument("--baseline", type=Path, default=None,
                   help="another checkout to compare with (runs alternate; results must match)")
    p.add_argument("--repeats", type=int, default=3, help="runs per side with --baseline")
    p.add_argument("--baseline-config", default=None,
                   help="the baseline's config (default: --config); e.g. its own demo.yaml when this "
                        "tree's has settings the baseline does not know")
    args = p.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    if args.baseline is not None:
        ok = True
        for docs in sorted(args.docs):
            runs = compare(args, docs)
            ok &= all(r["accounting_ok"] for r in runs)
            ok &= all(same_results(runs[-1]["run"], runs[-2]["run"]).values())
        return 0 if ok else 1
    results = []
    for docs in sorted(args.docs):
        results.append(run_size(args, docs))
        (args.workdir / "results.json").write_text(json.dumps(results, indent=1))
    report(results)
    print(f"\nresults: {args.workdir / 'results.json'}")
    return 0 if all(r["accounting_ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
