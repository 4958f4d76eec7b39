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


def record_shards(root: str, rows: list[dict]) -> None:
    """RUN/stats/shards.parquet as curate writes it (the checksums blend verifies against)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(os.path.join(root, "stats"), exist_ok=True)
    cols = ("source", "shard", "prefix", "documents", "tokens", "bin_sha256", "idx_sha256")
    pq.write_table(pa.table({c: [r[c] for r in rows] for c in cols}),
                   os.path.join(root, "stats", "shards.parquet"))


def make_run(root: str, sources: dict[str, list[list[list[int]]]],
             tokenizer: dict | None = None) -> str:
    """RUN/shards/<source>/<source>_NNNNN.{bin,idx} (one entry per shard), RUN/run.json and
    RUN/stats/shards.parquet (the shards' recorded checksums)."""
    os.makedirs(root, exist_ok=True)
    rows = []
    for name, shards in sources.items():
        for k, docs in enumerate(shards):
            rel = f"shards/{name}/{name}_{k:05d}"
            info = write_shard(os.path.join(root, *rel.split("/")), docs)
            rows.append({"source": name, "shard": k, "prefix": rel, "documents": info.documents,
                         "tokens": info.tokens, "bin_sha256": info.bin_sha256,
                         "idx_sha256": info.idx_sha256})
    record_shards(root, rows)
    with open(os.path.join(root, "run.json"), "w") as f:
        json.dump({"format_version": 1, "tokenizer": tokenizer or FAKE_TOKENIZER}, f)
    return root
