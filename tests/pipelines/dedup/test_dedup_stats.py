"""The file-backed dedup's group outputs: the group rows as files with their id-index entries,
and stats tables from per-step partials equal to ``WriteDedupOutputs``' over all the rows."""
from __future__ import annotations

import glob
import os

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.dedup.stats import (GROUP_FILES, INDEX_SPOOLS, PARTIALS, WriteDedupOutputs,
                                              WriteDedupStats, group_outputs, group_row)
from pipeline_fixtures import local_pipeline

SOURCES = ("wikipedia", "realnews", "cc")


def _clusters() -> list[list[dict]]:
    """Exact and fuzzy clusters of several sizes (one with more members than the top sample)."""
    out = []
    for c in range(60):  # 30 per kind: more than the top clusters kept
        kind, size = ("exact", "fuzzy")[c % 2], 2 + (c * 7) % 9
        ids = [f"c{c}-m{m}" for m in range(size)]
        src = [SOURCES[(c + m) % 3] for m in range(size)]
        group = f"h{c:03d}" if kind == "exact" else ids[0]
        out.append([group_row(kind, group, i, s, ids[0], src[0], size,
                              "keep_rule" if m == 0 else "duplicate", 1.0 if kind == "exact" else 0.9,
                              m == 0) for m, (i, s) in enumerate(zip(ids, src))])
    return out


def _tables(folder: str) -> dict:
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, "stats", "dedup_*.parquet"))):
        rows = pq.read_table(path).to_pylist()
        out[os.path.basename(path)] = sorted(rows, key=lambda r: sorted((k, str(v)) for k, v in r.items()))
    return out


def test_stats_from_partials_equal_the_stats_from_all_rows(tmp_path):
    clusters = _clusters()
    rows = [r for c in clusters for r in c]
    inputs = [(("exact", s), 50) for s in SOURCES] + [(("fuzzy", s), 40) for s in SOURCES]
    with local_pipeline() as p:
        _ = {"groups": p | "Rows" >> beam.Create(rows), "inputs": p | "In" >> beam.Create(inputs)} \
            | WriteDedupOutputs(str(tmp_path / "want"))
    out = str(tmp_path / "got")
    steps = [[r for c in clusters[i::3] for r in c] for i in range(3)]  # whole clusters per step
    tagged = [o for step in steps for o in group_outputs(step, out, id_index=True)]
    by_tag = {t: [o.value for o in tagged if o.tag == t] for t in (GROUP_FILES, INDEX_SPOOLS, PARTIALS)}
    with local_pipeline() as p:
        _ = {"partials": p | "Partials" >> beam.Create(by_tag[PARTIALS]),
             "inputs": p | "In" >> beam.Create(inputs)} | WriteDedupStats(out)
    want, got = _tables(str(tmp_path / "want")), _tables(out)
    assert set(want) == {"dedup_clusters.parquet", "dedup_matrix.parquet", "dedup_sources.parquet",
                         "dedup_top_clusters.parquet"}
    assert got == want
    files = pa.concat_tables([pq.read_table(d["url"]) for d in by_tag[GROUP_FILES]]).to_pylist()
    assert sorted(files, key=lambda r: r["id"]) == sorted(rows, key=lambda r: r["id"])
    assert all(d["path"].startswith("_w/dedup/groups-") for d in by_tag[GROUP_FILES])
    assert sum(d["entries"] for d in by_tag[INDEX_SPOOLS]) == len(rows)
