"""Aggregates and chart specs on hand-written inputs with known answers."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from mtnlg.dashboard import aggregates as agg
from mtnlg.dashboard.charts import histogram_chart
from mtnlg.dashboard.loader import load_run

COUNTS = [
    {"source": "A", "stage": "tokenize", "outcome": "kept", "reason": None, "documents": 5},
    {"source": "A", "stage": "heuristics", "outcome": "removed", "reason": "short", "documents": 3},
    {"source": "A", "stage": None, "outcome": "dead_letter", "reason": "bad_json", "documents": 1},
    {"source": "B", "stage": "quality", "outcome": "removed", "reason": "low", "documents": 2},
    {"source": "B", "stage": "tokenize", "outcome": "kept", "reason": None, "documents": 4},
    {"source": "B", "stage": "mystery", "outcome": "removed", "reason": "new_stage", "documents": 1},
]


def test_funnel_known_numbers():
    f = agg.funnel(COUNTS, ["A", "B"])
    a = {r["stage"]: r for r in f["A"]}
    assert a["read"] == {"stage": "read", "in": 9, "removed": 0, "dead_lettered": 1, "out": 8}
    assert a["heuristics"]["in"] == 8 and a["heuristics"]["out"] == 5
    assert a["tokenize"]["out"] == 5
    b = {r["stage"]: r for r in f["B"]}
    # An unknown stage is counted at the last stage, so the funnel still ends at "kept".
    assert b["tokenize"]["removed"] == 1 and b["tokenize"]["out"] == 4
    assert f[agg.TOTAL][0]["in"] == 16 and f[agg.TOTAL][-1]["out"] == 9


def test_reasons_in_stage_order_with_sources():
    r = agg.reasons(COUNTS)
    assert [(x["stage"], x["reason"], x["documents"]) for x in r] == [
        ("heuristics", "short", 3), ("quality", "low", 2), ("mystery", "new_stage", 1)]
    assert r[0]["by_source"] == {"A": 3}


def test_counts_from_run_json_round_trip():
    run = {"sources": {"A": {"read": 9, "kept": 5, "dead_lettered": 1, "removed": {"heuristics/short": 3}}}}
    rows = agg.counts_from_run_json(run)
    assert sum(r["documents"] for r in rows) == 9
    assert agg.funnel(rows, ["A"])["A"][-1]["out"] == 5


def test_histograms_are_the_pipelines_bins_laid_on_fixed_edges():
    from curation.stats import aggregate_rows

    rows = [{"source": "A", "stage": "tokenize", "outcome": "kept", "reason": None, "chars": 0},
            {"source": "A", "stage": "heuristics", "outcome": "removed", "reason": "r", "chars": 3},
            {"source": "B", "stage": "tokenize", "outcome": "kept", "reason": None, "chars": 2**40},
            {"source": "B", "stage": "read", "outcome": "dead_letter", "reason": "x", "chars": 0}]
    for r in rows:
        r.update({"lang": None, "words": None, "tokens": None, "lang_score": None, "quality_score": None})
    table = aggregate_rows(rows)["histograms"]
    h = agg.histograms_from_rows(table, "chars", ["A", "B"])
    assert h["edges"] == agg.LENGTH_EDGES
    assert h["series"]["A"]["kept"][0] == 1  # 0 -> [0, 1)
    assert h["series"]["A"]["removed"][2] == 1  # 3 -> [2, 4)
    assert h["series"]["B"]["kept"][-1] == 1  # past the last edge -> last bin
    assert sum(h["series"]["B"]["removed"]) == 0  # dead letters are not histogrammed
    assert sum(h["series"][agg.TOTAL]["kept"]) == 2
    assert agg.histograms_from_rows(table, "quality_score", ["A"]) is None


def test_histograms_parquet_is_what_the_page_draws(tmp_path):
    run = tmp_path / "run"
    (run / "stats").mkdir(parents=True)
    rows = [{"kind": "chars", "source": "A", "outcome": "kept", "bin_lo": 64.0, "bin_hi": 128.0, "count": 4},
            {"kind": "chars", "source": "A", "outcome": "removed", "bin_lo": 128.0, "bin_hi": 256.0, "count": 2},
            {"kind": "quality_score", "source": "A", "outcome": "kept", "bin_lo": 0.5, "bin_hi": 0.55, "count": 4}]
    pq.write_table(pa.Table.from_pylist(rows), run / "stats" / "histograms.parquet")
    loaded = load_run(run)
    chars = loaded["length_chars"]
    assert chars["edges"] == agg.LENGTH_EDGES
    assert chars["series"]["A"]["kept"][agg.LENGTH_EDGES.index(64.0)] == 4
    assert chars["series"]["A"]["removed"][agg.LENGTH_EDGES.index(128.0)] == 2
    assert sum(loaded["quality"]["series"][agg.TOTAL]["kept"]) == 4
    assert loaded["length_words"] is None


def test_histogram_chart_with_different_bins_per_run():
    def run(label, edges):
        return {"label": label, "sources": ["A"],
                "h": {"edges": edges, "series": {"A": {"kept": [1] * (len(edges) - 1), "removed": [0] * (len(edges) - 1)}}}}
    same = histogram_chart([run("x", [0, 1, 2]), run("y", [0, 1, 2])], "h", "T", log_x=False)
    assert len(same["options"]["A"]["series"]) == 4
    differ = histogram_chart([run("x", [0, 1, 2]), run("y", [0, 5, 10, 20])], "h", "T", log_x=False)
    assert "A [x]" in differ["options"] and differ["options"]["A [y]"]["edges"] == [0, 5, 10, 20]


def test_stats_without_promised_columns_are_ignored_with_a_note(tmp_path):
    run = tmp_path / "run"
    (run / "stats").mkdir(parents=True)
    pq.write_table(pa.table({"source": ["A"], "n": [3]}), run / "stats" / "counts.parquet")
    (run / "run.json").write_text('{"sources": {"A": {"read": 1, "kept": 1}}}')
    loaded = load_run(run)
    assert loaded["counts_from"] == "run.json (coarse)"
    assert loaded["funnel"]["A"][-1]["out"] == 1
    assert any("counts.parquet lacks column(s) stage, outcome, documents" in n for n in loaded["notes"])
