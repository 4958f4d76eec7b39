"""A tiny, deterministic quality training set and model for the quality tests."""
from __future__ import annotations

import os
import random

import pyarrow as pa
import pyarrow.parquet as pq

GOOD = ("the committee published a detailed report on the history of the river valley and its "
        "farming towns while historians compared letters maps and records from each century "
        "to explain how trade roads schools and churches shaped local life").split()
BAD = ("cheap best buy online discount casino loans free pills replica watches bonus deal sale "
       "win click here home about contact privacy login register cart cookie").split()


def text(words, seed: int, n: int = 60) -> str:
    rnd = random.Random(seed)
    return " ".join(rnd.choice(words) for _ in range(n))


def write_parquet(path: str, rows: list[dict]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


def write_training_set(root: str, n: int = 60) -> str:
    """Positives (wikipedia) and negatives (cc_2020_50) as RUN-style parquet + a config."""
    write_parquet(os.path.join(root, "pos", "part-0.parquet"),
                  [{"id": f"wikipedia/x:{i}", "source": "wikipedia", "text": text(GOOD, i)}
                   for i in range(n)])
    write_parquet(os.path.join(root, "neg", "part-0.parquet"),
                  [{"id": f"cc_2020_50/y#{i}", "source": "cc_2020_50", "text": text(BAD, 10_000 + i)}
                   for i in range(n)])
    cfg = os.path.join(root, "quality.yaml")
    with open(cfg, "w") as f:
        f.write("name: tiny\n"
                "positives: [{reader: parquet, paths: ['pos/*.parquet']}]\n"
                "negatives: [{reader: parquet, paths: ['neg/*.parquet']}]\n"
                "holdout_fraction: 0.25\n"
                "fasttext: {epoch: 10, dim: 8, bucket: 1000, thread: 1, seed: 0}\n")
    return cfg
