"""A Beam SDK worker SIGKILLed mid-stage on the default local runner: the job stops with one line
that names the lost worker and the command to resume, leaves no staged files, and ``--resume``
ends equal to an uninterrupted run (the external pool: tests/cluster/test_worker_loss_pool.py)."""
import os
import signal
import subprocess
import sys
import time

import pytest

from pipeline_fixtures import REPO, run_result as _result, write_config, write_corpus

pytestmark = pytest.mark.slow
WORKERS = ["--direct_num_workers=2"]  # worker PROCESSES: the in-memory mode has none to lose
HOLD = os.path.join(REPO, "tests", "worker_hold")
GUARD_S = 600  # a hang guard, never a speed bound


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("worker_loss")
    write_corpus(str(tmp / "raw"))
    cfg = write_config(str(tmp / "cfg.yaml"), str(tmp / "raw"))
    out = str(tmp / "uninterrupted")
    proc = _curate(["--config", cfg, "--output", out])
    assert proc.wait(GUARD_S) == 0
    return tmp, cfg, _result(out)


def _curate(args, env=None, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pipelines.curate", *args, *WORKERS], cwd=REPO,
                            env=env or os.environ.copy(), text=True, **kw)


def wait_for(path: str, proc: subprocess.Popen) -> str:
    """The content of ``path`` once it exists (the held worker's pid); fails if ``proc`` ends first."""
    deadline = time.monotonic() + GUARD_S
    while not os.path.exists(path):
        assert proc.poll() is None, f"the job ended ({proc.returncode}) before a worker was held"
        assert time.monotonic() < deadline, "no worker was held"
        time.sleep(0.05)
    return open(path).read()


def kill_held_worker(args, stage: str, hold_dir: str, extra_env=None) -> tuple[int, str]:
    """Run curate until a worker holds in ``stage`` (``tests/worker_hold``), SIGKILL that worker
    and return the job's exit status and stderr."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HOLD, REPO, os.environ.get("PYTHONPATH", "")]),
               MTNLG_TEST_HOLD=stage, MTNLG_TEST_HOLD_DIR=hold_dir, **(extra_env or {}))
    proc = _curate(args, env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    pid = int(wait_for(os.path.join(hold_dir, "holding"), proc))
    os.kill(pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=GUARD_S)  # the job must stop on its own: no hang
    return proc.returncode, err


@pytest.mark.parametrize("stage", ["read", "dedup"])
def test_a_worker_killed_mid_stage_stops_the_job_with_a_resume_line_and_resume_ends_equal(
        corpus, tmp_path, stage):
    tmp, cfg, uninterrupted = corpus
    run = str(tmp_path / "run")
    code, err = kill_held_worker(["--config", cfg, "--output", run], stage, str(tmp_path))
    assert code == 1, err[-3000:]
    lines = [ln for ln in err.splitlines() if ln.startswith("mtnlg curate: ")]
    assert len(lines) == 1, err[-3000:]
    line = lines[0]
    assert line.startswith("mtnlg curate: a Beam worker process was lost (exit code 137: killed by "
                           "SIGKILL"), err[-3000:]
    assert f"--resume {run}" in line and "--output" not in line.split("Finish the run with:")[1]
    assert "Traceback" not in err  # Beam's tracebacks went to the log file
    assert "Traceback" in open(os.path.join(run, "logs", "curate.log")).read()
    staging = os.path.join(run, "_curate", "staging")
    assert not os.path.exists(staging) or not os.listdir(staging)  # nothing staged is left
    assert not os.path.exists(os.path.join(run, "run.json"))

    resume = line.split("Finish the run with: ")[1].split()
    assert resume[:2] == ["mtnlg", "curate"]
    proc = _curate(resume[2:])
    assert proc.wait(GUARD_S) == 0
    assert _result(run) == uninterrupted
