"""``curate --dedup-against``: the sample corpus as two snapshots, old + new against it == joint.

The embedded sample (``mtnlg sample-data``) is split by source: the "old snapshot" is the Pile
and CC-2020-50, the "new" one RealNews, CC-Stories and CC-2021-04 (the sample plants exact and
near duplicates across that split and inside the new half).  One config ranks every old source
above every new one; three runs use it with different inputs: old, new ``--dedup-against`` old,
and one joint run over both.
"""
import glob
import gzip
import hashlib
import json
import os
import shutil

import pyarrow.parquet as pq
import pytest
import yaml

from curation.sources import SOURCE_BY_SLUG
from infra.resources import config_path
from pipelines import curate
from pipelines.dedup.index import INDEX_DIR, PARAMS
from pipelines.driver.dedup_against import check_against
from pipelines.runfolder.takedown_files import remove_from_index

pytestmark = pytest.mark.slow

OLD = ["pile", "cc_2020_50"]
PRIORITY = ["wikipedia", "books3", "gutenberg_pg19", "bookcorpus2", "arxiv", "pubmed_abstracts",
            "nih_exporter", "github", "stackexchange", "openwebtext2", "pile_cc", "cc_2020_50",
            "realnews", "cc_stories", "cc_2021_04"]
NEW_SOURCES = {"realnews", "cc_stories", "cc_2021_04"}


def _config(tmp, name: str, which: str, **fuzzy) -> str:
    with open(config_path("sources", "demo")) as f:
        cfg = yaml.safe_load(f)
    inputs = cfg["inputs"]
    is_old = [i.get("reader") == "pile" or i.get("source") == "cc_2020_50" for i in inputs]
    cfg["inputs"] = [i for i, o in zip(inputs, is_old) if which == "joint" or o == (which == "old")]
    cfg["priority"] = PRIORITY
    cfg["dedup"]["fuzzy"].update(fuzzy)
    # Dedup decides alone: the filters pass every source (more documents reach dedup) and the
    # stages after it that remove nothing here are off (a third less CPU per run).
    cfg["skip_sources"] = {"language": sorted(SOURCE_BY_SLUG), "heuristics": sorted(SOURCE_BY_SLUG)}
    cfg["decontamination"] = {"enabled": False}
    cfg["pii"] = {"enabled": False}
    path = os.path.join(str(tmp), f"{name}.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    return path


def _curate(cfg: str, root: str, out: str, *extra: str) -> int:
    """One curate run, in process (the FnApiRunner still pickles every DoFn to its worker)."""
    return curate.run(["--config", cfg, "--input-root", root, "--output", out, *extra,
                       "--direct_running_mode=in_memory", "--direct_num_workers=1"])


def _tree_sha256(root: str) -> dict[str, str]:
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return out


def _kept(run: str) -> set[str]:
    ids = set()
    for path in glob.glob(os.path.join(run, "documents", "*", "*.parquet")):
        ids.update(pq.read_table(path, columns=["id"]).column("id").to_pylist())
    return ids


def _index_rows(run: str, columns=None) -> list[dict]:
    paths = sorted(glob.glob(os.path.join(run, INDEX_DIR, "*.parquet")))
    return pq.read_table(paths, columns=columns).to_pylist() if paths else []


def _removed(run: str, stage: str) -> list[dict]:
    rows = []
    for path in glob.glob(os.path.join(run, "removed", stage, "*.jsonl.gz")):
        with gzip.open(path, "rt") as f:
            rows.extend(json.loads(line) for line in f)
    return rows


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from mtnlg.sample_data import write_sample_corpus

    tmp = tmp_path_factory.mktemp("against")
    root = str(tmp / "sample")
    write_sample_corpus(root, docs=300)  # still plants exact and near copies across the split
    out = {"root": root, "tmp": tmp}
    for which in ("old", "joint"):
        out[which] = str(tmp / which)
        assert _curate(_config(tmp, which, which), root, out[which]) == 0
    out["old_sha"] = _tree_sha256(out["old"])
    out["new"] = str(tmp / "new")
    out["new_cfg"] = _config(tmp, "new", "new")
    assert _curate(out["new_cfg"], root, out["new"], "--dedup-against", out["old"]) == 0
    return out


def test_old_plus_new_against_old_keeps_what_one_joint_run_keeps(runs):
    old, new, joint = _kept(runs["old"]), _kept(runs["new"]), _kept(runs["joint"])
    assert old and new
    assert old | new == joint
    # ... and dedup removed the same new documents, those matching the old run with the new reasons
    joint_removed = {r["id"] for s in ("exact_dedup", "fuzzy_dedup") for r in _removed(runs["joint"], s)
                     if r["source"] in NEW_SOURCES}
    new_removed = [r for s in ("exact_dedup", "fuzzy_dedup") for r in _removed(runs["new"], s)]
    assert {r["id"] for r in new_removed} == joint_removed
    against = [r for r in new_removed if r["reason"].startswith("dedup_against/")]
    assert {r["reason"] for r in against} == {"dedup_against/exact", "dedup_against/fuzzy"}
    old_ids = {r["id"] for r in _index_rows(runs["old"], ["id"])}
    for r in against:  # the older document's id (as the old run has it) and source
        assert r["detail"]["kept"] in old_ids and r["detail"]["kept_source"] not in NEW_SOURCES


def test_old_run_is_byte_identical_after(runs):
    assert _tree_sha256(runs["old"]) == runs["old_sha"]


def test_new_run_accounts_for_every_document_and_records_its_older_runs(runs):
    info = json.load(open(os.path.join(runs["new"], "run.json")))
    assert info["accounting_ok"]
    for src, row in info["sources"].items():
        assert row["read"] == row["kept"] + sum(row["removed"].values()) + row["dead_lettered"], src
    assert [a["run"] for a in info["dedup_against"]] == [runs["old"]]
    groups = pq.read_table(os.path.join(runs["new"], "dedup")).to_pylist()
    rows = [g for g in groups if g["reason"].startswith("dedup_against/")]
    assert rows and all(g["kept_source"] not in NEW_SOURCES and not g["kept"] for g in rows)
    assert all(g["source"] in NEW_SOURCES for g in groups if g["reason"] != "older_run")


def test_new_run_writes_its_own_index_for_chaining(runs):
    params = json.load(open(os.path.join(runs["new"], INDEX_DIR, PARAMS)))
    rows = _index_rows(runs["new"])
    assert params["documents"] == len(rows) > 0
    assert {r["source"] for r in rows} <= NEW_SOURCES
    assert not any(r["id"] in {x["id"] for x in _removed(runs["new"], "exact_dedup")} for r in rows)
    (ix,) = check_against([runs["new"]], "/elsewhere", True, _fuzzy(runs))
    assert ix.documents == len(rows)


def _fuzzy(runs):
    from pipelines.config.job import load_config

    return load_config(runs["new_cfg"], input_root=runs["root"]).dedup.fuzzy


def _refused(runs, capsys, *args, cfg=None) -> str:
    out = str(runs["tmp"] / "refused")
    rc = _curate(cfg or runs["new_cfg"], runs["root"], out, *args)
    assert rc == 2 and not os.path.exists(out)  # before any work: RUN was not even created
    return capsys.readouterr().err


def test_mismatched_parameters_fail_before_any_work_naming_them(runs, capsys):
    cfg = _config(runs["tmp"], "np64", "new", num_perm=64)
    err = _refused(runs, capsys, "--dedup-against", runs["old"], cfg=cfg)
    assert f"num_perm: this run 64, {runs['old']} 100" in err


def test_missing_run_missing_index_and_modified_index_fail_before_any_work(runs, capsys):
    err = _refused(runs, capsys, "--dedup-against", str(runs["tmp"] / "nope"))
    assert "no finished curate run" in err
    broken = str(runs["tmp"] / "broken")
    shutil.copytree(runs["old"], broken)
    part = sorted(glob.glob(os.path.join(broken, INDEX_DIR, "*.parquet")))[0]
    with open(part, "ab") as f:
        f.write(b"x")
    err = _refused(runs, capsys, "--dedup-against", broken)
    assert "sha256" in err and os.path.basename(part) in err
    os.remove(os.path.join(broken, INDEX_DIR, PARAMS))
    err = _refused(runs, capsys, "--dedup-against", broken)
    assert "no dedup index" in err


def test_a_priority_that_ranks_new_sources_first_is_warned_about(runs, caplog):
    from pipelines.config.job import load_config
    from pipelines.driver.dedup_against import preflight

    out = str(runs["tmp"] / "not-made")
    with caplog.at_level("WARNING", logger="mtnlg.curate"):
        preflight(load_config(runs["new_cfg"], runs["root"]), [runs["old"]], out)
    assert "ranks some of its sources above" not in caplog.text  # the anchor's order: no advice
    caplog.clear()
    with open(runs["new_cfg"]) as f:
        cfg = yaml.safe_load(f)
    del cfg["priority"]  # the default order ranks realnews and cc_stories above cc_2020_50
    path = str(runs["tmp"] / "default-priority.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    with caplog.at_level("WARNING", logger="mtnlg.curate"):
        preflight(load_config(path, runs["root"]), [runs["old"]], out)
    assert "ranks some of its sources above" in caplog.text
    assert "realnews > cc_2020_50" in caplog.text and not os.path.exists(out)


def test_remove_from_index_rewrites_only_the_parts_holding_the_ids(runs):
    copy = str(runs["tmp"] / "takedown")
    shutil.copytree(runs["old"], copy)
    before = json.load(open(os.path.join(copy, INDEX_DIR, PARAMS)))
    rows = _index_rows(copy, ["id"])
    gone = [rows[0]["id"], rows[-1]["id"]]
    assert remove_from_index(copy, gone + ["not/an/id:0"]) == 2
    after = json.load(open(os.path.join(copy, INDEX_DIR, PARAMS)))
    left = [r["id"] for r in _index_rows(copy, ["id"])]
    assert after["documents"] == len(left) == len(rows) - 2 and not set(gone) & set(left)
    unchanged = {p["name"] for p in before["parts"]} & {p["name"] for p in after["parts"]}
    assert len(unchanged) >= len(before["parts"]) - 2  # only the parts with those ids changed
    check_against([copy], "/elsewhere", True, _fuzzy(runs))  # checksums match again
    assert remove_from_index(copy, gone) == 0


def test_dashboard_shows_how_much_of_each_source_was_already_present(runs):
    from mtnlg.dashboard.loader import load_run
    from mtnlg.dashboard.panels_dedup import already_present, dedup
    from mtnlg.dashboard.render import build_report, render_html

    run = load_run(runs["new"])
    rows = {r["source"]: r for r in already_present(run)}
    info = json.load(open(os.path.join(runs["new"], "run.json")))
    for src, r in rows.items():  # the same numbers as run.json's accounting
        removed = info["sources"][src]["removed"]
        assert r["exact"] == removed.get("exact_dedup/dedup_against/exact", 0)
        assert r["fuzzy"] == removed.get("fuzzy_dedup/dedup_against/fuzzy", 0)
        assert 0 < r["present"] <= r["reached_dedup"]
    assert set(rows) == {s for s, v in info["sources"].items() if any("dedup_against" in k for k in v["removed"])}
    section = dedup([run], {})
    assert "Already present in older runs" in section and runs["old"] in section
    assert "Already present in older runs" in render_html(build_report([run]))
    assert "Already present in older runs" not in dedup([load_run(runs["joint"])], {})
