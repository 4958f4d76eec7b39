"""Write ``stats/id_index/`` for a finished run that has none (written with ``id_index: false``
or before the index existed), on this machine, from the run's own files: the ``id``/``url``
columns of ``stats/documents/``, the ids in ``removed/``, the rows of ``dedup/groups``.  The
layout is the one curate writes (``pipelines.plumbing.id_index``), with one producer per kind
of file (``rows``, ``removed_text``, ``extra``).  It reads every such file once, so it is for runs
that fit a machine; curate writes the same index spread over its workers.

    python -m pipelines.runfolder.index_run RUN
"""
from __future__ import annotations

import gzip
import json
import sys
from collections import defaultdict

import pyarrow.parquet as pq

from infra.storage.files import join, list_files, read_bytes
from pipelines.plumbing.id_index import INDEX_DIR, _write_bucket, bucket_of, buckets_for
from pipelines.plumbing.id_index_spool import detail_json, entry


def build_index(run_dir: str) -> dict[str, int]:
    """Entries written per (stage, producer)."""
    from apache_beam.io.filesystems import FileSystems

    groups: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for path in list_files(join(run_dir, "stats", "documents")):
        if not path.endswith(".parquet"):
            continue
        rel = path[len(run_dir.rstrip("/")) + 1:]
        stage = rel.rsplit("/", 1)[-1].split("-", 1)[0]
        with FileSystems.open(path) as f:
            t = pq.read_table(f, columns=[c for c in ("id", "url") if c in pq.read_schema(path).names]
                              if "://" not in path else None)
        urls = t.column("url").to_pylist() if "url" in t.column_names else [None] * t.num_rows
        for doc_id, url in zip(t.column("id").to_pylist(), urls):
            groups[(stage, "rows")].append(entry("stats", doc_id, doc_id, rel))
            if url:
                groups[(stage, "rows")].append(entry("url", url, doc_id, rel))
    for path in list_files(join(run_dir, "removed")):
        if not path.endswith(".jsonl.gz") or "/cuts/" in path:
            continue
        rel = path[len(run_dir.rstrip("/")) + 1:]
        for line in gzip.decompress(read_bytes(path)).decode("utf-8").splitlines():
            row = json.loads(line)
            groups[(row.get("stage") or "removed", "removed_text")].append(entry("removed", row["id"], row["id"], rel))
    for path in list_files(join(run_dir, "dedup")):
        if path.endswith(".parquet") and "groups" in path.rsplit("/", 1)[-1]:
            with FileSystems.open(path) as f:
                for row in pq.read_table(f).to_pylist():
                    groups[("dedup", "extra")].append(entry("dedup", row["id"], row["id"], None, detail_json(row)))
    written = {}
    for (stage, producer), entries in groups.items():
        b_count = buckets_for(len(entries))
        by_bucket: dict[int, list] = defaultdict(list)
        for e in entries:
            by_bucket[bucket_of(e[0], b_count)].append(e)
        for b, es in by_bucket.items():
            _write_bucket((b, es), run_dir, stage, producer, b_count)
        written[f"{stage}-{producer}"] = len(entries)
    return written


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m pipelines.runfolder.index_run RUN", file=sys.stderr)
        return 2
    print(json.dumps(build_index(args[0]), indent=1))
    print(f"wrote {join(args[0], *INDEX_DIR.split('/'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
