"""Time to open the dashboard of a large run in headless Chromium, against a same-size baseline.

    .venv/bin/python -m bench.dashboard.dashboard [--rows 1000000] [--sources 15] [--repeat 5]

1. Synthesizes a RUN with ``--sources`` sources and ``--rows`` rows in stats/documents/ and the
   aggregates the pipeline writes from them (counts, histograms, languages; run.json with stage
   times, dedup groups, contamination, removed samples).
2. Renders it with ``build_dashboard`` (timed: the Python side reads 1M rows).
3. In one Chromium, loads (a) the dashboard until ``window.__dashboardReady`` (every panel
   drawn) and (b) a baseline: a static HTML page of the same byte size with no script, until its
   load event; each ``--repeat`` times in a fresh tab.  Reports ``performance.now()`` at ready
   (ms since navigation start), the wall time seen from Python, and the ratio to the baseline.
"""
from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.common import test_helpers  # noqa: E402

test_helpers("dashboard")

from curation.document import STAGES  # noqa: E402
from mtnlg.dashboard import build_dashboard  # noqa: E402
from chromium_driver import Chromium  # noqa: E402

REMOVALS = [("language", "wrong_language"), ("heuristics", "too_few_words"), ("heuristics", "symbol_ratio"),
            ("quality", "low_quality"), ("exact_dedup", "duplicate"), ("fuzzy_dedup", "near_duplicate"),
            ("decontamination", "contaminated"), ("tokenize", "too_few_tokens")]


def synth_run(root: Path, n_rows: int, n_sources: int, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    sources = np.array([f"source_{i:02d}" for i in range(n_sources)])
    src = sources[rng.integers(0, n_sources, n_rows)]
    roll = rng.random(n_rows)
    which = rng.integers(0, len(REMOVALS), n_rows)
    outcome = np.where(roll < 0.002, "dead_letter", np.where(roll < 0.35, "removed", "kept"))
    stage = np.where(outcome == "kept", "tokenize",
                     np.where(outcome == "dead_letter", "read", np.array([s for s, _ in REMOVALS])[which]))
    reason = np.where(outcome == "removed", np.array([r for _, r in REMOVALS])[which], None)
    words = rng.lognormal(6, 1.2, n_rows).astype(np.int64)
    table = pa.table({
        "id": pa.array([f"{s}/part/{i}" for i, s in enumerate(src)]), "source": src, "outcome": outcome,
        "stage": stage, "reason": pa.array(reason, pa.string()), "chars": words * 6, "words": words,
        "lang": rng.choice(["en"] * 8 + ["de", "fr", "es", "zh"], n_rows), "lang_score": rng.random(n_rows),
        "quality_score": rng.beta(4, 2, n_rows), "tokens": pa.array(np.where(outcome == "kept", words + 1, 0))})
    run = root / "big-run"
    (run / "stats" / "documents").mkdir(parents=True)
    pq.write_table(table, run / "stats" / "documents" / "read-0.parquet")
    from curation.stats import aggregate_rows  # the pipeline's own aggregation of the rows

    for name, rows in aggregate_rows(table.to_pylist()).items():
        if name != "read":
            pq.write_table(pa.Table.from_pylist(rows), run / "stats" / f"{name}.parquet")
    n_groups = n_rows // 50
    sizes = np.minimum((rng.pareto(1.5, n_groups) + 2).astype(np.int64), 5000)
    group = np.repeat(np.arange(n_groups), sizes)
    first = np.r_[True, group[1:] != group[:-1]]
    (run / "dedup").mkdir()
    pq.write_table(pa.table({"kind": np.where(group % 3 == 0, "exact", "fuzzy"), "group": group.astype(str),
                             "id": np.arange(len(group)).astype(str),
                             "source": sources[rng.integers(0, n_sources, len(group))], "kept": first}),
                   run / "dedup" / "groups-00000-of-00001.parquet")
    tasks = ["lambada", "race", "piqa", "boolq", "winogrande", "hellaswag", "anli", "webqs"]
    pq.write_table(pa.table({"task": np.repeat(tasks, n_sources), "source": np.tile(sources, len(tasks)),
                             "action": ["removed"] * (len(tasks) * n_sources), "documents": rng.integers(0, 500, len(tasks) * n_sources)}),
                   run / "stats" / "contamination.parquet")
    for st, rs in REMOVALS:
        path = run / "removed" / st / "part-00000.jsonl.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wt") as fh:
            for i in range(50):
                fh.write(json.dumps({"id": f"x/{i}", "source": "source_00", "stage": st, "reason": rs,
                                     "text": "lorem ipsum " * 80}) + "\n")
    meta = {"format_version": 1, "runner": "FnApiRunner", "config": {"quality": {"threshold": 0.5}},
            "wall_seconds": 3600.0, "stage_seconds": {s: 100.0 + 10 * i for i, s in enumerate(STAGES)},
            "sources": {s: {} for s in sources.tolist()}}
    (run / "run.json").write_text(json.dumps(meta))
    return run


def load_times(browser: Chromium, url: str, ready: str, repeat: int) -> tuple[list[float], list[float]]:
    """(ms at ready by performance.now(), wall ms seen from Python) per fresh-tab load."""
    in_page, wall = [], []
    for _ in range(repeat):
        page = browser.open()
        t0 = time.perf_counter()
        page.navigate(url)
        page.wait_for(ready, timeout=60, interval=0.005)
        wall.append(1000 * (time.perf_counter() - t0))
        in_page.append(page.evaluate("window.__dashboardReadyAt || performance.getEntriesByType('navigation')[0]"
                                     ".loadEventEnd"))
        assert not page.errors, page.errors
        page.close()
    return in_page, wall


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--sources", type=int, default=15)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        run = synth_run(Path(tmp), args.rows, args.sources)
        print(f"synthesized {args.rows:,} stats rows, {args.sources} sources in {time.perf_counter() - t:.1f}s")
        t = time.perf_counter()
        html = build_dashboard([run], Path(tmp) / "dashboard.html")
        render_s = time.perf_counter() - t
        size = html.stat().st_size
        baseline = Path(tmp) / "baseline.html"
        baseline.write_text("<!DOCTYPE html><html><body><pre>" + "x" * (size - 60) + "</pre></body></html>\n")
        print(f"mtnlg dashboard (Python: read stats, aggregate, write HTML): {render_s:.2f}s, page {size / 1024:.0f} KiB")
        with Chromium() as browser:
            print(f"browser: {browser.version}")
            load_times(browser, html.resolve().as_uri(), "window.__dashboardReady === true", 1)  # warm up
            dash_in, dash_wall = load_times(browser, html.resolve().as_uri(), "window.__dashboardReady === true",
                                            args.repeat)
            base_in, base_wall = load_times(browser, baseline.resolve().as_uri(),
                                            "document.readyState === 'complete'", args.repeat)
    med = statistics.median
    print(f"{'page':<42}{'ready ms (in page)':>20}{'wall ms':>10}")
    print(f"{'dashboard (all panels drawn)':<42}{med(dash_in):>20.0f}{med(dash_wall):>10.0f}")
    print(f"{'baseline: static HTML, same size, no JS':<42}{med(base_in):>20.0f}{med(base_wall):>10.0f}")
    print(f"ratio dashboard/baseline (in page): {med(dash_in) / med(base_in):.2f}x; "
          f"open time {med(dash_wall) / 1000:.2f}s (goal < 3s): {'OK' if med(dash_wall) < 3000 else 'TOO SLOW'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
