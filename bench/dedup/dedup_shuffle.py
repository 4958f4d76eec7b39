"""Bytes shuffled per document by the dedup stage, at the former demo settings and the defaults.

    .venv/bin/python -m bench.dedup.dedup_shuffle [--docs 5000]

Every GroupByKey applied while a side's pipeline is built (CoGroupByKey and Distinct group
through one) gets a measuring step in front of it that adds the FastPrimitivesCoder-encoded size
of each element entering it to a counter; combines are left alone (the runner lifts them: only
per-bundle partial results cross the shuffle).  Sides, each exact + fuzzy dedup on the same
documents, in-process FnApiRunner:

  new-same   the dedup stage curate ships (``bench.dedup.dedup.dedup_stage``: ``pipelines.build``'
             dedup ``Stage`` on read-stage parts) with the demo's former settings: 10 bands x
             10 rows, estimated-Jaccard verification
  new        the same stage with the defaults: derived 13 x 7, exact-Jaccard verification

The design before issue 16 (the ``old`` column of bench/RESULTS.md) is no longer in the tree: its
frozen copy was the third dedup implementation and went in issue 53 (``bench/legacy_dedup.py``
at commit 52f5aa7 runs it).

The new sides' shuffles include the stage's own steps around dedup: applying the decisions
in the parts (``JoinIds``, ``ByPart``: ids and decisions, never text), the dedup index
(``JoinDecisions``), and naming final survivors (``survivors``); the document parts are written
and read where they are, not shuffled.
Corpus: bench.dedup.dedup.corpus (~3 KB Zipf-word documents, 10% with a near duplicate) plus an
exact copy, under another source, of every 20th document.
"""
from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import re
import tempfile
import time
from collections import defaultdict

import apache_beam as beam
from apache_beam.coders.coders import FastPrimitivesCoder
from apache_beam.metrics.metric import MetricsFilter

from bench.dedup.dedup import corpus, dedup_stage  # noqa: E402
from curation.document import Document  # noqa: E402
from curation.fuzzy_config import FuzzyDedupConfig  # noqa: E402

NAMESPACE = "shuffle_bytes"


class _Meter(beam.DoFn):
    def __init__(self, name: str) -> None:
        self.name = name

    def setup(self) -> None:
        self.coder = FastPrimitivesCoder()
        self.bytes = beam.metrics.Metrics.counter(NAMESPACE, "bytes:" + self.name)
        self.elements = beam.metrics.Metrics.counter(NAMESPACE, "elements:" + self.name)

    def process(self, element):
        self.bytes.inc(len(self.coder.encode(element)))
        self.elements.inc()
        yield element


class measured_shuffles:
    """While active, every GroupByKey outside a combine gets a ``_Meter`` in front of it."""

    def __enter__(self):
        self.original = original = beam.Pipeline.apply

        def apply(pipeline, transform, pvalueish=None, label=None):
            # Beam re-enters apply() once the label is resolved (label None): meter that call.
            if isinstance(transform, beam.GroupByKey) and label is None:
                parent = pipeline._current_transform()
                if not isinstance(parent.transform, (beam.CombinePerKey, beam.CombineGlobally)):
                    name = f"{parent.full_label}/{transform.label}".lstrip("/")
                    pvalueish = original(pipeline, beam.ParDo(_Meter(name)), pvalueish,
                                         f"Meter{transform.label}")
            return original(pipeline, transform, pvalueish, label)

        beam.Pipeline.apply = apply
        return self

    def __exit__(self, *exc):
        beam.Pipeline.apply = self.original


def run_side(name: str, docs: list[Document], tmp: str) -> tuple[dict, set, float]:
    """({shuffle label: (elements, bytes)}, removed ids, seconds) of one side."""
    out = os.path.join(tmp, name)
    with measured_shuffles():
        p = beam.Pipeline(runner="FnApiRunner")
        pc = p | beam.Create(docs, reshuffle=False)
        cfg = FuzzyDedupConfig() if name == "new" else FuzzyDedupConfig(bands=10, rows=10, verify="estimated")
        stage = dedup_stage(pc, out, True, cfg)
    t0 = time.perf_counter()
    result = p.run()
    result.wait_until_finish()
    seconds = time.perf_counter() - t0
    shuffles: dict = defaultdict(lambda: [0, 0])
    for c in result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))["counters"]:
        kind, label = c.key.metric.name.split(":", 1)
        shuffles[label][0 if kind == "elements" else 1] += c.committed or c.attempted or 0
    removed_ids = {(r["id"], r["stage"])
                   for f in glob.glob(os.path.join(stage, "_w", "removed", "*", "*.jsonl.gz"))
                   for r in map(json.loads, gzip.open(f, "rt"))}
    return dict(shuffles), removed_ids, seconds


def summarise(shuffles: dict) -> dict:
    """Labels with round numbers folded (Round01..Round12 -> Round*): {label: [n, elements, bytes]}."""
    out: dict = defaultdict(lambda: [0, 0, 0])
    for label, (elements, size) in shuffles.items():
        row = out[re.sub(r"Round\d\d", "Round*", label)]
        row[0] += 1
        row[1] += elements
        row[2] += size
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=5000, help="base documents (plus 10%% near and 5%% exact copies)")
    args = ap.parse_args(argv)
    docs = corpus(args.docs)
    docs += [Document(f"x{i:07d}", "realnews", d.text) for i, d in enumerate(docs[: args.docs : 20])]
    n, text_bytes = len(docs), sum(len(d.text.encode()) for d in docs)
    print(f"{n} documents, mean text {text_bytes / n:.0f} bytes")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("new-same", "new"):
            results[name] = run_side(name, docs, tmp)
    for name, (shuffles, removed, seconds) in results.items():
        print(f"\n== {name}: {len(removed)} removed, {seconds:.1f} s")
        print(f"{'shuffle (GroupByKey input)':<62s} {'GBKs':>4s} {'elements':>10s} {'bytes/doc':>10s}")
        for label, (k, elements, size) in sorted(summarise(shuffles).items(), key=lambda kv: -kv[1][2]):
            print(f"{label[:62]:<62s} {k:4d} {elements:10d} {size / n:10.1f}")
    total = {name: sum(b for _, b in r[0].values()) / n for name, r in results.items()}
    print(f"\n{'side':<10s} {'bytes/doc':>10s}")
    for name in results:
        print(f"{name:<10s} {total[name]:10.0f}")


if __name__ == "__main__":
    main()
