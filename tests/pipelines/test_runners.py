"""The curate job on Beam's PortableRunner against Beam's own local job service on loopback (the
job API of the Flink and Spark job servers).  The FnApiRunner with 2 worker processes on the
sample corpus is tested from the installed wheel (tests/cluster/test_worker_pool.py); see
docs/runners.md for the cluster invocations."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from pipeline_fixtures import write_config, write_corpus
from pipelines import curate

pytestmark = pytest.mark.slow



def _check_accounting(run_dir: str) -> dict:
    info = json.load(open(os.path.join(run_dir, "run.json")))
    assert info["accounting_ok"]
    for name, s in info["sources"].items():
        assert s["read"] == s["kept"] + sum(s["removed"].values()) + s["dead_lettered"], name
    return info


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
