"""Run as N ranks (spawn.py, or torchrun) in the layout tests: train the tiny model on
RepeatedDataset under a (dp, pp, tp) layout and write the per-step records (rank 0) as JSON.

    python tests/training/spawn.py 8 tests/training/layout_worker.py OUT.json '{"pp": 2, "tp": 2}'

The JSON overrides TrainConfig; ``resume`` (a checkpoint path) is popped and loaded first.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import torch.distributed as dist  # noqa: E402

from training_fixtures import TOKENIZER, RepeatedDataset  # noqa: E402
from training.config import TrainConfig  # noqa: E402
from training.trainer import Trainer  # noqa: E402

SEQ = 16
# 4 layers so that pp 2 x 2 virtual stages has a layer per stage; the global batch ramps 8 -> 12
# after 2 steps (2 -> 3 micro-batches per replica at dp 2: 1F1B at pp 2 needs 2). Each
# micro-batch costs a rank about 0.15 s of CPU here (tensor-parallel collectives over gloo), so
# the layouts run 3 steps, not more.
BASE = {"model.name": "tiny", "model.overrides": {"n_layers": 4}, **dict(
    seq_length=SEQ, global_batch_size=12, micro_batch_size=2, rampup_batch_start=8,
    rampup_batch_increment=4, rampup_tokens=2 * 8 * SEQ, train_steps=3, lr=3e-3,
    warmup_tokens=8 * SEQ, decay_tokens=100 * 12 * SEQ, dtype="float32", seed=1234,
    grad_clip=1.0)}


def main() -> None:
    out, overrides = sys.argv[1], json.loads(sys.argv[2])
    resume = overrides.pop("resume", None)
    cfg = TrainConfig.from_settings({**BASE, **overrides})
    trainer = Trainer(cfg, RepeatedDataset(SEQ, distinct=7), TOKENIZER)
    if resume:
        trainer.load_checkpoint(resume)
    history = trainer.train()
    # what data parallelism really did: fully_shard swaps each part's class for FSDP<GPT>,
    # replicate (ddp, zero1) for Replicate<GPT>
    fsdp = all(type(part).__name__.startswith("FSDP") for part in trainer.model_parts)
    # what ZeRO-1 really did: rank 0 keeps optimizer state for fewer parameters than it holds
    local = [(p.to_local() if hasattr(p, "to_local") else p) for p in trainer.parameters()]
    in_optimizer = sum((p.to_local() if hasattr(p, "to_local") else p).numel()
                       for opt in trainer.optimizers for g in opt.param_groups
                       for p in g["params"])
    for record in history:
        record["fsdp"] = fsdp
        record["model_params"] = sum(t.numel() for t in local)
        record["optimizer_params"] = in_optimizer
    if trainer.is_main:
        with open(out, "w") as f:
            json.dump(history, f)
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
