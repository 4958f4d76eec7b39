"""The quality stage in Beam and in the curate job: scores stored, drops explained, model checks
before any input is read, model path + sha256 in run.json, quality histograms in the stats."""
from __future__ import annotations

import json
import os
import pickle
import sys

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "curation"))  # quality_fixtures
from pipeline_fixtures import doc, filtered, write_config, write_corpus  # noqa: E402
from quality_fixtures import BAD, GOOD, text, write_training_set  # noqa: E402

from mtnlg.commands import quality as quality_cli
from curation.quality import QualityConfig
from infra.hashing import file_sha256
from pipelines import curate
from pipelines.filters.quality import QualityFn


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("qmodel")
    cfg = write_training_set(str(root))
    assert quality_cli.main(["train", "--config", cfg, "--output", str(root / "m")]) == 0
    return str(root / "m" / "model.bin")


def test_quality_fn_scores_marked_sources_and_explains_drops(pipeline, model):
    cfg = QualityConfig(enabled=True, model_path=model, rule="threshold", threshold=0.5)
    fn = QualityFn(cfg, file_sha256(model))
    assert pickle.loads(pickle.dumps(fn))._scorer is None  # ships without the model
    docs = [doc("cc_2020_50/a#1", text(GOOD, 1), "cc_2020_50"),
            doc("cc_2020_50/a#2", text(BAD, 2), "cc_2020_50"),
            doc("wikipedia/w:0", text(BAD, 3), "wikipedia")]  # not a quality source: unscored
    out = filtered(pipeline | beam.Create(docs), fn)
    kept = out["kept"] | "K" >> beam.Map(
        lambda d: (d.id, d.quality_score is None or d.quality_score > 0.5))
    removed = out["removed"] | "R" >> beam.Map(
        lambda r: (r.doc.id, r.stage, r.reason, r.detail["rule"], r.detail["score"] < 0.5))
    assert_that(kept, equal_to([("cc_2020_50/a#1", True), ("wikipedia/w:0", True)]), label="kept")
    assert_that(removed, equal_to([("cc_2020_50/a#2", "quality", "low_quality", "threshold", True)]),
                label="removed")
    pipeline.run()


@pytest.mark.parametrize("content, message", [(None, "does not exist"),
                                              (b"garbage" * 20, "not a readable fastText model")])
def test_missing_or_corrupt_model_fails_before_reading_input(tmp_path, capsys, content, message):
    root = tmp_path / "raw"
    write_corpus(str(root))
    bad = tmp_path / "model.bin"
    if content is not None:
        bad.write_bytes(content)
    cfg = write_config(str(tmp_path / "c.yaml"), str(root))
    rc = curate.run(["--config", cfg, "--output", str(tmp_path / "run"), "--quality-model", str(bad)])
    assert rc == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # nothing was started


@pytest.mark.slow
def test_curate_records_model_and_writes_quality_histograms(tmp_path, model):
    import pandas as pd

    root = tmp_path / "raw"
    write_corpus(str(root))
    with open(root / "realnews" / "rn.jsonl", "a") as f:  # one spam page among the news
        f.write(json.dumps({"title": "Deals", "text": text(BAD, 5, 400), "url_used": "http://s"}) + "\n")
    cfg = write_config(str(tmp_path / "c.yaml"), str(root), quality={
        "sources": ["realnews", "cc_stories"], "rule": "threshold", "threshold": 0.5},
        # the planted spam must reach the quality stage: the earlier filters would catch it
        skip_sources={"language": ["realnews"], "heuristics": ["realnews"]})
    run = tmp_path / "run"
    rc = curate.run(["--config", cfg, "--output", str(run), "--quality-model", model,
                     "--direct_num_workers=1", "--direct_running_mode=in_memory"])
    assert rc == 0
    info = json.loads((run / "run.json").read_text())
    assert info["quality_model"]["sha256"] == file_sha256(model)
    assert info["quality_model"]["path"] == os.path.abspath(model)
    assert info["config"]["quality"]["threshold"] == 0.5 and info["accounting_ok"]
    assert info["sources"]["realnews"]["removed"].get("quality/low_quality", 0) >= 1
    rows = pd.read_parquet(run / "stats" / "documents")
    scored = rows[rows["quality_score"].notna()]
    assert set(scored["source"]) <= {"realnews", "cc_stories"} and len(scored) >= 3
    hist = pd.read_parquet(run / "stats" / "histograms.parquet")
    q = hist[hist["kind"] == "quality_score"]
    assert {"kept", "removed"} <= set(q["outcome"]) and q["count"].sum() == len(scored)
    assert (q["bin_hi"] - q["bin_lo"]).round(2).eq(0.05).all()
    removed = pd.read_json(next((run / "removed" / "quality").glob("*.jsonl.gz")), lines=True)
    assert "realnews/realnews/rn.jsonl:2" in set(removed["id"])
    assert all(d["score"] < 0.5 and d["rule"] == "threshold" for d in removed["detail"])
