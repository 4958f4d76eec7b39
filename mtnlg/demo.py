"""`mtnlg demo`: every job of the system, end to end, on the embedded sample corpus.

sample-data -> quality train (fastText) -> curate (Beam, local multi-process FnApiRunner) -> blend -> train (torchrun,
2 processes, tiny GPT on CPU) -> dashboard -> explain (one document) -> eval (zero-shot LAMBADA of the trained checkpoint on
the passages decontamination removed from the corpus).  Each step is the same entry point a user calls,
with the same arguments, so the demo is also the shortest tour of the CLI.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="mtnlg demo", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workdir", default="demo_run",
                   help="folder for every artefact of the demo (default: %(default)s); it is replaced")
    p.add_argument("--docs", type=int, default=None,
                   help="documents in the sample corpus (default: the generator's default)")
    p.add_argument("--workers", type=int, default=max(1, min(2, os.cpu_count() or 1)),
                   help="Beam worker processes (default: %(default)s); 1 runs the job in this "
                        "process (Beam's in-memory mode)")
    p.add_argument("--nproc", type=int, default=2, help="training processes (default: %(default)s)")
    p.add_argument("--steps", type=int, default=None, help="training steps (default: the demo config's)")
    p.add_argument("--skip-train", action="store_true", help="stop after blending (no torch needed)")
    p.add_argument("--progress-every", type=float, default=None, metavar="SECONDS",
                   help="curate's live progress line (documents, documents/s, ETA) every SECONDS "
                        "(default: 1 on a terminal, 30 otherwise; 0: off)")
    return p.parse_args(argv)


def _step(title: str) -> float:
    print(f"\n==> {title}", flush=True)
    return time.perf_counter()


def _check(rc: int | None, what: str) -> None:
    if rc:
        raise SystemExit(f"mtnlg demo: {what} failed with exit code {rc}")


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    work = Path(args.workdir).resolve()
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    sample, run, manifest = work / "sample", work / "run", work / "manifest.json"
    train_dir, dashboard = work / "train", work / "dashboard.html"
    timings: dict[str, float] = {}

    t = _step(f"sample-data -> {sample}")
    from mtnlg import sample_data
    sd_args = [str(sample)] + (["--docs", str(args.docs)] if args.docs else [])
    _check(sample_data.main(sd_args), "sample-data")
    timings["sample-data"] = time.perf_counter() - t

    quality = work / "quality"
    t = _step(f"quality train (fastText on curated vs raw Common Crawl text) -> {quality}")
    from mtnlg.commands import quality as quality_cli
    _check(quality_cli.main(["train", "--config", "demo",
                             "--input-root", str(sample), "--output", str(quality)]), "quality train")
    timings["quality"] = time.perf_counter() - t

    t = _step(f"curate ({args.workers} Beam worker processes) -> {run}")
    from pipelines import curate
    _check(curate.run([
        "--config", "demo", "--input-root", str(sample),
        "--quality-model", str(quality / "model.bin"),
        "--output", str(run), f"--direct_num_workers={args.workers}",
        *(["--progress-every", str(args.progress_every)] if args.progress_every is not None else []),
    ]), "curate")
    timings["curate"] = time.perf_counter() - t

    t = _step(f"blend -> {manifest}")
    from mtnlg.commands import blend as blend_cli
    _check(blend_cli.main(["--spec", "demo", "--run", str(run),
                           "--output", str(manifest)]), "blend")
    timings["blend"] = time.perf_counter() - t

    losses: list[float] = []
    if not args.skip_train:
        t = _step(f"train ({args.nproc} processes, torchrun, gloo) -> {train_dir}")
        from training import launch
        train_args = ["--manifest", str(manifest), "--config", "demo",
                      "--nproc", str(args.nproc), "--output", str(train_dir)]
        if args.steps:
            train_args += ["--steps", str(args.steps)]
        _check(launch.main(train_args), "train")
        timings["train"] = time.perf_counter() - t
        losses = _losses(train_dir / "metrics.jsonl")

    t = _step(f"dashboard -> {dashboard}")
    from mtnlg import dashboard as dash
    _check(dash.main([str(run), "--manifest", str(manifest), "--output", str(dashboard)]), "dashboard")
    timings["dashboard"] = time.perf_counter() - t

    t = _step("explain (one near-duplicate document: its stages, scores and duplicate chain)")
    _explain_one(run)
    timings["explain"] = time.perf_counter() - t

    lambada = None
    if not args.skip_train:
        t = _step("eval (zero-shot LAMBADA of the final checkpoint)")
        lambada = _eval_lambada(work, sample, manifest, train_dir)
        timings["eval"] = time.perf_counter() - t

    _summary(work, run, manifest, train_dir, dashboard, losses, timings)
    if lambada:
        print(lambada, flush=True)
    return 0


def _explain_one(run: Path) -> None:
    """`mtnlg explain` of the first document fuzzy dedup removed (any removed one otherwise)."""
    import pyarrow.parquet as pq  # in the base install (pandas comes with no option the demo needs)

    from mtnlg.commands import explain as explain_cli

    rows = pq.read_table(run / "stats" / "documents", columns=["id", "outcome", "stage"]).to_pylist()
    pick = [r["id"] for r in rows if r["stage"] == "fuzzy_dedup"]
    pick = pick or [r["id"] for r in rows if r["outcome"] == "removed"]
    if pick:
        _check(explain_cli.main(["--run", str(run), min(pick)]), "explain")


def _pii_lines(run: Path) -> list[str]:
    """Personal data the pii stage replaced, per source and kind (stats/pii.parquet)."""
    import pyarrow.parquet as pq

    path = run / "stats" / "pii.parquet"
    if not path.exists():
        return []
    per: dict[str, dict[str, int]] = {}
    for r in pq.read_table(path).to_pylist():
        per.setdefault(r["source"], {}).setdefault(r["kind"], 0)
        per[r["source"]][r["kind"]] += r["matches"]
    lines = ["\n==> personal data replaced by placeholders (stats/pii.parquet; offsets in stats/documents)"]
    lines += [f"  {src:<18}" + ", ".join(f"{k}={n}" for k, n in sorted(kinds.items()))
              for src, kinds in sorted(per.items())] or ["  none found"]
    return lines


def _eval_lambada(work: Path, sample: Path, manifest: Path, train_dir: Path) -> str:
    """Zero-shot LAMBADA (lm-eval's lambada_openai scoring) of every checkpoint the run wrote,
    on the sample's LAMBADA passages: the ones decontamination cut out of the training data."""
    from mtnlg.commands import eval as eval_cli

    out = work / "eval.json"
    _check(eval_cli.main(["--checkpoint", str(train_dir / "checkpoints"), "--tasks", "lambada",
                          "--task-data", f"lambada={sample / 'eval_tasks' / 'lambada.jsonl'}",
                          "--manifest", str(manifest), "--output", str(out),
                          "--report", str(work / "eval.html")]), "eval")
    res = json.loads(out.read_text())
    m, last = res["tasks"]["lambada"], res["checkpoints"][-1]
    return (f"\n==> zero-shot LAMBADA (step {last['step']}, {last['consumed_tokens']:,} tokens): "
            f"acc {m['acc']:.3f} ± {m['acc_stderr']:.3f}, ppl {m['ppl']:,.1f} over {m['n']} "
            f"passages  [{out}]")


def _quality_on_planted(sample: Path, run: Path) -> str:
    """The quality classifier's precision and recall on the sample's planted low-quality pages,
    from the run's per-document stats and the sample's ground truth."""
    import pyarrow.parquet as pq

    from curation.quality_eval import format_planted_metrics, planted_removal_metrics

    truth = json.loads((sample / "ground_truth.json").read_text())
    kinds = {d["id"]: d["kind"] for cat in ("low_quality", "spam") for d in truth.get(cat, [])}
    rows = pq.read_table(run / "stats" / "documents", columns=["id", "stage", "quality_score"]).to_pylist()
    m = planted_removal_metrics(rows, truth["primary"], kinds)
    return "\n==> quality classifier on the planted low-quality pages (ground truth)\n  " + format_planted_metrics(m)


def _losses(metrics: Path) -> list[float]:
    if not metrics.exists():
        raise SystemExit(f"mtnlg demo: training wrote no metrics at {metrics}")
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    return [float(r["loss"]) for r in rows if "loss" in r]


def _summary(work: Path, run: Path, manifest: Path, train_dir: Path, dashboard: Path,
             losses: list[float], timings: dict[str, float]) -> None:
    info = json.loads((run / "run.json").read_text())
    print("\n==> artefacts")
    for label, path in [("curated run", run), ("kept documents", run / "documents"),
                        ("token shards", run / "shards"), ("stats", run / "stats"),
                        ("removed", run / "removed"), ("dead letters", run / "dead_letter"),
                        ("run metadata", run / "run.json"), ("quality model", work / "quality"),
                        ("manifest", manifest),
                        ("training", train_dir), ("dashboard", dashboard),
                        ("evaluation", work / "eval.json")]:
        print(f"  {label:<15} {path}")
    print("\n==> per source (documents)")
    header = f"  {'source':<18}{'read':>6}{'kept':>6}{'dead':>6}{'tokens':>9}  removed by reason"
    print(header)
    for name, s in sorted(info["sources"].items()):
        removed = ", ".join(f"{k}={v}" for k, v in sorted(s.get("removed", {}).items())) or "-"
        print(f"  {name:<18}{s['read']:>6}{s['kept']:>6}{s['dead_lettered']:>6}"
              f"{s.get('tokens', 0):>9}  {removed}")
    tot = info["totals"]
    print(f"  {'TOTAL':<18}{tot['read']:>6}{tot['kept']:>6}{tot['dead_lettered']:>6}{tot.get('tokens', 0):>9}"
          f"  removed={tot['removed']}  accounting_ok={info.get('accounting_ok')}")
    print(_quality_on_planted(work / "sample", run))
    print("\n".join(_pii_lines(run)))
    print(f"\n==> dashboard: {dashboard}  (panel 'Re-threshold filters': move a filter threshold, see what "
          "each source would keep, copy the config fragment)")
    if losses:
        k = max(1, len(losses) // 10)
        first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
        print(f"\n==> training loss: {first:.3f} (first {k} steps) -> {last:.3f} (last {k} steps)"
              f" over {len(losses)} steps{'  [FELL]' if last < first else '  [DID NOT FALL]'}")
    print("\n==> time per step: " + ", ".join(f"{k} {v:.1f}s" for k, v in timings.items()))
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
