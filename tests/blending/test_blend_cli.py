import json
import os
import subprocess
import sys

import numpy as np

from mtnlg.commands.blend import main

from blend_fixtures import make_run, random_docs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MTNLG = os.path.join(ROOT, "data_manifests", "blends", "mtnlg-530b.yaml")
DEMO = os.path.join(ROOT, "data_manifests", "blends", "demo.yaml")
SLUGS = ["books3", "openwebtext2", "stackexchange", "pubmed_abstracts", "wikipedia",
         "gutenberg_pg19", "bookcorpus2", "nih_exporter", "pile_cc", "arxiv", "github",
         "cc_2020_50", "cc_2021_04", "realnews", "cc_stories"]


def test_plan_needs_only_the_spec(capsys):
    assert main(["--spec", MTNLG, "--plan"]) == 0
    out = capsys.readouterr().out
    assert "books3" in out and "1.51" in out and "3.53" in out and "0.44" in out


def test_demo_blend_over_a_fake_run(tmp_path, capsys):
    rng = np.random.default_rng(0)
    # Folder names as a pipeline might write them: slugs, display names, Pile set names.
    names = dict(zip(SLUGS, SLUGS))
    names.update(wikipedia="Wikipedia (en)", cc_2020_50="CC-2020-50", github="Github")
    run = make_run(str(tmp_path / "run"), {names[s]: [random_docs(rng, 20)] for s in SLUGS})
    out = tmp_path / "manifest.json"
    rc = main(["--spec", DEMO, "--run", run, "--output", str(out), "--format", "megatron",
               "--realized", "10000"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "cc_stories" in captured.out and "--data-path" in captured.out
    realized = captured.out.split("realized shares over 10000 samples")[1]
    assert "books3               0.14336   0.14330      1433" in realized  # 0.14336 x 10000 = 1433.6
    d = json.loads(out.read_text())
    assert [s["name"] for s in d["sources"]] == SLUGS
    assert all(len(s["shards"]) == 1 for s in d["sources"])
    assert "epoch cap" in captured.err  # the demo repeats small sources: warned, not refused


def test_errors_exit_1_with_message(tmp_path, capsys):
    run = make_run(str(tmp_path / "run"), {"books3": [[[1, 999]]]})
    assert main(["--spec", DEMO, "--run", run, "--output", str(tmp_path / "m.json")]) == 1
    assert "openwebtext2" in capsys.readouterr().err
    assert main(["--spec", DEMO]) == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ntrain_tokens: 1\nsources: [{name: a, weight: 0.3}]\n")
    assert main(["--spec", str(bad), "--plan"]) == 1
    assert "sum to 1" in capsys.readouterr().err


def test_module_help():
    r = subprocess.run([sys.executable, "-m", "mtnlg.commands.blend", "--help"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0 and "--format" in r.stdout and "--plan" in r.stdout
