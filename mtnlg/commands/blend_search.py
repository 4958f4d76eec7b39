"""``mtnlg blend search``: blend weights chosen by measurement (RegMix-style proxy search).

    # 16 tiny proxies of 24 steps on the sample, 2 at a time, then the proposal and the spec's
    # weights trained with the same budget (docs/blend-search.md)
    mtnlg blend search --spec demo --run demo_run/run --output demo_run/search \\
        --split 90,10,0 --proxies 16 --steps 24 --valid-samples 8 \\
        --set schedule.micro_batch_size=1 --jobs 2 --verify
    # on a cluster: one job per proxy through the scheduler, then the same command again to fit
    mtnlg blend search ... --launcher "srun --ntasks 1 --gpus-per-task 1"
    mtnlg blend search ... --launcher print      # only print the per-proxy commands

Writes under OUTPUT: ``proxies/<name>.json`` (one per finished proxy, reused by a rerun while
its key matches), ``jobs/<name>.json`` (what each proxy runs), ``proposal/spec.yaml`` and
``proposal/manifest.json`` (the proposed blend), ``results.json`` and ``report.html``.
"""
from __future__ import annotations

import argparse
import logging
import os
import shlex
import subprocess
import sys
import time

log = logging.getLogger("mtnlg.blend_search")

# Part of every proxy's key: bump it when what a proxy measures changes (mtnlg.blend_proxy),
# so stored results of the old measurement are not mixed with new ones.
MEASURE_VERSION = 1


def build_parser() -> argparse.ArgumentParser:
    head, _, examples = __doc__.partition("\n\n")
    p = argparse.ArgumentParser(prog="mtnlg blend search", description=head, epilog=examples,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--spec", required=True, help="blend spec: a shipped name or a YAML path")
    p.add_argument("--run", action="append", required=True, metavar="RUN",
                   help="curated run directory; repeatable")
    p.add_argument("--output", required=True, metavar="DIR", help="search folder (reused: "
                   "finished proxies whose key matches are not trained again)")
    p.add_argument("--train-config", default="demo", metavar="CONFIG",
                   help="proxy training config: shipped name or YAML (default: %(default)s)")
    p.add_argument("--set", dest="overrides", action="append", default=[],
                   metavar="SECTION.FIELD=VALUE", help="override a proxy config setting")
    p.add_argument("--steps", type=int, help="proxy optimizer steps (sets schedule.train_steps, "
                   "decay_tokens to the same budget, warmup_tokens to at most an eighth of it)")
    p.add_argument("--proxies", type=int, default=16, help="mixtures to train (default 16); the "
                   "first is the spec's weights")
    p.add_argument("--seed", type=int, default=1234, help="sampling and hold-out seed")
    p.add_argument("--split", help="train,valid,test weights for the proxies' held-out "
                   "documents (default: the spec's split:)")
    p.add_argument("--bound", action="append", default=[], metavar="NAME=LO:HI",
                   help="per-source weight bounds of the search; repeatable")
    p.add_argument("--concentration", default="10:200", metavar="LO:HI",
                   help="Dirichlet total concentration range (default %(default)s)")
    p.add_argument("--uniform-share", type=float, default=0.5, help="share of proxies drawn "
                   "around the uniform mixture instead of the spec's (default %(default)s)")
    p.add_argument("--target", default="mean", help="mean (per-source valid loss, averaged; "
                   "default), source:NAME, or eval:TASK[:METRIC] (acc, acc_norm, ppl)")
    p.add_argument("--task-data", action="append", default=[], metavar="TASK=PATH",
                   help="eval task file for an eval: target (default: the bundled sample)")
    p.add_argument("--model", default="auto",
                   choices=("auto", "linear", "loglinear", "quadratic", "gbm"),
                   help="the mixture model (default: auto, chosen by cross-validation)")
    p.add_argument("--holdout", type=float, default=0.25,
                   help="share of proxies held out to measure the fit's rank correlation")
    p.add_argument("--valid-samples", type=int, default=32,
                   help="held-out sequences per source (default %(default)s)")
    p.add_argument("--jobs", type=int, default=1, help="proxies at once on this machine")
    p.add_argument("--launcher", help="run each proxy as `LAUNCHER python -m mtnlg.blend_proxy "
                   "JOB` (e.g. srun ...); 'print': only print those commands")
    p.add_argument("--verify", action="store_true", help="also train the proposal and the "
                   "spec's weights with the proxies' budget and report both targets")
    p.add_argument("--verify-seeds", type=int, default=1,
                   help="seeds per verification run (default 1: the proxies' seed)")
    p.add_argument("--report", help="HTML report (default OUTPUT/report.html)")
    return p


def _floats(text: str, n: int, flag: str, sep: str = ",") -> list[float]:
    from infra.config import ConfigError

    try:
        vals = [float(x) for x in text.split(sep)]
    except ValueError:
        vals = []
    if len(vals) != n:
        raise ConfigError(f"{flag} {text!r}: expected {n} numbers separated by {sep!r}")
    return vals


def prepare(args: argparse.Namespace) -> dict:
    """Everything decided before any proxy runs (config errors raised here, naming the flag)."""
    from blending.build import build_manifest
    from blending.mixture_space import parse_bounds, space_for_spec
    from blending.search import canonical_hash, parse_target, train_split_tokens
    from blending.search_outputs import with_weights
    from blending.spec import load_blend_spec
    from infra.config import ConfigError, parse_overrides
    from infra.resources import config_path
    from training.config import TrainConfig

    out = os.path.abspath(args.output)
    spec_path = os.path.abspath(config_path("blends", args.spec, "--spec"))
    spec = load_blend_spec(spec_path)
    split = _floats(args.split, 3, "--split") if args.split else spec.split
    if split is None:
        raise ConfigError("--split: the spec has no split: and the search needs held-out "
                          "documents per source (e.g. --split 90,10,0)")
    names = [s.name for s in spec.sources]
    kind, detail, minimize = parse_target(args.target, names)
    for flag, ok in (("--proxies", args.proxies >= 2), ("--jobs", args.jobs >= 1),
                     ("--valid-samples", args.valid_samples >= 1),
                     ("--verify-seeds", args.verify_seeds >= 1),
                     ("--uniform-share", 0 <= args.uniform_share <= 1),
                     ("--holdout", 0 <= args.holdout < 1)):
        if not ok:
            raise ConfigError(f"{flag}: out of range")
    runs = [os.path.abspath(r) for r in args.run]
    ref_spec = with_weights(spec, spec.weights, split=split)
    reference = build_manifest(ref_spec, runs, os.path.join(out, "reference", "manifest.json"))
    available = train_split_tokens(reference)
    space = space_for_spec(spec, available, parse_bounds(args.bound))
    cfg_path = config_path("train", args.train_config, "--train-config")
    settings = parse_overrides(args.overrides)
    if args.steps is not None:
        base = TrainConfig.from_yaml(cfg_path, settings)
        settings.update({"schedule.train_steps": args.steps, "schedule.train_tokens": None})
        budget = args.steps * base.schedule.global_batch_size * base.seq_length
        settings.setdefault("schedule.decay_tokens", budget)
        settings.setdefault("schedule.warmup_tokens", min(base.schedule.warmup_tokens,
                                                          budget // 8))
    cfg = TrainConfig.from_yaml(cfg_path, settings)  # validated before any proxy
    cfg_dict = cfg.to_dict()
    cfg_dict["logging"].pop("output_dir", None)
    eval_tasks = [detail.split(":")[0]] if kind == "eval" else []
    task_data = {}
    for item in args.task_data:
        task, sep, path = item.partition("=")
        if not (sep and task and path):
            raise ConfigError(f"--task-data {item!r}: expected TASK=PATH")
        task_data[task] = os.path.abspath(path)
    context = {"search_dir": out, "spec_path": spec_path, "runs": runs, "split": list(split),
               "train_config": os.path.abspath(cfg_path), "train_settings": settings,
               "reference_manifest": reference.path, "valid_samples": args.valid_samples,
               "valid_seed": cfg.seed, "eval_tasks": eval_tasks, "task_data": task_data}
    fingerprint = canonical_hash({
        "measure": MEASURE_VERSION, "sources": names, "split": list(split), "train": cfg_dict,
        "shards": [[sh.bin_sha256, sh.idx_sha256] for sh in reference.shards],
        "valid_samples": args.valid_samples, "eval": eval_tasks,
        "task_data": {t: _file_hash(p) for t, p in task_data.items()}})
    return {"spec": spec, "space": space, "available": available, "context": context,
            "fingerprint": fingerprint, "target": (kind, detail, minimize), "seed": cfg.seed,
            "train": cfg_dict, "concentration": _floats(args.concentration, 2,
                                                        "--concentration", ":")}


def _file_hash(path: str) -> str:
    from infra.hashing import file_sha256

    return file_sha256(path)


def proxy_jobs(prep: dict, n: int, seed: int, uniform_share: float) -> list:
    """The spec's weights (mapped into the region) and n - 1 draws, around the uniform mixture
    for ``uniform_share`` of them and around the spec's weights for the rest.  Draw ``i`` has
    its own random stream, so a rerun with more proxies keeps the finished ones."""
    import math

    import numpy as np

    from blending.search import make_job

    space, spec = prep["space"], prep["spec"]
    conc = tuple(prep["concentration"])
    mixtures = [space.project(np.array(spec.weights))]
    for i in range(1, n):
        uniform = math.floor(i * uniform_share) > math.floor((i - 1) * uniform_share)
        rng = np.random.default_rng([seed, i])
        mixtures.append(space.sample(1, rng, None if uniform else spec.weights, conc)[0])
    return [make_job(f"p{i:04d}", "proxy", w, prep["seed"], prep["fingerprint"])
            for i, w in enumerate(mixtures)]


def execute(jobs: list, prep: dict, args: argparse.Namespace, runner=None) -> dict | None:
    """Records of every job; None when --launcher print left some to run elsewhere."""
    from blending.search import ResultStore, run_jobs, write_json_atomic

    context = prep["context"]
    if runner is not None:  # another trainer function (tests): launched proxies use it too
        context = {**context, "runner": f"{runner.__module__}:{runner.__name__}"}
    for job in jobs:  # what each proxy runs, for a launcher or a look
        write_json_atomic(os.path.join(context["search_dir"], "jobs", f"{job.name}.json"),
                          {"job": job.to_json(), "context": context})
    def progress(record: dict) -> None:
        print(f"  {record['name']}: finished in {record['seconds']:.1f}s", flush=True)

    if args.launcher is None:
        if runner is None:
            from mtnlg.blend_proxy import run_proxy as runner
        return run_jobs(jobs, runner, context, args.jobs, progress)
    store = ResultStore(context["search_dir"])
    pending = [j for j in jobs if store.load(j) is None]
    cmds = [f"{args.launcher if args.launcher != 'print' else ''} {shlex.quote(sys.executable)} "
            f"-m mtnlg.blend_proxy "
            f"{shlex.quote(os.path.join(context['search_dir'], 'jobs', j.name + '.json'))}".strip()
            for j in pending]
    if args.launcher == "print":
        if pending:
            print("\n".join(cmds))
            print(f"{len(pending)} of {len(jobs)} proxies to run; run the commands above, then "
                  "this command again to fit", file=sys.stderr)
            return None
    else:
        running: list = []
        for cmd in cmds:
            while len(running) >= args.jobs:
                running = [p for p in running if _reap(p)]
                time.sleep(0.5)
            running.append(subprocess.Popen(cmd, shell=True))
        for p in running:
            p.wait()
            _reap(p)
    records = {j.name: r for j in jobs if (r := store.load(j)) is not None}
    missing = [j.name for j in jobs if j.name not in records]
    if missing:
        raise RuntimeError(f"the launcher finished but {len(missing)} proxies have no result: "
                           f"{', '.join(missing[:5])}")
    return records


def _reap(p) -> bool:
    """True while ``p`` runs; raises if it failed."""
    rc = p.poll()
    if rc is None:
        return True
    if rc != 0:
        raise RuntimeError(f"proxy command failed with exit code {rc}: {p.args}")
    return False


def main(argv: list[str] | None = None, runner=None) -> int:
    args = build_parser().parse_args(argv)
    from infra.extras import missing_extra

    # the proxies train with torch; the mixture model is scikit-learn's: both come with [train]
    if missing := missing_extra("torch", "train"):
        print(f"mtnlg blend search: error: {missing}", file=sys.stderr)
        return 2
    if missing := missing_extra("sklearn", "train"):
        print(f"mtnlg blend search: error: {missing}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    from blending.manifest import ManifestError
    from infra.config import ConfigError
    from infra.resources import ResourceError
    from mtnlg.commands.blend_search_fit import conclude

    try:
        prep = prepare(args)
        jobs = proxy_jobs(prep, args.proxies, args.seed, args.uniform_share)
        print(f"blend search {prep['spec'].name}: {len(jobs)} proxies, target {args.target}, "
              f"{args.jobs} at a time -> {prep['context']['search_dir']}", flush=True)
        free = int((prep["space"].hi > prep["space"].lo).sum())
        if len(jobs) <= free:
            print(f"warning: {len(jobs)} proxies for {free} sources with free weights: even the "
                  "one-parameter-per-source models are barely determined (docs/blend-search.md, "
                  "'When to trust the result')", file=sys.stderr)
        records = execute(jobs, prep, args, runner)
        if records is None:
            return 0
        return conclude(prep, jobs, records, args, lambda js: execute(js, prep, args, runner))
    except (ConfigError, ResourceError) as e:
        print(f"mtnlg blend search: error: {e}", file=sys.stderr)
        return 2
    except (ManifestError, FileNotFoundError, RuntimeError) as e:
        print(f"mtnlg blend search: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
