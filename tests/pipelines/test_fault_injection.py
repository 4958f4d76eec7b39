"""Bad input never kills, hangs or silently shrinks the curate job: the fault-injected corpus.

``fault_corpus.write_fault_corpus`` plants every kind of hostile input we know in the four raw
formats (see its docstring) and says, per kind, the one outcome it must end in.  The real curate
job runs ONCE over all of it, in a subprocess stopped if it ever hangs (``HANG_S``), and the
tests check:

- every kind ends where it must: kept (by id), removed with its reason, or dead-lettered with
  its error at its input location; inputs with no document leave no trace;
- ``read = kept + removed + dead_lettered`` per source, and ``read`` equals the planted kinds
  (nothing unaccounted for, nothing counted twice);
- duplicate input files are refused before any work (exit 2, no output folder);
- the dashboard of this run carries no raw control characters.
"""
from __future__ import annotations

import glob
import gzip
import json
import os
import subprocess
import sys
from collections import Counter

import pandas as pd
import pytest

from fault_corpus import FAULT_INPUTS, write_fault_corpus
from pipeline_fixtures import REPO, write_config
from pipelines import curate

pytestmark = pytest.mark.slow

HANG_S = 1200
"""A run still going after this long is one that blocked (every kind is read in time linear in
its decompressed size, and nothing may block): it is stopped and the test fails, instead of
the suite waiting forever.  Far above what the run takes on a slow or loaded machine: no
speed is asserted."""


def _config(tmp, root: str, inputs=None) -> str:
    return write_config(str(tmp / "cfg.yaml"), root, inputs=inputs or FAULT_INPUTS,
                        decontamination={"tasks": ["tasks/*.jsonl"]}, heuristics={"min_words": 5})


@pytest.fixture(scope="module")
def fault_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("faults")
    root = str(tmp / "raw")
    kinds = write_fault_corpus(root)
    out = str(tmp / "run")
    proc = subprocess.run([sys.executable, "-m", "pipelines.curate", "--config", _config(tmp, root),
                           "--output", out, "--runner=FnApiRunner"],
                          cwd=REPO, capture_output=True, text=True, timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return {"run": out, "root": root, "kinds": kinds, "tmp": tmp}


def _dead_letters(run_dir: str) -> dict[str, str]:
    """location -> error."""
    return {d["location"]: d["error"] for f in glob.glob(os.path.join(run_dir, "dead_letter", "*.jsonl.gz"))
            for d in map(json.loads, gzip.open(f, "rt", encoding="utf-8"))}


def _outcome(kind, rows: pd.DataFrame, dead: dict[str, str], root: str) -> str:
    """What happened to one planted kind, in the words of the closing table."""
    if kind.outcome == "none":
        rel = kind.key
        hits = [i for i in rows.index if rel in i]
        return "nothing read" if not hits else f"rows {hits}"
    if kind.outcome == "dead_letter":
        loc = os.path.join(root, kind.key)
        if loc not in dead:
            return "missing"
        return f"dead_letter: {dead[loc][:60]}"
    if kind.key not in rows.index:
        return "missing"
    row = rows.loc[kind.key]
    return row.outcome if row.outcome == "kept" else f"{row.outcome}: {row.stage}/{row.reason}"


def test_every_kind_ends_where_it_must(fault_run):
    run_dir, root = fault_run["run"], fault_run["root"]
    rows = pd.read_parquet(os.path.join(run_dir, "stats", "documents")).set_index("id")
    dead = _dead_letters(run_dir)
    wrong = []
    for k in fault_run["kinds"]:
        got = _outcome(k, rows, dead, root)
        ok = {"none": got == "nothing read",
              "kept": got == "kept",
              "removed": got.startswith("removed") and (k.reason is None or got.endswith("/" + k.reason)),
              "dead_letter": got.startswith("dead_letter") and dead.get(os.path.join(root, k.key), "")
              .startswith(k.reason or "")}[k.outcome]
        if not ok:
            wrong.append(f"{k.name}: expected {k.outcome} {k.reason or ''} at {k.key!r}, got {got}")
    assert not wrong, "\n".join(wrong)


def test_accounting_holds_per_source_and_nothing_is_unaccounted(fault_run):
    info = json.load(open(os.path.join(fault_run["run"], "run.json")))
    assert info["accounting_ok"]
    for name, s in info["sources"].items():
        assert s["read"] == s["kept"] + sum(s["removed"].values()) + s["dead_lettered"], name
    planted = Counter(k.source for k in fault_run["kinds"] if k.outcome != "none")
    assert {name: s["read"] for name, s in info["sources"].items()} == dict(planted)


def test_run_json_records_the_input_root_of_the_ids(fault_run):
    info = json.load(open(os.path.join(fault_run["run"], "run.json")))
    assert info["input_root"] == fault_run["root"]
    rows = pd.read_parquet(os.path.join(fault_run["run"], "stats", "documents"))
    assert rows.id.is_unique


def test_duplicate_input_files_are_refused_before_any_work(fault_run, capsys, monkeypatch):
    import apache_beam as beam

    tmp, root = fault_run["tmp"], fault_run["root"]
    inputs = FAULT_INPUTS + [{"reader": "pile", "paths": ["pile/mixed.jsonl.zst"]}]
    out = tmp / "dup-run"
    built = []  # no Beam job may even be built
    monkeypatch.setattr(beam, "Pipeline", lambda *args, **kwargs: built.append(args))
    assert curate.run(["--config", _config(tmp, root, inputs), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"inputs[{len(FAULT_INPUTS)}].paths[0]" in err and "already matched by inputs[0].paths[0]" in err
    assert not out.exists() and built == []


def test_takedown_finds_documents_by_their_escaped_ids(fault_run, tmp_path):
    """Ids with escapes (``%3A``, ``%23``, ``%FF``) and a backslash are looked up like any other:
    one a line in the request file, exactly as the documents table spells them."""
    import shutil

    from pipelines.runfolder import takedown

    run = str(tmp_path / "run")
    shutil.copytree(fault_run["run"], run)
    ids = ["realnews/realnews/names/a.jsonl%3A0", "cc_2020_50/cc/x.warc.gz%231",
           "realnews/realnews/byte%FF.jsonl:0", "realnews/realnews/back\\slash.jsonl:0"]
    request = tmp_path / "ids.txt"
    request.write_text("".join(i + "\n" for i in ids))
    kept_before = _shard_documents(run)
    assert set(ids) <= kept_before
    assert takedown.main(["--run", run, "--ids", str(request)]) == 0
    entry = json.load(open(os.path.join(run, "run.json")))["takedowns"][-1]
    assert sorted(entry["ids"]) == sorted(ids) and entry["unknown"] == []
    assert _shard_documents(run) == kept_before - set(ids)  # the neighbours named alike stay


def _shard_documents(run: str) -> set[str]:
    return set(pd.concat(pd.read_parquet(f, columns=["id"])
                         for f in glob.glob(os.path.join(run, "documents", "*", "*.parquet"))).id)


def test_dashboard_of_the_fault_run_has_no_raw_control_characters(fault_run):
    from mtnlg.dashboard import build_dashboard

    page = build_dashboard([fault_run["run"]], fault_run["tmp"] / "dashboard.html").read_bytes()
    text = page.decode("utf-8")
    assert not any(c in text for c in "\x00\x01\x07\x1b\x7f")
