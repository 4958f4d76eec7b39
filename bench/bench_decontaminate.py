"""Decontamination stage throughput: documents/s per core with an index of >= 1M task n-grams.

Measures the per-document work of the Beam stage (``find_matches`` against the side-input index,
then ``split_document`` for matched documents) in one process = one core, against a baseline on
the same documents: reading the words only (``words_with_offsets``), the floor any n-gram
matcher pays.  Prints the ratio, plus the full Beam stage (FnApiRunner, in memory, 1 worker) on
a smaller set to show pipeline overhead.

    .venv/bin/python bench/bench_decontaminate.py [--ngrams 1000000] [--docs 2000]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from curation.decontamination import (  # noqa: E402
    DecontaminationConfig, build_task_ngrams, find_matches, split_document, words_with_offsets)
from curation.document import Document  # noqa: E402

VOCAB = [f"w{i}" for i in range(20000)] + "the of and to a in is it that was for on with as".split() * 200


def text(rng: random.Random, words: int) -> str:
    sents = []
    while words > 0:
        k = rng.randint(8, 20)
        sents.append(" ".join(rng.choice(VOCAB) for _ in range(k)).capitalize() + ".")
        words -= k
    return " ".join(sents)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ngrams", type=int, default=1_000_000)
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--words", type=int, default=800, help="words per document")
    ap.add_argument("--beam-docs", type=int, default=500)
    a = ap.parse_args()
    rng = random.Random(0)
    task_texts = [("task", text(rng, 200)) for _ in range(a.ngrams // 188 + 1)]  # 200 words -> 188 13-grams
    t0 = time.perf_counter()
    index = build_task_ngrams(task_texts)
    print(f"index: {len(index):,} n-grams, built in {time.perf_counter() - t0:.1f}s")
    docs = [text(rng, a.words) for _ in range(a.docs)]
    for i in range(0, a.docs, 20):  # 5% contaminated with one task passage
        cut = docs[i].find(". ", len(docs[i]) // 2)
        docs[i] = docs[i][:cut + 2] + task_texts[i % len(task_texts)][1] + " " + docs[i][cut + 2:]

    t0 = time.perf_counter()
    for d in docs:
        words_with_offsets(d)
    base = time.perf_counter() - t0
    t0 = time.perf_counter()
    split = 0
    for d in docs:
        m = find_matches(d, index)
        if m:
            split += split_document(d, m)[0] is not None
    stage = time.perf_counter() - t0
    print(f"baseline (word split only): {a.docs / base:,.0f} docs/s/core")
    print(f"decontaminate (match + split): {a.docs / stage:,.0f} docs/s/core  "
          f"({a.words} words/doc, {split} split) ratio to baseline {stage / base:.2f}x")

    import apache_beam as beam
    from pipelines.decontaminate import Decontaminate

    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "task.jsonl"), "w") as f:
            f.writelines(json.dumps({"text": t}) + "\n" for _, t in task_texts)
        sub = [Document(f"b/{i}", "books3", d) for i, d in enumerate(docs[:a.beam_docs])]
        t0 = time.perf_counter()
        with beam.Pipeline(runner="FnApiRunner") as p:
            _ = p | beam.Create(sub) | Decontaminate([os.path.join(tmp, "task.jsonl")], DecontaminationConfig())
        wall = time.perf_counter() - t0
    print(f"Beam stage, FnApiRunner 1 worker, {len(sub)} docs incl. building the {len(index):,}-n-gram "
          f"index in-pipeline: {wall:.1f}s wall")


if __name__ == "__main__":
    main()
