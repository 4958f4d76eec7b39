"""The read stage's CPU per real page, step by step, in one process (issue 52 item 2).

    .venv/bin/python -m bench.extraction.read_stage [--set /tmp/read_stage_set]
        [--files 8] [--chain] [--repeats 2] [--baseline TREE] [--cprofile OUT] [--json OUT]

The set is issue 52's: ``bench.job.vs_fineweb.build_set`` with 50,000 response records of the 990
real pages of ``../shared/data/extract_eval`` in 64 files (record i = page i mod 990, shuffled
with seed 0; built once, then reused).  ``--files K`` reads K of the 64 files, spread evenly.
Each file is read with ``curation.readers.read_warc`` as the read stage's DoFn calls it; with
``--chain`` every document it yields also goes through the steps the job runs next in the same
chain (normalize, language id with the shipped ``mtnlg`` language settings and the block cache
off, as ``bench.job.vs_fineweb`` runs it: each page repeats ~50 times in the set).

A little of the work runs first, untimed (imports on first use, the model's load).
Reported per step: own CPU (``time.process_time``; a step's time excludes the steps it calls
that are listed too) in ms per response record.  Steps: ``warc walk`` (``warc_entries``: gzip
members, WARC headers, record blocks), ``http body`` (content codings, the bounded read),
``decode`` (``decode_html``), ``markup guard``, ``parse`` and ``early language`` (where the
tree has them; before, the parse is part of ``extract``), ``extract`` (``extract_text``), ``reader other`` (the rest of ``read_warc``), and with
``--chain`` ``normalize`` and ``language``.

``--dofns`` measures the read stage's DoFns instead, chained as ``pipelines.stages.build_read``
chains them (the WARC range reader with its routing and counters, normalize, language id; the
shipped ``mtnlg`` config, block cache off), without a Beam runner: the read stage as the job
runs it, each DoFn's own CPU.

``--parsers`` times the WARC walk alone, the project's (``warc_entries``) against FastWARC's
``ArchiveIterator``, alternating (issue 52 lever 1).

``--baseline TREE`` runs the same measurement with TREE's ``curation`` (a checkout, e.g.
``git archive 52f5aa7 | tar -x -C /tmp/base``) in a subprocess, alternating with this tree
(A B B A for ``--repeats 2``), and prints min / median / max per side.  Only in-process CPU is
measured, so a loaded machine slows both sides alike; ratios are what carries over.
"""
from __future__ import annotations

import argparse
import functools
import glob
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
"""The checkout (this file is bench/extraction/read_stage.py); a ``--baseline`` tree is another."""
SPENT: Counter = Counter()
_STACK: list[str] = []


def _own(name, fn, generator=False):
    """``fn`` with its own CPU (minus that of wrapped callees) added to ``SPENT[name]``."""

    def enter():
        t = time.process_time()
        if _STACK:
            SPENT[_STACK[-1]] += t - _clock[0]
        _STACK.append(name)
        _clock[0] = t

    def leave():
        t = time.process_time()
        SPENT[_STACK.pop()] += t - _clock[0]
        _clock[0] = t

    if generator:
        @functools.wraps(fn)
        def gen(*args, **kwargs):
            it = fn(*args, **kwargs)
            while True:
                enter()
                try:
                    out = next(it)
                except StopIteration:
                    return
                finally:
                    leave()
                yield out
        return gen

    @functools.wraps(fn)
    def call(*args, **kwargs):
        enter()
        try:
            return fn(*args, **kwargs)
        finally:
            leave()
    return call


_clock = [0.0]


def instrument(chain: bool):
    """Wrap the reader's steps (by module attribute: the reader looks them up at call time)."""
    from curation.readers import warc

    warc.warc_entries = _own("warc walk", warc.warc_entries, generator=True)
    warc._read_bounded = _own("http body", warc._read_bounded)
    warc.decode_html = _own("decode", warc.decode_html)
    warc.markup_too_deep = _own("markup guard", warc.markup_too_deep)
    warc.extract_text = _own("extract", warc.extract_text)
    if hasattr(warc, "early_removal"):  # the early language decision, where the tree has it
        warc.early_removal = _own("early language", warc.early_removal)
        warc.parse_html = _own("parse", warc.parse_html)
    if not chain:
        return None
    from curation.language import LanguageConfig, keep_language, make_identifier
    from curation.normalize import normalize_text

    ident = make_identifier(LanguageConfig(cached_blocks=0))
    normalize = _own("normalize", normalize_text)
    identify = _own("language", lambda text: keep_language(*ident.predict(text), LanguageConfig()))
    return lambda doc: identify(normalize(doc.text))


def reader_kwargs():
    """The early language decision's settings for ``read_warc``, where the tree has one."""
    import inspect

    from curation.readers import warc

    params = inspect.signature(warc.read_warc).parameters
    if "language" not in params:
        return {}
    from curation.language import LanguageConfig

    return {"language": LanguageConfig(cached_blocks=0)}


def measure(files: list[str], chain: bool, cprofile: str | None) -> dict:
    from curation.document import DeadLetter, Document, Removal
    from curation.readers import warc

    after = instrument(chain)
    kwargs = reader_kwargs()
    _warm_up(lambda: _first(warc.read_warc(open(files[0], "rb"), files[0], "cc", "main_text", **kwargs), after))
    outcomes: Counter = Counter()
    prof = None
    if cprofile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    c0 = time.process_time()
    for path in files:
        with open(path, "rb") as f:
            for rec in _own("reader other", warc.read_warc, generator=True)(f, path, "cc", "main_text", **kwargs):
                if isinstance(rec, Document):
                    outcomes["documents"] += 1
                    if after is not None:
                        outcomes["kept by language" if after(rec).keep else "removed by language"] += 1
                elif isinstance(rec, Removal):
                    outcomes[f"removed {rec.stage}/{rec.reason}"] += 1
                elif isinstance(rec, DeadLetter):
                    outcomes["dead letters"] += 1
    cpu = time.process_time() - c0
    if prof:
        prof.disable()
        prof.dump_stats(cprofile)
    records = outcomes["documents"] + sum(v for k, v in outcomes.items() if k.startswith("removed read")
                                          or k.startswith("removed language")) + outcomes["dead letters"]
    return {"records": records, "cpu_s": cpu, "ms_per_record": 1000 * cpu / max(1, records),
            "steps_ms": {k: 1000 * v / max(1, records) for k, v in SPENT.most_common()},
            "outcomes": dict(outcomes)}


def _first(records, after, n: int = 50) -> None:
    for k, rec in enumerate(records):
        if after is not None and hasattr(rec, "text") and not hasattr(rec, "stage"):
            after(rec)
        if k >= n:
            break


def _warm_up(run) -> None:
    """Run a little of the work untimed and forget its CPU: imports made on first use (their
    compilation, where bytecode is not cached), the language model's load, first-use caches
    of the libraries are the same on both sides and not per page."""
    run()
    SPENT.clear()


def write_job_config(set_dir: str) -> str:
    """The shipped ``mtnlg`` config with the set as its input, decontamination and the block
    cache off (as ``bench.job.vs_fineweb`` runs it)."""
    import yaml

    with open(os.path.join(ROOT, "data_manifests", "sources", "mtnlg.yaml")) as f:
        cfg = yaml.safe_load(f)
    cfg.update(name="read_stage", input_root=os.path.join(set_dir, "input"),
               inputs=[{"reader": "warc", "source": "cc_2020_50", "extractor": "main_text",
                        "paths": ["cc/*.warc.gz"]}], decontamination={"enabled": False})
    cfg.setdefault("language", {})["cached_blocks"] = 0
    path = os.path.join(set_dir, "read_stage_config.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f, sort_keys=False)
    return path


def measure_dofns(files: list[str], set_dir: str) -> dict:
    """The read stage's DoFns as ``pipelines.stages.build_read`` chains them (reader with its
    routing and counters, normalize, language id), on the work items ``PlanFn`` makes of
    ``files``, without a runner: each DoFn's own CPU."""
    import inspect

    from apache_beam.pvalue import TaggedOutput

    from pipelines.config.job import load_config

    try:  # the layout since issue 53
        from pipelines.filters.chain import ChainFn
        from pipelines.filters.language import LanguageFn
        from pipelines.filters.normalize import NormalizeFn
        from pipelines.read.plan import PlanFn
        from pipelines.read.readers import ReadWorkFn

        def chain_filter(fn):
            return fn
    except ImportError:  # a --baseline tree from before it
        from pipelines.transforms.chain import ChainFn, chain_filter
        from pipelines.transforms.filters import LanguageFn, NormalizeFn
        from pipelines.transforms.work import PlanFn, ReadWorkFn

    cfg = load_config(write_job_config(set_dir))
    early = {"language": cfg.language} if "language" in inspect.signature(ReadWorkFn).parameters else {}
    fns = [ReadWorkFn(cfg.inputs, cfg.input_root, None, **early), NormalizeFn(),
           chain_filter(LanguageFn(cfg.language))]
    for name, fn in zip(("dofn read", "dofn normalize", "dofn language"), fns):
        fn.process = _own(name, fn.process, generator=True)
    chain = ChainFn(fns)
    chain.setup()
    from pipelines.config.inputs import match_files

    plan = PlanFn(cfg.inputs, 200)
    items = [it for path in files for m in match_files(path) for it in plan.process((0, m))]
    _warm_up(lambda: list(chain.process(items[0])))
    outcomes: Counter = Counter()
    c0 = time.process_time()
    for item in items:
        for out in chain.process(item):
            tag = out.tag if isinstance(out, TaggedOutput) else "kept"
            if tag != "read":
                outcomes[tag] += 1
    cpu = time.process_time() - c0
    records = sum(outcomes.values())
    return {"records": records, "cpu_s": cpu, "ms_per_record": 1000 * cpu / max(1, records),
            "steps_ms": {k: 1000 * v / max(1, records) for k, v in SPENT.most_common()},
            "outcomes": dict(outcomes)}


def measure_parsers(files: list[str], repeats: int) -> dict:
    """The WARC walk alone: ``warc_entries`` (warcio under the project's framing and damage
    checks, every block read) against FastWARC's ``ArchiveIterator`` (HTTP headers parsed, every
    record's content read), alternating, CPU ms per response record."""
    from fastwarc.warc import ArchiveIterator

    from curation.readers.warc_records import warc_entries

    def ours(path):
        with open(path, "rb") as f:
            return sum(e.record is not None and e.record.rec_type == "response" for e in warc_entries(f, path))

    def fastwarc(path):
        n = 0
        with open(path, "rb") as f:
            for r in ArchiveIterator(f, parse_http=True):
                r.reader.read()
                n += r.headers.get("WARC-Type") == "response"
        return n

    runs: dict[str, list[float]] = {"warcio (warc_entries)": [], "FastWARC": []}
    for i in range(2 * repeats):
        for name in (list(runs) if i % 2 == 0 else list(runs)[::-1]):
            fn = ours if name.startswith("warcio") else fastwarc
            c0 = time.process_time()
            responses = sum(fn(p) for p in files)
            runs[name].append(1000 * (time.process_time() - c0) / responses)
    return {name: {"min": min(v), "median": statistics.median(v), "max": max(v)} for name, v in runs.items()}


def ensure_set(dest: str) -> list[str]:
    files = sorted(glob.glob(os.path.join(dest, "input", "cc", "*.warc.gz")))
    if len(files) == 64:
        return files
    from bench.extraction.pages import DEFAULT_EVAL, load_pages
    from bench.job.vs_fineweb import build_set

    build_set(load_pages(DEFAULT_EVAL), 50_000, dest, files=64)
    return sorted(glob.glob(os.path.join(dest, "input", "cc", "*.warc.gz")))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", default="/tmp/read_stage_set")
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--chain", action="store_true")
    ap.add_argument("--dofns", action="store_true", help="the read stage's DoFns, chained as the job chains them")
    ap.add_argument("--parsers", action="store_true", help="the WARC walk alone: warcio against FastWARC")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--baseline", default=None)
    ap.add_argument("--cprofile", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a single in-process run
    args = ap.parse_args(argv)
    files = ensure_set(args.set)
    files = files[::max(1, len(files) // args.files)][:args.files]
    if args.parsers:
        for name, v in measure_parsers(files, args.repeats).items():
            print(f"{name}: CPU ms per response record min {v['min']:.3f} median {v['median']:.3f} max {v['max']:.3f}")
        return 0
    if args.one or not args.baseline:
        out = measure_dofns(files, args.set) if args.dofns else measure(files, args.chain, args.cprofile)
        text = json.dumps(out)
        if args.json:
            with open(args.json, "w") as f:
                f.write(text)
        if args.one:
            print(text)
        else:
            report({"this tree": [out]})
        return 0
    runs: dict[str, list] = {"baseline": [], "this tree": []}
    order = []
    for _ in range(args.repeats):
        order += ["baseline", "this tree"] if len(order) % 4 == 0 else ["this tree", "baseline"]
    for side in order:
        tree = args.baseline if side == "baseline" else ROOT
        cmd = [sys.executable, os.path.abspath(__file__), "--set", args.set, "--files", str(args.files), "--one"]
        cmd += ["--chain"] if args.chain else []
        cmd += ["--dofns"] if args.dofns else []
        env = dict(os.environ, PYTHONPATH=tree)
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        runs[side].append(json.loads(res.stdout.strip().splitlines()[-1]))
        print(f"{side}: {runs[side][-1]['ms_per_record']:.3f} ms/record", file=sys.stderr)
    report(runs)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f)
    return 0


def report(runs: dict) -> None:
    for side, outs in runs.items():
        per = [o["ms_per_record"] for o in outs]
        print(f"{side}: {outs[0]['records']:,} records; CPU ms/record min {min(per):.3f} median "
              f"{statistics.median(per):.3f} max {max(per):.3f}; outcomes {outs[0]['outcomes']}")
        steps = {k: statistics.median([o["steps_ms"].get(k, 0.0) for o in outs]) for k in outs[0]["steps_ms"]}
        for k, v in sorted(steps.items(), key=lambda kv: -kv[1]):
            print(f"    {k:<16} {v:7.3f} ms/record")
    if len(runs) == 2 and all(runs.values()):
        a, b = (statistics.median(o["ms_per_record"] for o in outs) for outs in runs.values())
        print(f"baseline / this tree (medians): {a / b:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
