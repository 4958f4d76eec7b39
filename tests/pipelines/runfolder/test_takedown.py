"""`mtnlg takedown` and shard provenance on a small multi-shard curated run of the sample corpus.

One run is curated per module (a few hundred documents, small shards so every source has
several); each test works on its own copy.
"""
from __future__ import annotations

import glob
import gzip
import hashlib
import json
import os
import shutil

import numpy as np
import pandas as pd
import pytest
import yaml

from blending.indexed_dataset import IndexedDataset
from infra.hashing import file_sha256
from pipelines.runfolder import takedown
from pipelines.tokenize.shards import locate

pytestmark = pytest.mark.slow
FAST = ["--direct_running_mode=in_memory", "--direct_num_workers=1"]
NGRAM = 13


@pytest.fixture(scope="module")
def curated(tmp_path_factory):
    from mtnlg import sample_data
    from infra.resources import config_path, local_path
    from pipelines import curate

    tmp = tmp_path_factory.mktemp("takedown")
    assert sample_data.main([str(tmp / "raw"), "--docs", "200"]) == 0
    with open(local_path(config_path("sources", "demo"))) as f:
        cfg = yaml.safe_load(f)
    cfg["shards"]["max_tokens_per_shard"] = 6_000
    with open(tmp / "cfg.yaml", "w") as f:
        yaml.safe_dump(cfg, f)
    run = str(tmp / "run")
    assert curate.run(["--config", str(tmp / "cfg.yaml"), "--input-root", str(tmp / "raw"),
                       "--output", run] + FAST) == 0
    return run


@pytest.fixture
def run(curated, tmp_path):
    copy = str(tmp_path / "run")
    shutil.copytree(curated, copy)
    return copy


def _tree(run: str) -> dict[str, str]:
    return {os.path.relpath(p, run): file_sha256(p)
            for p in glob.glob(os.path.join(run, "**"), recursive=True) if os.path.isfile(p)}


def _shards(run: str) -> pd.DataFrame:
    return pd.read_parquet(os.path.join(run, "stats", "shards.parquet"))


def _part(run: str, source: str, k: int) -> pd.DataFrame:
    return pd.read_parquet(os.path.join(run, "documents", source, f"part-{k:05d}.parquet"))


def _grams(tokens: np.ndarray) -> set[bytes]:
    t = np.ascontiguousarray(tokens.astype("<u4"))
    if len(t) < NGRAM:
        return set()
    w = np.lib.stride_tricks.sliding_window_view(t, NGRAM)
    return {row.tobytes() for row in w}


def _victims(run: str, n_shards: int = 3, per_shard: int = 2, sources=None) -> pd.DataFrame:
    """A few documents spread over several shards of several sources."""
    shards = _shards(run)
    multi = shards.groupby("source").filter(lambda g: len(g) > 1)
    if sources:
        multi = multi[multi["source"].isin(sources)]
    picks = []
    for _, sh in multi.sort_values(["source", "shard"]).head(n_shards).iterrows():
        part = _part(run, sh["source"], sh["shard"])
        picks.append(part.iloc[[0, len(part) // 2]].assign(shard=sh["shard"]).head(per_shard))
    return pd.concat(picks)


def test_the_run_has_several_shards_per_source(curated):
    shards = _shards(curated)
    assert (shards.groupby("source").size() > 1).sum() >= 2, shards


def test_every_token_range_maps_back_to_id_source_and_url(curated):
    for _, sh in _shards(curated).iterrows():
        part = _part(curated, sh["source"], sh["shard"])
        ds = IndexedDataset(os.path.join(curated, sh["prefix"]))
        assert len(part) == ds.documents
        assert (part["tokens"].to_numpy() == ds.sequence_lengths).all()
        starts = np.concatenate([[0], np.cumsum(ds.sequence_lengths)[:-1]])
        assert (part["token_start"].to_numpy() == starts).all()
        assert (part["source"] == sh["source"]).all()
        i = len(part) // 2
        hit = locate(curated, sh["source"], int(sh["shard"]), int(starts[i]) + 1)
        url = part["url"][i] if pd.notna(part["url"][i]) else None
        assert (hit["id"], hit["url"], hit["sequence"]) == (part["id"][i], url, i)
    web = pd.read_parquet(os.path.join(curated, "documents", "cc_2020_50"))
    assert web["url"].str.startswith("http").all()  # web sources carry their URL


def test_takedown_removes_the_text_and_leaves_every_other_shard_byte_identical(run, tmp_path, capsys):
    from mtnlg.commands import blend as blend_cli
    from blending.manifest import ManifestError, load_manifest
    from pipelines.runfolder.report import accounting

    victims = _victims(run)
    ids = victims["id"].tolist()
    manifest = str(tmp_path / "manifest.json")
    assert blend_cli.main(["--spec", "demo", "--run", run, "--output", manifest]) == 0
    old_totals = load_manifest(manifest).totals
    before = _tree(run)
    shards_before = _shards(run)
    # token 13-grams of the removed documents, and of everything else, before the takedown
    removed_grams, other_grams = set(), set()
    for _, sh in shards_before.iterrows():
        ds = IndexedDataset(os.path.join(run, sh["prefix"]))
        part_ids = _part(run, sh["source"], sh["shard"])["id"].tolist()
        for i, doc_id in enumerate(part_ids):
            (removed_grams if doc_id in ids else other_grams).update(_grams(np.array(ds[i])))
    unique = removed_grams - other_grams
    assert len(unique) > 0.9 * len(removed_grams) > 0  # the removed text is (nearly all) its own

    request = tmp_path / "ids.txt"
    request.write_text("# takedown request 42\n" + "\n".join(ids) + "\n\n")
    assert takedown.main(["--run", run, "--ids", str(request), "--manifest", manifest]) == 0
    assert "took down 6 documents" in capsys.readouterr().out

    info = json.load(open(os.path.join(run, "run.json")))
    entry = info["takedowns"][-1]
    assert entry["request_sha256"] == hashlib.sha256(request.read_bytes()).hexdigest()
    assert sorted(entry["ids"]) == sorted(ids) and entry["unknown"] == []
    rewritten = set(entry["shards_rewritten"])
    expected = {f"shards/{s}/{s}_{k:05d}" for s, k in zip(victims["source"], victims["shard"])}
    assert rewritten == expected

    # every other shard (and its documents part) is byte-identical; the rewritten ones changed
    after = _tree(run)
    for rel, digest in before.items():
        if rel.startswith("shards/") and not rel.endswith(".stamp.json"):  # (stamps: metadata)
            prefix = rel.rsplit(".", 1)[0]
            assert (after[rel] == digest) == (prefix not in rewritten), rel
    shards_after = _shards(run)
    for _, sh in shards_after.iterrows():  # the recorded checksums are the files' checksums
        assert file_sha256(os.path.join(run, sh["prefix"] + ".bin")) == sh["bin_sha256"]
        assert file_sha256(os.path.join(run, sh["prefix"] + ".idx")) == sh["idx_sha256"]

    # no 13-gram of the removed text is left in any shard; the documents parts agree
    for _, sh in shards_after.iterrows():
        ds = IndexedDataset(os.path.join(run, sh["prefix"]))
        part = _part(run, sh["source"], sh["shard"])
        assert len(part) == ds.documents and not set(part["id"]) & set(ids)
        assert (part["token_start"].to_numpy()
                == np.concatenate([[0], np.cumsum(ds.sequence_lengths)[:-1]])).all()
        for i in range(len(ds)):
            assert not _grams(np.array(ds[i])) & unique, (sh["prefix"], i)
    stage_parts = glob.glob(os.path.join(run, "stages", "*", "*.parquet"))
    assert stage_parts and all(not set(pd.read_parquet(p, columns=["id"])["id"]) & set(ids)
                               for p in stage_parts)

    # accounting: removed with reason takedown, per source and in every stats table
    stats = pd.read_parquet(os.path.join(run, "stats", "documents"))
    rows = stats[stats["id"].isin(ids)]
    assert len(rows) == len(ids) and set(zip(rows.outcome, rows.stage, rows.reason)) == {
        ("removed", "takedown", "takedown")}
    counts = pd.read_parquet(os.path.join(run, "stats", "counts.parquet"))
    reads = pd.read_parquet(os.path.join(run, "stats", "read_counts.parquet"))
    acc = accounting(counts.to_dict("records"), reads.to_dict("records"), shards_after.to_dict("records"))
    assert acc["sources"] == info["sources"] and info["accounting_ok"] is True
    for source, n in victims.groupby("source").size().items():
        s = info["sources"][source]
        assert s["removed"]["takedown/takedown"] == n
        assert s["read"] == s["kept"] + sum(s["removed"].values()) + s["dead_lettered"]
    assert counts.groupby("source")["documents"].sum().to_dict() == reads.set_index("source")["read"].to_dict()
    removed_files = glob.glob(os.path.join(run, "removed", "takedown", "*.jsonl.gz"))
    rows = [json.loads(l) for f in removed_files for l in gzip.open(f, "rt")]
    assert sorted(r["id"] for r in rows) == sorted(ids) and all(r["text"] is None for r in rows)

    # the new manifest version verifies; the old one fails clearly against the changed shards
    new = entry["manifest"]["path"]
    assert os.path.basename(new) == "manifest.v2.json"
    m = load_manifest(new, verify_checksums=True)
    assert m.totals["documents"] == old_totals["documents"] - len(ids)
    assert m.totals["available_tokens"] == old_totals["available_tokens"] - entry["tokens_removed"]
    assert entry["manifest"]["shards_changed"] == len(rewritten)
    with pytest.raises(ManifestError, match="checksum mismatch"):
        load_manifest(manifest, verify_checksums=True)
    assert blend_cli.main(["--spec", "demo", "--run", run, "--output", str(tmp_path / "fresh.json")]) == 0


def test_takedown_by_url_reports_unknown_and_already_removed(run, tmp_path, capsys):
    victims = _victims(run, n_shards=1, per_shard=1, sources=["cc_2020_50", "cc_2021_04"])
    url = victims["url"].iloc[0]
    request = tmp_path / "urls.txt"
    request.write_text(f"{url}\nhttps://nowhere.invalid/x\n")
    before = _tree(run)
    assert takedown.main(["--run", run, "--urls", str(request)]) == 2
    err = capsys.readouterr().err
    assert "nowhere.invalid" in err and "nothing changed" in err and err.count("\n") == 1
    assert _tree(run) == before
    assert takedown.main(["--run", run, "--urls", str(request), "--allow-unknown"]) == 0
    info = json.load(open(os.path.join(run, "run.json")))
    assert info["takedowns"][-1]["unknown"] == ["https://nowhere.invalid/x"]
    assert info["takedowns"][-1]["documents"] >= 1

    # an id the run had removed earlier: reported, shards untouched, its text scrubbed from removed/
    stats = pd.read_parquet(os.path.join(run, "stats", "documents"), columns=["id", "outcome", "stage"])
    dropped = stats[(stats.outcome == "removed") & (stats.stage == "heuristics")]["id"].iloc[0]
    request.write_text(dropped + "\n")
    before = _tree(run)
    assert takedown.main(["--run", run, "--ids", str(request)]) == 0
    after = _tree(run)
    changed = {k for k in before if after.get(k) != before[k]}
    assert changed and all(k.startswith("removed/heuristics/") or k == "run.json" for k in changed), changed
    rows = [json.loads(l) for f in glob.glob(os.path.join(run, "removed", "*", "*.jsonl.gz"))
            for l in gzip.open(f, "rt")]
    mine = [r for r in rows if r["id"] == dropped]
    assert mine and all(r["text"] is None and r["detail"]["text_taken_down"] for r in mine)
    entry = json.load(open(os.path.join(run, "run.json")))["takedowns"][-1]
    assert entry["documents"] == 0 and entry["not_kept"] == {dropped: mine[0]["stage"] + "/" + mine[0]["reason"]}


@pytest.mark.parametrize("case,message", [
    ("missing_run", "has no run.json"), ("empty", "lists no ids"), ("binary", "not UTF-8"),
    ("no_file", "cannot be read"), ("unknown_id", "does-not-exist.jsonl:0"),
    ("bad_checksum", "changed after curation"), ("foreign_manifest", "--manifest: "),
    ("damaged_part", "is unreadable")])
def test_bad_input_exits_2_before_any_change(run, tmp_path, capsys, case, message):
    victim = _victims(run, n_shards=1, per_shard=1).iloc[0]
    request = tmp_path / "ids.txt"
    request.write_text(victim["id"] + "\n")
    args = ["--run", run, "--ids", str(request)]
    if case == "missing_run":
        args[1] = str(tmp_path / "nope")
    elif case == "empty":
        request.write_text("# nothing\n\n")
    elif case == "binary":
        request.write_bytes(b"\xff\xfe\x00id")
    elif case == "no_file":
        args[3] = str(tmp_path / "missing.txt")
    elif case == "unknown_id":
        request.write_text(victim["id"] + "\nrealnews/does-not-exist.jsonl:0\n")
    elif case == "bad_checksum":
        path = os.path.join(run, f"shards/{victim['source']}/{victim['source']}_{victim['shard']:05d}.bin")
        data = bytearray(open(path, "rb").read())
        data[0] ^= 1
        open(path, "wb").write(bytes(data))
    elif case == "damaged_part":
        path = os.path.join(run, "documents", victim["source"], f"part-{victim['shard']:05d}.parquet")
        open(path, "r+b").truncate(100)
    elif case == "foreign_manifest":
        (tmp_path / "m.json").write_text("{}")
        args += ["--manifest", str(tmp_path / "m.json")]
    before = _tree(run)
    assert takedown.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("mtnlg takedown: error: ") and err.count("\n") == 1, err
    assert message in err, err
    assert _tree(run) == before


def test_an_interrupted_takedown_is_finished_by_the_next_one(run, tmp_path, monkeypatch):
    from pipelines.runfolder import takedown_files

    victim = _victims(run, n_shards=1, per_shard=1).iloc[0]
    request = tmp_path / "ids.txt"
    request.write_text(victim["id"] + "\n")
    calls = []
    real = takedown_files.rename

    def dying_rename(src, dst):
        calls.append(dst)
        if len(calls) == 3:
            raise KeyboardInterrupt  # killed half way through the renames
        real(src, dst)

    monkeypatch.setattr(takedown_files, "rename", dying_rename)
    with pytest.raises(KeyboardInterrupt):
        takedown.main(["--run", run, "--ids", str(request)])
    monkeypatch.setattr(takedown_files, "rename", real)
    assert os.path.exists(os.path.join(run, "_curate", "takedown.commit.json"))
    request.write_text("# nothing new\n" + victim["id"] + "\n")
    assert takedown.main(["--run", run, "--ids", str(request)]) == 0  # finishes, then: not kept
    info = json.load(open(os.path.join(run, "run.json")))
    assert len(info["takedowns"]) == 1 and info["takedowns"][0]["ids"] == [victim["id"]]
    assert not glob.glob(os.path.join(run, "**", "*.takedown-*"), recursive=True)


def test_dashboard_shows_a_takedown_section_only_after_one(run, tmp_path):
    from mtnlg import dashboard

    assert dashboard.main([run, "--output", str(tmp_path / "before.html")]) == 0
    assert 'id="takedown"' not in (tmp_path / "before.html").read_text()
    request = tmp_path / "ids.txt"
    request.write_text(_victims(run, n_shards=1, per_shard=1)["id"].iloc[0] + "\n")
    assert takedown.main(["--run", run, "--ids", str(request)]) == 0
    assert dashboard.main([run, "--output", str(tmp_path / "after.html")]) == 0
    html = (tmp_path / "after.html").read_text()
    assert 'id="takedown"' in html and "1 documents taken down in 1 request(s)" in html


def test_the_dedup_index_loses_the_documents_or_is_left_alone_without_one(run, tmp_path, monkeypatch):
    from pipelines.runfolder import takedown_files

    victims = _victims(run, n_shards=2, per_shard=1)["id"].tolist()
    calls = []
    monkeypatch.setattr(takedown_files, "remove_from_index", lambda d, ids: calls.append((d, ids)) or len(ids))
    shutil.rmtree(os.path.join(run, "dedup_index"), ignore_errors=True)  # a run without an index
    request = tmp_path / "ids.txt"
    request.write_text(victims[0] + "\n")
    assert takedown.main(["--run", run, "--ids", str(request)]) == 0
    assert calls == []
    os.makedirs(os.path.join(run, "dedup_index"))
    open(os.path.join(run, "dedup_index", "params.json"), "w").write("{}")
    request.write_text(victims[1] + "\n")
    assert takedown.main(["--run", run, "--ids", str(request)]) == 0
    assert calls == [(run, [victims[1]])]
    entries = json.load(open(os.path.join(run, "run.json")))["takedowns"]
    assert [e["dedup_index_removed"] for e in entries] == [None, 1]
    # the same request again: nothing left in the shards, the index is offered the ids again
    # (an earlier takedown killed after its commit, before the index, is completed this way)
    assert takedown.main(["--run", run, "--ids", str(request)]) == 0
    assert calls[-1] == (run, [victims[1]]) and len(calls) == 2
    assert len(json.load(open(os.path.join(run, "run.json")))["takedowns"]) == 2
