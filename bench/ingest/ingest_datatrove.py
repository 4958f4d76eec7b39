"""Ingest against datatrove, side by side: the same files, the same steps, 2 workers each.

One command (creates datatrove's venv if missing, generates the corpus once, alternates the
sides, prints per-run figures, medians and ratios):

    .venv/bin/python -m bench.ingest.ingest_datatrove --docs 50000 --repeats 3 \\
        [--workdir /tmp/bench_ingest_dt] [--dt-venv /tmp/dtvenv] [--workers 2]

Steps on both sides: read (Pile .jsonl.zst, RealNews .jsonl, Common Crawl .warc.gz) -> HTML
extraction with jusText (WARC) -> ftfy -> fastText lid.176 from the same file
(``data_manifests/models/lid.176.ftz``, English >= 0.65) -> Gopher quality + repetition rules ->
write the kept documents.  Ours is the curate job's own transforms (``PlanWork`` and
``ReadWorkFn``, ``NormalizeFn``, ``LanguageFn``, ``HeuristicsFn``) as one Beam job on the default local runner
(FnApiRunner multi_processing) writing Parquet; datatrove's is ``bench/peers/ingest_datatrove_side.py``
in its own venv (datatrove is never installed in ours).  Every filter applies to every source
on both sides (no ``skip_sources``).

Same input: ``mtnlg sample-data --docs N`` with the fault-injected records taken out (a bad
JSON line, an invalid UTF-8 line, a truncated .zst, truncated WARC records: datatrove's stock
readers drop the rest of a file after an invalid UTF-8 line and die on a truncated .warc.gz)
and without CC-Stories (.txt, which datatrove has no reader for), rewritten as files of at most
250 JSONL records or 50 WARC pages: datatrove parallelises by file, so the generator's few big
files would leave one of its workers idle at the end (ours splits inside files either way).

Measured per run: wall seconds, and CPU seconds of the run's whole process tree (a cpuacct
cgroup when writable, as root; otherwise RUSAGE_CHILDREN).  docs = records in the input files.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import zlib
from bench.common import REPO, children_cpu
from bench.peers.environment import LID, ensure_datatrove

ROOT = str(REPO)
FAMILIES = [("pile", "pile/*.jsonl.zst", None), ("realnews", "realnews/*.jsonl", "realnews"),
            ("warc", "common_crawl/CC-2020-50/*.warc.gz", "cc_2020_50"),
            ("warc", "common_crawl/CC-2021-04/*.warc.gz", "cc_2021_04")]


# --- the same clean input for both sides ---------------------------------------------------------

def _complete_warc_members(data: bytes) -> tuple[list[tuple[bytes, bytes]], int]:
    """The gzip members of a .warc.gz that decompress fully and hold their whole record, as
    (member bytes, WARC header block), and how many are responses (pages: the documents)."""
    out, pos, records = [], 0, 0
    while pos < len(data):
        d = zlib.decompressobj(31)
        try:
            body = d.decompress(data[pos:])
        except zlib.error:
            break
        if not d.eof:
            break
        end = len(data) - len(d.unused_data)
        head, sep, payload = body.partition(b"\r\n\r\n")
        length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), None)
        if not sep or length is None or len(payload) < length:
            break
        out.append((data[pos:end], head))
        records += b"WARC-Type: response" in head
        pos = end
    return out, records


def _write_chunks(dst: str, stem: str, ext: str, items: list[bytes], per_file: int, pack) -> None:
    os.makedirs(dst, exist_ok=True)
    for k in range(0, max(len(items), 1), per_file):
        with open(os.path.join(dst, f"{stem}-{k // per_file:04d}{ext}"), "wb") as f:
            f.write(pack(items[k:k + per_file]))


def prepare_input(src: str, dst: str, per_file: int = 250) -> int:
    """Copy ``src`` to ``dst`` without its fault-injected records, in files of at most
    ``per_file`` documents (datatrove parallelises by file: a few big files would leave one of
    its workers idle at the end; ours splits within files); the number of documents kept."""
    import zstandard

    if os.path.exists(os.path.join(dst, "records.json")):
        return json.load(open(os.path.join(dst, "records.json")))["records"]
    shutil.rmtree(dst, ignore_errors=True)
    records = 0
    for path in sorted(glob.glob(f"{src}/pile/*.jsonl.zst")):
        try:
            raw = zstandard.ZstdDecompressor().stream_reader(open(path, "rb")).read()
        except zstandard.ZstdError:
            continue  # the truncated file
        lines = []
        for line in raw.split(b"\n"):
            try:
                json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                continue
            lines.append(line)
        records += len(lines)
        _write_chunks(f"{dst}/pile", os.path.basename(path).split(".")[0], ".jsonl.zst", lines, per_file,
                      lambda chunk: zstandard.ZstdCompressor().compress(b"\n".join(chunk) + b"\n"))
    for path in sorted(glob.glob(f"{src}/realnews/*.jsonl")):
        lines = []
        for line in open(path, "rb").read().splitlines():
            try:
                json.loads(line.decode("utf-8"))
                lines.append(line)
            except (UnicodeDecodeError, ValueError):
                continue
        records += len(lines)
        _write_chunks(f"{dst}/realnews", os.path.basename(path).split(".")[0], ".jsonl", lines, per_file,
                      lambda chunk: b"\n".join(chunk) + b"\n")
    for path in sorted(glob.glob(f"{src}/common_crawl/*/*.warc.gz")):
        rel = os.path.relpath(path, src)
        members, n = _complete_warc_members(open(path, "rb").read())
        records += n
        info = [m for m, head in members if b"WARC-Type: warcinfo" in head]
        pages: list[bytes] = []  # a request member and its response travel together
        for m, head in members:
            if b"WARC-Type: warcinfo" in head:
                continue
            if b"WARC-Type: request" in head or not pages:
                pages.append(m)
            else:
                pages[-1] += m
        _write_chunks(os.path.dirname(f"{dst}/{rel}"), os.path.basename(path).split(".")[0], ".warc.gz",
                      pages, max(1, per_file // 5), lambda chunk: b"".join(info[:1] + chunk))  # pages cost ~5x
    json.dump({"records": records}, open(os.path.join(dst, "records.json"), "w"))
    return records


# --- our side: the curate job's transforms, restricted to the same steps --------------------------

def run_ours(input_root: str, out: str, workers: int) -> dict:
    import apache_beam as beam
    from apache_beam.metrics import Metrics
    from apache_beam.metrics.metric import MetricsFilter
    from apache_beam.options.pipeline_options import PipelineOptions

    from curation.language import LanguageConfig
    from pipelines.config.job import InputSpec
    from pipelines.filters.heuristics import HeuristicsFn
    from pipelines.filters.language import LanguageFn
    from pipelines.filters.normalize import NormalizeFn
    from pipelines.plumbing.outputs import DEAD_LETTER, REMOVED
    from pipelines.read.plan import PlanWork
    from pipelines.read.readers import OUTPUT_TAGS, ReadWorkFn
    from pipelines.plumbing.sinks import DOCUMENT_SCHEMA, document_row

    read_counter, kept_counter = Metrics.counter("bench", "read"), Metrics.counter("bench", "kept")

    def counted(counter):
        def inc(x):
            counter.inc()
            return x
        return inc

    opts = PipelineOptions(["--runner=FnApiRunner", "--direct_running_mode=multi_processing",
                            f"--direct_num_workers={workers}"])
    p = beam.Pipeline(options=opts)
    kept = []
    for i, (reader, pattern, source) in enumerate(FAMILIES):
        spec = InputSpec(reader=reader, paths=[os.path.join(input_root, pattern)], source=source)
        r = (p | f"Plan{i}" >> PlanWork([spec])
             | f"Read{i}" >> beam.ParDo(ReadWorkFn([spec])).with_outputs(*OUTPUT_TAGS, main="docs"))
        for tag in ("docs", REMOVED, DEAD_LETTER):
            _ = r[tag] | f"CountRead{i}{tag}" >> beam.Map(counted(read_counter))
        docs = r.docs | f"Normalize{i}" >> beam.ParDo(NormalizeFn())
        lang = docs | f"Language{i}" >> beam.ParDo(LanguageFn(LanguageConfig())).with_outputs(REMOVED, main="kept")
        kept.append((lang.kept | f"Heuristics{i}" >> beam.ParDo(HeuristicsFn({})).with_outputs(
            REMOVED, main="kept")).kept)
    _ = (kept | beam.Flatten() | "Kept" >> beam.Map(counted(kept_counter))
         | beam.Map(document_row)
         | beam.io.WriteToParquet(os.path.join(out, "documents", "part"), DOCUMENT_SCHEMA,
                                  file_name_suffix=".parquet"))
    result = p.run()
    result.wait_until_finish()
    counts: dict[str, int] = {}  # one entry per step that increments the counter: sum them
    for c in result.metrics().query(MetricsFilter().with_namespace("bench"))["counters"]:
        counts[c.key.metric.name] = counts.get(c.key.metric.name, 0) + (c.committed or 0)
    return {"side": "ours", "read": counts.get("read", 0), "kept": counts.get("kept", 0)}


# --- the harness ---------------------------------------------------------------------------------

class Meter:
    """CPU seconds of a subprocess tree: a cpuacct cgroup if we may create one, else rusage."""

    BASE = "/sys/fs/cgroup/cpuacct"

    def __init__(self, name: str) -> None:
        self.path = os.path.join(self.BASE, name)
        try:
            os.makedirs(self.path, exist_ok=True)
            open(os.path.join(self.path, "cgroup.procs")).close()
        except OSError:
            self.path = None

    def preexec(self):
        if self.path:
            with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

    def run(self, cmd: list[str], log: str) -> tuple[float, float, str]:
        before = children_cpu()
        usage0 = self._usage()
        t0 = time.perf_counter()
        with open(log, "w") as f:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=f, text=True, preexec_fn=self.preexec)
        wall = time.perf_counter() - t0
        if proc.returncode:
            raise SystemExit(f"{cmd[1]} failed ({proc.returncode}); see {log}")
        cpu = (self._usage() - usage0) / 1e9 if self.path else children_cpu() - before
        return wall, cpu, proc.stdout

    def _usage(self) -> int:
        if not self.path:
            return 0
        with open(os.path.join(self.path, "cpuacct.usage")) as f:
            return int(f.read())

    def close(self) -> None:
        """Remove the cgroup once its last process (e.g. a forkserver) has exited."""
        for _ in range(50) if self.path else ():
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=50_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--workdir", default="/tmp/bench_ingest_dt")
    ap.add_argument("--dt-venv", default="/tmp/dtvenv")
    ap.add_argument("--dt-extractor", choices=["justext", "trafilatura"], default="justext",
                    help="datatrove's HTML extractor: justext (the same as ours, default) or its stock "
                         "trafilatura (as in the issue's first measurement)")
    ap.add_argument("--side", choices=["ours"], help=argparse.SUPPRESS)  # one run of our side
    ap.add_argument("input", nargs="?", help=argparse.SUPPRESS)
    ap.add_argument("out", nargs="?", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.side == "ours":
        import logging

        logging.getLogger().setLevel(logging.ERROR)
        print(json.dumps(run_ours(args.input, args.out, args.workers)))
        return 0

    dt_python = ensure_datatrove(args.dt_venv)
    os.makedirs(args.workdir, exist_ok=True)
    sample = os.path.join(args.workdir, f"sample-{args.docs}")
    if not os.path.exists(os.path.join(sample, "ground_truth.json")):
        from mtnlg.sample_data import write_sample_corpus

        write_sample_corpus(sample, args.docs)
    clean = os.path.join(args.workdir, f"input-{args.docs}")
    records = prepare_input(sample, clean)
    print(f"input: {records} records ({clean}); {args.workers} workers per side; "
          f"{args.repeats} runs per side, alternating", flush=True)
    cmds = {
        "ours": lambda out: [sys.executable, "-m", "bench.ingest.ingest_datatrove", "--side", "ours", clean, out,
                             "--workers", str(args.workers)],
        "datatrove": lambda out: [dt_python, os.path.join(ROOT, "bench", "peers", "ingest_datatrove_side.py"), clean,
                                  out, "--lid", LID, "--workers", str(args.workers),
                                  "--extractor", args.dt_extractor],
    }
    runs: dict[str, list[dict]] = {"ours": [], "datatrove": []}
    for r in range(args.repeats):
        for side in (["ours", "datatrove"] if r % 2 == 0 else ["datatrove", "ours"]):
            out = os.path.join(args.workdir, f"out-{side}")
            shutil.rmtree(out, ignore_errors=True)
            meter = Meter(f"bench-ingest-{side}-{os.getpid()}")
            try:
                wall, cpu, stdout = meter.run(cmds[side](out), os.path.join(args.workdir, f"{side}-{r}.log"))
            finally:
                meter.close()
            counts = json.loads(stdout.strip().splitlines()[-1])
            row = {"run": r, "wall": wall, "cpu": cpu, "read": counts["read"], "kept": counts["kept"],
                   "load1": os.getloadavg()[0]}
            runs[side].append(row)
            print(f"run {r} {side:<10} wall {wall:7.1f}s  cpu {cpu:7.1f}s  docs/s {records / wall:6.1f}  "
                  f"cpu ms/doc {1000 * cpu / records:6.2f}  read {counts['read']} kept {counts['kept']}  "
                  f"load1 {row['load1']:.1f}", flush=True)
    med = {s: (statistics.median(x["wall"] for x in v), statistics.median(x["cpu"] for x in v))
           for s, v in runs.items()}
    print(f"\nmedians over {args.repeats} runs, {records} input records, {args.workers} workers")
    print(f"{'side':<11}{'wall s':>8}{'docs/s':>9}{'CPU s':>9}{'CPU ms/doc':>12}{'docs/CPU-s':>12}")
    for s, (w, c) in med.items():
        print(f"{s:<11}{w:>8.1f}{records / w:>9.1f}{c:>9.1f}{1000 * c / records:>12.2f}{records / c:>12.1f}")
    (w_o, c_o), (w_d, c_d) = med["ours"], med["datatrove"]
    print(f"ours / datatrove: {w_d / w_o:.2f}x docs/s on wall clock, {c_d / c_o:.2f}x docs per CPU second")
    json.dump(runs, open(os.path.join(args.workdir, "runs.json"), "w"), indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
