"""Decontamination throughput, Beam stage vs the pure matcher, with a ~1M-n-gram task index.

Both sides do the same work on the same documents with the same index, in the same run:

- pure: ``find_matches`` against ``TaskNgramIndex`` (+ ``split_document`` for matched
  documents), a plain loop in this process = one core;
- Beam: ``pipelines.decontaminate.Decontaminate`` on the FnApiRunner in process (one worker, one
  core): documents read from a JSON Lines file -> the stage (index built by the worker from the
  task file through FileSystems, match, corpus-wide frequency guard, split, stats) -> counts;
- read: the same pipeline without the stage (what reading and counting cost on their own).

Cost is process CPU time (all threads), so other jobs on a shared machine do not inflate it;
wall times are printed too.  A warm-up pipeline pays Beam's imports first.  The Beam worker
builds the index once; its build is the same function the pure side times (``index build per
worker``), and the Beam figure is given including that build and in steady state (excluding it:
a worker builds once and then matches millions of documents), and for the stage alone (minus the
read-only pipeline).  Order alternates between repeats; medians are reported.

    nice -n 10 .venv/bin/python -m bench.decontamination.decontaminate [--ngrams 1000000] [--docs 4000] [--repeats 3]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import tempfile
import time

from curation.decontamination import DecontaminationConfig, build_task_ngrams, find_matches, split_document  # noqa: E402
from curation.document import Document  # noqa: E402

VOCAB = [f"w{i}" for i in range(20000)] + "the of and to a in is it that was for on with as".split() * 200


def text(rng: random.Random, words: int) -> str:
    sents = []
    while words > 0:
        k = rng.randint(8, 20)
        sents.append(" ".join(rng.choice(VOCAB) for _ in range(k)).capitalize() + ".")
        words -= k
    return " ".join(sents)


def clocks() -> tuple[float, float]:
    return time.process_time(), time.perf_counter()


def since(t: tuple[float, float]) -> tuple[float, float]:
    cpu, wall = clocks()
    return cpu - t[0], wall - t[1]


def pure(task_file: str, docs: list[str], rule: DecontaminationConfig) -> dict:
    from pipelines.storage.task_files import task_texts
    from curation.eval_tasks import task_source

    t = clocks()
    index = build_task_ngrams(task_texts([task_source(task_file)]), rule.ngram_words, rule.min_task_words)
    build_cpu, build_wall = since(t)
    t = clocks()
    split = removed = 0
    for d in docs:
        m = find_matches(d, index)
        if m:
            pieces, _ = split_document(d, m, rule.cut_chars, rule.min_piece_chars, rule.max_splits,
                                       rule.boundary_window_chars)
            split += bool(pieces)
            removed += not pieces
    cpu, wall = since(t)
    return {"ngrams": len(index), "index_mb": index.nbytes / 2**20, "build_cpu": build_cpu,
            "build_wall": build_wall, "cpu": cpu, "wall": wall, "split": split, "removed": removed}


def _document(line: str) -> Document:
    return Document(**json.loads(line))


def beam_stage(docs_file: str, task_file: str | None, rule: DecontaminationConfig) -> dict:
    """The documents read from a JSON Lines file, through the stage (or, with no task file, the
    reading alone: the baseline that shows what reading costs), counted."""
    import apache_beam as beam
    from apache_beam.metrics.metric import MetricsFilter

    from pipelines.decontaminate import Decontaminate

    p = beam.Pipeline(runner="FnApiRunner")
    docs = p | beam.io.ReadFromText(docs_file) | "Parse" >> beam.Map(_document)
    kept = (docs | Decontaminate([task_file], rule))["kept"] if task_file else docs
    _ = kept | "CountKept" >> beam.combiners.Count.Globally()
    t = clocks()
    result = p.run()
    result.wait_until_finish()
    cpu, wall = since(t)
    metrics = result.metrics().query(MetricsFilter())
    counters = {c.key.metric.name: c.committed for c in metrics["counters"]}
    builds = [d.committed for d in metrics["distributions"] if d.key.metric.name == "index_build_ms"]
    return {"cpu": cpu, "wall": wall, "builds": sum(b.count for b in builds),
            "build_wall": sum(b.sum for b in builds) / 1000,
            "split": counters.get("decontamination/books3/split", 0),
            "removed": sum(v for k, v in counters.items() if k.startswith("decontamination/books3/removed"))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ngrams", type=int, default=1_000_000, help="task n-grams in the index (about)")
    ap.add_argument("--docs", type=int, default=4000)
    ap.add_argument("--words", type=int, default=800, help="words per document")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    rng = random.Random(0)
    task_texts = [text(rng, 200) for _ in range(a.ngrams // 188 + 1)]  # 200 words -> ~188 13-grams
    docs = [text(rng, a.words) for _ in range(a.docs)]
    for i in range(0, a.docs, 20):  # 5% contaminated with one task passage
        cut = docs[i].find(". ", len(docs[i]) // 2)
        docs[i] = docs[i][:cut + 2] + task_texts[i % len(task_texts)] + " " + docs[i][cut + 2:]
    rule = DecontaminationConfig()
    runs: dict[str, list[dict]] = {"pure": [], "beam": [], "read": []}
    with tempfile.TemporaryDirectory() as tmp:
        task_file, docs_file = os.path.join(tmp, "lambada.jsonl"), os.path.join(tmp, "docs.jsonl")
        with open(task_file, "w") as f:
            f.writelines(json.dumps({"text": t}) + "\n" for t in task_texts)
        with open(docs_file, "w") as f:
            f.writelines(json.dumps({"id": f"books3/b.jsonl:{i}", "source": "books3", "text": d}) + "\n"
                         for i, d in enumerate(docs))
        beam_stage(docs_file, None, rule)  # warm-up: Beam's imports are paid once per process
        sides = {"pure": lambda: pure(task_file, docs, rule), "beam": lambda: beam_stage(docs_file, task_file, rule),
                 "read": lambda: beam_stage(docs_file, None, rule)}
        for r in range(a.repeats):
            for side in (("pure", "beam", "read") if r % 2 == 0 else ("read", "beam", "pure")):
                res = sides[side]()
                runs[side].append(res)
                print(f"repeat {r} {side}: " + ", ".join(
                    f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in res.items()), flush=True)
    p, b, rd = runs["pure"], runs["beam"], runs["read"]
    assert all((x["split"], x["removed"]) == (p[0]["split"], p[0]["removed"]) for x in p + b), "sides disagree"
    med = lambda rs, f: statistics.median(f(x) for x in rs)  # noqa: E731
    build = med(p, lambda x: x["build_cpu"])
    pure_rate = med(p, lambda x: a.docs / x["cpu"])
    beam_incl = med(b, lambda x: a.docs / x["cpu"])
    beam_steady = med(b, lambda x: a.docs / (x["cpu"] - build))
    read_cpu = med(rd, lambda x: x["cpu"])
    stage_only = a.docs / (med(b, lambda x: x["cpu"]) - read_cpu - build)
    print(f"\nindex: {p[0]['ngrams']:,} n-grams, {p[0]['index_mb']:.1f} MB; "
          f"index build per worker: {build:.2f} s CPU (median; {med(p, lambda x: x['build_wall']):.2f} s wall pure, "
          f"{med(b, lambda x: x['build_wall']):.2f} s wall in the Beam worker, {b[0]['builds']} build(s) per run)")
    print(f"documents: {a.docs} x {a.words} words, {p[0]['split']} split, {p[0]['removed']} removed (both sides)")
    print(f"pure matcher:                          {pure_rate:8.0f} docs/s/core")
    print(f"Beam read + stage, steady (no build):  {beam_steady:8.0f} docs/s/core  ratio {beam_steady / pure_rate:.2f}x")
    print(f"Beam read + stage, incl. one build:    {beam_incl:8.0f} docs/s/core  ratio {beam_incl / pure_rate:.2f}x "
          f"(one build per {a.docs} documents)")
    print(f"Beam stage alone (minus the read-only pipeline, {read_cpu:.2f} s CPU, and the build): "
          f"{stage_only:8.0f} docs/s/core  ratio {stage_only / pure_rate:.2f}x")
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10:.0f} MB")


if __name__ == "__main__":
    main()
