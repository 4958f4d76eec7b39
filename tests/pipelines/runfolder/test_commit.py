"""RUN directories: ownership, staging, commit with a completion marker written last, roll-forward."""
import json
import os

import pytest

from pipelines import curate
from pipelines.runfolder.commit import RunDir, RunDirError, read_manifest
from pipeline_fixtures import write_config, write_corpus


def _write(path, data=b"x"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def _tree(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def test_output_that_merely_holds_stats_is_refused_and_left_alone(tmp_path):
    """`--output X` used to delete any folder holding a stats/ subfolder."""
    raw = tmp_path / "raw"
    write_corpus(str(raw))
    cfg = write_config(str(tmp_path / "c.yaml"), str(raw))
    out = tmp_path / "theirs"
    _write(str(out / "stats" / "thesis.tex"), b"four years of work")
    _write(str(out / "notes.txt"))
    assert curate.run(["--config", cfg, "--output", str(out)]) == 2
    assert _tree(out) == ["notes.txt", os.path.join("stats", "thesis.tex")]


def test_overwrite_replaces_only_the_names_a_run_writes(tmp_path):
    rd = RunDir(str(tmp_path / "run"))
    _write(rd.path("stats", "old.parquet"))
    _write(rd.path("notes.txt"))
    with pytest.raises(RunDirError, match="--overwrite"):
        rd.prepare("fp")
    rd.prepare("fp", overwrite=True)
    assert _tree(rd.root) == ["_curate/owner.json", "notes.txt"]
    # A RUN of ours is replaced without --overwrite (a rerun).
    _write(rd.path("stats", "counts.parquet"))
    rd.prepare("fp2")
    assert _tree(rd.root) == ["_curate/owner.json", "notes.txt"]


def test_resume_needs_a_run_of_ours_with_the_same_fingerprint(tmp_path):
    rd = RunDir(str(tmp_path / "run"))
    with pytest.raises(RunDirError, match="no curate run"):
        rd.prepare("fp", resume=True)
    rd.prepare("fp")
    with pytest.raises(RunDirError, match="different configuration"):
        rd.prepare("other", resume=True)
    rd.prepare("fp", resume=True)


def _staged_attempt(rd, stage="dedup"):
    a = rd.new_attempt(stage)
    _write(os.path.join(a.staging, "_w", "stats", "documents", "dedup-aaaa.parquet"), b"rows")
    _write(os.path.join(a.staging, "_w", "stats", "documents", "dedup-orphan.parquet"), b"dup")
    _write(os.path.join(a.staging, "_manifest", "dedup.json"), json.dumps(
        [{"path": "_w/stats/documents/dedup-aaaa.parquet", "dest": "stats/documents/dedup", "rows": 1}]).encode())
    _write(os.path.join(a.staging, "dedup", "groups-00000-of-00001.parquet"), b"beam writer")
    _write(os.path.join(a.staging, "dedup", "beam-temp-groups-123", "x"), b"tmp")
    _write(os.path.join(a.staging, "_tmp", "runs", "r.parquet"), b"tmp")
    return a


def test_commit_moves_listed_and_beam_files_then_writes_the_marker(tmp_path):
    rd = RunDir(str(tmp_path / "run"))
    rd.prepare("fp")
    a = _staged_attempt(rd)
    assert rd.done("dedup") is None  # staged files are not a result
    assert len(read_manifest(a.staging)) == 1
    rd.commit([a], "fp", {"dedup": {"parts": []}})
    files = ["dedup/groups-00000-of-00001.parquet", "stats/documents/dedup-aaaa.parquet"]
    m = rd.done("dedup", "fp")
    assert m["files"] == files and m["parts"] == []
    assert _tree(rd.root) == sorted(files + ["_curate/dedup.done.json", "_curate/owner.json"])
    assert rd.done("dedup", "another fingerprint") is None


def test_a_commit_killed_during_the_renames_is_rolled_forward(tmp_path, monkeypatch):
    rd = RunDir(str(tmp_path / "run"))
    rd.prepare("fp")
    a = _staged_attempt(rd)
    from pipelines.runfolder import commit

    def dying_rename_all(moves):  # killed after the first of the renames
        assert len(moves) > 1
        src, dst = moves[0]
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        os.replace(src, dst)
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(commit, "rename_all", dying_rename_all)
    with pytest.raises(KeyboardInterrupt):
        rd.commit([a], "fp")
    assert rd.done("dedup") is None  # half-renamed: not a result yet
    monkeypatch.undo()
    rd.prepare("fp", resume=True)  # finishes the commit from its list
    assert rd.done("dedup", "fp")["files"] == ["dedup/groups-00000-of-00001.parquet",
                                               "stats/documents/dedup-aaaa.parquet"]
    assert not os.path.exists(rd.control("staging"))


def test_resume_drops_unfinished_staging_and_uncommit_removes_a_stage(tmp_path):
    rd = RunDir(str(tmp_path / "run"))
    rd.prepare("fp")
    rd.commit([_staged_attempt(rd)], "fp")
    half = rd.new_attempt("decontaminate")
    _write(os.path.join(half.staging, "_w", "stats", "documents", "decontaminate-x.parquet"))
    rd.prepare("fp", resume=True)
    assert not os.path.exists(half.staging) and rd.done("decontaminate") is None
    rd.uncommit("dedup")
    assert rd.done("dedup") is None
    assert _tree(rd.root) == ["_curate/owner.json"]


def test_an_uncommit_killed_half_way_is_finished_before_the_stage_runs_again(tmp_path):
    from pipelines.runfolder.commit import _write_json

    rd = RunDir(str(tmp_path / "run"))
    rd.prepare("fp")
    rd.commit([_staged_attempt(rd)], "fp")
    files = rd.done("dedup")["files"]
    # what a run killed right after removing the marker leaves: the list, the marker gone
    _write_json(rd.uncommit_path("dedup"), {"stage": "dedup", "files": files})
    os.remove(rd.marker_path("dedup"))
    rd.prepare("fp", resume=True)
    assert _tree(rd.root) == ["_curate/owner.json"]  # no file of the un-marked stage is left
