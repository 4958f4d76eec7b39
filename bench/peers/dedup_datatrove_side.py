"""datatrove's four-step MinHash dedup on the bench_dedup corpus (run in a SEPARATE venv).

    /tmp/dtvenv/bin/python bench/peers/dedup_datatrove_side.py ROOT [--workers 2]

Normally started by ``python -m bench.dedup.dedup --vs-datatrove ROOT`` (see its docstring), which times it
against ours on the same files.  Reads ROOT/in/*.jsonl (id, text; one file per worker: datatrove
shards by file) and writes what ours writes, uncompressed: the kept documents as JSONL (id, text)
in ROOT/datatrove/kept and the removed ids (JSONL ``{"id": ...}``) in ROOT/datatrove/removed.
Word 5-grams, 14 buckets x 8 hashes (datatrove's defaults), ``--workers`` tasks per step
(14 for the bucket step), ``--workers`` processes.
"""
from __future__ import annotations

import argparse
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
    r, out = args.root, f"{args.root}/datatrove"
    cfg = MinhashConfig(n_grams=5, num_buckets=14, hashes_per_bucket=8)
    reader = lambda: JsonlReader(f"{r}/in", glob_pattern="*.jsonl", id_key="id")  # noqa: E731
    kept = JsonlWriter(f"{out}/kept", compression=None,
                       adapter=lambda self, doc: {"id": doc.id, "text": doc.text})
    removed = JsonlWriter(f"{out}/removed", compression=None, adapter=lambda self, doc: {"id": doc.id})
    steps = [
        [reader(), MinhashDedupSignature(output_folder=f"{out}/sigs", config=cfg)],
        [MinhashDedupBuckets(input_folder=f"{out}/sigs", output_folder=f"{out}/buckets", config=cfg)],
        [MinhashDedupCluster(input_folder=f"{out}/buckets", output_folder=f"{out}/remove_ids", config=cfg)],
        [reader(), MinhashDedupFilter(input_folder=f"{out}/remove_ids", exclusion_writer=removed), kept],
    ]
    tasks = [args.workers, cfg.num_buckets, 1, args.workers]
    t0 = time.perf_counter()
    for i, (pipe, n) in enumerate(zip(steps, tasks)):
        LocalPipelineExecutor(pipeline=pipe, tasks=n, workers=args.workers,
                              logging_dir=f"{out}/logs/step{i}").run()
    print(f"datatrove: {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":  # datatrove's executor spawns processes
    main()
