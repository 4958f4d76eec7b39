"""SIGTERM to the `mtnlg train --nproc 2` launcher: its elastic agent passes it to every rank,
the ranks checkpoint after the current step, the launcher waits, nothing is left running, and
the checkpoint resumes to the losses of an uninterrupted run."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import spawn
from training_fixtures import write_manifest
from training.checkpoint import sealed_steps
from training.config import TrainConfig
from training.trainer import Trainer

ROOT = Path(__file__).parents[2]
SETTINGS = {"model.name": "tiny", "seq_length": 32, "global_batch_size": 4,
            "micro_batch_size": 1, "train_steps": 40, "lr": 3e-3, "warmup_tokens": 0,
            "decay_tokens": 40 * 4 * 32, "dtype": "float32", "seed": 7, "tensorboard": False}


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_sigterm_to_launcher_checkpoints_and_leaves_nothing(tmp_path):
    manifest = write_manifest(str(tmp_path / "blend"), repeat=5)
    out = tmp_path / "sigterm-run"
    env = spawn.clean_env()
    sets = [f"--set={k}={v}" for k, v in SETTINGS.items()]
    launcher = subprocess.Popen([sys.executable, "-m", "training.launch", "--manifest", manifest,
                                 "--nproc", "2", "--output", str(out), *sets], cwd=ROOT,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
    metrics = out / "metrics.jsonl"
    deadline = time.time() + 240
    while time.time() < deadline and launcher.poll() is None:
        if metrics.exists() and len(metrics.read_text().splitlines()) >= 2:
            break
        time.sleep(0.5)
    assert launcher.poll() is None, launcher.stdout.read()[-3000:]
    levels = spawn.descendants(launcher.pid)  # the agent's forkserver, the 2 ranks, ...
    below = [pid for level in levels for pid in level]
    assert len(levels) >= 2 and len(levels[1]) == 2, levels
    launcher.send_signal(signal.SIGTERM)
    try:
        log = launcher.communicate(timeout=120)[0]
    except subprocess.TimeoutExpired:
        launcher.kill()
        raise
    assert "SIGTERM: the workers were stopped" in log, log[-3000:]
    assert launcher.returncode == 128 + signal.SIGTERM, log[-3000:]
    # every rank ended by itself after its checkpoint: the agent SIGKILLed none of them
    assert "forcefully exiting" not in log, log[-3000:]
    time.sleep(1)
    assert [pid for pid in below if _alive(pid)] == [], log[-3000:]  # no rank, no forkserver left
    steps = sealed_steps(str(out / "checkpoints"))
    assert len(steps) == 1 and 2 <= steps[0] < 40, log[-3000:]
    stopped = steps[0]

    # the checkpoint continues exactly where an uninterrupted run goes (both runs are sized for
    # 40 steps, as the sample index depends on the run length, and stop 2 steps after it)
    def trainer(name: str) -> Trainer:
        t = Trainer.from_manifest(TrainConfig.from_settings(
            {**SETTINGS, "checkpoint.enabled": False, "output_dir": str(tmp_path / name)}), manifest)
        t.cfg.schedule.train_steps = stopped + 2
        return t
    full = trainer("full").train()
    resumed = trainer("resumed")
    resumed.load_checkpoint(str(out / "checkpoints" / f"step-{stopped:08d}"))
    rest = resumed.train()
    assert [r["step"] for r in rest] == [stopped + 1, stopped + 2]
    for a, b in zip(rest, full[stopped:]):
        assert abs(a["loss"] - b["loss"]) < 1e-5, (a["loss"], b["loss"])
    rows = [json.loads(l) for l in metrics.read_text().splitlines() if "loss" in l]
    assert rows[-1]["step"] == stopped
