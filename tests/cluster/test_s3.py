"""Object storage for real: a moto S3 server on 127.0.0.1; curate (installed wheel, checkout
hidden, Beam's job service and two SDK workers of an EXTERNAL worker pool) reads the raw corpus,
the language model, the quality model, the tokenizer and the eval-task files from ``s3://`` and
writes its RUN there through Beam's S3 filesystem (the ``s3_run`` fixture, conftest.py).  Here:
every planted record's fate, the terminal output, then the documented path to training:
``mtnlg stage`` (checksums verified), ``mtnlg blend``, ``mtnlg train``."""
from __future__ import annotations

import json
import logging
import time

import pyarrow.parquet as pq

from curation.document import STAGES
from cluster_tools import BUCKET, S3_KEYS, summary_and_progress


def _keys(client, prefix: str) -> list[str]:
    out = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return [o["Key"] for o in out]


def test_s3_run_prints_a_short_summary(s3_run, s3):
    _, client = s3
    # A short summary (one line per stage, a table per source: 21 lines besides the stage lines),
    # plus live progress: at most one line per 30 s of the run when the output is no terminal,
    # and one for each of the 4 stages that ran between two of them
    # (pipelines/runfolder/progress.py).
    lines, progress = summary_and_progress(s3_run.output)
    assert len(lines) <= 21 + len(STAGES), "\n".join(lines)
    assert len(progress) <= s3_run.seconds / 30 + 1 + 4, "\n".join(progress)
    assert any(line.split()[:1] == ["tokenize"] for line in lines)  # one line per stage
    assert lines[-1].startswith(f"wrote {s3_run.url}/run.json")
    logs = client.list_objects_v2(Bucket=BUCKET, Prefix="runs/r1/logs/curate.log").get("Contents", [])
    assert logs and logs[0]["Size"] > 0  # Beam's INFO lines went there


def test_s3_run_accounts_for_every_planted_record(s3_run, sample):
    """Worker processes apart from the driver (every DoFn and config object pickled): every
    record the sample planted is read once, each malformed one is a dead letter, and the
    counters add up."""
    info = s3_run.info
    truth = json.loads((sample / "ground_truth.json").read_text())
    assert info["accounting_ok"] and info["runner"] == "PortableRunner"
    assert info["pipeline_options"]["environment_type"] == "EXTERNAL"
    for name, s in info["sources"].items():
        assert s["read"] == s["kept"] + sum(s["removed"].values()) + s["dead_lettered"], name
    assert info["totals"]["read"] == truth["totals"]["records"]  # the truncated zst counts as one
    by_source = truth["totals"]["by_source"]
    for name in ("realnews", "cc_stories", "cc_2020_50", "cc_2021_04"):
        assert info["sources"][name]["read"] == by_source[name]["records"], name
    # Each planted malformed record is a dead letter (Pile lines may land under pile_other).
    assert info["totals"]["dead_lettered"] == truth["totals"]["malformed"]
    for cc in ("cc_2020_50", "cc_2021_04"):  # the quality model, read from s3://, removed some
        assert info["sources"][cc]["removed"].get("quality/low_quality", 0) > 0, info["sources"][cc]

    rows = pq.read_table(s3_run.local / "stats" / "documents", columns=["id", "outcome"]).to_pylist()
    parsed = {r["id"] for r in rows if r["outcome"] != "dead_letter"}
    planted = {i for i, c in truth["primary"].items() if c != "malformed"}
    readable = {i for i in planted if not i.startswith("pile/")}
    # Documents inside the truncated zst are lost with it (one dead letter); all others are ids.
    lost = sum(1 for m in truth["malformed"] if m["kind"] == "truncated_zstd") * 50
    assert len(readable - parsed) <= lost
    assert {i for i in parsed if not i.startswith("pile_other/")} <= planted

    counters = json.loads((s3_run.local / "stats" / "counters.json").read_text())["counters"]
    read = sum(c["value"] for c in counters if c["stage"] == "read" and c["outcome"] == "read")
    dead = sum(c["value"] for c in counters if c["stage"] == "read" and c["outcome"] == "dead_letter")
    assert read + dead == info["totals"]["read"]
    assert any(c["stage"] == "language" and c["reason"] == "wrong_language" for c in counters)


def test_s3_run_stages_blends_and_trains(installed, s3_run, s3, tmp_path, caplog):
    from mtnlg import cli

    endpoint, client = s3
    s3_opts = ["--s3_endpoint_url", endpoint]  # credentials come from the environment
    info = s3_run.info
    assert info["totals"]["kept"] > 0
    assert info["tokenizer"]["path"] == f"s3://{BUCKET}/tokenizers/gpt2"
    assert info["quality_model"]["path"] == f"s3://{BUCKET}/models/quality.bin"

    # The documented path to training: stage (checksums verified), blend, train.
    staged = tmp_path / "staged"
    t0 = time.perf_counter()
    proc = installed.run(["mtnlg", "stage", s3_run.url, str(staged), *s3_opts], cwd=tmp_path, **S3_KEYS)
    stage_secs = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr[-3000:]
    local = json.loads((staged / "run.json").read_text())
    assert local["tokenizer"]["path"] == "tokenizer" and local["sources"] == info["sources"]
    manifest = tmp_path / "manifest.json"
    proc = installed.run(["mtnlg", "blend", "--spec", "demo", "--run", str(staged),
                          "--output", str(manifest)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Training needs torch ([train]); the base venv has none, so the test's own process trains
    # (`mtnlg train --nproc 1` runs in the process that calls it; torchrun's launch is
    # test_elastic_launch's).
    with caplog.at_level(logging.INFO):
        rc = cli.main(["train", "--manifest", str(manifest), "--config", "demo", "--steps", "2",
                       "--nproc", "1", "--output", str(tmp_path / "train")])
    assert rc == 0, caplog.text[-3000:]
    assert "matches the manifest" in caplog.text  # the tokenizer was verified
    print(f"\ncurate on s3 {s3_run.seconds:.1f}s, stage {stage_secs:.1f}s")


def test_a_shard_rewritten_in_the_bucket_is_caught_by_stage(installed, s3_run, s3, tmp_path):
    endpoint, client = s3
    key = next(k for k in _keys(client, "runs/r1/shards/") if k.endswith(".bin"))
    body = bytearray(client.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    body[0] ^= 0xFF
    client.put_object(Bucket=BUCKET, Key=key, Body=bytes(body))
    try:
        proc = installed.run(["mtnlg", "stage", s3_run.url, str(tmp_path / "staged"),
                              "--s3_endpoint_url", endpoint], cwd=tmp_path, **S3_KEYS)
    finally:
        body[0] ^= 0xFF
        client.put_object(Bucket=BUCKET, Key=key, Body=bytes(body))
    assert proc.returncode == 1 and key.split("runs/r1/", 1)[1] in proc.stderr
    assert not (tmp_path / "staged" / "run.json").exists()
