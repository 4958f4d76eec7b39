"""A full disk (ENOSPC on RUN's filesystem, a small tmpfs in the test's own mount namespace)
during a stage and during a commit: one line naming the path and the space, nothing committed,
no temporary file left, and ``--resume`` after space is freed ends equal to an uninterrupted
run (the run itself: full_disk_run.py)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from pipeline_fixtures import REPO, run_result, write_config, write_corpus

pytestmark = pytest.mark.slow
HERE = os.path.dirname(os.path.abspath(__file__))


def _can_mount() -> str | None:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return "needs root and unshare(1) to mount a tmpfs in its own mount namespace"
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            "mount -t tmpfs -o size=1m tmpfs /mnt"], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"cannot mount a tmpfs here: {probe.stderr.strip()}"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    why = _can_mount()
    if why:
        pytest.skip(why)
    tmp = tmp_path_factory.mktemp("full_disk")
    write_corpus(str(tmp / "raw"))
    cfg = write_config(str(tmp / "cfg.yaml"), str(tmp / "raw"))
    out = str(tmp / "uninterrupted")
    proc = subprocess.run([sys.executable, "-m", "pipelines.curate", "--config", cfg, "--output", out,
                           "--direct_num_workers=2"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tmp, cfg, run_result(out)


@pytest.mark.parametrize("when", ["stage", "commit"])
def test_a_full_disk_stops_with_one_line_and_resume_ends_equal(corpus, tmp_path, when):
    tmp, cfg, uninterrupted = corpus
    mount = tmp_path / "disk"
    mount.mkdir()
    script = os.path.join(HERE, "full_disk_run.py")
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable, script, when, cfg,
                           str(mount), str(tmp_path / "what.json"), str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    what = json.loads((tmp_path / "what.json").read_text())
    assert what["code"] == 1, what["stderr"][-3000:]
    lines = [ln for ln in what["stderr"].splitlines() if ln.startswith("mtnlg curate: ")]
    assert len(lines) == 1, what["stderr"][-3000:]
    line = lines[0]
    assert line.startswith("mtnlg curate: the disk is full: no space left on device writing "
                           f"{mount}/run"), line
    assert " free of " in line and "--resume " in line, line
    if when == "stage":
        assert "needs more than the" in line, line  # what it had staged, now removed
    assert "Traceback" not in what["stderr"]
    assert what["left"] == [] if when == "stage" else not [f for f in what["left"] if ".tmp-" in f]
    assert what["resume_code"] == 0, what["resume_stderr"]
    assert run_result(str(tmp_path / "run")) == uninterrupted
