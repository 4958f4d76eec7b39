"""Memory of one site-boilerplate cleaning task's line counts (``curation.site_boilerplate.LineCounts``).

    .venv/bin/python -m bench.job.line_counts_memory RUN_DIR [--documents 15625]

Takes the first ``--documents`` documents with a host from a curate run's ``documents/`` (15,625:
what one of the default 64 partitions holds at a million documents), counts their lines as a
cleaning task does (threshold 3: sets of up to 4 contents) and prints what the counts hold
(tracemalloc).  The run's documents already lost their boilerplate lines, so a task meeting them
before the stage holds a few more lines.
"""
from __future__ import annotations

import argparse
import glob
import os
import tracemalloc

from curation.site_boilerplate import LineCounts, content_key, host_of, line_hashes  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    import pyarrow.parquet as pq

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a curate run's output folder")
    ap.add_argument("--documents", type=int, default=15_625)
    args = ap.parse_args(argv)
    rows: list[tuple[str, list[int]]] = []
    for f in sorted(glob.glob(os.path.join(args.run, "documents", "*", "*.parquet"))):
        for r in pq.read_table(f, columns=["text", "url"]).to_pylist():
            host = host_of(r["url"])
            if host:
                rows.append((host, line_hashes(r["text"])))
        if len(rows) >= args.documents:
            break
    rows = rows[:args.documents]
    tracemalloc.start()
    counts = LineCounts(4)
    for host, hashes in rows:
        counts.add(host, content_key(hashes), hashes)
    held, peak = tracemalloc.get_traced_memory()
    lines = sum(len(h) for _, h in rows)
    print(f"{len(rows):,} documents with a host, {len({h for h, _ in rows}):,} hosts, {lines:,} "
          f"(document, distinct line) pairs: LineCounts holds {held / 2**20:.1f} MB (peak "
          f"{peak / 2**20:.1f} MB), {held / max(lines, 1):.0f} bytes per pair")


if __name__ == "__main__":
    main()
