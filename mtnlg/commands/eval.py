"""`mtnlg eval`: zero-, one- and few-shot accuracy of trainer checkpoints on the MT-NLG tasks.

    # one checkpoint, every MT-NLG task on the bundled samples, zero-shot
    mtnlg eval --checkpoint runs/demo/checkpoints/step-00000048 --output eval.json
    # the real test sets (saved once with datasets.save_to_disk), 1-shot, 2 processes
    mtnlg eval --checkpoint CKPT --tasks lambada,piqa,hellaswag --shots 1 --data /data/evals \\
        --nproc 2 --output eval.json
    # every checkpoint of a run, with the accuracy-versus-tokens page
    mtnlg eval --checkpoint runs/demo/checkpoints --output eval.json --report eval.html

Prompts, tokenisation, truncation and metrics are lm-evaluation-harness's (0.4.13) for the same
task names, so `lm_eval --model hf` on the Hugging Face export gives the same numbers on the
same files (`training.eval.lm_eval_tasks` writes its task YAMLs).
"""
from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import sys
import tempfile

log = logging.getLogger("mtnlg.eval")


def build_parser() -> argparse.ArgumentParser:
    head, _, examples = __doc__.partition("\n\n")
    p = argparse.ArgumentParser(prog="mtnlg eval", description=head, epilog=examples,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", action="append", required=True, metavar="DIR",
                   help="a trainer checkpoint folder (step-NNNNNNNN), or a folder of them "
                        "(every step is evaluated); repeatable")
    p.add_argument("--tasks", default="mtnlg",
                   help="comma-separated tasks (lambada, piqa, hellaswag, winogrande, boolq, "
                        "anli_r1, anli_r2, anli_r3, race) or 'mtnlg' for all (default)")
    p.add_argument("--shots", type=int, default=0, help="few-shot examples per prompt (default 0)")
    p.add_argument("--limit", type=int, help="score only the first N rows of each task")
    p.add_argument("--seed", type=int, default=1234,
                   help="few-shot sampling seed (default 1234, lm-eval's)")
    p.add_argument("--data", metavar="DIR",
                   help="folder of task files <task>.jsonl|.parquet (+ fewshot/<task>.*) or "
                        "datasets.save_to_disk folders <task>/ (default: the bundled samples)")
    p.add_argument("--task-data", action="append", default=[], metavar="TASK=PATH",
                   help="one task's file or save_to_disk folder; repeatable")
    p.add_argument("--tokenizer", help="tokenizer.json or folder (default: from --manifest, or "
                                       "the bundled GPT-2 tokenizer for a 50257-token model)")
    p.add_argument("--manifest", help="the blend manifest the run trained on (its tokenizer)")
    p.add_argument("--output", required=True, help="results JSON to write")
    p.add_argument("--report", help="also write an HTML page: accuracy per checkpoint step")
    p.add_argument("--nproc", type=int, default=1,
                   help="processes on this machine (torch's elastic agent, as `mtnlg train "
                        "--nproc`), data-parallel over examples")
    p.add_argument("--device", help="cpu | cuda (default: cuda when available)")
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"),
                   help="weights and activations (log-softmax is always float32)")
    p.add_argument("--batch-tokens", type=int, default=8192,
                   help="tokens per forward batch (default 8192)")
    return p


def expand_checkpoints(paths: list[str]) -> list[str]:
    """Folders of step-* checkpoints become their checkpoints, in step order."""
    out = []
    for path in paths:
        if os.path.isfile(os.path.join(path, "config.json")):
            out.append(path)
            continue
        steps = sorted(d for d in os.listdir(path) if d.startswith("step-") and
                       os.path.isfile(os.path.join(path, d, "config.json"))) \
            if os.path.isdir(path) else []
        if not steps:
            raise ValueError(f"--checkpoint {path}: not a trainer checkpoint, and holds no "
                             f"step-* checkpoints")
        out += [os.path.join(path, d) for d in steps]
    return out


def parse_task_data(items: list[str]) -> dict[str, str]:
    from training.eval.tasks import get_task

    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not path:
            raise ValueError(f"--task-data {item!r}: expected TASK=PATH")
        out[get_task(name).name] = path
    return out


# What the forkserver of `--nproc N` imports once, before it forks the ranks.
EVAL_PRELOAD = ("mtnlg.commands.eval", "training.eval.runner", "training.eval.load",
                "training.eval.data", "training.eval.tasks", "torch.distributed")


def relaunch(argv: list[str], nproc: int) -> int:
    """Run this command as ``nproc`` ranks on this machine under torch's elastic agent, as
    `mtnlg train --nproc` does (``training.elastic``: torchrun's environment, signals passed on
    to the ranks, ranks forked from one forkserver that imported torch and the evaluator)."""
    from training.elastic import NodeLaunch, run_node

    rest = [a for i, a in enumerate(argv) if not (a == "--nproc" or a.startswith("--nproc=")
                                                 or (i and argv[i - 1] == "--nproc"))]
    log.info("evaluating with %d processes (torch's elastic agent)", nproc)
    return run_node(NodeLaunch(nproc_per_node=nproc), rest, worker=rank_main,
                    preload=EVAL_PRELOAD, what="eval")


def rank_main(argv: list[str]) -> None:
    """One rank of ``relaunch``: this command; a non-zero status ends the rank with it."""
    code = main(argv)
    if code:
        raise SystemExit(code)


def _init_distributed(device: str) -> None:
    import torch
    import torch.distributed as dist

    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized():
        if device == "cuda":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
        dist.init_process_group("nccl" if device == "cuda" else "gloo")


def format_table(results: dict) -> str:
    lines = [f"{'checkpoint':<20}{'tokens':>12}  {'task':<12}{'n':>6}  {'acc':>15}"
             f"  {'acc_norm':>15}  {'ppl':>12}"]
    for ev in results["checkpoints"]:
        name = os.path.basename(ev["checkpoint"])
        tokens = "-" if ev.get("consumed_tokens") is None else f"{ev['consumed_tokens']:,}"
        for task, m in ev["tasks"].items():
            def pm(key, width):
                if m.get(key) is None:
                    return f"{'-':>{width}}"
                se = m.get(key + "_stderr")
                return f"{m[key]:.4f} ± {se:.4f}".rjust(width) if se is not None \
                    else f"{m[key]:.4f}".rjust(width)
            lines.append(f"{name:<20}{tokens:>12}  {task:<12}{m['n']:>6}  {pm('acc', 15)}  "
                         f"{pm('acc_norm', 15)}  "
                         f"{(format(m['ppl'], '.2f') if 'ppl' in m else '-'):>12}")
    return "\n".join(lines)


def write_json_atomically(path: str, data: dict) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".eval-", dir=folder)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=2)
        f.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def run(args: argparse.Namespace) -> dict:
    import torch
    import torch.distributed as dist

    from training.eval.data import bundled_data_dir, load_task_data
    from training.eval.load import load_checkpoint_model
    from training.eval.runner import evaluate
    from training.eval.tasks import parse_tasks

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    _init_distributed(device)
    if device == "cuda":
        device = f"cuda:{torch.cuda.current_device()}"
    checkpoints = expand_checkpoints(args.checkpoint)
    tasks = parse_tasks(args.tasks)
    overrides = parse_task_data(args.task_data)
    data_dir = args.data or bundled_data_dir()
    datasets = [load_task_data(t, data_dir, overrides.get(t.name)) for t in tasks]
    world = dist.get_world_size() if dist.is_initialized() else 1
    evaluations = []
    for ckpt in checkpoints:
        model, tok, info = load_checkpoint_model(ckpt, args.tokenizer, args.manifest, device,
                                                 getattr(torch, args.dtype))
        log.info("evaluating %s (step %s, %s tokens) on %s, %d-shot, %d process(es)", ckpt,
                 info["step"], info["consumed_tokens"], ",".join(t.name for t in tasks),
                 args.shots, world)
        info["tasks"] = evaluate(model, tok, datasets, args.shots, args.seed, args.limit,
                                 args.batch_tokens)
        evaluations.append(info)
        del model
    return {"format_version": 1,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "settings": {"tasks": [t.name for t in tasks], "shots": args.shots,
                         "seed": args.seed, "limit": args.limit, "data": data_dir,
                         "task_data": overrides, "processes": world, "device": device,
                         "dtype": args.dtype, "conventions": "lm-evaluation-harness 0.4.13"},
            "tasks": evaluations[-1]["tasks"], "checkpoints": evaluations}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    from infra.extras import missing_extra

    if missing := missing_extra("torch", "eval"):
        print(f"mtnlg eval: error: {missing}", file=sys.stderr)
        return 2
    rank = int(os.environ.get("RANK", 0))
    logging.basicConfig(level=logging.INFO if rank == 0 else logging.WARNING,
                        format=f"[rank{rank}] %(asctime)s %(name)s: %(message)s",
                        datefmt="%H:%M:%S")
    if args.shots < 0 or (args.limit is not None and args.limit < 1) or args.nproc < 1:
        build_parser().error("--shots must be >= 0, --limit and --nproc >= 1")
    if args.nproc > 1 and "WORLD_SIZE" not in os.environ:
        return relaunch(argv, args.nproc)
    try:
        results = run(args)
    except (OSError, ValueError) as err:
        print(f"mtnlg eval: {err}", file=sys.stderr)
        return 1
    finally:
        import torch.distributed as dist
        if dist.is_initialized():
            dist.destroy_process_group()
    if rank == 0:
        write_json_atomically(args.output, results)
        print(format_table(results))
        print(f"results written to {os.path.abspath(args.output)}")
        if args.report:
            from mtnlg.dashboard.eval_page import write_eval_report
            write_eval_report([results], args.report)
            print(f"report written to {os.path.abspath(args.report)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
