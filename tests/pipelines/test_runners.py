"""The curate job on other runners: FnApiRunner with 2 worker processes on the sample corpus
(every DoFn and every config object is pickled, as on a cluster) and Beam's PortableRunner
against Beam's own local job service on loopback (the job API of the Flink and Spark job
servers).  See docs/runners.md for the cluster invocations."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pandas as pd
import pytest

from pipeline_fixtures import write_config, write_corpus
from pipelines import curate

pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO_CONFIG = os.path.join(REPO, "data_manifests", "sources", "demo.yaml")


def _check_accounting(run_dir: str) -> dict:
    info = json.load(open(os.path.join(run_dir, "run.json")))
    assert info["accounting_ok"]
    for name, s in info["sources"].items():
        assert s["read"] == s["kept"] + sum(s["removed"].values()) + s["dead_lettered"], name
    return info


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    from mtnlg.sample_data import write_sample_corpus

    tmp = tmp_path_factory.mktemp("sample_mp")
    truth = write_sample_corpus(str(tmp / "raw"))
    out = str(tmp / "run")
    rc = curate.run(["--config", DEMO_CONFIG, "--input-root", str(tmp / "raw"), "--output", out,
                     "--direct_running_mode=multi_processing", "--direct_num_workers=2"])
    assert rc == 0
    return out, truth


def test_sample_multi_processing_accounts_for_every_record(sample_run):
    run_dir, truth = sample_run
    info = _check_accounting(run_dir)
    assert info["runner"] == "FnApiRunner"
    assert info["pipeline_options"]["direct_running_mode"] == "multi_processing"
    # Every record the sample planted is read exactly once (the truncated zst counts as one).
    assert info["totals"]["read"] == truth["totals"]["records"]
    by_source = truth["totals"]["by_source"]
    for name in ("realnews", "cc_stories", "cc_2020_50", "cc_2021_04"):
        assert info["sources"][name]["read"] == by_source[name]["records"], name
    # Each planted malformed record is a dead letter (Pile lines may land under pile_other).
    assert info["totals"]["dead_lettered"] == truth["totals"]["malformed"]


def test_sample_ids_match_the_ground_truth(sample_run):
    run_dir, truth = sample_run
    rows = pd.read_parquet(os.path.join(run_dir, "stats", "documents"))
    parsed = set(rows.id[rows.outcome != "dead_letter"])
    planted = {i for i, c in truth["primary"].items() if c != "malformed"}
    readable = {i for i in planted if not i.startswith("pile/")}
    # Documents inside the truncated zst are lost with it (one dead letter); all others are ids.
    assert len(readable - parsed) <= sum(1 for m in truth["malformed"] if m["kind"] == "truncated_zstd") * 50
    assert {i for i in parsed if not i.startswith("pile_other/")} <= planted


def test_counters_are_written_to_stats(sample_run):
    run_dir, _ = sample_run
    counters = json.load(open(os.path.join(run_dir, "stats", "counters.json")))["counters"]
    read = sum(c["value"] for c in counters if c["stage"] == "read" and c["outcome"] == "read")
    dead = sum(c["value"] for c in counters if c["stage"] == "read" and c["outcome"] == "dead_letter")
    info = json.load(open(os.path.join(run_dir, "run.json")))
    assert read + dead == info["totals"]["read"]
    assert any(c["stage"] == "language" and c["reason"] == "wrong_language" for c in counters)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.fixture
def job_service():
    """Beam's local job service (``local_job_service_main``), the job API Flink/Spark expose."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "apache_beam.runners.portability.local_job_service_main",
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                socket.create_connection(("localhost", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail("local job service exited")
                time.sleep(0.5)
        yield f"localhost:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_portable_runner_on_local_job_service(job_service, tmp_path):
    write_corpus(str(tmp_path / "raw"))
    cfg = write_config(str(tmp_path / "cfg.yaml"), str(tmp_path / "raw"))
    out = str(tmp_path / "run")
    rc = curate.run(["--config", cfg, "--output", out, "--runner", "PortableRunner",
                     "--job_endpoint", job_service, "--environment_type", "LOOPBACK"])
    assert rc == 0
    info = _check_accounting(out)
    assert info["runner"] == "PortableRunner"
    assert info["totals"]["read"] == 11
    assert info["totals"]["kept"] > 0
