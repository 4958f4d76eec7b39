"""A tiny trainer checkpoint over the real GPT-2 vocabulary, written by the real trainer."""
from __future__ import annotations

import os
import sys

GPT2_TOKENIZER = {"path": "gpt2", "sha256": "0" * 64, "vocab_size": 50257, "eod_id": 50256}
SEQ = 32
# 2 layers x hidden 32 with a 128-token window: the task prompts of RACE / BoolQ are longer, so
# left truncation is exercised too.
BASE = {"model.name": "tiny", "model.overrides": {"hidden": 32, "n_heads": 2},
        "model.seq_length": SEQ, "model.dtype": "float32", "schedule.global_batch_size": 2,
        "schedule.micro_batch_size": 2, "schedule.train_steps": 2, "optimizer.lr": 3e-3,
        "schedule.warmup_tokens": 0, "schedule.decay_tokens": 10**6, "seed": 1234,
        "checkpoint.interval": 0}


def make_checkpoint(out_dir: str, **overrides) -> str:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "training"))
    from training_fixtures import RepeatedDataset
    from training.config import TrainConfig
    from training.trainer import Trainer

    cfg = TrainConfig.from_settings({**BASE, "logging.output_dir": out_dir, **overrides})
    trainer = Trainer(cfg, RepeatedDataset(SEQ, vocab_size=50257), GPT2_TOKENIZER)
    trainer.train()
    return trainer.checkpoint_path()
