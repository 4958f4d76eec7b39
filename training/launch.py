"""`mtnlg train`: train a GPT on a blend manifest, or print a memory plan.

    # one process
    mtnlg train --manifest RUN/manifest.json --config demo --output runs/demo
    # two data-parallel processes on CPU (gloo); relaunches itself through torchrun
    mtnlg train --manifest RUN/manifest.json --config demo --nproc 2
    # on a cluster, let the cluster's torchrun start the ranks (NCCL on GPUs)
    torchrun --nnodes 280 --nproc-per-node 8 ... -m training.launch --manifest M --tp 8 --pp 35
    # memory per device for MT-NLG 530B at tensor 8 x pipeline 35
    mtnlg train --plan --preset mtnlg-530b --tp 8 --pp 35

Any TrainConfig setting can be overridden with `--set NAME=VALUE` (value parsed as YAML).
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import warnings


def build_parser() -> argparse.ArgumentParser:
    head, _, examples = __doc__.partition("\n\n")
    p = argparse.ArgumentParser(prog="mtnlg train", description=head, epilog=examples,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--manifest", help="blend manifest JSON (from `mtnlg blend`)")
    p.add_argument("--config", help="training config: a shipped name (demo) or a YAML path (TrainConfig fields)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                   help="override a config setting; repeatable")
    p.add_argument("--dp", type=int, help="data-parallel degree (-1: infer)")
    p.add_argument("--pp", type=int, help="pipeline-parallel degree")
    p.add_argument("--tp", type=int, help="tensor-parallel degree")
    p.add_argument("--nproc", type=int, default=1,
                   help="processes to launch on this machine via torchrun (default 1)")
    p.add_argument("--steps", type=int, help="optimizer steps (sets train_steps)")
    p.add_argument("--output", help="output directory (sets output_dir)")
    p.add_argument("--resume", help="checkpoint directory to load before training")
    p.add_argument("--plan", action="store_true",
                   help="print parameters and memory per device, then exit (no training)")
    p.add_argument("--preset", help="model preset for --plan (default: the config's model)")
    p.add_argument("--seq-length", type=int, help="sequence length for --plan")
    p.add_argument("--micro-batch", type=int, help="micro-batch size for --plan")
    return p


def resolve_config(args: argparse.Namespace):
    from training.config import TrainConfig, parse_overrides

    overrides = parse_overrides(args.overrides)
    for flag, setting in (("dp", "dp"), ("pp", "pp"), ("tp", "tp"), ("output", "output_dir")):
        if getattr(args, flag) is not None:
            overrides[setting] = getattr(args, flag)
    if args.steps is not None:
        overrides.update(train_steps=args.steps, train_tokens=None)
    from mtnlg.resources import config_path

    return TrainConfig.from_yaml(config_path("train", args.config), overrides)


def relaunch_with_torchrun(argv: list[str], nproc: int) -> int:
    """Re-run this command under torchrun with ``nproc`` local processes."""
    rest, skip = [], False
    for i, a in enumerate(argv):
        if skip:
            skip = False
            continue
        if a == "--nproc":
            skip = True
            continue
        if a.startswith("--nproc="):
            continue
        rest.append(a)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc-per-node={nproc}", "-m", "training.launch", *rest]
    logging.getLogger(__name__).info("launching: %s", " ".join(cmd))
    return subprocess.call(cmd)


def setup_logging() -> None:
    rank = int(os.environ.get("RANK", 0))
    logging.basicConfig(level=logging.INFO if rank == 0 else logging.WARNING,
                        format=f"[rank{rank}] %(asctime)s %(name)s: %(message)s",
                        datefmt="%H:%M:%S")
    warnings.filterwarnings("ignore", message="torch.distributed is disabled")


def plan(args: argparse.Namespace) -> int:
    from training.model import GPTConfig
    from training.plan import memory_plan

    cfg = resolve_config(args) if args.config else None
    preset = args.preset or (cfg.model if cfg else "mtnlg-530b")
    model = GPTConfig.preset(preset, **(cfg.model_overrides if cfg and not args.preset else {}))
    tp, pp = args.tp or 1, args.pp or 1
    dp = args.dp if args.dp and args.dp > 0 else 1
    print(memory_plan(model, dp=dp, pp=pp, tp=tp, seq_length=args.seq_length,
                      micro_batch=args.micro_batch or 1).table())
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    setup_logging()
    if args.plan:
        return plan(args)
    if not args.manifest:
        build_parser().error("--manifest is required (or use --plan)")
    if args.nproc > 1 and "WORLD_SIZE" not in os.environ:
        return relaunch_with_torchrun(argv, args.nproc)

    from training.trainer import Trainer

    cfg = resolve_config(args)
    trainer = Trainer.from_manifest(cfg, args.manifest)
    if args.resume:
        trainer.load_checkpoint(args.resume)
    try:
        history = trainer.train()
    finally:
        import torch.distributed as dist
        if dist.is_initialized():
            dist.destroy_process_group()
    if history and trainer.is_main:
        logging.getLogger(__name__).info("done: %d steps, final loss %.4f, metrics %s",
                                         trainer.step, history[-1]["loss"], cfg.metrics_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
