import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.slow
def test_benchmark_runs_on_cpu_with_tiny_preset(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, "bench/bench_train_mfu.py", "--tiny", "--json",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "trainer overhead" in proc.stdout
    result = json.loads(out.read_text())
    assert [r["run"] for r in result["rows"]] == ["bare loop", "trainer"]
    assert len(result["rows"][0]["runs_tokens_per_s"]) == 2  # repeated, alternating
    assert "device: cpu" in proc.stdout
    assert all(r["tokens_per_s"] > 0 for r in result["rows"])
