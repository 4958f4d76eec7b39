"""A Common Crawl-size WARC segment through the read stage: worker memory, the spread of its
records over workers, the bytes fetched per byte of the file, and the throughput over a
throttling HTTPS server against local disk.

    .venv/bin/python -m bench.job.segment_1gb [--records 36000] [--small-records 700]
        [--workers 2] [--repeats 2] [--slow-down 0.1] [--workdir /tmp/bench_segment] [--json OUT]

Files: ONE multi-member WARC (one gzip member per record, as Common Crawl writes them) of
``--records`` response records made from the 990 real pages of ``../shared/data/extract_eval``
(record i = page i mod 990 under the host ``c<k>.<host>`` for copy k, shuffled; the builder of
``bench.job.vs_fineweb``), ~1 GB compressed; and one of ``--small-records`` (~20 MB).

Each run is the read stage as ``mtnlg curate`` runs it (``PlanWork`` -> ``ReadWorkFn`` of
``pipelines.read``, ranges of the shipped size, the shipped language settings' early decision
off: no model needed), on the default local runner with ``--workers`` worker processes, in a
child process metered by ``bench/tree_meter.py`` (wall, CPU of the whole tree, each process's
peak RSS).  Sources of the file: local disk, or ``https://`` from ``tests/http_server.py``'s
server on 127.0.0.1 (TLS with a CA made here), with no faults for the byte count and with
``--slow-down`` of its requests answered 503 for the throughput.  Measured:

- worker peak RSS (the largest VmHWM of the SDK worker processes), 1 GB against ~20 MB;
- records per worker process (each record tagged with the pid that read it);
- bytes the server sent per byte of the file, for planning alone (a plan-only run) and for the
  whole stage (planning + reading);
- wall of the whole stage, local against https with 503s, alternating (A B B A), min / median /
  max and the ratio of medians.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter

from bench.common import REPO, test_helpers

ROOT = str(REPO)


def build(records: int, workdir: str) -> dict:
    from bench.extraction.pages import DEFAULT_EVAL, load_pages
    from bench.job.vs_fineweb import build_set

    dest = os.path.join(workdir, f"segment-{records}")
    facts = build_set(load_pages(DEFAULT_EVAL), records, dest, files=1)
    path = os.path.join(dest, "input", "cc", "CC-MAIN-bench-00000.warc.gz")
    return {"dir": os.path.join(dest, "input"), "rel": "cc/CC-MAIN-bench-00000.warc.gz", "path": path,
            "records": facts["records"], "bytes": os.path.getsize(path)}


# --- the child: one read stage -------------------------------------------------------------------

def child(root: str, rel: str, out: str, workers: int, plan_only: bool, ca: str | None) -> None:
    import apache_beam as beam

    from pipelines.config.job import config_from_dict
    from pipelines.driver.beam_options import pipeline_options
    from pipelines.read.plan import WARC_RECORDS_PER_RANGE, PlanWork
    from pipelines.read.readers import ReadWorkFn

    data = {"input_root": root, "inputs": [{"reader": "warc", "source": "cc_2020_50", "paths": [rel]}],
            "decontamination": {"enabled": False}}
    if ca:
        data["http"] = {"ca_bundle": ca}
    cfg = config_from_dict(data)
    p = beam.Pipeline(options=pipeline_options([f"--direct_num_workers={workers}"]))
    work = p | PlanWork(cfg.inputs, records_per_range=WARC_RECORDS_PER_RANGE)
    if plan_only:
        _ = work | beam.Map(lambda _: ("ranges", 1)) | beam.CombinePerKey(sum) | beam.Map(json.dumps) \
            | beam.io.WriteToText(out)
    else:
        res = work | beam.ParDo(ReadWorkFn(cfg.inputs, cfg.input_root)).with_outputs(main="docs")
        for name in ("docs", "removed", "dead_letter"):
            _ = (res[name] | f"P{name}" >> beam.Map(lambda _, n=name: (f"{n} {os.getpid()}", 1))
                 | f"S{name}" >> beam.CombinePerKey(sum) | f"J{name}" >> beam.Map(json.dumps)
                 | f"W{name}" >> beam.io.WriteToText(f"{out}-{name}"))
    p.run().wait_until_finish()


# --- the parent ---------------------------------------------------------------------------------

def run(seg: dict, work: str, tag: str, workers: int, server=None, plan_only: bool = False) -> dict:
    from bench.job.vs_fineweb import metered

    root = server.url if server else seg["dir"]
    out = os.path.join(work, tag, "out")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    sent0 = server.stats.bytes_sent if server else 0
    cmd = [sys.executable, "-m", "bench.job.segment_1gb", "--child", root, seg["rel"], out, str(workers),
           "1" if plan_only else "0", str(server.ca_path) if server and server.ca_path else ""]
    m = metered(cmd, work, tag, env=dict(os.environ, PYTHONPATH=ROOT))
    counts: Counter = Counter()
    per_worker: Counter = Counter()
    for f in os.listdir(os.path.dirname(out)):
        for line in open(os.path.join(os.path.dirname(out), f)):
            key, n = json.loads(line)
            kind = key.split()[0]
            counts[kind] += n
            if kind != "ranges":
                per_worker[key.split()[1]] += n
    workers_peak = [p["peak_gb"] for p in m["processes"] if "sdk_worker" in p["name"] or "worker" in p["name"]]
    return {"tag": tag, "wall": m["wall"], "cpu": m["cpu"], "counts": dict(counts),
            "records_per_worker": sorted(per_worker.values(), reverse=True),
            "worker_peak_mb": max(workers_peak, default=0) * 1e3,
            "largest_peak_mb": max(p["peak_gb"] for p in m["processes"]) * 1e3,
            "processes": [(p["name"], round(p["peak_gb"] * 1e3)) for p in m["processes"][:6]],
            "bytes_sent": (server.stats.bytes_sent - sent0) if server else None}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        root, rel, out, workers, plan_only, ca = argv[1:7]
        child(root, rel, out, int(workers), plan_only == "1", ca or None)
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=36000)
    ap.add_argument("--small-records", type=int, default=700)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--slow-down", type=float, default=0.1)
    ap.add_argument("--workdir", default="/tmp/bench_segment")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    test_helpers()
    import http_server as hs  # the tests' Range-honouring, fault-injecting file server
    t0 = time.time()
    big, small = build(args.records, args.workdir), build(args.small_records, args.workdir)
    print(f"files: {big['records']} records {big['bytes'] / 1e6:,.1f} MB; {small['records']} records "
          f"{small['bytes'] / 1e6:,.1f} MB (built in {time.time() - t0:.0f} s)", flush=True)
    work = os.path.join(args.workdir, "runs")
    certs = os.path.join(args.workdir, "certs")
    os.makedirs(certs, exist_ok=True)
    out = {"machine": os.uname().nodename, "date": time.strftime("%Y-%m-%d"), "big": big, "small": small,
           "runs": []}

    def show(r):
        print(f"{r['tag']:<22} wall {r['wall']:7.1f} s  CPU {r['cpu']:7.1f} s  worker peak "
              f"{r['worker_peak_mb']:6.0f} MB  records/worker {r['records_per_worker']}"
              + (f"  sent/byte {r['bytes_sent'] / r['size']:.3f}" if r.get("bytes_sent") is not None else ""),
              flush=True)
        out["runs"].append(r)

    for seg, name in ((small, "small"), (big, "big")):  # memory and spread, local disk
        r = run(seg, work, f"{name}-local", args.workers)
        r["size"] = seg["bytes"]
        show(r)
    from pathlib import Path
    with hs.FileServer(Path(big["dir"]), hs.Faults(), tls=True, certs=Path(certs)) as srv:
        for plan_only, tag in ((True, "big-https-plan"), (False, "big-https")):
            r = run(big, work, tag, args.workers, srv, plan_only)
            r["size"] = big["bytes"]
            show(r)
    with hs.FileServer(Path(big["dir"]), hs.Faults(slow_down=args.slow_down, seed=54), tls=True,
                       certs=Path(certs)) as srv:
        order = [("local", None), ("https-503", srv)]
        walls = {"local": [], "https-503": []}
        for i in range(args.repeats):
            for side, server in (order if i % 2 == 0 else order[::-1]):  # A B B A
                r = run(big, work, f"big-{side}-{i}", args.workers, server)
                r["size"] = big["bytes"]
                show(r)
                walls[side].append(r["wall"])
        answered = dict(srv.stats.answered)
    for side, w in walls.items():
        print(f"{side:<10} wall min {min(w):.1f}  median {statistics.median(w):.1f}  max {max(w):.1f} s")
    ratio = statistics.median(walls["https-503"]) / statistics.median(walls["local"])
    print(f"https with {args.slow_down:.0%} 503 / local disk, medians: {ratio:.3f}x; server answers {answered}")
    out.update(walls=walls, ratio=ratio, answered={str(k): v for k, v in answered.items()})
    if args.json:
        json.dump(out, open(args.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
