"""Run as 4 ranks (spawn.py, or torchrun) in test_meta_init.py: build the trainer's model (meta
device, parallelize, materialize this rank's shards) in several layouts of the same world size,
and compare every parameter, gathered whole, with the eagerly initialised single-process model.

    python tests/training/spawn.py 4 tests/training/init_worker.py OUT.json
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from layout_worker import BASE, SEQ  # noqa: E402
from training_fixtures import TOKENIZER, RepeatedDataset  # noqa: E402
from training.config import TrainConfig  # noqa: E402
from training.model import GPT  # noqa: E402
from training.trainer import Trainer  # noqa: E402

LAYOUTS = [  # world size 4
    dict(dp=1, pp=1, tp=4),
    dict(dp=1, pp=2, tp=2),
    dict(dp=1, pp=2, tp=1, dp_=2, pp_schedule="interleaved_1f1b", virtual_stages=2),
    dict(dp=2, pp=1, tp=2, data_parallel="fsdp"),  # FSDP2 shards over tensor-parallel shards
    dict(dp=4, pp=1, tp=1, data_parallel="fsdp"),
    dict(dp=2, pp=2, tp=1, data_parallel="zero1"),
]


def main() -> None:
    torch.set_num_threads(1)
    out = sys.argv[1]
    results = []
    for layout in LAYOUTS:
        layout = {k: v for k, v in layout.items() if k != "dp_"}
        if layout["dp"] * layout["pp"] * layout["tp"] != 4:
            layout["dp"] = 4 // (layout["pp"] * layout["tp"])
        # no step is taken: a batch every layout up to dp 4 divides, without the ramp
        cfg = TrainConfig.from_settings({**BASE, **layout, "vocab_size": 300,
                                         "global_batch_size": 16, "rampup_batch_start": None,
                                         "output_dir": "/tmp/unused"})
        trainer = Trainer(cfg, RepeatedDataset(SEQ), TOKENIZER)
        eager = dict(GPT(cfg.model_config(300), seed=cfg.seed).named_parameters())
        worst, names = 0.0, 0
        for part in trainer.model_parts:
            for name, p in part.named_parameters():
                full = p.full_tensor() if hasattr(p, "full_tensor") else p
                # the last stage's output.weight is the tied embedding's copy
                want = eager["tok_embeddings.weight" if name == "output.weight" else name]
                worst = max(worst, (full.detach().float() - want.detach()).abs().max()
                            .item())
                names += 1
        results.append({"layout": layout, "max_abs_diff": worst, "parameters": names,
                        "rank": dist.get_rank()})
        dist.barrier()
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, results)
    if dist.get_rank() == 0:
        with open(out, "w") as f:
            json.dump([r for rank in gathered for r in rank], f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
