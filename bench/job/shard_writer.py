"""The shard writer alone (tokenize stage minus tokenization), this tree against a baseline
commit, at growing corpus sizes: CPU per document of writing the runs and of writing the shards.

    .venv/bin/python -m bench.job.shard_writer --run /tmp/helperB-ab/run-25000 \
        --copies 1 4 --baseline 9815732 --repeats 2

Input: the kept documents of a finished ``mtnlg curate`` run, with their tokens read back from
its shards (``documents/<s>/part-K.parquet`` + ``shards/<s>/<s>_K.bin``): exactly what the
tokenize stage handed the shard writer.  ``--copies C`` makes a corpus C times larger (copy
``c > 0`` of a document gets id ``<id>~c``: another hash, so another shard).  The documents
are dealt to ``--workers`` simulated workers in a fixed shuffled order, each one bundle (as the
local runner gives a stage's worker), and each side runs in this process:

    runs:   ``WriteRunsFn`` per worker (start_bundle, process every document, finish_bundle)
    shards: ``plan_shards`` on all run descriptors, then ``WriteShardFn`` on every task

timed with ``time.process_time`` (this process's CPU), sides alternating, ``--repeats`` times.
Both sides' outputs are compared: every shard's row (documents, tokens, sha256 of .bin and
.idx) and the bytes of every ``documents/`` part.  Reported: CPU ms per document per phase,
medians, base / this, and for each side how its per-document CPU moves from the smallest to the
largest size (flat = 1.0).
"""
from __future__ import annotations

import argparse
import dataclasses
import glob
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np
import pyarrow.parquet as pq
from bench.common import REPO, load_module_at

ROOT = REPO
from blending.indexed_dataset import IndexedDataset  # noqa: E402
from curation.document import Document  # noqa: E402


def kept_documents(run: str) -> list[tuple[Document, np.ndarray]]:
    """Every kept document of ``run`` with its tokens (EOD included), in a fixed order."""
    out = []
    for part in sorted(glob.glob(os.path.join(run, "documents", "*", "part-*.parquet"))):
        source = os.path.basename(os.path.dirname(part))
        k = int(os.path.basename(part)[len("part-"):-len(".parquet")])
        shard = IndexedDataset(os.path.join(run, "shards", source, f"{source}_{k:05d}"))
        for i, row in enumerate(pq.read_table(part).to_pylist()):
            tokens = np.array(shard[i])
            assert tokens.size == row["tokens"], (part, i)
            doc = Document(row["id"], row["source"], row["text"], url=row["url"],
                           meta=json.loads(row["meta"]), lang=row["lang"], lang_score=row["lang_score"],
                           quality_score=row["quality_score"], tokens=row["tokens"])
            out.append((doc, tokens))
    return out


def corpus(docs, copies: int, workers: int, seed: int = 0):
    """``copies`` copies of ``docs`` dealt to ``workers`` streams in a fixed shuffled order."""
    order = np.random.default_rng(seed).permutation(len(docs) * copies)
    streams = [[] for _ in range(workers)]
    for j, x in enumerate(order):
        c, i = divmod(int(x), len(docs))
        streams[j % workers].append((c, i))
    return streams


def run_side(mod, docs, streams, out: str, dtype: str, max_tokens: int, run_bytes: int) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    t0 = time.process_time()
    descriptors = []
    for stream in streams:
        fn = mod.WriteRunsFn(out, dtype, run_bytes)
        fn.start_bundle()
        for c, i in stream:
            doc, tokens = docs[i]
            if c:
                doc = dataclasses.replace(doc, id=f"{doc.id}~{c}")
            descriptors.extend(fn.process((doc, tokens)) or ())
        descriptors.extend(w.value for w in fn.finish_bundle() or ())
    t1 = time.process_time()
    rows = []
    for task in mod.plan_shards(descriptors, max_tokens):
        rows.extend(mod.WriteShardFn(out, dtype).process(task) or ())
    t2 = time.process_time()
    parts = {os.path.relpath(f, out): hashlib.sha256(open(f, "rb").read()).hexdigest()
             for f in glob.glob(os.path.join(out, "documents", "*", "*.parquet"))}
    return {"runs_s": t1 - t0, "shards_s": t2 - t1, "runs": len(descriptors),
            "shard_rows": sorted(rows, key=lambda r: r["prefix"]), "parts": parts}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True, help="a finished curate run (its documents/ and shards/)")
    p.add_argument("--copies", type=int, nargs="+", default=[1, 4])
    p.add_argument("--baseline", default="9815732", help="commit whose shards.py is the baseline")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--run-mb", type=int, default=64, help="the runs' buffer (RUN_BYTES), MB")
    p.add_argument("--max-tokens", type=int, default=1_000_000, help="max_tokens_per_shard")
    p.add_argument("--dtype", default="uint16")
    p.add_argument("--workdir", default="/tmp/bench-shards")
    args = p.parse_args(argv)

    from pipelines.tokenize import shards as this

    try:
        base = load_module_at(args.baseline, "pipelines/tokenize/shards.py", "base_shards")
    except subprocess.CalledProcessError:  # a commit before issue 53: the module's old path
        base = load_module_at(args.baseline, "pipelines/transforms/shards.py", "base_shards")
    docs = kept_documents(args.run)
    print(f"{len(docs):,} kept documents, {sum(t.size for _, t in docs):,} tokens from {args.run}", flush=True)
    sides = {"base": base, "this": this}
    results: dict[tuple[int, str], list[dict]] = {}
    ok = True
    for copies in args.copies:
        streams = corpus(docs, copies, args.workers)
        n = sum(len(s) for s in streams)
        for r in range(args.repeats):
            got = {}
            for side in (list(sides) if r % 2 == 0 else list(sides)[::-1]):
                res = run_side(sides[side], docs, streams, os.path.join(args.workdir, side), args.dtype,
                               args.max_tokens, args.run_mb << 20)
                res["docs"] = n
                results.setdefault((copies, side), []).append(res)
                got[side] = res
                print(f"  x{copies} ({n:,} docs) {side}: runs {1000 * res['runs_s'] / n:.3f} ms/doc, "
                      f"shards {1000 * res['shards_s'] / n:.3f} ms/doc ({res['runs']} runs, "
                      f"{len(res['shard_rows'])} shards)", flush=True)
            same = (got["base"]["shard_rows"] == got["this"]["shard_rows"],
                    got["base"]["parts"] == got["this"]["parts"])
            ok &= all(same)
            print(f"  same shard rows (sha256 of .bin/.idx): {same[0]}; same documents/ part bytes: {same[1]}")
    print("\n| docs | runs per worker | side | runs CPU ms/doc (median) | shards CPU ms/doc (median) |"
          " shards: base / this |")
    print("|---|---|---|---:|---:|---:|")
    med = {}
    for copies in args.copies:
        for side in sides:
            rs = results[(copies, side)]
            n = rs[0]["docs"]
            med[copies, side] = (statistics.median(1000 * r["runs_s"] / n for r in rs),
                                 statistics.median(1000 * r["shards_s"] / n for r in rs))
        for side in sides:
            ratio = med[copies, "base"][1] / med[copies, "this"][1]
            print(f"| {results[(copies, side)][0]['docs']:,} | {results[(copies, side)][0]['runs'] / args.workers:.1f} "
                  f"| {side} | {med[copies, side][0]:.3f} | {med[copies, side][1]:.3f} | "
                  f"{ratio:.2f}x |")
    lo, hi = min(args.copies), max(args.copies)
    for side in sides:
        print(f"{side}: shards CPU per document x{hi} / x{lo}: "
              f"{med[hi, side][1] / med[lo, side][1]:.2f}; runs: {med[hi, side][0] / med[lo, side][0]:.2f}")
    print(f"same outputs on every size and repeat: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
