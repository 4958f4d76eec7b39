"""The fuzzy dedup stage (Beam) vs an in-memory datasketch baseline, and vs datatrove.

    .venv/bin/python -m bench.dedup.dedup [--base 5000] [--scales 1 2 4 8] [--workers 2]

Synthetic ~3 KB documents (Zipf words); 10% of them get a near-duplicate (1-3% of words
replaced: word-5-gram Jaccard about 0.75-0.95).  The baseline comparison: both sides use word
5-grams, 128 permutations, threshold 0.8, datasketch's (bands, rows) for it, and verify
candidates by estimated Jaccard >= threshold.  The baseline is one process (MinHash with our
shingle hash, insert + query, union-find); ours is the dedup stage curate ships
(``pipelines.build``' dedup ``Stage`` on read-stage parts of the documents: records, fuzzy dedup,
decisions applied in the parts, removed documents, group rows, index, stats) on the
FnApiRunner with ``--workers`` processes, end to end, the parts written first included.  Prints
wall times, the time ratio, and whether both found the same clusters.

Symmetric comparison with datatrove's four-step MinHash dedup (datatrove in its own venv):

    python3.11 -m venv /tmp/dtvenv && /tmp/dtvenv/bin/pip install datatrove orjson regex tokenizers nltk spacy 'xxhash<4'
    .venv/bin/python -m bench.dedup.dedup --base 20000 --dump /tmp/dd
    .venv/bin/python -m bench.dedup.dedup --vs-datatrove /tmp/dd \
        --datatrove-python /tmp/dtvenv/bin/python --threshold 0.7 --repeats 3

Both sides read the same two JSONL files (``/tmp/dd/in/part0{0,1}.jsonl``: one per worker,
datatrove shards by file) and run with 2 workers.  Datatrove writes the kept documents as JSONL
and the removed ids; ours writes what the dedup stage writes (kept documents as Parquet parts,
removed documents with their text, group rows, the dedup index and stats), after writing the
input as read-stage parts.  Runs alternate (ours first, then datatrove
first, ...); each is a subprocess timed for wall clock and CPU (user + sys of its whole process
tree, sampled from /proc every 0.2 s); medians and ratios are printed with recall on the planted pairs and removals outside
them.  Ours: fuzzy dedup only (datatrove has no exact stage), default settings at
``--threshold`` (derived bands/rows, exact-Jaccard verification).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time

import sys

import apache_beam as beam
import datasketch

from bench.common import REPO, tree_cpu
from bench.dedup.minhash import make_docs
from curation.document import Document
from curation.fuzzy_config import FuzzyDedupConfig
from curation.minhash import shingles, word_shingle_hash
from pipelines.driver.beam_options import pipeline_options

SOURCE = {"d": "pile_cc", "n": "openwebtext2"}  # the corpus' id prefixes

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


def dedup_stage(docs_pc, work_dir: str, exact: bool, fuzzy: FuzzyDedupConfig) -> str:
    """Apply the dedup stage curate ships to a PCollection of documents: they are written as
    read-stage parts (``work_dir/read``), then deduplicated into ``work_dir/dedup``, the stage's
    folder laid out as in a RUN's staging (kept parts under ``_w/stages/dedup``, removed documents
    under ``_w/removed/<stage>``, group rows under ``dedup/``).  Returns that folder."""
    from pipelines.config.job import CurateConfig, DecontaminationStage, DedupConfig, InputSpec
    from pipelines.build import Stage, StageEnv
    from pipelines.plumbing.parts import WriteParts, part_urls

    out = os.path.join(work_dir, "dedup")
    cfg = CurateConfig(inputs=[InputSpec("realnews", ["parts, not read"], "realnews")],  # (stage input: parts)
                       dedup=DedupConfig(exact=exact, fuzzy=fuzzy),
                       decontamination=DecontaminationStage(enabled=False))
    urls = part_urls(docs_pc | "WriteReadParts" >> WriteParts(os.path.join(work_dir, "read"), "read"))
    _ = urls | Stage("dedup", StageEnv(cfg, out, vocab_size=50257))
    return out


def stage_kept_and_removed(stage_dir: str) -> tuple[int, set[str]]:
    """(kept documents, removed ids) of a ``dedup_stage`` folder."""
    import gzip

    import pyarrow.parquet as pq

    kept = sum(pq.read_metadata(f).num_rows
               for f in glob.glob(os.path.join(stage_dir, "_w", "stages", "dedup", "*.parquet")))
    removed = {json.loads(line)["id"] for f in glob.glob(os.path.join(stage_dir, "_w", "removed", "*", "*.jsonl.gz"))
               for line in gzip.open(f, "rt")}
    return kept, removed


def ours(docs: list[Document], workers: int) -> set[frozenset]:
    import pyarrow.parquet as pq

    lsh = datasketch.MinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM)
    cfg = FuzzyDedupConfig(num_perm=NUM_PERM, threshold=THRESHOLD, bands=lsh.b, rows=lsh.r,
                           verify="estimated")  # the baseline's semantics
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "docs.jsonl"), "w") as f:
            for d in docs:
                f.write(json.dumps({"id": d.id, "source": d.source, "text": d.text}) + "\n")
        opts = pipeline_options([f"--direct_num_workers={workers}"])
        with beam.Pipeline(options=opts) as p:
            docs_pc = (p | beam.io.ReadFromText(os.path.join(tmp, "docs.jsonl"))
                       | beam.Map(lambda line: Document(**json.loads(line))))
            stage = dedup_stage(docs_pc, tmp, False, cfg)
        groups: dict[str, set] = {}
        for path in glob.glob(os.path.join(stage, "dedup", "groups-*.parquet")):
            for row in pq.read_table(path, columns=["group", "id"]).to_pylist():
                groups.setdefault(row["group"], set()).add(row["id"])
    return {frozenset(g) for g in groups.values()}


def planted_scores(clusters: set[frozenset], docs: list[Document]) -> str:
    """Planted pairs (n<i> near-duplicate of d<i>) found in one cluster / planted, and the
    documents that would be removed outside planted pairs (false positives)."""
    planted = {d.id[1:] for d in docs if d.id.startswith("n")}
    found = sum(1 for c in clusters for i in planted if f"d{i}" in c and f"n{i}" in c)
    removed = sum(len(c) - 1 for c in clusters)
    return f"{found}/{len(planted)} fp={removed - found}"


def dump(root: str, n: int, files: int = 2) -> None:
    """The corpus of ``n`` base documents as ``files`` JSONL files (id, text) in ROOT/in."""
    os.makedirs(os.path.join(root, "in"), exist_ok=True)
    outs = [open(os.path.join(root, "in", f"part{i:02d}.jsonl"), "w") for i in range(files)]
    for i, d in enumerate(corpus(n)):
        outs[i % files].write(json.dumps({"id": d.id, "text": d.text}) + "\n")
    for f in outs:
        f.close()


def run_ours(root: str, workers: int, threshold: float) -> None:
    """ROOT/in/*.jsonl -> the dedup stage's outputs in ROOT/ours (``dedup_stage``)."""
    cfg = FuzzyDedupConfig(threshold=threshold)
    opts = pipeline_options([f"--direct_num_workers={workers}"])
    with beam.Pipeline(options=opts) as p:
        docs = (p | beam.io.ReadFromText(os.path.join(root, "in", "*.jsonl"))
                | beam.Map(json.loads)
                | beam.Map(lambda r: Document(r["id"], SOURCE[r["id"][0]], r["text"])))
        dedup_stage(docs, os.path.join(root, "ours"), False, cfg)


def _timed_run(cmd: list[str], log: str) -> tuple[float, float]:
    """(wall s, CPU s of the process tree sampled every 0.2 s) of one subprocess run."""
    seen: dict[int, float] = {}
    t0 = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        while proc.poll() is None:
            for pid, seconds in tree_cpu(proc.pid).items():
                seen[pid] = max(seen.get(pid, 0.0), seconds)
            time.sleep(0.2)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return wall, sum(seen.values())


def _outputs(root: str, side: str) -> tuple[int, set[str]]:
    """(kept documents, removed ids) a side wrote."""
    if side == "ours":
        return stage_kept_and_removed(os.path.join(root, "ours", "dedup"))
    kept = sum(1 for path in glob.glob(os.path.join(root, side, "kept", "*")) for _ in open(path))
    removed: set[str] = set()
    for path in glob.glob(os.path.join(root, side, "removed", "*")):
        for line in open(path):
            removed.add(json.loads(line)["id"] if line.startswith("{") else line.strip())
    return kept, removed


def vs_datatrove(root: str, dt_python: str, repeats: int, workers: int, threshold: float) -> None:
    cmds = {"ours": [sys.executable, "-m", "bench.dedup.dedup", "--run-ours", root,
                     "--workers", str(workers), "--threshold", str(threshold)],
            "datatrove": [dt_python, str(REPO / "bench" / "peers" / "dedup_datatrove_side.py"), root,
                          "--workers", str(workers)]}
    ids = [json.loads(line)["id"] for path in sorted(glob.glob(os.path.join(root, "in", "*.jsonl")))
           for line in open(path)]
    times: dict[str, list] = {"ours": [], "datatrove": []}
    for rep in range(repeats):
        for side in (("ours", "datatrove") if rep % 2 == 0 else ("datatrove", "ours")):
            shutil.rmtree(os.path.join(root, side), ignore_errors=True)
            times[side].append(_timed_run(cmds[side], os.path.join(root, f"{side}-run{rep + 1}.log")))
            print(f"run {rep + 1} {side:<9s} wall {times[side][-1][0]:7.1f} s  cpu {times[side][-1][1]:7.1f} s",
                  flush=True)
    planted = {i[1:] for i in ids if i.startswith("n")}
    print(f"\n{len(ids)} documents, {len(planted)} planted near-duplicate pairs, {workers} workers, "
          f"{repeats} runs each (medians)")
    print(f"{'side':<10s} {'wall s':>8s} {'cpu s':>8s} {'docs/s':>8s} {'kept':>7s} {'removed':>8s} "
          f"{'planted found':>14s} {'removed outside':>16s} {'accounted':>9s}")
    med = {}
    for side in ("ours", "datatrove"):
        wall = statistics.median(t[0] for t in times[side])
        cpu = statistics.median(t[1] for t in times[side])
        med[side] = (wall, cpu)
        kept, removed = _outputs(root, side)
        found = sum(1 for i in planted if f"d{i}" in removed or f"n{i}" in removed)
        print(f"{side:<10s} {wall:8.1f} {cpu:8.1f} {len(ids) / wall:8.0f} {kept:7d} {len(removed):8d} "
              f"{found:7d}/{len(planted):<6d} {len(removed) - found:16d} {str(kept + len(removed) == len(ids)):>9s}")
    print(f"\nours vs datatrove: {med['datatrove'][0] / med['ours'][0]:.2f}x on wall clock, "
          f"{med['datatrove'][1] / med['ours'][1]:.2f}x on CPU per document")


def main(argv=None) -> None:
    global THRESHOLD
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=int, default=5000)
    ap.add_argument("--scales", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threshold", type=float, default=THRESHOLD)
    ap.add_argument("--skip-baseline-above", type=int, default=10**9)
    ap.add_argument("--dump", metavar="ROOT", help="only write the --base corpus to ROOT/in/part0{0,1}.jsonl")
    ap.add_argument("--run-ours", metavar="ROOT", help="one run of ours on ROOT/in (what --vs-datatrove times)")
    ap.add_argument("--vs-datatrove", metavar="ROOT", help="alternate runs of ours and datatrove on ROOT/in")
    ap.add_argument("--datatrove-python", default="/tmp/dtvenv/bin/python")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    THRESHOLD = args.threshold
    if args.dump:
        return dump(args.dump, args.base)
    if args.run_ours:
        return run_ours(args.run_ours, args.workers, args.threshold)
    if args.vs_datatrove:
        return vs_datatrove(args.vs_datatrove, args.datatrove_python, args.repeats, args.workers, args.threshold)
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
