"""Run as N ranks (tests/training/spawn.py, or torchrun) in the layout test: train the tiny
GPT-2-vocabulary model under a layout and write its checkpoint (the trainer's own output).

    python tests/training/spawn.py 2 tests/eval/tp_worker.py OUT_DIR '{"tp": 2}'
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import torch.distributed as dist  # noqa: E402

from eval_fixtures import make_checkpoint  # noqa: E402


def main() -> None:
    make_checkpoint(sys.argv[1], **json.loads(sys.argv[2]))
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
