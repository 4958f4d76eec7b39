"""The rank server the multi-process tests fork their ranks from (spawn.run): a rank's failure
fails the job with its traceback, a job past its timeout is killed with all its ranks, and each
job gets torchrun's environment plus the caller's."""
import time
from pathlib import Path

import pytest

import spawn

pytestmark = pytest.mark.xdist_group(spawn.RANK_SERVER_GROUP)

WORKER = Path(__file__).with_name("failing_worker.py")


def test_each_rank_gets_torchruns_environment_and_the_callers():
    rc, log = spawn.run(2, WORKER, "env", env={"MARK": "x1"})
    assert rc == 0, log
    assert "rank 0 of 2 MARK=x1" in log and "rank 1 of 2 MARK=x1" in log


def test_a_worker_that_cannot_be_imported_fails_its_job_not_the_server(tmp_path):
    broken = tmp_path / "broken_worker.py"
    broken.write_text("import no_such_module_here\n")
    rc, log = spawn.run(2, broken)
    assert rc == 1 and "no_such_module_here" in log
    assert spawn.run(2, WORKER, "env")[0] == 0


def test_a_rank_that_raises_fails_the_job_with_its_traceback():
    rc, log = spawn.run(2, WORKER, "raise")
    assert rc == 1
    assert "rank 1 fails on purpose" in log


def test_a_job_past_its_timeout_is_killed_with_its_ranks(tmp_path):
    # the timeout counts from the moment both ranks are up (however long the fork took)
    up = lambda: len(list(tmp_path.glob("rank?"))) == 2  # noqa: E731
    rc, log = spawn.run(2, WORKER, "hang", timeout=1, env={"PIDS": str(tmp_path)}, ready=up)
    assert rc == -9
    pids = [int(p.read_text()) for p in sorted(tmp_path.glob("rank?"))]
    assert len(pids) == 2, log
    # gone (their parent, the job leader, was killed with them: init reaps them; the deadline
    # only stops a test whose ranks survived from waiting forever)
    deadline = time.time() + 120
    while time.time() < deadline and any(Path(f"/proc/{pid}").exists() for pid in pids):
        time.sleep(0.1)
    assert not [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    rc, _ = spawn.run(2, WORKER, "env")  # the server goes on serving
    assert rc == 0
