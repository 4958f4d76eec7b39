"""Tiny curated RUN directories (shards + run.json) for the blending tests.

A uniquely named helper module (not conftest) so ``import`` cannot pick up another folder's.
"""
from __future__ import annotations

import json
import os

import numpy as np

from blending.indexed_dataset import IndexedDatasetWriter

FAKE_TOKENIZER = {"path": "tok/tokenizer.json", "sha256": "ab" * 32, "vocab_size": 1000,
                  "eod_id": 999}

TWO_SOURCE_SPEC = """
name: tiny
train_tokens: 2000
epoch_cap: 3.0
sources:
  - {name: alpha, display_name: Alpha, weight: 0.75}
  - {name: beta, display_name: Beta, weight: 0.25}
"""


def write_shard(prefix: str, docs: list[list[int]], dtype=np.uint16):
    with IndexedDatasetWriter(prefix, dtype) as w:
        for d in docs:
            w.add_document(np.asarray(d))
    return w.finalize()


def random_docs(rng: np.random.Generator, n: int, lo: int = 1, hi: int = 40,
                eod: int = 999) -> list[list[int]]:
    """Documents of random length, each ending with EOD."""
    return [list(rng.integers(0, 998, size=int(rng.integers(lo, hi)))) + [eod] for _ in range(n)]


def make_run(root: str, sources: dict[str, list[list[list[int]]]],
             tokenizer: dict | None = None) -> str:
    """RUN/shards/<source>/<source>_NNNNN.{bin,idx} (one entry per shard) + RUN/run.json."""
    os.makedirs(root, exist_ok=True)
    for name, shards in sources.items():
        for k, docs in enumerate(shards):
            write_shard(os.path.join(root, "shards", name, f"{name}_{k:05d}"), docs)
    with open(os.path.join(root, "run.json"), "w") as f:
        json.dump({"format_version": 1, "tokenizer": tokenizer or FAKE_TOKENIZER}, f)
    return root
