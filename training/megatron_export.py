"""Trainer checkpoints <-> Megatron-LM / Megatron-Core GPT checkpoints, for a given tp x pp.

    # a trainer checkpoint as Megatron's per-rank layout (tp and pp default to the run's)
    python -m training.megatron_export export runs/x/checkpoints/step-00000100 runs/x/megatron \
        [--tp 8 --pp 35 --virtual-stages 3]
    # and back: a Megatron checkpoint folder (--save/--load) as a trainer checkpoint
    python -m training.megatron_export import runs/x/megatron runs/y/checkpoints/step-00000100

The export is Megatron-LM's per-rank ("legacy", ``--ckpt-format torch``) checkpoint of a GPTModel
built from Megatron-Core's *local* layer spec (``get_gpt_layer_local_spec``, i.e. Megatron-LM
``--transformer-impl local``), with learned absolute positions, LayerNorm, biases, GELU and tied
embeddings: the shape of this trainer's GPT::

    OUT/latest_checkpointed_iteration.txt                   "100"
    OUT/iter_0000100/mp_rank_TT[_PPP]/model_optim_rng.pt     one per (tp rank, pp rank)
        {"model": state dict (or "model0", "model1", ... per virtual stage), "iteration",
         "checkpoint_version": 3.0, "args": argparse.Namespace of the model's Megatron flags}

The names, tensor-parallel splits, vocabulary padding and stage numbering are in
``training.megatron_layout``. Only the weights travel: Megatron-LM continues from the export
with ``--load OUT --no-load-optim --no-load-rng --transformer-impl local`` (its optimizer state
layout is its own). The import writes a sealed trainer checkpoint
marked weights-only: the trainer loads the weights, step and data position and starts AdamW
afresh. Megatron's files are pickles: the import unpickles only tensors and the args Namespace
(``torch.load(weights_only=True)``) unless ``--trust-pickle`` is given.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys

import torch

from training.checkpoint import CheckpointError
from training.megatron_layout import (CHECKPOINT_VERSION, MegatronLayout, config_from_args,
                                      from_megatron, megatron_args, to_megatron)

TRACKER = "latest_checkpointed_iteration.txt"


# --- files ----------------------------------------------------------------------------------------
def read_train_state(path: str) -> dict:
    """step, consumed_tokens and consumed_samples of a verified trainer checkpoint."""
    import torch.distributed.checkpoint as dcp

    state = {"train": {"step": 0, "consumed_tokens": 0, "consumed_samples": 0}}
    dcp.load(state, checkpoint_id=path, no_dist=True)
    return {k: int(v) for k, v in state["train"].items()}


def export_checkpoint(checkpoint: str, out_dir: str, tp: int | None = None,
                      pp: int | None = None, virtual_stages: int | None = None) -> str:
    """Write ``checkpoint`` (a trainer checkpoint of any layout, verified first) as Megatron's
    per-rank checkpoint for tp x pp (default: the layout the run saved it from)."""
    from training.checkpoint import load_plain_model, read_checkpoint_config

    model = load_plain_model(checkpoint)
    meta = read_checkpoint_config(checkpoint)
    par = meta.get("parallelism") or {}
    layout = MegatronLayout(tp or meta.get("_tp") or 1, pp or par.get("pp") or 1,
                            virtual_stages or par.get("virtual_stages") or 1)
    train = read_train_state(checkpoint)
    seq = (meta.get("model") or {}).get("seq_length") or model.cfg.max_seq_length
    ranks = to_megatron(model.state_dict(), model.cfg, layout)
    args = megatron_args(model.cfg, layout, seq, train["step"], train["consumed_samples"])
    it_dir = os.path.join(out_dir, f"iter_{train['step']:07d}")
    for (t, p), chunks in ranks.items():
        doc = {"args": args, "checkpoint_version": CHECKPOINT_VERSION,
               "iteration": train["step"]}
        doc.update({"model": chunks[0]} if len(chunks) == 1 else
                   {f"model{v}": c for v, c in enumerate(chunks)})
        rank_dir = os.path.join(it_dir, layout.rank_dir(t, p))
        os.makedirs(rank_dir, exist_ok=True)
        tmp = os.path.join(rank_dir, ".model_optim_rng.pt.tmp")
        torch.save(doc, tmp)
        os.replace(tmp, os.path.join(rank_dir, "model_optim_rng.pt"))
    with open(os.path.join(out_dir, TRACKER), "w") as f:  # last: the folder is complete
        f.write(str(train["step"]))
    return it_dir


def _load_rank_file(path: str, trust_pickle: bool) -> dict:
    if trust_pickle:
        return torch.load(path, map_location="cpu", weights_only=False)
    try:
        torch.serialization.add_safe_globals([argparse.Namespace])  # Megatron's args
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - an unpickling refusal names the global it met
        raise CheckpointError(f"{path}: holds more than tensors and the args Namespace ({e}); "
                              "pass --trust-pickle only if you trust where it came from") from None


def read_megatron(folder: str, trust_pickle: bool = False):
    """(args, layout, {(tp, pp): [state dict per virtual stage]}) of a Megatron checkpoint
    folder (the --save folder with latest_checkpointed_iteration.txt, or an iter_* folder)."""
    if os.path.isfile(os.path.join(folder, TRACKER)):
        with open(os.path.join(folder, TRACKER)) as f:
            it = f.read().strip()
        folder = os.path.join(folder, "release" if it == "release" else f"iter_{int(it):07d}")
    names = sorted(n for n in os.listdir(folder) if re.fullmatch(r"mp_rank_\d\d(_\d\d\d)?", n)) \
        if os.path.isdir(folder) else []
    if not names:
        raise CheckpointError(f"{folder}: no mp_rank_* folders: not a Megatron checkpoint")
    docs = {}
    for n in names:
        t, _, p = n[len("mp_rank_"):].partition("_")
        docs[(int(t), int(p or 0))] = _load_rank_file(
            os.path.join(folder, n, "model_optim_rng.pt"), trust_pickle)
    args = next(iter(docs.values()))["args"]
    tp, pp = max(k[0] for k in docs) + 1, max(k[1] for k in docs) + 1
    first = next(iter(docs.values()))
    vpp = 1 if "model" in first else len([k for k in first if re.fullmatch(r"model\d+", k)])
    layout = MegatronLayout(tp, pp, vpp)
    ranks = {k: [d["model"]] if vpp == 1 else [d[f"model{v}"] for v in range(vpp)]
             for k, d in docs.items()}
    return args, layout, ranks, int(first.get("iteration", 0))


def import_checkpoint(folder: str, out: str, trust_pickle: bool = False) -> str:
    """Write a Megatron GPT checkpoint as a sealed, weights-only trainer checkpoint ``out``."""
    import torch.distributed.checkpoint as dcp

    from training.checkpoint import seal_checkpoint

    args, layout, ranks, iteration = read_megatron(folder, trust_pickle)
    cfg = config_from_args(args)
    state = from_megatron(ranks, cfg, layout)
    os.makedirs(out, exist_ok=True)
    dcp.save({"model": state}, checkpoint_id=out, no_dist=True)
    samples = int(getattr(args, "consumed_train_samples", 0) or 0)
    seq = int(getattr(args, "seq_length", cfg.max_seq_length) or cfg.max_seq_length)
    meta = {"_model_config": dataclasses.asdict(cfg), "_world_size": None, "_tp": layout.tp,
            "_weights_only": True, "_source": f"megatron {os.path.abspath(folder)}",
            "_train": {"step": iteration, "consumed_samples": samples,
                       "consumed_tokens": samples * seq}}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(meta, f, indent=2)
    seal_checkpoint(out, group_ranks=(0, 1))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.megatron_export",
                                description=__doc__.partition("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export", help="trainer checkpoint -> Megatron per-rank checkpoint")
    e.add_argument("checkpoint")
    e.add_argument("out_dir")
    e.add_argument("--tp", type=int)
    e.add_argument("--pp", type=int)
    e.add_argument("--virtual-stages", type=int)
    i = sub.add_parser("import", help="Megatron checkpoint -> weights-only trainer checkpoint")
    i.add_argument("megatron_dir")
    i.add_argument("out_checkpoint")
    i.add_argument("--trust-pickle", action="store_true",
                   help="unpickle everything in Megatron's files (only for files you trust)")
    args = p.parse_args(argv)
    try:
        if args.command == "export":
            where = export_checkpoint(args.checkpoint, args.out_dir, args.tp, args.pp,
                                      args.virtual_stages)
        else:
            where = import_checkpoint(args.megatron_dir, args.out_checkpoint, args.trust_pickle)
    except (CheckpointError, OSError) as err:
        print(f"megatron_export: error: {err}", file=sys.stderr)
        return 1
    print(f"wrote {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
