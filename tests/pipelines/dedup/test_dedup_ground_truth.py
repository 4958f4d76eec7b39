"""Exact + fuzzy dedup, as ``mtnlg curate`` runs it, on the sample corpus's planted ground truth.

The sample generator plants exact-duplicate groups across sources and near-duplicate pairs at
measured word-5-gram Jaccard 0.95/0.9/0.85/0.7/0.5/0.3.  With the demo config (threshold t):
every exact duplicate removed; recall >= 0.95 on pairs with Jaccard >= t + 0.1; at most 1% of
pairs with Jaccard <= t - 0.2 merged; every cluster's survivor is its highest-priority member.
"""
from __future__ import annotations

import glob
import gzip
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from curation.sources import DEFAULT_SOURCE_PRIORITY, SOURCE_BY_SLUG
from pipelines import curate

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "data_manifests" / "sources" / "demo.yaml"


def _dedup_only_config(path: Path) -> str:
    """The demo config with nothing but read and dedup deciding: the filter stages pass every
    source through, decontamination and PII redaction (which decide nothing here) are off and
    every document is long enough to tokenize, so every planted document reaches dedup and what
    dedup keeps is the corpus."""
    cfg = yaml.safe_load(DEMO.read_text())
    cfg["skip_sources"] = {"language": sorted(SOURCE_BY_SLUG), "heuristics": sorted(SOURCE_BY_SLUG)}
    cfg["decontamination"] = {"enabled": False}
    cfg["pii"] = {"enabled": False}
    cfg["tokenizer"]["min_tokens"] = 1
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


@pytest.fixture(scope="module")
def dedup_run(tmp_path_factory):
    """``mtnlg curate`` itself (its dedup stage: ``pipelines.build.build_dedup``) on the sample."""
    from mtnlg import sample_data

    sample = tmp_path_factory.mktemp("sample")
    # 2,000 documents: 33 exact-duplicate groups and 24 near-duplicate pairs (8 at each of
    # J >= t + 0.1 and J <= t - 0.2: every one of them must be decided right)
    assert sample_data.main([str(sample), "--docs", "2000"]) == 0
    tmp = tmp_path_factory.mktemp("run")
    run = tmp / "run"
    assert curate.run(["--config", _dedup_only_config(tmp / "cfg.yaml"), "--input-root", str(sample),
                       "--output", str(run), "--direct_running_mode=in_memory",
                       "--direct_num_workers=1"]) == 0
    rows = pq.read_table(sorted(glob.glob(str(run / "dedup" / "groups-*.parquet")))).to_pylist()
    removed = [(r["id"], r["stage"], r["detail"]) for stage in ("exact_dedup", "fuzzy_dedup")
               for f in glob.glob(str(run / "removed" / stage / "*.jsonl.gz"))
               for r in map(json.loads, gzip.open(f, "rt", encoding="utf-8"))]
    kept = {i for f in glob.glob(str(run / "documents" / "*" / "*.parquet"))
            for i in pq.read_table(f, columns=["id"]).column("id").to_pylist()}
    truth = json.loads((sample / "ground_truth.json").read_text())
    cfg = yaml.safe_load(DEMO.read_text())
    return cfg, truth, rows, removed, kept


@pytest.mark.slow
def test_all_exact_duplicates_removed(dedup_run):
    _, truth, rows, removed, _ = dedup_run
    gone = {doc_id for doc_id, _, _ in removed}
    for group in truth["exact_duplicates"]:
        assert sum(i not in gone for i in group["ids"]) == 1, group


@pytest.mark.slow
def test_planted_near_duplicate_recall_and_false_merges(dedup_run):
    cfg, truth, rows, _, _ = dedup_run
    t = cfg["dedup"]["fuzzy"]["threshold"]
    cluster = {r["id"]: (r["kind"], r["group"]) for r in rows}
    merged = lambda p: p["a"] in cluster and cluster.get(p["a"]) == cluster.get(p["b"])  # noqa: E731
    high = [p for p in truth["near_duplicates"] if p["jaccard"] >= t + 0.1]
    low = [p for p in truth["near_duplicates"] if p["jaccard"] <= t - 0.2]
    assert high and low
    assert sum(map(merged, high)) / len(high) >= 0.95
    assert sum(map(merged, low)) <= 0.01 * len(low)


@pytest.mark.slow
def test_survivor_is_the_highest_priority_member(dedup_run):
    _, _, rows, removed, kept_ids = dedup_run
    by_group: dict = {}
    for r in rows:
        by_group.setdefault((r["kind"], r["group"]), []).append(r)
    assert by_group
    for members in by_group.values():
        kept = [m for m in members if m["kept"]]
        assert len(kept) == 1 and kept[0]["source"] is not None
        assert kept[0]["cluster_size"] == len(members)
        best = max(DEFAULT_SOURCE_PRIORITY.get(m["source"], -1) for m in members)
        assert DEFAULT_SOURCE_PRIORITY.get(kept[0]["source"], -1) == best
        assert all(m["kept_id"] == kept[0]["id"] for m in members)


@pytest.mark.slow
def test_every_removal_names_a_document_of_the_corpus(dedup_run):
    """``detail.kept`` is a document the run keeps; the group row's survivor is it, or the first
    step on the way to it (``via``: the exact survivor was itself removed as a near duplicate)."""
    _, _, rows, removed, kept_ids = dedup_run
    kept_of = {(r["kind"], r["id"]): r["kept_id"] for r in rows}
    assert removed  # (the sample plants no chain: tests/pipelines/dedup/test_dedup_provenance.py does)
    for doc_id, stage, detail in removed:
        assert detail["kept"] in kept_ids, (doc_id, detail)
        first = detail["via"][0]["id"] if detail.get("via") else detail["kept"]
        assert kept_of[(stage.split("_")[0], doc_id)] == first, (doc_id, detail)
