"""`mtnlg blend search` end to end on a tiny curated run: with the cheap fake trainer (the
proposal, its spec and manifest, the report, a rerun that trains nothing), and once with the
bundled trainer (tiny proxies of two steps)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from blend_fixtures import TWO_SOURCE_SPEC
from blending.manifest import load_manifest
from blending.spec import load_blend_spec
from search_fakes import IMPORTANCE, calls, fake_runner


def _args(tmp_path, tiny_run, *extra):
    spec = tmp_path / "tiny.yaml"
    spec.write_text(TWO_SOURCE_SPEC)
    return ["search", "--spec", str(spec), "--run", tiny_run, "--output",
            str(tmp_path / "search"), "--split", "80,20,0", *extra]


def test_search_proposes_the_known_optimum_within_the_epoch_cap(tmp_path, tiny_run, capsys):
    from mtnlg.commands import blend_search

    args = _args(tmp_path, tiny_run, "--proxies", "12", "--verify", "--model", "loglinear")
    # through `mtnlg blend search`, with the fake trainer behind the runner seam
    assert blend_search.main(args[1:], runner=fake_runner) == 0
    out = capsys.readouterr().out
    res = json.loads((tmp_path / "search" / "results.json").read_text())
    # the fake's optimum is alpha 0.3 / beta 0.7; beta's epoch cap (3 epochs of its train
    # tokens at 2000 train tokens) is tighter, so the proposal sits on that cap
    hi = res["hi"]
    want_beta = min(IMPORTANCE["beta"], hi[1])
    assert hi[1] < 0.7 and res["why_hi"][1] == "epoch cap 3"
    np.testing.assert_allclose(res["proposal"]["weights"], [1 - want_beta, want_beta], atol=0.01)
    assert res["fit"]["held_out_spearman"] > 0.9 and res["fit"]["n_held_out"] == 3
    v = res["verification"][0]
    assert v["proposal"] < v["spec"]  # the fake's surface: the proposal measures better
    spec = load_blend_spec(res["proposal"]["spec"])
    assert spec.name == "tiny-searched" and spec.split is None  # the user's split, not --split
    manifest = load_manifest(res["proposal"]["manifest"])
    assert manifest.weights == spec.weights
    page = (tmp_path / "search" / "report.html").read_text()
    for text in ("Proposal against the spec", "held-out Spearman", "verify-proposal-s1234"):
        assert text in page
    assert "held-out Spearman" in out and "wrote" in out
    n_calls = len(calls({"search_dir": str(tmp_path / "search")}))
    assert n_calls == 13  # 12 proxies + the proposal (the spec's weights are proxy p0000)

    # a rerun trains nothing; a launcher prints one command per proxy still to run
    assert blend_search.main(args[1:], runner=fake_runner) == 0
    assert len(calls({"search_dir": str(tmp_path / "search")})) == n_calls
    capsys.readouterr()
    assert blend_search.main(args[1:] + ["--proxies", "14", "--launcher", "print"]) == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if "blend_proxy" in line]
    assert [line.rsplit("/", 1)[1] for line in printed] == ["p0012.json", "p0013.json"]


def test_config_errors_name_the_setting(tmp_path, tiny_run, capsys):
    from mtnlg.commands import blend

    spec = tmp_path / "tiny.yaml"
    spec.write_text(TWO_SOURCE_SPEC)
    base = ["search", "--spec", str(spec), "--run", tiny_run, "--output", str(tmp_path / "s")]
    assert blend.main(base) == 2
    assert "--split: the spec has no split" in capsys.readouterr().err
    assert blend.main(base + ["--split", "80,20,0", "--target", "source:gamma"]) == 2
    assert "--target source:gamma: no such source" in capsys.readouterr().err
    assert blend.main(base + ["--split", "80,20,0", "--bound", "alpha=0:0.1"]) == 2
    assert "epoch_cap / --bound" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore")
def test_real_tiny_proxies(tmp_path, tiny_run):
    from mtnlg.commands import blend

    assert blend.main(_args(tmp_path, tiny_run, "--proxies", "3", "--steps", "2",
                            "--set", "model.seq_length=16", "--valid-samples", "2",
                            "--holdout", "0")) == 0
    res = json.loads((tmp_path / "search" / "results.json").read_text())
    for p in res["proxies"]:
        assert set(p["per_source"]) == {"alpha", "beta"}
        assert all(3.0 < v < 10.0 for v in p["per_source"].values())  # ~ln(1000) untrained
        assert p["target"] == pytest.approx(np.mean(list(p["per_source"].values())))
    rec = json.loads((tmp_path / "search" / "proxies" / "p0001.json").read_text())
    assert rec["result"]["steps"] == 2 and rec["result"]["valid_tokens"]["beta"] == 2 * 16


def test_a_launcher_runs_each_proxy_as_its_own_command(tmp_path, tiny_run):
    from mtnlg.commands import blend_search

    here = Path(__file__).resolve().parent
    launcher = f"env PYTHONPATH={here}"  # a scheduler's prefix (srun ...) in real use
    args = _args(tmp_path, tiny_run, "--proxies", "4", "--jobs", "2", "--launcher", launcher)
    assert blend_search.main(args[1:], runner=fake_runner) == 0
    search = tmp_path / "search"
    assert sorted(calls({"search_dir": str(search)})) == [f"p{i:04d}" for i in range(4)]
    job = json.loads((search / "jobs" / "p0003.json").read_text())
    assert job["context"]["runner"] == "search_fakes:fake_runner"
    assert len(json.loads((search / "results.json").read_text())["proxies"]) == 4
