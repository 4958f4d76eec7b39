"""Optional stats (docs/stats-schema.md) on hand-written inputs with known answers."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from mtnlg.dashboard import extras
from mtnlg.dashboard.loader import load_run


def _dedup_rows(run):
    (run / "dedup").mkdir(parents=True)
    # Group g1 (exact): kept in A, removed copies in B and B. Group g2 (fuzzy): the kept row has no
    # source (as the fuzzy stage writes it); its id says A. Group g3 (fuzzy): kept in B, removed in A.
    pq.write_table(pa.table({
        "kind": ["exact"] * 3 + ["fuzzy"] * 4,
        "group": ["g1", "g1", "g1", "g2", "g2", "g3", "g3"],
        "id": ["A/1", "B/1", "B/2", "A/7", "C/3", "B/9", "A/4"],
        "source": ["A", "B", "B", None, "C", "B", "A"],
        "kept": [True, False, False, True, False, True, False]}), run / "dedup" / "groups-00000-of-00001.parquet")


def test_clusters_and_matrix_from_dedup_rows(tmp_path):
    run = tmp_path / "run"
    _dedup_rows(run)
    loaded = load_run(run)
    assert loaded["dedup_clusters"] == {"exact": [[3, 1]], "fuzzy": [[2, 2]]}
    assert loaded["dedup_matrix"]["exact"] == {"A": {"B": 2}}
    assert loaded["dedup_matrix"]["fuzzy"] == {"A": {"C": 1}, "B": {"A": 1}}
    assert loaded["dedup_matrix"]["all"] == {"A": {"B": 2, "C": 1}, "B": {"A": 1}}
    assert loaded["dedup"]["exact"] == {"members": 3, "groups": 1, "kept": 1, "largest_groups": [3],
                                        "by_source": {"A": 1, "B": 2}}


def test_stats_tables_win_over_dedup_rows(tmp_path):
    run = tmp_path / "run"
    _dedup_rows(run)
    (run / "stats").mkdir()
    pq.write_table(pa.table({"kind": ["fuzzy", "fuzzy", "fuzzy"], "size": [2, 2, 40], "clusters": [5, 1, 1]}),
                   run / "stats" / "dedup_clusters.parquet")
    loaded = load_run(run)
    assert loaded["dedup_clusters"] == {"fuzzy": [[2, 6], [40, 1]]}  # summed per (kind, size)


def test_contamination_stage_times_and_threshold(tmp_path):
    run = tmp_path / "run"
    (run / "stats").mkdir(parents=True)
    pq.write_table(pa.table({"task": ["piqa", "piqa", "lambada"], "source": ["A", "A", "B"],
                             "action": ["removed", "removed", "split"], "documents": [2, 3, 4]}),
                   run / "stats" / "contamination.parquet")
    (run / "run.json").write_text(json.dumps({"config": {"quality": {"threshold": 0.7}},
                                              "stage_seconds": {"read": 1.5, "tokenize": 2}}))
    loaded = load_run(run)
    assert loaded["contamination"] == [{"task": "lambada", "source": "B", "action": "split", "documents": 4},
                                       {"task": "piqa", "source": "A", "action": "removed", "documents": 5}]
    assert loaded["stage_seconds"] == {"read": 1.5, "tokenize": 2.0}
    assert loaded["quality_threshold"] == 0.7


def test_absent_or_malformed_optional_stats(tmp_path):
    run = tmp_path / "run"
    (run / "stats").mkdir(parents=True)
    pq.write_table(pa.table({"task": ["piqa"], "n": [1]}), run / "stats" / "contamination.parquet")
    pq.write_table(pa.table({"stage": ["read"], "seconds": [3.0]}), run / "stats" / "stage_times.parquet")
    loaded = load_run(run)
    assert loaded["contamination"] is None
    assert any("contamination.parquet lacks column(s) source, action, documents" in n for n in loaded["notes"])
    assert loaded["stage_seconds"] == {"read": 3.0}
    assert loaded["dedup_clusters"] is None and loaded["dedup_matrix"] is None and loaded["dedup"] is None
    assert loaded["quality_threshold"] is None
    assert extras.quality_threshold({"config": {"quality": {"threshold": True}}}) is None
