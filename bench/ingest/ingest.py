"""Ingest benchmark: read -> normalize -> language id -> heuristic filters.

Two measurements (results in bench/RESULTS.md, "Per-stage cost, one core" and "Scaling of the
ingest job"):

1. Per stage, in process, one core: the sample corpus scaled to ``--docs`` documents (default
   100,000) goes through the real readers, ``normalize_text``, fastText lid.176 and the
   Gopher/C4 heuristics, stage by stage; documents/s and MB/s per core for each stage (MB =
   input file bytes for ``read``, UTF-8 text bytes entering the stage otherwise).
2. Scaling of the Beam job: the same four stages as a Beam pipeline (``PlanWork`` + ``ReadWorkFn`` ->
   ``NormalizeFn`` -> ``LanguageFn`` -> ``HeuristicsFn``, FnApiRunner multi-processing) on corpora
   of 1x, 2x and 4x ``--scale-base`` documents; wall time and the ratio to 1x (linear = 1, 2, 4).

    python -m bench.ingest.ingest --workdir /tmp/bench_ingest [--docs 100000] \\
        [--scale-base 5000] [--workers 2] [--skip-stages] [--skip-scaling]
"""
from __future__ import annotations

import argparse
import glob
import json
import logging
import os
import time

from curation.document import Document  # noqa: E402

FAMILIES = {  # reader, glob, source
    "pile": ("pile", "pile/*.jsonl.zst", None),
    "cc_2020_50": ("warc", "common_crawl/CC-2020-50/*.warc.gz", "cc_2020_50"),
    "cc_2021_04": ("warc", "common_crawl/CC-2021-04/*.warc.gz", "cc_2021_04"),
    "realnews": ("realnews", "realnews/*.jsonl", "realnews"),
    "cc_stories": ("cc_stories", "cc_stories/*.txt", "cc_stories"),
}


def corpus(workdir: str, docs: int) -> str:
    """The sample corpus with ``docs`` documents, generated once per size."""
    from mtnlg.sample_data import write_sample_corpus

    root = os.path.join(workdir, f"sample-{docs}")
    if not os.path.exists(os.path.join(root, "ground_truth.json")):
        t0 = time.perf_counter()
        write_sample_corpus(root, docs)
        print(f"generated {docs} docs in {time.perf_counter() - t0:.1f}s -> {root}", flush=True)
    return root


def _read_all(root: str) -> tuple[dict[str, list], dict[str, tuple[float, int]]]:
    from curation import readers
    from curation.sources import PILE_SUBSET_TO_SOURCE

    out, timing = {}, {}
    for fam, (reader, pattern, source) in FAMILIES.items():
        t0, nbytes, recs = time.perf_counter(), 0, []
        for path in sorted(glob.glob(os.path.join(root, pattern))):
            nbytes += os.path.getsize(path)
            with open(path, "rb") as f:
                if reader == "pile":
                    recs += readers.read_pile(f, path, PILE_SUBSET_TO_SOURCE)
                elif reader == "warc":
                    recs += readers.read_warc(f, path, source)
                else:
                    recs += readers.reader_for(reader)(f, path, source)
        timing[fam] = (time.perf_counter() - t0, nbytes)
        out[fam] = recs
    return out, timing


def bench_stages(root: str) -> dict:
    from curation.heuristics import HeuristicsConfig, apply_heuristics
    from curation.language import LanguageConfig, keep_language, make_identifier
    from curation.normalize import normalize_text

    records, read_timing = _read_all(root)
    docs = [r for recs in records.values() for r in recs if isinstance(r, Document)]
    n_records = sum(len(v) for v in records.values())
    rows = []
    for fam, (secs, nbytes) in read_timing.items():
        n = len(records[fam])
        rows.append((f"read[{fam}]", n, nbytes, secs))
    rows.append(("read (all)", n_records, sum(b for _, b in read_timing.values()),
                 sum(s for s, _ in read_timing.values())))

    t0 = time.perf_counter()
    nbytes = sum(len(d.text.encode()) for d in docs)
    texts = [normalize_text(d.text) for d in docs]
    rows.append(("normalize", len(docs), nbytes, time.perf_counter() - t0))

    lang_cfg = LanguageConfig()
    ident = make_identifier(lang_cfg)
    ident.predict("warm up the model")  # loading the model is per process, not per document
    nbytes = sum(len(t.encode()) for t in texts)
    t0 = time.perf_counter()
    kept = [t for t in texts if keep_language(*ident.predict(t), lang_cfg).keep]
    rows.append(("language", len(texts), nbytes, time.perf_counter() - t0))

    heur = HeuristicsConfig()
    nbytes = sum(len(t.encode()) for t in kept)
    t0 = time.perf_counter()
    passed = sum(apply_heuristics(t, heur).keep for t in kept)
    rows.append(("heuristics", len(kept), nbytes, time.perf_counter() - t0))

    total = sum(r[3] for r in rows if not r[0].startswith("read["))
    print(f"\nper-stage, one core, {n_records} records ({len(docs)} documents parsed, "
          f"{passed} pass all filters)")
    print(f"{'stage':<22}{'docs':>9}{'MB':>9}{'sec':>9}{'docs/s':>10}{'MB/s':>8}{'share':>8}")
    for name, n, b, s in rows:
        share = "" if name.startswith("read[") else f"{s / total:7.1%}"
        print(f"{name:<22}{n:>9}{b / 1e6:>9.1f}{s:>9.2f}{n / s:>10.0f}{b / 1e6 / s:>8.2f}{share:>8}")
    print(f"{'end to end':<22}{n_records:>9}{rows[len(FAMILIES)][2] / 1e6:>9.1f}{total:>9.2f}"
          f"{n_records / total:>10.0f}{rows[len(FAMILIES)][2] / 1e6 / total:>8.2f}")
    return {"rows": rows, "total_seconds": total, "records": n_records}


def beam_ingest(root: str, workers: int) -> tuple[float, int]:
    """Wall seconds of read -> normalize -> language -> heuristics as a Beam job; records read."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from curation.language import LanguageConfig
    from pipelines.config.job import InputSpec
    from pipelines.filters.heuristics import HeuristicsFn
    from pipelines.filters.language import LanguageFn
    from pipelines.filters.normalize import NormalizeFn
    from pipelines.plumbing.outputs import DEAD_LETTER, REMOVED
    from pipelines.read.plan import PlanWork
    from pipelines.read.readers import OUTPUT_TAGS, ReadWorkFn

    from infra.compat.beam import safe_local_data_plane

    safe_local_data_plane()  # as the curate job: the local runner otherwise loses data at scale
    opts = PipelineOptions(["--runner=FnApiRunner", "--direct_running_mode=multi_processing",
                            f"--direct_num_workers={workers}"])
    out = os.path.join(root, "beam-count.txt")
    t0 = time.perf_counter()
    with beam.Pipeline(options=opts) as p:
        outs = []
        for i, (fam, (reader, pattern, source)) in enumerate(FAMILIES.items()):
            spec = InputSpec(reader=reader, paths=[os.path.join(root, pattern)], source=source)
            r = (p | f"Plan[{fam}]" >> PlanWork([spec])
                 | f"Read[{fam}]" >> beam.ParDo(ReadWorkFn([spec])).with_outputs(*OUTPUT_TAGS, main="docs"))
            outs += [r.docs | f"Docs[{fam}]" >> beam.Map(lambda _: 1),
                     r[REMOVED] | f"Rem[{fam}]" >> beam.Map(lambda _: 1),
                     r[DEAD_LETTER] | f"Dead[{fam}]" >> beam.Map(lambda _: 1)]
            docs = r.docs | f"Norm[{fam}]" >> beam.ParDo(NormalizeFn())
            lang = docs | f"Lang[{fam}]" >> beam.ParDo(LanguageFn(LanguageConfig())).with_outputs(
                REMOVED, main="kept")
            _ = lang.kept | f"Heur[{fam}]" >> beam.ParDo(HeuristicsFn({})).with_outputs(REMOVED, main="kept")
        _ = (outs | beam.Flatten() | beam.CombineGlobally(sum)
             | beam.io.WriteToText(out, num_shards=1, shard_name_template=""))
    wall = time.perf_counter() - t0
    with open(out) as f:
        read = int(f.read().strip() or 0)
    return wall, read


def bench_scaling(workdir: str, base: int, workers: int) -> list[tuple[int, int, float]]:
    results = []
    for k in (1, 2, 4):
        root = corpus(workdir, base * k)
        records = json.load(open(os.path.join(root, "ground_truth.json")))["totals"]["records"]
        wall, read = beam_ingest(root, workers)
        assert read == records, f"the Beam job read {read} records, the corpus holds {records}"
        results.append((k, records, wall))
        print(f"scaling {k}x: {records} records, {wall:.1f}s wall", flush=True)
    w1 = results[0][2]
    print(f"\nBeam FnApiRunner multi_processing, {workers} workers")
    print(f"{'scale':<7}{'records':>9}{'wall s':>9}{'ratio':>8}{'records/s':>11}")
    for k, n, w in results:
        print(f"{k}x{'':<5}{n:>9}{w:>9.1f}{w / w1:>8.2f}{n / w:>11.0f}")
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", default="/tmp/bench_ingest")
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--scale-base", type=int, default=5_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-stages", action="store_true")
    ap.add_argument("--skip-scaling", action="store_true")
    args = ap.parse_args(argv)
    logging.getLogger().setLevel(logging.ERROR)  # the SDK workers' INFO lines drown the tables
    os.makedirs(args.workdir, exist_ok=True)
    if not args.skip_stages:
        bench_stages(corpus(args.workdir, args.docs))
    if not args.skip_scaling:
        bench_scaling(args.workdir, args.scale_base, args.workers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
