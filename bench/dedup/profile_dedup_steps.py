"""Profile the dedup stage's partition steps in one process, on a finished run's read parts.

    .venv/bin/python -m bench.dedup.profile_dedup_steps RUN [--top 12]
    .venv/bin/python -m bench.dedup.profile_dedup_steps RUN   # another tree

Computes every part's features and entry files (``PartFeaturesFn``, as the stage does, with the
stage's number of partitions), then runs the exact and the bucket step of every partition under
cProfile and prints CPU seconds per step and the top functions.  It runs the steps of whichever
tree is first on the path: ``ExactStepFn`` / ``BandStepFn`` (file-backed, this tree) or the
``ExactPartitionFn`` / ``BandPartitionFn`` of trees before them, so two trees can be compared on
the same parts.  Use it to see how a step's cost grows with the corpus (e.g. runs of 100k and
400k documents): that is how the per-run ``take`` from a many-chunk table was found.
"""
from __future__ import annotations

import argparse
import cProfile
import glob
import io
import os
import pstats
import sys
import tempfile
import time
from collections import defaultdict

import numpy as np


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", help="a finished curate RUN (its stages/read/*.parquet are the input)")
    p.add_argument("--top", type=int, default=12)
    args = p.parse_args(argv)
    from pipelines.dedup import stage as dp
    from pipelines.dedup import tables
    from curation.fuzzy_config import FuzzyDedupConfig
    import json

    cfg = json.load(open(os.path.join(args.run, "run.json")))["config"]
    fuzzy = FuzzyDedupConfig(**cfg["dedup"]["fuzzy"])
    parts = sorted(glob.glob(os.path.join(args.run, "stages", "read", "*.parquet")))
    partitions = tables.partitions_for(len(parts) * 2000)
    out = tempfile.mkdtemp(prefix="profile-dedup-")
    t0 = time.process_time()
    feats = dp.PartFeaturesFn(out, True, fuzzy, cfg.get("priority"))
    feats.setup()
    descriptors = [d for url in parts for d in feats.process(url, partitions) if isinstance(d, dict)]
    print(f"{len(parts)} parts, {partitions} partitions: features {time.process_time() - t0:.1f} CPU s",
          flush=True)
    new = _has_steps()
    seconds: dict[str, float] = defaultdict(float)
    prof = cProfile.Profile()
    if new:
        from pipelines.dedup.steps import BandStepFn, ExactStepFn

        exact_fn, band_fn = ExactStepFn(out, False), BandStepFn(out, fuzzy.max_bucket, fuzzy.bucket_shards,
                                                                 fuzzy.verify)
        exact = [_run(prof, seconds, "exact", exact_fn.process(i, partitions, descriptors))
                 for i in range(partitions)]
        spills = [x for outs in exact for x in outs if isinstance(x, dict) and "removed" in x]
        for i in range(partitions):
            _run(prof, seconds, "bands", band_fn.process(i, partitions, descriptors, spills))
    else:
        exact_fn, band_fn = dp.ExactPartitionFn(), dp.BandPartitionFn(fuzzy.max_bucket, fuzzy.bucket_shards)
        removed: dict[int, list] = defaultdict(list)
        for i in range(partitions):
            for x in _run(prof, seconds, "exact", exact_fn.process(i, descriptors)):
                if getattr(x, "tag", None) == dp.EXACT_REMOVED:
                    removed[x.value[0]].append(x.value[1])
        drop = {k: np.array(sorted(v), np.int32) for k, v in removed.items()}
        for i in range(partitions):
            _run(prof, seconds, "bands", band_fn.process(i, descriptors, drop))
    print(", ".join(f"{k} step {v:.2f} CPU s" for k, v in seconds.items()))
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(args.top)
    print(buf.getvalue())
    return 0


def _has_steps() -> bool:
    try:
        import pipelines.dedup.steps  # noqa: F401
        return True
    except ImportError:
        return False


def _run(prof, seconds, name, gen) -> list:
    t = time.process_time()
    prof.enable()
    out = list(gen)
    prof.disable()
    seconds[name] += time.process_time() - t
    return out


if __name__ == "__main__":
    sys.exit(main())
