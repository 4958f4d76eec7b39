"""`mtnlg blend` verifies every shard against the checksums curate recorded (issue 15): a
flipped byte in a .bin or an .idx, a shard curate never wrote, a recorded shard that is gone,
or a run without the record is refused with the file named; nothing is laundered into a
manifest with fresh checksums."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from blend_fixtures import TWO_SOURCE_SPEC, make_run, random_docs, write_shard
from mtnlg.commands.blend import main


@pytest.fixture
def setup(tmp_path):
    rng = np.random.default_rng(3)
    run = make_run(str(tmp_path / "run"), {"alpha": [random_docs(rng, 30), random_docs(rng, 20)],
                                           "beta": [random_docs(rng, 25)]})
    spec = tmp_path / "tiny.yaml"
    spec.write_text(TWO_SOURCE_SPEC)
    return run, str(spec), str(tmp_path / "manifest.json")


def _blend(spec: str, run: str, out: str, capsys) -> tuple[int, str]:
    rc = main(["--spec", spec, "--run", run, "--output", out])
    return rc, capsys.readouterr().err


def _flip(path: str, offset: int) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x01]))


def test_untouched_run_blends_with_the_recorded_checksums(setup, capsys):
    import pyarrow.parquet as pq

    run, spec, out = setup
    rc, err = _blend(spec, run, out, capsys)
    assert rc == 0, err
    recorded = {r["prefix"].split("/")[-1]: r for r in
                pq.read_table(os.path.join(run, "stats", "shards.parquet")).to_pylist()}
    shards = [sh for s in json.load(open(out))["sources"] for sh in s["shards"]]
    assert len(shards) == 3
    for sh in shards:
        row = recorded[os.path.basename(sh["path"])]
        assert (sh["bin_sha256"], sh["idx_sha256"]) == (row["bin_sha256"], row["idx_sha256"])


@pytest.mark.parametrize("suffix, offset", [(".bin", 17), (".idx", 40), (".idx", 0)])
def test_one_flipped_byte_is_refused_naming_the_file(setup, capsys, suffix, offset):
    run, spec, out = setup
    target = os.path.join(run, "shards", "alpha", "alpha_00001" + suffix)
    _flip(target, offset)
    rc, err = _blend(spec, run, out, capsys)
    assert rc == 1 and not os.path.exists(out)
    assert f"{target} does not match the sha256 curate recorded" in err
    assert "changed after curation" in err


def test_shard_curate_never_wrote_is_refused(setup, capsys):
    run, spec, out = setup
    extra = os.path.join(run, "shards", "beta", "beta_00007")
    write_shard(extra, [[1, 2, 999]])
    rc, err = _blend(spec, run, out, capsys)
    assert rc == 1 and f"shard {extra!r} is not recorded" in err


def test_recorded_shard_that_is_gone_is_refused(setup, capsys):
    run, spec, out = setup
    for suffix in (".bin", ".idx"):
        os.remove(os.path.join(run, "shards", "alpha", "alpha_00000" + suffix))
    rc, err = _blend(spec, run, out, capsys)
    assert rc == 1 and "alpha_00000' recorded in" in err and "is missing" in err


def test_bin_missing_next_to_its_idx_is_refused(setup, capsys):
    run, spec, out = setup
    target = os.path.join(run, "shards", "beta", "beta_00000.bin")
    os.remove(target)
    rc, err = _blend(spec, run, out, capsys)
    assert rc == 1 and f"{target} is missing" in err


@pytest.mark.parametrize("damage", ["missing", "garbage"])
def test_run_without_a_readable_record_is_refused(setup, capsys, damage):
    run, spec, out = setup
    table = os.path.join(run, "stats", "shards.parquet")
    if damage == "missing":
        os.remove(table)
    else:
        with open(table, "wb") as f:
            f.write(b"not parquet")
    rc, err = _blend(spec, run, out, capsys)
    assert rc == 1 and table in err
