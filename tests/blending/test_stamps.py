"""Verification stamps: `mtnlg stage` and `mtnlg blend` hash each shard once and stamp it; a
launch (`load_manifest(trust_stamps=True)`) reads only the shards whose stamp no longer matches."""
import json
import os

import pytest

import blending.stamps as stamps
from blending.build import build_manifest
from blending.manifest import ManifestError, load_manifest
from blending.stamps import STAMP_SUFFIX, read_stamp, stamp_path


@pytest.fixture
def hashed(monkeypatch):
    """The files blending.stamps reads to hash them, in order."""
    seen = []
    real = stamps.file_sha256

    def counting(path, *a, **kw):
        seen.append(os.path.basename(path))
        return real(path, *a, **kw)
    monkeypatch.setattr(stamps, "file_sha256", counting)
    return seen


def test_blend_stamps_every_shard_and_a_launch_reads_none(tmp_path, tiny_spec, tiny_run, hashed):
    m = build_manifest(tiny_spec, [tiny_run], str(tmp_path / "m.json"))
    assert len(hashed) == 6  # 3 shards x (.bin, .idx): verified once, where blend checks them
    for sh in m.shards:
        stamp = read_stamp(sh.prefix)
        assert stamp["bin"]["sha256"] == sh.bin_sha256 and stamp["idx"]["sha256"] == sh.idx_sha256
        assert stamp["bin"]["size"] == os.path.getsize(sh.prefix + ".bin")
    hashed.clear()
    load_manifest(str(tmp_path / "m.json"), trust_stamps=True)
    assert hashed == []
    load_manifest(str(tmp_path / "m.json"))  # full: every file, regardless of stamps
    assert len(hashed) == 6


def test_an_in_place_rewrite_with_size_and_mtime_restored_is_still_caught(
        tmp_path, tiny_spec, tiny_run, hashed):
    build_manifest(tiny_spec, [tiny_run], str(tmp_path / "m.json"))
    binf = os.path.join(tiny_run, "shards", "beta", "beta_00000.bin")
    st = os.stat(binf)
    data = bytearray(open(binf, "rb").read())
    data[0] ^= 1
    open(binf, "wb").write(bytes(data))
    os.utime(binf, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime: ctime moved
    hashed.clear()
    with pytest.raises(ManifestError, match=r"checksum mismatch.*beta_00000\.bin"):
        load_manifest(str(tmp_path / "m.json"), trust_stamps=True)
    assert hashed == ["beta_00000.bin"]  # only the changed file was read


def test_a_touched_shard_is_hashed_once_then_restamped(tmp_path, tiny_spec, tiny_run, hashed):
    build_manifest(tiny_spec, [tiny_run], str(tmp_path / "m.json"))
    idx = os.path.join(tiny_run, "shards", "alpha", "alpha_00001.idx")
    os.utime(idx)  # same bytes, new mtime: the stamp no longer vouches for it
    hashed.clear()
    load_manifest(str(tmp_path / "m.json"), trust_stamps=True)
    assert hashed == ["alpha_00001.idx"]
    hashed.clear()
    load_manifest(str(tmp_path / "m.json"), trust_stamps=True)
    assert hashed == []


def test_a_missing_or_unreadable_stamp_means_hashing(tmp_path, tiny_spec, tiny_run, hashed):
    m = build_manifest(tiny_spec, [tiny_run], str(tmp_path / "m.json"))
    os.remove(stamp_path(m.shards[0].prefix))
    with open(stamp_path(m.shards[1].prefix), "w") as f:
        f.write("{not json")
    hashed.clear()
    load_manifest(str(tmp_path / "m.json"), trust_stamps=True)
    assert sorted(hashed) == ["alpha_00000.bin", "alpha_00000.idx", "alpha_00001.bin",
                              "alpha_00001.idx"]


def test_stage_stamps_what_it_verified_and_never_copies_remote_stamps(tmp_path, tiny_spec,
                                                                      tiny_run, hashed,
                                                                      monkeypatch):
    from mtnlg.commands.stage import stage

    build_manifest(tiny_spec, [tiny_run], str(tmp_path / "m.json"))  # stamps in the source run
    remote = read_stamp(os.path.join(tiny_run, "shards", "alpha", "alpha_00000"))
    out = tmp_path / "staged"
    result = stage(tiny_run, str(out))
    assert result["shards"] == 3
    prefix = str(out / "shards" / "alpha" / "alpha_00000")
    local = read_stamp(prefix)
    assert local["bin"]["sha256"] == remote["bin"]["sha256"]
    assert local["bin"]["inode"] == os.stat(prefix + ".bin").st_ino != remote["bin"]["inode"]
    # blend over the staged run trusts stage's stamps: it reads no shard again
    hashed.clear()
    build_manifest(tiny_spec, [str(out)], str(tmp_path / "m2.json"))
    assert hashed == []
    # a second stage finds the verified shard copies through their stamps: none copied or read
    monkeypatch.setattr("mtnlg.commands.stage.file_sha256", lambda p: hashed.append(p))
    again = stage(tiny_run, str(out))
    assert again["skipped"] == 6 and hashed == []
    stamp_files = [f for _, _, fs in os.walk(out) for f in fs if f.endswith(STAMP_SUFFIX)]
    assert len(stamp_files) == 3
    assert json.loads(open(prefix + STAMP_SUFFIX).read())["format"] == 1
