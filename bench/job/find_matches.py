"""Decontamination's scan of every document, a baseline commit against this tree, on real texts.

    .venv/bin/python -m bench.job.find_matches --run /tmp/helperB-ab/run-25000 \
        --tasks '/tmp/helperB-ab/sample-25000/eval_tasks/*.jsonl' --baseline 9815732 --repeats 2

Texts: the decontaminate stage's input of a finished curate run (``stages/dedup/docs-*.parquet``,
the documents after dedup).  Index: ``build_task_ngrams`` of the task files, 13-grams (8-word
minimum), built by each side's own code.  Timed with ``time.process_time`` in this process,
sides alternating: the baseline's ``find_matches`` per document, this tree's
``find_matches_batch`` on batches of ``MATCH_BATCH`` documents (what ``MatchFn`` runs).  The
matches of both sides are compared (offsets, n-gram, task).
"""
from __future__ import annotations

import argparse
import glob
import statistics
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
from bench.common import REPO, load_module_at

ROOT = REPO


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True)
    p.add_argument("--tasks", required=True, help="glob of task files (the config's decontamination.tasks)")
    p.add_argument("--baseline", default="9815732")
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args(argv)

    import curation.decontamination as this
    from curation.eval_tasks import task_source
    from pipelines.storage.task_files import task_texts
    from pipelines.decontaminate import MATCH_BATCH

    base_index = load_module_at(args.baseline, "curation/ngram_index.py", "base_ngram_index")
    base = load_module_at(args.baseline, "curation/decontamination.py", "base_decontamination",
                         {"curation.ngram_index": base_index.__name__})
    texts = [t for f in sorted(glob.glob(str(Path(args.run, "stages", "dedup", "docs-*.parquet"))))
             for t in pq.read_table(f, columns=["text"]).column("text").to_pylist()]
    pairs = list(task_texts([task_source(t) for t in sorted(glob.glob(args.tasks))]))
    index = {"base": base.build_task_ngrams(pairs, 13, 8), "this": this.build_task_ngrams(pairs, 13, 8)}
    print(f"{len(texts):,} texts, {sum(map(len, texts)) / 1e6:.1f} M characters; "
          f"{len(index['this']):,} task n-grams", flush=True)

    def scan(side):
        if side == "base":
            return [base.find_matches(t, index["base"]) for t in texts]
        return [m for i in range(0, len(texts), MATCH_BATCH)
                for m in this.find_matches_batch(texts[i:i + MATCH_BATCH], index["this"])]

    cpu, found = {"base": [], "this": []}, {}
    for r in range(args.repeats):
        for side in (["base", "this"] if r % 2 == 0 else ["this", "base"]):
            t0 = time.process_time()
            out = scan(side)
            cpu[side].append(time.process_time() - t0)
            found[side] = [[(m.start_char, m.end_char, m.ngram, m.task) for m in ms] for ms in out]
            print(f"  {side}: {cpu[side][-1]:.2f} s CPU", flush=True)
    b, t = statistics.median(cpu["base"]), statistics.median(cpu["this"])
    same = found["base"] == found["this"]
    print(f"scan CPU (median): base {b:.2f} s ({1e3 * b / len(texts):.3f} ms/doc), this {t:.2f} s "
          f"({1e3 * t / len(texts):.3f} ms/doc), base / this {b / t:.2f}x; documents matched "
          f"{sum(map(bool, found['this']))}; same matches: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
