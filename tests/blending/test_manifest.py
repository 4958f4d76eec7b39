import json
import os
import shutil
from types import SimpleNamespace

import numpy as np
import pytest

from mtnlg.commands.blend import summary_table
from blending.build import build_manifest
from blending.manifest import ManifestError, load_manifest, megatron_data_path, verify_tokenizer

from blend_fixtures import FAKE_TOKENIZER, make_run, random_docs


def test_build_writes_complete_manifest(tmp_path, tiny_spec, tiny_run):
    out = tmp_path / "out" / "manifest.json"
    m = build_manifest(tiny_spec, [tiny_run], str(out))
    d = json.loads(out.read_text())
    assert d["format_version"] == 1
    assert d["tokenizer"]["sha256"] == FAKE_TOKENIZER["sha256"]
    assert d["tokenizer"]["vocab_size"] == 1000 and d["tokenizer"]["eod_id"] == 999
    alpha, beta = d["sources"]
    assert [alpha["name"], beta["name"]] == ["alpha", "beta"]
    assert alpha["display_name"] == "Alpha" and alpha["weight"] == 0.75
    assert [s["path"] for s in alpha["shards"]] == ["../run/shards/alpha/alpha_00000",
                                                    "../run/shards/alpha/alpha_00001"]
    assert alpha["available_tokens"] == sum(s["tokens"] for s in alpha["shards"])
    assert alpha["documents"] == 50 and beta["documents"] == 25
    assert alpha["epochs"] == pytest.approx(0.75 * 2000 / alpha["available_tokens"])
    for s in alpha["shards"] + beta["shards"]:
        assert set(s) == {"path", "documents", "tokens", "bin_sha256", "idx_sha256"}
        assert len(s["bin_sha256"]) == 64
    assert d["totals"]["available_tokens"] == alpha["available_tokens"] + beta["available_tokens"]
    assert d["totals"]["documents"] == 75 and d["totals"]["shards"] == 3
    assert m.path == str(out) and len(m.shards) == 3
    assert "alpha" in summary_table(m)


def test_rebuild_is_byte_identical_and_load_round_trips(tmp_path, tiny_spec, tiny_run):
    a = build_manifest(tiny_spec, [tiny_run], str(tmp_path / "a.json"))
    build_manifest(tiny_spec, [tiny_run], str(tmp_path / "b.json"))
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    loaded = load_manifest(str(tmp_path / "a.json"))
    assert loaded.sources == a.sources and loaded.tokenizer.sha256 == a.tokenizer.sha256
    assert [f for f in os.listdir(tmp_path) if ".tmp" in f] == []


def test_manifest_is_relocatable(tmp_path, tiny_spec, tiny_run):
    build_manifest(tiny_spec, [tiny_run], str(tmp_path / "manifest.json"))
    moved = tmp_path.parent / (tmp_path.name + "_moved")
    shutil.copytree(tmp_path, moved)
    m = load_manifest(str(moved / "manifest.json"))
    assert m.shards[0].prefix.startswith(str(moved))


def test_checksum_mismatch_refused(tmp_path, tiny_spec, tiny_run):
    build_manifest(tiny_spec, [tiny_run], str(tmp_path / "m.json"))
    binf = os.path.join(tiny_run, "shards", "beta", "beta_00000.bin")
    data = bytearray(open(binf, "rb").read())
    data[0] ^= 1
    open(binf, "wb").write(bytes(data))
    with pytest.raises(ManifestError, match=r"checksum mismatch.*beta_00000\.bin"):
        load_manifest(str(tmp_path / "m.json"))
    load_manifest(str(tmp_path / "m.json"), verify_checksums=False)  # same size: only sha catches it


def test_missing_shard_refused(tmp_path, tiny_spec, tiny_run):
    build_manifest(tiny_spec, [tiny_run], str(tmp_path / "m.json"))
    os.remove(os.path.join(tiny_run, "shards", "alpha", "alpha_00001.idx"))
    with pytest.raises(ManifestError, match=r"sources\[0\]\.shards\[1\].*missing"):
        load_manifest(str(tmp_path / "m.json"), verify_checksums=False)


def test_bad_format_version(tmp_path, tiny_spec, tiny_run):
    build_manifest(tiny_spec, [tiny_run], str(tmp_path / "m.json"))
    d = json.loads((tmp_path / "m.json").read_text())
    d["format_version"] = 99
    (tmp_path / "m.json").write_text(json.dumps(d))
    with pytest.raises(ManifestError, match="format_version"):
        load_manifest(str(tmp_path / "m.json"))


def test_source_without_shards(tmp_path, tiny_spec):
    rng = np.random.default_rng(1)
    run = make_run(str(tmp_path / "run"), {"alpha": [random_docs(rng, 5)]})
    with pytest.raises(ManifestError, match="'beta'.*no shards"):
        build_manifest(tiny_spec, [run], str(tmp_path / "m.json"))
    assert not (tmp_path / "m.json").exists()


def test_tokenizer_mismatch_across_runs(tmp_path, tiny_spec):
    rng = np.random.default_rng(2)
    r1 = make_run(str(tmp_path / "r1"), {"alpha": [random_docs(rng, 5)]})
    r2 = make_run(str(tmp_path / "r2"), {"beta": [random_docs(rng, 5)]},
                  tokenizer={**FAKE_TOKENIZER, "sha256": "cd" * 32})
    with pytest.raises(ManifestError, match="tokenizer mismatch.*sha256"):
        build_manifest(tiny_spec, [r1, r2], str(tmp_path / "m.json"))


def test_several_runs_and_display_name_folders(tmp_path, tiny_spec):
    rng = np.random.default_rng(3)
    r1 = make_run(str(tmp_path / "r1"), {"alpha": [random_docs(rng, 5)], "Beta": [random_docs(rng, 4)]})
    r2 = make_run(str(tmp_path / "r2"), {"ALPHA": [random_docs(rng, 6)], "other": [random_docs(rng, 2)]})
    m = build_manifest(tiny_spec, [r1, r2], str(tmp_path / "m.json"))
    assert m.source("alpha").documents == 11 and len(m.source("alpha").shards) == 2
    assert m.source("beta").documents == 4
    assert any("other" in w and "not used" in w for w in m.warnings)


def test_epoch_cap_warning(tmp_path, tiny_spec):
    rng = np.random.default_rng(4)
    run = make_run(str(tmp_path / "run"), {"alpha": [random_docs(rng, 200)],
                                           "beta": [random_docs(rng, 3, 2, 4)]})
    m = build_manifest(tiny_spec, [run], str(tmp_path / "m.json"))
    assert m.source("beta").epochs > 3
    assert [w for w in m.warnings if "'beta'" in w and "epoch cap 3" in w]
    assert not [w for w in m.warnings if "'alpha'" in w]
    m2 = build_manifest(tiny_spec, [run], str(tmp_path / "m2.json"), epoch_cap=1000)
    assert m2.warnings == ()


def test_megatron_data_path_splits_weight_by_tokens(tmp_path, tiny_spec, tiny_run):
    m = build_manifest(tiny_spec, [tiny_run], str(tmp_path / "m.json"))
    parts = megatron_data_path(m).split()
    weights, prefixes = [float(w) for w in parts[::2]], parts[1::2]
    assert prefixes == [sh.prefix for sh in m.shards]
    a = m.source("alpha")
    assert weights[0] == pytest.approx(0.75 * a.shards[0].tokens / a.available_tokens)
    assert weights[0] + weights[1] == pytest.approx(0.75) and weights[2] == pytest.approx(0.25)


def test_verify_tokenizer(tmp_path, tiny_spec, tiny_run):
    m = build_manifest(tiny_spec, [tiny_run], str(tmp_path / "m.json"))
    ok = SimpleNamespace(sha256="ab" * 32, vocab_size=1000, eod_id=999)
    verify_tokenizer(m, ok)
    with pytest.raises(ManifestError, match="vocab_size"):
        verify_tokenizer(m, SimpleNamespace(sha256="ab" * 32, vocab_size=50257, eod_id=999))
    with pytest.raises(ManifestError, match="sha256"):
        verify_tokenizer(m, SimpleNamespace(sha256="00" * 32, vocab_size=1000, eod_id=999))
