"""An SDK harness of an EXTERNAL worker pool SIGKILLed mid-stage (Beam's job service, the
installed wheel, the checkout hidden): the job stops with one line naming the lost worker and the
``--resume`` command, and ``--resume`` on the same pool ends equal to an in-process run.  The
harness is held inside the stage by ``tests/worker_hold`` (on the pool's PYTHONPATH) and killed
there, so the kill lands mid-stage whatever the machine's speed."""
from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest
import yaml

from cluster_tools import REPO, free_port, stop, wait_for_port

HERE = Path(__file__).resolve().parent
GUARD_S = 900  # a hang guard, never a speed bound


def _kept(run: Path) -> list[str]:
    import pyarrow.parquet as pq

    return sorted(i for f in sorted(run.glob("documents/*/*.parquet"))
                  for i in pq.read_table(f, columns=["id"]).column("id").to_pylist())


def _shards(run: Path) -> dict[str, str]:
    import hashlib

    return {str(p.relative_to(run)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((run / "shards").rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def setup(installed, sample, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("loss_pool")
    cfg = yaml.safe_load((REPO / "data_manifests" / "sources" / "demo.yaml").read_text())
    cfg.update(name="loss-pool", input_root=str(sample))
    cfg["decontamination"]["tasks"] = [str(sample / "eval_tasks" / "*.jsonl")]
    (tmp / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    ref = installed.run(["mtnlg", "curate", "--config", str(tmp / "cfg.yaml"), "--output",
                         str(tmp / "reference"), "--direct_num_workers", "1"], cwd=tmp, timeout=GUARD_S)
    assert ref.returncode == 0, ref.stderr[-3000:]
    shutil.copy(HERE / "job_service.py", tmp / "job_service.py")
    shutil.copytree(REPO / "tests" / "worker_hold", tmp / "worker_hold")
    return tmp


@pytest.mark.parametrize("stage", ["read", "dedup"])
def test_a_pool_harness_killed_mid_stage_stops_the_job_and_resume_ends_equal(installed, setup, tmp_path,
                                                                            stage):
    tmp = setup
    hold = tmp_path / "hold"
    hold.mkdir()
    job_port, pool_port = free_port(), free_port()
    job = installed.popen(["python", str(tmp / "job_service.py"), "--port", str(job_port)], cwd=tmp_path,
                          log=tmp_path / "job_service.log")
    pool = installed.popen(["python", "-m", "apache_beam.runners.worker.worker_pool_main",
                            "--service_port", str(pool_port)], cwd=tmp_path, log=tmp_path / "pool.log",
                           PYTHONPATH=str(tmp / "worker_hold"), MTNLG_TEST_HOLD=stage,
                           MTNLG_TEST_HOLD_DIR=str(hold))
    run = tmp_path / "run"
    portable = ["--runner", "PortableRunner", "--job_endpoint", f"127.0.0.1:{job_port}",
                "--environment_type", "EXTERNAL", "--environment_config", f"127.0.0.1:{pool_port}",
                "--direct_num_workers", "2"]
    try:
        wait_for_port(job_port, job, "job service")
        wait_for_port(pool_port, pool, "worker pool")
        curate = installed.popen(["mtnlg", "curate", "--config", str(tmp / "cfg.yaml"), "--output",
                                  str(run), *portable], cwd=tmp_path, log=tmp_path / "curate.out")
        deadline = time.monotonic() + GUARD_S
        while not (hold / "holding").exists():
            assert curate.poll() is None, (tmp_path / "curate.out").read_text()[-3000:]
            assert time.monotonic() < deadline, "no harness was held"
            time.sleep(0.05)
        os.kill(int((hold / "holding").read_text()), signal.SIGKILL)
        assert curate.wait(GUARD_S) == 1  # stops on its own: no hang
        out = (tmp_path / "curate.out").read_text()
        lines = [ln for ln in out.splitlines() if ln.startswith("mtnlg curate: ")]
        assert len(lines) == 1 and lines[0].startswith("mtnlg curate: a Beam worker process was lost"), out[-3000:]
        assert "Traceback" not in out and "Traceback" in (run / "logs" / "curate.log").read_text()
        resume = lines[0].split("Finish the run with: ")[1].split()
        assert resume[:2] == ["mtnlg", "curate"] and resume[-2:] == ["--resume", str(run)]
        proc = installed.run(resume, cwd=tmp_path, timeout=GUARD_S)
    finally:
        stop(job)
        stop(pool)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    a, b = (json.loads((r / "run.json").read_text()) for r in (tmp / "reference", run))
    assert b["runner"] == "PortableRunner" and a["accounting_ok"] and b["accounting_ok"]
    assert b["sources"] == a["sources"] and b["totals"] == a["totals"]
    assert _kept(run) == _kept(tmp / "reference") and _kept(run)
    assert _shards(run) == _shards(tmp / "reference")
