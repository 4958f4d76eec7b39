"""`mtnlg explain` on a small curated run (local and s3://), with the PII stage on: every fate
(kept, exact and near duplicate, language removal, dead letter), the duplicate chain to the kept
document, shard token ranges, the manifest's sample stream, lookups by URL, the index-less
fallback and the one-line error for an unknown id."""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from pipeline_fixtures import english, write_config, write_corpus
from mtnlg.commands import explain as explain_cli
from mtnlg.commands.explain_story import explain

pytestmark = pytest.mark.slow
FAST = ["--direct_running_mode=in_memory", "--direct_num_workers=1"]
CONTACT = "Write to the editor at jane.roe@example.com or call (415) 555-0132 before noon."


@pytest.fixture(scope="module")
def curated(tmp_path_factory):
    from pipelines import curate

    tmp = tmp_path_factory.mktemp("explain")
    raw = str(tmp / "raw")
    write_corpus(raw)
    with open(os.path.join(raw, "realnews", "rn.jsonl"), "a") as f:  # personal data to redact
        f.write(json.dumps({"title": "Letters", "text": english(9) + "\n\n" + CONTACT,
                            "url_used": "http://x/3"}) + "\n")
    with open(os.path.join(raw, "cc_stories", "s3.txt"), "w") as f:  # an exact copy of s1.txt
        f.write(english(5))
    cfg = write_config(str(tmp / "cfg.yaml"), raw, shards={"max_tokens_per_shard": 400},
                       pii={"enabled": True})
    run = str(tmp / "run")
    assert curate.run(["--config", cfg, "--output", run] + FAST) == 0
    return run


def _rows(run: str) -> pd.DataFrame:
    return pd.read_parquet(os.path.join(run, "stats", "documents"))


def test_kept_document_with_its_shard_range_and_redactions(curated, capsys):
    rows = _rows(curated)
    doc_id = rows[rows.url == "http://x/3"].id.iloc[0]
    r = explain(curated, doc_id)
    assert r["outcome"] == "kept" and r["source"] == "realnews"
    assert r["input"] == os.path.join(json.load(open(os.path.join(curated, "run.json")))["input_root"],
                                      "realnews/rn.jsonl:2")
    spans = r["stages"]["pii"]["replaced"]
    assert [s["kind"] for s in spans] == ["email", "phone_number"]  # offsets, never the values
    assert "jane.roe" not in json.dumps(r)
    loc = r["location"]
    part = pd.read_parquet(os.path.join(curated, "documents", "realnews", f"part-{loc['shard']:05d}.parquet"))
    assert part.id.iloc[loc["sequence"]] == doc_id and "<EMAIL>" in part.text.iloc[loc["sequence"]]
    assert loc["token_range"] == [int(part.token_start.iloc[loc["sequence"]]),
                                  int(part.token_start.iloc[loc["sequence"]] + part.tokens.iloc[loc["sequence"]])]
    assert r["stages"]["heuristics"]["verdict"] == "passed" and r["stages"]["heuristics"]["rules"]
    assert r["read"]["indexed"] and len(r["read"]["files"]) <= 3  # the stats file and one part
    assert explain_cli.main(["--run", curated, "--url", "http://x/3"]) == 0
    out = capsys.readouterr().out
    assert f"document   {doc_id}" in out and "in the shards" in out and "email [" in out


def test_duplicates_chain_to_the_kept_document(curated):
    rows = _rows(curated)
    exact = rows[(rows.stage == "exact_dedup")].id.iloc[0]
    r = explain(curated, exact)
    link = r["chain"][0]
    assert link["stage"] == "exact_dedup" and link["to_fate"] == "kept" and link["to_location"]["prefix"]
    kept = rows[rows.id == link["to"]].iloc[0]
    assert kept.outcome == "kept"
    near = rows[(rows.stage == "fuzzy_dedup")].id.iloc[0]
    r = explain(curated, near)
    link = r["chain"][-1]
    assert r["chain"][0]["stage"] == "fuzzy_dedup" and 0.5 < r["chain"][0]["jaccard_to_kept"] <= 1
    assert r["chain"][0]["similarity"] is not None and link["to_fate"] == "kept"


def test_filtered_and_dead_letter_documents(curated):
    rows = _rows(curated)
    split = explain(curated, "wikipedia/pile/00.jsonl.zst:6")  # the planted task passage was cut out
    assert split["outcome"] == "kept" and split["stages"]["decontamination"]["verdict"] == "split"
    assert split["stages"]["decontamination"]["cuts"][0]["task"] == "lambada"
    german = rows[rows.stage == "language"].id.iloc[0]
    r = explain(curated, german)
    assert r["stages"]["language"]["verdict"] == "removed" and r["stages"]["heuristics"]["verdict"] == "not reached"
    assert "chain" not in r and "location" not in r
    dead = rows[rows.outcome == "dead_letter"].id.iloc[0]
    assert explain(curated, dead)["stages"]["read"]["verdict"] == "dead-lettered"


def test_unknown_id_is_one_line_and_exit_2(curated, capsys):
    assert explain_cli.main(["--run", curated, "wikipedia/nowhere.jsonl:3"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mtnlg explain: error: no document with id 'wikipedia/nowhere.jsonl:3'") and "\n" not in err
    assert explain_cli.main(["--run", curated, "--url", "http://nowhere/"]) == 2
    assert explain_cli.main(["--run", curated + "-missing", "x"]) == 2


def test_without_the_index_every_stats_file_is_searched(curated, tmp_path):
    copy = str(tmp_path / "run")
    shutil.copytree(curated, copy)
    shutil.rmtree(os.path.join(copy, "stats", "id_index"))
    rows = _rows(copy)
    doc_id = rows[rows.stage == "exact_dedup"].id.iloc[0]
    with_index, without = explain(curated, doc_id), explain(copy, doc_id)
    assert not without["read"]["indexed"]
    for key in ("outcome", "stages", "chain"):
        assert json.dumps(without[key], sort_keys=True) == json.dumps(with_index[key], sort_keys=True)
    from pipelines.runfolder.index_run import build_index  # an older run indexed afterwards

    assert build_index(copy)
    rebuilt = explain(copy, doc_id)
    assert rebuilt["read"]["indexed"] and len(rebuilt["read"]["files"]) <= len(without["read"]["files"])
    for key in ("outcome", "stages", "chain"):
        assert json.dumps(rebuilt[key], sort_keys=True) == json.dumps(with_index[key], sort_keys=True)


def test_manifest_sample_stream(curated, tmp_path):
    from mtnlg.commands import blend as blend_cli

    spec = {"name": "t", "train_tokens": 4000, "epoch_cap": 1000.0,
            "sources": [{"name": s, "weight": w} for s, w in
                        (("wikipedia", 0.4), ("books3", 0.2), ("realnews", 0.2), ("cc_stories", 0.2))]}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    manifest = str(tmp_path / "manifest.json")
    assert blend_cli.main(["--spec", str(tmp_path / "spec.yaml"), "--run", curated, "--output", manifest]) == 0
    rows = _rows(curated)
    doc_id = rows[(rows.outcome == "kept") & (rows.source == "books3")].id.iloc[0]
    r = explain(curated, doc_id, manifest=manifest, stream={"seq_length": 64, "num_samples": 60, "seed": 1})
    st = r["sample_stream"]
    assert st["epochs"], st
    from blending.manifest import load_manifest
    from blending.sampling import BlendedDataset

    ds = BlendedDataset(load_manifest(manifest), 64, 60, 1, cache_dir=None)
    part = pd.read_parquet(os.path.join(curated, "documents", "books3", f"part-{r['location']['shard']:05d}.parquet"))
    from blending.indexed_dataset import IndexedDataset

    doc_tokens = IndexedDataset(os.path.join(curated, r["location"]["prefix"])).get(r["location"]["sequence"])
    served = [s for ep in st["epochs"] for s in ep["samples"] if s["sample"] is not None]
    assert served and len(part)
    for s in served:  # each sample named holds tokens of the document
        sample = ds[s["sample"]]
        assert ds.source_of(s["sample"]) == "books3"
        window = set(zip(sample[:-1].tolist(), sample[1:].tolist()))
        assert window & set(zip(doc_tokens[:-1].tolist(), doc_tokens[1:].tolist()))


def test_explain_an_s3_run(curated, tmp_path, monkeypatch, capsys):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))
    from cluster_tools import moto_s3

    pytest.importorskip("boto3")
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(k, v)
    rows = _rows(curated)
    near = rows[rows.stage == "fuzzy_dedup"].id.iloc[0]
    local = explain(curated, near)
    with moto_s3(tmp_path / "moto.log", "runs") as (endpoint, client):
        for path in sorted(Path(curated).rglob("*")):
            if path.is_file():
                client.upload_file(str(path), "runs", f"run/{path.relative_to(curated).as_posix()}")
        assert explain_cli.main(["--run", "s3://runs/run", near, "--json", "--s3_endpoint_url", endpoint]) == 0
        remote = json.loads(capsys.readouterr().out)
        assert explain_cli.main(["--run", "s3://runs/run", "nope/x:1", "--s3_endpoint_url", endpoint]) == 2
    for key in ("outcome", "stages", "chain", "input"):
        assert json.dumps(remote[key], sort_keys=True) == json.dumps(local[key], sort_keys=True)
    assert remote["read"]["indexed"]


def test_train_config_sizes_the_sample_stream():
    args = explain_cli._parser().parse_args(["--run", "r", "x", "--manifest", "m", "--train-config", "demo"])
    stream = explain_cli._stream(args)  # the demo training run: 48 steps of 4 sequences of 128 tokens
    assert (stream["seq_length"], stream["num_samples"], stream["seed"]) == (128, 192, 1234)
    assert stream["batch_sizes"] == [4] * 48
