"""The fuzzy dedup stage (Beam) vs an in-memory datasketch MinHashLSH + union-find baseline.

    .venv/bin/python bench/bench_dedup.py [--base 5000] [--scales 1 2 4 8] [--workers 2]

Synthetic ~3 KB documents (Zipf words); 10% of them get a near-duplicate (1-3% of words
replaced: word-5-gram Jaccard about 0.75-0.95).  Both sides use word 5-grams, 128
permutations, threshold 0.8, datasketch's (bands, rows) for it, and verify candidates by
estimated Jaccard >= threshold.  The baseline is one process (MinHash with our shingle hash,
insert + query, union-find); ours is ``pipelines.fuzzy.FuzzyDedup`` on the FnApiRunner with
``--workers`` processes, end to end (pipeline start, signatures, LSH, components, removal
join).  Prints wall times, the time ratio, and whether both found the same clusters.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import random
import tempfile
import time

import apache_beam as beam
import datasketch

import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_minhash import make_docs  # noqa: E402
from curation.document import Document
from curation.minhash import shingles, word_shingle_hash
from pipelines.config import FuzzyDedupConfig
from pipelines.curate import pipeline_options
from pipelines.fuzzy import FuzzyDedup

THRESHOLD, NUM_PERM = 0.8, 128


def corpus(n: int, seed: int = 0) -> list[Document]:
    rng = random.Random(seed)
    texts = make_docs(n, 500, seed)
    docs = [Document(id=f"d{i:07d}", source="pile_cc", text=t) for i, t in enumerate(texts)]
    for i in range(0, n, 10):  # every 10th document gets a near-duplicate
        words = texts[i].split()
        for j in rng.sample(range(len(words)), rng.randint(5, 15)):
            words[j] = f"edit{rng.randint(0, 10**6)}"
        docs.append(Document(id=f"n{i:07d}", source="openwebtext2", text=" ".join(words)))
    return docs


def baseline(docs: list[Document]) -> set[frozenset]:
    lsh = datasketch.MinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM)
    sigs = {}
    for d in docs:  # our shingle hash as hashfunc: bitwise the signatures the pipeline computes
        m = datasketch.MinHash(num_perm=NUM_PERM, hashfunc=word_shingle_hash)
        m.update_batch(list(shingles(d.text)))
        sigs[d.id] = m
        lsh.insert(d.id, m)
    parent = {d.id: d.id for d in docs}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for d in docs:
        for other in lsh.query(sigs[d.id]):
            if other != d.id and sigs[d.id].jaccard(sigs[other]) >= THRESHOLD:
                a, b = find(d.id), find(other)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    groups: dict[str, set] = {}
    for d in docs:
        groups.setdefault(find(d.id), set()).add(d.id)
    return {frozenset(g) for g in groups.values() if len(g) > 1}


def ours(docs: list[Document], workers: int) -> set[frozenset]:
    lsh = datasketch.MinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM)
    cfg = FuzzyDedupConfig(num_perm=NUM_PERM, threshold=THRESHOLD, bands=lsh.b, rows=lsh.r)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "docs.jsonl"), "w") as f:
            for d in docs:
                f.write(json.dumps({"id": d.id, "source": d.source, "text": d.text}) + "\n")
        opts = pipeline_options([f"--direct_num_workers={workers}"])
        with beam.Pipeline(options=opts) as p:
            docs_pc = (p | beam.io.ReadFromText(os.path.join(tmp, "docs.jsonl"))
                       | beam.Map(lambda line: Document(**json.loads(line))))
            out = docs_pc | FuzzyDedup(cfg)
            _ = (out["groups"] | beam.Map(lambda r: json.dumps([r["group"], r["id"]]))
                 | beam.io.WriteToText(os.path.join(tmp, "groups")))
        groups: dict[str, set] = {}
        for path in glob.glob(os.path.join(tmp, "groups*")):
            for line in open(path):
                g, i = json.loads(line)
                groups.setdefault(g, set()).add(i)
    return {frozenset(g) for g in groups.values()}


def planted_scores(clusters: set[frozenset], docs: list[Document]) -> str:
    """Planted pairs (n<i> near-duplicate of d<i>) found in one cluster / planted, and the
    documents that would be removed outside planted pairs (false positives)."""
    planted = {d.id[1:] for d in docs if d.id.startswith("n")}
    found = sum(1 for c in clusters for i in planted if f"d{i}" in c and f"n{i}" in c)
    removed = sum(len(c) - 1 for c in clusters)
    return f"{found}/{len(planted)} fp={removed - found}"


def main(argv=None) -> None:
    global THRESHOLD
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=int, default=5000)
    ap.add_argument("--scales", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threshold", type=float, default=THRESHOLD)
    ap.add_argument("--skip-baseline-above", type=int, default=10**9)
    ap.add_argument("--dump", help="only write the --base corpus as JSONL here (for bench_dedup_datatrove.py)")
    args = ap.parse_args(argv)
    THRESHOLD = args.threshold
    if args.dump:
        os.makedirs(os.path.dirname(os.path.abspath(args.dump)), exist_ok=True)
        with open(args.dump, "w") as f:
            for d in corpus(args.base):
                f.write(json.dumps({"id": d.id, "text": d.text}) + "\n")
        return
    print(f"{'docs':>7s} {'baseline s':>10s} {'ours s':>8s} {'ratio':>6s} {'ours/doc ms':>11s} "
          f"{'clusters b/o':>13s} {'same':>5s}  planted found (ours)")
    for k in args.scales:
        docs = corpus(args.base * k)
        t0 = time.perf_counter()
        mine = ours(docs, args.workers)
        t_ours = time.perf_counter() - t0
        if len(docs) <= args.skip_baseline_above:
            t0 = time.perf_counter()
            ref = baseline(docs)
            t_ref = time.perf_counter() - t0
            same = ref == mine
            print(f"{len(docs):7d} {t_ref:10.1f} {t_ours:8.1f} {t_ref / t_ours:6.2f} "
                  f"{1000 * t_ours / len(docs):11.3f} {len(ref):6d}/{len(mine):<6d} {str(same):>5s}  {planted_scores(mine, docs)}", flush=True)
        else:
            print(f"{len(docs):7d} {'-':>10s} {t_ours:8.1f} {'-':>6s} {1000 * t_ours / len(docs):11.3f} "
                  f"{'-':>6s}/{len(mine):<6d} {'-':>5s}  {planted_scores(mine, docs)}", flush=True)


if __name__ == "__main__":
    main()
