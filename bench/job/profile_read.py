"""Where the read stage's CPU goes, per step, in one process (no Beam runner).

    .venv/bin/python -m bench.job.profile_read SAMPLE --config bench/configs/demo_as_2d2ed92.yaml
    .venv/bin/python -m bench.job.profile_read SAMPLE --limit 3000 --cprofile /tmp/read.prof

SAMPLE is a ``mtnlg sample-data`` folder.  The read stage's work items are planned as the job
plans them (``pipelines.read.plan.PlanFn``) and each is run through the same DoFn chain
``pipelines.build.build_read`` builds (reader, normalize, [PII], language, heuristics); what
leaves the chain goes through the stage's per-document output steps the job runs next (the
part row of a kept document, the stats row and aggregate keys of a removal).  Each step's own
CPU (``time.process_time``, excluding the steps it feeds) is summed; ``--cprofile`` also writes
a cProfile of the whole run.  ``--limit N`` stops after N records;
``--every K`` takes every K-th work item.
"""
from __future__ import annotations

import argparse
import cProfile
import functools
import sys
import time
from collections import Counter
from pathlib import Path
from bench.common import REPO


SPENT: Counter = Counter()


def _timed_gen(name, fn):
    """Wrap a generator function so its own CPU (not its consumers') goes to SPENT[name]."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        t = time.process_time()
        for out in fn(*args, **kwargs) or ():
            SPENT[name] += time.process_time() - t
            yield out
            t = time.process_time()
        SPENT[name] += time.process_time() - t

    return wrapper


def _timed_call(name, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        t = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            SPENT[name] += time.process_time() - t

    return wrapper


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sample", type=Path)
    p.add_argument("--config", default=str(REPO / "bench/configs/demo_as_2d2ed92.yaml"))
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--every", type=int, default=1, help="only every K-th work item (a spread subset)")
    p.add_argument("--cprofile", default=None)
    args = p.parse_args(argv)

    from apache_beam.io.filesystems import FileSystems  # noqa: F401 - imported before timing
    from apache_beam.pvalue import TaggedOutput

    from curation.document import Removal
    from pipelines.config.job import load_config
    from pipelines.config.inputs import match_files
    from pipelines.plumbing import parts, stats
    from pipelines.filters.chain import ChainFn
    from pipelines.filters.heuristics import HeuristicsFn
    from pipelines.filters.language import LanguageFn
    from pipelines.filters.normalize import NormalizeFn
    from pipelines.read.plan import PlanFn
    from pipelines.read.readers import ReadWorkFn

    cfg = load_config(args.config, input_root=str(args.sample))
    skip = cfg.skip_sources
    fns = [ReadWorkFn(cfg.inputs, cfg.input_root, None), NormalizeFn()]
    if cfg.pii.enabled:
        from pipelines.filters.pii import PiiFn

        fns.append(PiiFn(cfg.pii))
    fns += [LanguageFn(cfg.language, skip.get("language", ())),
            HeuristicsFn(cfg.heuristics, skip.get("heuristics", ()))]
    names = ["read", "normalize"] + (["pii"] if cfg.pii.enabled else []) + ["language", "heuristics"]
    for name, fn in zip(names, fns):
        fn.process = _timed_gen(name, fn.process)
    chain = ChainFn(fns)
    chain.setup()
    grid = stats.grid_spec_of(cfg)
    to_row = _timed_call("out: part row", parts.to_row)
    stats_row = _timed_call("out: stats row", stats.stats_row)
    keys = _timed_call("out: aggregate keys", lambda row: list(stats.aggregate_keys(row, grid)))

    items = []
    plan = PlanFn(cfg.inputs, 200)
    for group, spec in enumerate(cfg.inputs):
        for pattern in spec.paths:
            for m in match_files(pattern):
                items.extend(plan.process((group, m)))
    outcomes: Counter = Counter()
    prof = cProfile.Profile() if args.cprofile else None
    c0, w0 = time.process_time(), time.perf_counter()
    if prof:
        prof.enable()
    n = 0
    for item in items[::args.every]:
        for out in chain.process(item):
            if isinstance(out, TaggedOutput):
                if out.tag == "read":
                    continue
                outcomes[out.tag] += 1
                keys(stats_row(out.value))
            else:
                outcomes["kept"] += 1
                to_row(out)
            n += 1
        if args.limit and n >= args.limit:
            break
    if prof:
        prof.disable()
        prof.dump_stats(args.cprofile)
    cpu = time.process_time() - c0
    total = sum(SPENT.values())
    print(f"{n:,} records ({dict(outcomes)}), CPU {cpu:.2f} s ({1000 * cpu / n:.3f} ms/record), "
          f"wall {time.perf_counter() - w0:.2f} s")
    print(f"{'step':<22} {'CPU s':>8} {'ms/record':>10} {'share':>6}")
    for name, s in sorted(SPENT.items(), key=lambda kv: -kv[1]):
        print(f"{name:<22} {s:8.2f} {1000 * s / n:10.3f} {s / cpu:6.1%}")
    rest = cpu - total
    print(f"{'chain + loop':<22} {rest:8.2f} {1000 * rest / n:10.3f} {rest / cpu:6.1%}")
    _ = Removal
    return 0


if __name__ == "__main__":
    sys.exit(main())
