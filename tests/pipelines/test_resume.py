"""Killed runs: nothing final-named before a commit, --resume equals an uninterrupted run,
a stage rerun alone gives the same output, and a stage without its marker is never a result."""
import glob
import json
import os
import signal
import subprocess
import sys

import pytest

from pipelines import curate
from pipeline_fixtures import REPO, run_result as _result, write_config, write_corpus

pytestmark = pytest.mark.slow
FAST = ["--direct_running_mode=in_memory", "--direct_num_workers=1"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("resume")
    write_corpus(str(tmp / "raw"))
    return tmp, write_config(str(tmp / "cfg.yaml"), str(tmp / "raw"))


@pytest.fixture(scope="module")
def uninterrupted(corpus):
    tmp, cfg = corpus
    out = str(tmp / "single")
    assert curate.run(["--config", cfg, "--output", out] + FAST) == 0
    return out


# `mtnlg curate` in a process that SIGKILLs its own process group when the commit of a stage
# (argv[1]) begins: every output of that stage is staged, none renamed yet.  The kill lands at
# that point whatever the machine's speed (a watcher polling the files for it could come late).
KILLED_AT_COMMIT = """
import os, signal, sys
from pipelines import curate
from pipelines.runfolder.commit import RunDir

stage, commit = sys.argv[1], RunDir.commit

def dying_commit(self, attempts, fp, info=None):
    attempts = list(attempts)
    if stage in [a.stage for a in attempts]:
        os.killpg(0, signal.SIGKILL)
    return commit(self, attempts, fp, info)

RunDir.commit = dying_commit
sys.exit(curate.run(sys.argv[2:]))
"""


def _killed_at_commit(stage: str, args) -> None:
    """Run curate with ``args`` until the commit of ``stage`` begins, and SIGKILL it there."""
    proc = subprocess.run([sys.executable, "-c", KILLED_AT_COMMIT, stage] + args + FAST, cwd=REPO,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          start_new_session=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]  # killed there, not ended


def _final_files(run):
    """Result files under RUN with a final name: outside the control folder (staging, markers),
    Beam writers' temporary folders and logs/ (the job's log is written as it runs)."""
    return sorted(os.path.relpath(os.path.join(d, f), run) for d, _, fs in os.walk(run) for f in fs
                  if not os.path.relpath(d, run).startswith(("_curate", "logs"))
                  and "beam-temp-" not in d)


def test_sigkill_half_way_leaves_no_final_named_files(corpus, tmp_path):
    """Killed when every stage has written all it writes and the commit is about to begin."""
    _, cfg = corpus
    run = str(tmp_path / "run")
    _killed_at_commit("read", ["--config", cfg, "--output", run])
    staging = os.path.join(run, "_curate", "staging")
    assert any(fs for _, _, fs in os.walk(staging))  # the stages' outputs, staged
    assert _final_files(run) == []
    assert not os.path.exists(os.path.join(run, "run.json"))


def test_a_stage_rerun_alone_gives_the_same_output(corpus, uninterrupted, tmp_path):
    import shutil

    _, cfg = corpus
    run = str(tmp_path / "run")
    shutil.copytree(uninterrupted, run)
    before = _result(run)
    shard_bytes = {p: open(p, "rb").read() for p in glob.glob(os.path.join(run, "shards", "*", "*"))}
    for stage in ("dedup", "tokenize"):
        old = json.load(open(os.path.join(run, "_curate", f"{stage}.done.json")))
        assert curate.run(["--config", cfg, "--output", run, "--stage", stage] + FAST) == 0
        new = json.load(open(os.path.join(run, "_curate", f"{stage}.done.json")))
        assert new["attempt"] != old["attempt"]  # it did run again
        assert _result(run) == before, stage
    assert {p: open(p, "rb").read() for p in shard_bytes} == shard_bytes


def test_run_killed_after_dedup_resumes_to_the_uninterrupted_result(corpus, uninterrupted, tmp_path):
    """SIGKILL once the decontaminate stage has staged its outputs, before its commit (read and
    dedup committed): its staged files are not a result; --resume keeps read and dedup, runs the
    rest again, and gives the same run."""
    _, cfg = corpus
    run = str(tmp_path / "run")
    _killed_at_commit("decontaminate", ["--config", cfg, "--output", run, "--staged"])
    staged = os.path.join(run, "_curate", "staging")
    dedup = json.load(open(os.path.join(run, "_curate", "dedup.done.json")))
    assert not os.path.exists(os.path.join(run, "_curate", "decontaminate.done.json"))
    killed = {d.split("decontaminate-")[1].split(os.sep)[0] for d, _, fs in os.walk(staged)
              if "decontaminate-" in d and fs}
    final = _final_files(run)
    assert killed and not any(f.startswith(("stages/decontaminate", "stats/documents/decontaminate",
                                            "shards", "documents", "run.json")) for f in final)
    from blending.build import _read_run_json
    from blending.manifest import ManifestError

    with pytest.raises(ManifestError):
        _read_run_json(run)  # blend refuses a RUN without run.json
    assert curate.run(["--config", cfg, "--resume", run] + FAST) == 0
    # dedup was kept (a kill before its commit list was removed only finishes the commit) ...
    assert json.load(open(os.path.join(run, "_curate", "dedup.done.json")))["attempt"] == dedup["attempt"]
    # ... decontaminate ran again: the killed attempt's files were never taken as its result
    assert json.load(open(os.path.join(run, "_curate", "decontaminate.done.json")))["attempt"] not in killed
    got = _result(run)
    assert got["duplicated_rows"] == 0
    assert got == _result(uninterrupted)
