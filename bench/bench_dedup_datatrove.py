"""datatrove's four-step MinHash dedup on the bench_dedup corpus (run in a SEPARATE venv).

    python -m venv /tmp/dtvenv && /tmp/dtvenv/bin/pip install 'datatrove[processing]' orjson spacy
    PYTHONPATH=. .venv/bin/python bench/bench_dedup.py --base 10000 --dump /tmp/dd_dt/all.jsonl
    mkdir -p /tmp/dd_dt/in && (cd /tmp/dd_dt/in && split -n l/2 -d --additional-suffix=.jsonl ../all.jsonl part)
    /tmp/dtvenv/bin/python bench/bench_dedup_datatrove.py /tmp/dd_dt [--workers 2]

The input must be split into one file per worker: datatrove's reader shards by file, so one
file would leave the second signature task idle.  Word 5-grams, 14 buckets x 8 hashes (datatrove's defaults), 2 tasks on 2 workers per step.
Prints the wall time of the four steps and recall / precision on the planted pairs
(``n<i>`` is the near-duplicate of ``d<i>``), to set beside bench_dedup.py's figures.
"""
from __future__ import annotations

import argparse
import glob
import gzip
import json
import time


def main() -> None:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup import MinhashDedupCluster, MinhashDedupFilter, MinhashDedupSignature
    from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupBuckets
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    r = args.root
    cfg = MinhashConfig(n_grams=5, num_buckets=14, hashes_per_bucket=8)
    reader = lambda: JsonlReader(f"{r}/in", glob_pattern="*.jsonl", id_key="id")  # noqa: E731
    steps = [
        [reader(), MinhashDedupSignature(output_folder=f"{r}/sigs", config=cfg)],
        [MinhashDedupBuckets(input_folder=f"{r}/sigs", output_folder=f"{r}/buckets", config=cfg)],
        [MinhashDedupCluster(input_folder=f"{r}/buckets", output_folder=f"{r}/remove_ids", config=cfg)],
        [reader(), MinhashDedupFilter(input_folder=f"{r}/remove_ids", exclusion_writer=JsonlWriter(f"{r}/removed")),
         JsonlWriter(f"{r}/kept")],
    ]
    tasks = [args.workers, cfg.num_buckets, 1, args.workers]
    t0 = time.perf_counter()
    for i, (pipe, n) in enumerate(zip(steps, tasks)):
        LocalPipelineExecutor(pipeline=pipe, tasks=n, workers=args.workers,
                              logging_dir=f"{r}/logs/step{i}").run()
    wall = time.perf_counter() - t0
    removed = set()
    for path in glob.glob(f"{r}/removed/*"):
        with gzip.open(path, "rt") as f:
            removed |= {json.loads(line)["id"] for line in f}
    ids = [json.loads(line)["id"] for path in sorted(glob.glob(f"{r}/in/*.jsonl")) for line in open(path)]
    docs = len(ids)
    planted = {f"d{i[1:]}" for i in ids if i.startswith("n")}
    found = sum(1 for d in planted if d in removed or f"n{d[1:]}" in removed)
    print(f"datatrove: {docs} docs in {wall:.1f}s ({docs / wall:.0f} docs/s); removed {len(removed)}; "
          f"planted pairs found {found}/{len(planted)}; removed outside planted pairs "
          f"{len(removed) - found}")


if __name__ == "__main__":  # datatrove's executor spawns processes
    main()
