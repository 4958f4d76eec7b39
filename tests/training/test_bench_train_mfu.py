"""bench/training/train_mfu.py --tiny runs on CPU (in this process: torch and the trainer are
imported already; the script is a plain module with a main(argv))."""
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.slow
def test_benchmark_runs_on_cpu_with_tiny_preset(tmp_path, capsys, monkeypatch):
    spec = importlib.util.spec_from_file_location("train_mfu", ROOT / "bench" / "training" / "train_mfu.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.chdir(tmp_path)  # the trainer's runs/ folder, if any, lands here
    out = tmp_path / "bench.json"
    assert bench.main(["--tiny", "--json", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert "trainer overhead" in stdout
    result = json.loads(out.read_text())
    assert [r["run"] for r in result["rows"]] == ["bare loop", "trainer"]
    assert len(result["rows"][0]["runs_tokens_per_s"]) == 2  # repeated, alternating
    assert "device: cpu" in stdout
    assert all(r["tokens_per_s"] > 0 for r in result["rows"])
