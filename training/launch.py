"""`mtnlg train`: train a GPT on a blend manifest, or print a memory plan.

    # one process
    mtnlg train --manifest RUN/manifest.json --config demo --output runs/demo
    # two data-parallel processes on CPU (gloo), started by torch's elastic agent
    mtnlg train --manifest RUN/manifest.json --config demo --nproc 2
    # a failed rank restarts the workers (up to 3 times); they resume from the newest checkpoint
    mtnlg train --manifest RUN/manifest.json --config demo --nproc 2 --max-restarts 3
    # two nodes: the same command on each (c10d rendezvous at HOST:PORT, one job id)
    mtnlg train --manifest M --config C --nnodes 2 --nproc 8 --rdzv-endpoint HOST:29500 \
        --rdzv-id $SLURM_JOB_ID --tp 8
    # or let the cluster's torchrun start the ranks (NCCL on GPUs)
    torchrun --nnodes 280 --nproc-per-node 8 ... -m training.launch --manifest M \
        --config training/configs/mtnlg-530b.yaml
    # memory per device and the meta-device check of the MT-NLG 530B recipe (tp 8 x pp 35 x dp 8)
    mtnlg train --plan --config training/configs/mtnlg-530b.yaml

Any setting can be overridden with `--set SECTION.FIELD=VALUE` (value parsed as YAML; a bare
FIELD when the name is unique, e.g. `--set lr=1e-3`). The config is validated before any
process starts. A wrong setting, a manifest or checkpoint that fails its checksums, prints one
line naming the setting or file and exits with status 2. A run continues from the newest
complete, verified checkpoint in OUTPUT/checkpoints (`checkpoint.resume: auto`). SIGTERM/SIGINT
to this launcher reach every rank through the elastic agent; the ranks checkpoint after the
current step and the launcher waits for them (`launch.shutdown_timeout_s`).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings

from training.worker import stop_signal

log = logging.getLogger("training.launch")

EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    head, _, examples = __doc__.partition("\n\n")
    p = argparse.ArgumentParser(prog="mtnlg train", description=head, epilog=examples,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--manifest", help="blend manifest JSON (from `mtnlg blend`)")
    p.add_argument("--config", help="training config: a shipped name (demo, mtnlg-530b) or a YAML path (sections: model, optimizer, "
                                    "schedule, parallelism, data, validation, checkpoint, logging)")
    p.add_argument("--set", dest="overrides", action="append", default=[],
                   metavar="SECTION.FIELD=VALUE", help="override a config setting; repeatable")
    p.add_argument("--dp", type=int, help="data-parallel degree (-1: infer)")
    p.add_argument("--pp", type=int, help="pipeline-parallel degree")
    p.add_argument("--tp", type=int, help="tensor-parallel degree")
    p.add_argument("--nproc", "--nproc-per-node", dest="nproc", type=int, default=1,
                   help="worker processes on this node, started by torch's elastic agent "
                        "(default 1: train in this process)")
    p.add_argument("--nnodes", type=int, default=1,
                   help="nodes in the job; run the same command on every node (default 1)")
    p.add_argument("--rdzv-endpoint", metavar="HOST:PORT",
                   help="c10d rendezvous address shared by the nodes (required with --nnodes "
                        "> 1; the first agent to bind it hosts it)")
    p.add_argument("--rdzv-id", metavar="ID",
                   help="job id shared by the nodes' agents (required with --nnodes > 1)")
    p.add_argument("--max-restarts", type=int,
                   help="restart the workers up to N times after a failure (sets "
                        "launch.max_restarts); they resume from the newest verified checkpoint")
    p.add_argument("--verify-shards", choices=("stamps", "full", "none"),
                   help="shard checksums before training (sets data.verify_shards): stamps "
                        "(hash only shards changed since `mtnlg stage`/`blend` verified them), "
                        "full (hash every shard), none")
    p.add_argument("--steps", type=int, help="optimizer steps (sets schedule.train_steps)")
    p.add_argument("--output", help="output directory (sets logging.output_dir)")
    p.add_argument("--resume", help="checkpoint directory to load before training (verified "
                                    "against its checksums.json first; sets checkpoint.resume, "
                                    "default auto: the run's newest verified checkpoint)")
    p.add_argument("--plan", action="store_true",
                   help="print parameters and memory per device, check the per-rank parameter "
                        "count on the meta device, then exit (no training)")
    p.add_argument("--preset", help="model preset for --plan (default: the config's model)")
    p.add_argument("--seq-length", type=int, help="sequence length for --plan")
    p.add_argument("--micro-batch", type=int, help="micro-batch size for --plan")
    return p


def resolve_config(args: argparse.Namespace):
    from infra.config import parse_overrides
    from training.config import TrainConfig

    overrides = parse_overrides(args.overrides)
    for flag, setting in (("dp", "parallelism.dp"), ("pp", "parallelism.pp"),
                          ("tp", "parallelism.tp"), ("output", "logging.output_dir"),
                          ("resume", "checkpoint.resume"), ("max_restarts", "launch.max_restarts"),
                          ("verify_shards", "data.verify_shards")):
        if getattr(args, flag) is not None:
            overrides[setting] = getattr(args, flag)
    if args.steps is not None:
        overrides.update({"schedule.train_steps": args.steps, "schedule.train_tokens": None})
    from infra.resources import config_path

    path = config_path("train", args.config) if args.config else None
    return TrainConfig.from_yaml(path, overrides)


def node_launch(args: argparse.Namespace, cfg):
    """How this node's workers are started by the elastic agent (checked before any work)."""
    from infra.config import ConfigError
    from training.elastic import NodeLaunch

    try:
        return NodeLaunch(nproc_per_node=args.nproc, nnodes=args.nnodes,
                          rdzv_endpoint=args.rdzv_endpoint, rdzv_id=args.rdzv_id,
                          max_restarts=cfg.launch.max_restarts,
                          shutdown_timeout_s=cfg.launch.shutdown_timeout_s)
    except ValueError as e:
        raise ConfigError(str(e)) from None


def setup_logging() -> None:
    rank = int(os.environ.get("RANK", 0))
    logging.basicConfig(level=logging.INFO if rank == 0 else logging.WARNING,
                        format=f"[rank{rank}] %(asctime)s %(name)s: %(message)s",
                        datefmt="%H:%M:%S")
    warnings.filterwarnings("ignore", message="torch.distributed is disabled")


def plan(args: argparse.Namespace) -> int:
    """Memory per device for the config's (or the flags') layout, and the meta-device check."""
    from training.config import TrainConfig
    from training.plan import memory_plan, meta_check, stage_params

    cfg = resolve_config(args) if args.config else TrainConfig.from_settings(
        {"model.name": args.preset or "mtnlg-530b", "train_steps": 1,
         **{f"parallelism.{k}": getattr(args, k) for k in ("tp", "pp", "dp")
            if getattr(args, k) is not None}})
    p = cfg.parallelism
    model = cfg.model_config()
    if args.preset and args.config:
        from training.model import GPTConfig
        model = GPTConfig.preset(args.preset)
    dp = p.dp if p.dp > 0 else 1
    seq = args.seq_length or cfg.seq_length
    micro = args.micro_batch or cfg.schedule.micro_batch_size
    if args.config:  # the config's batch sizes must fit its pipeline schedule
        cfg.check_layout(dp, p.pp)
    mp = memory_plan(model, dp=dp, pp=p.pp, tp=p.tp, seq_length=seq, micro_batch=micro,
                     virtual_stages=p.virtual_stages, data_parallel=p.data_parallel)
    print(mp.table())
    formula = stage_params(model, p.pp, p.tp, p.virtual_stages)
    meta = meta_check(model, p.pp, p.tp, p.virtual_stages)
    verdict = "agree" if meta == formula else "mismatch"
    worst = max(range(p.pp), key=lambda r: formula[r])
    print(f"meta-device check: rank-local model built on the meta device for dp {dp} x pp "
          f"{p.pp} x tp {p.tp} ({p.pp * p.tp} ranks per replica, fake process group): "
          f"{meta[worst]:,} parameters per device (busiest rank) vs formula "
          f"{formula[worst]:,}: {verdict}" + ("" if verdict == "agree" else
          f" (per pp rank, meta {meta} vs formula {formula})"))
    return 0 if verdict == "agree" else 1


def preflight(args: argparse.Namespace, cfg) -> dict:
    """What the launcher of a node checks before the agent starts any rank: the layout for the
    job's world size, the manifest (shard checksums: once for this node, the ranks then skip
    them), and an explicit resume checkpoint's checksums. Returns the variables to add to the
    workers' environment."""
    from training.data import VERIFIED_ENV, check_manifest, manifest_fingerprint
    from training.parallelize import ParallelDims
    from infra.config import ConfigError

    p = cfg.parallelism
    try:
        dims = ParallelDims(p.dp, p.pp, p.tp, args.nproc * args.nnodes)
    except ValueError as e:
        raise ConfigError(f"parallelism: {e}") from None
    cfg.check_layout(dims.dp, dims.pp)
    env = {}
    check_manifest(cfg, args.manifest, cfg.data.verify_shards)
    if cfg.data.verify_shards != "none":
        env[VERIFIED_ENV] = manifest_fingerprint(args.manifest)
    resume = cfg.checkpoint.resume
    if resume not in (None, "auto"):
        from training.checkpoint import verify_checkpoint
        verify_checkpoint(resume)
    return env


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)  # --help and usage errors before torch is imported
    from infra.extras import missing_extra

    if missing := missing_extra("torch", "train"):
        return _fail(missing)
    from blending.manifest import ManifestError
    from training.checkpoint import CheckpointError
    from infra.resources import ResourceError
    from infra.config import ConfigError

    setup_logging()
    try:
        return _main(argv, args)
    except ConfigError as e:
        return _fail(f"config error: {e}")
    except (ManifestError, CheckpointError, ResourceError) as e:  # each names the file
        return _fail(str(e))


def _fail(message: str) -> int:
    rank = os.environ.get("RANK")
    if rank in (None, "0"):
        print(f"mtnlg train: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _main(argv: list[str], args: argparse.Namespace) -> int:
    if args.plan:
        return plan(args)
    if not args.manifest:
        build_parser().error("--manifest is required (or use --plan)")
    cfg = resolve_config(args)  # validated before any process starts
    agent = args.nproc > 1 or args.nnodes > 1 or cfg.launch.max_restarts > 0
    if agent and "WORLD_SIZE" not in os.environ:
        # each worker runs main(argv) with torchrun's environment: it sees WORLD_SIZE and trains
        from training.elastic import run_node
        node = node_launch(args, cfg)
        return run_node(node, argv, run_worker, preflight(args, cfg))

    from training.trainer import Trainer

    try:
        trainer = Trainer.from_manifest(cfg, args.manifest)
        trainer.resume()
        history = trainer.train()
    finally:
        import torch.distributed as dist
        if dist.is_initialized():
            dist.destroy_process_group()
    if history and trainer.is_main:
        log.info("done: %d steps, final loss %.4f, metrics %s", trainer.step,
                 history[-1]["loss"], cfg.metrics_path)
    return 0


def run_worker(argv: list[str]) -> None:
    """One rank, forked by the elastic agent's forkserver (``training.elastic.run_node``) with
    torchrun's environment: ``mtnlg train`` with the launcher's arguments; a non-zero status
    ends the process with that status, as the command would (the agent counts it as a failed
    worker).

    A rank that stopped on the agent's SIGTERM (it checkpointed after the current step) ends
    its process here: the agent is shutting the group down and collects no return value, and
    torch's function workers would otherwise wait for it to do so until the agent SIGKILLs
    them after ``shutdown_timeout_s``."""
    code = main(argv)
    if stop_signal() is not None:
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(code)
    if code:
        raise SystemExit(code)


if __name__ == "__main__":
    sys.exit(main())
