"""Resuming without a flag (`checkpoint.resume: auto`): the newest complete, verified checkpoint
of the run is chosen, a half-written or altered one never is; metrics of re-run steps are not
logged twice; restarted workers (TORCHELASTIC_RESTART_COUNT > 0) continue the run's own
checkpoints even when the first attempt loaded an explicit one."""
import json
import os
import shutil

import pytest

from training_fixtures import TOKENIZER, RepeatedDataset
from training.checkpoint import latest_verified_checkpoint, sealed_steps
from training.config import TrainConfig
from training.trainer import Trainer

SEQ = 32


def trainer(out, **kw) -> Trainer:
    settings = dict(seq_length=SEQ, global_batch_size=8, micro_batch_size=4, train_steps=6,
                    lr=3e-3, warmup_tokens=0, decay_tokens=6 * 8 * SEQ, output_dir=str(out),
                    seed=1234, tensorboard=False, **{"checkpoint.interval": 2})
    settings.update(kw)
    return Trainer(TrainConfig.from_settings({"model.name": "tiny", **settings}),
                   RepeatedDataset(SEQ), TOKENIZER)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A 6-step run with checkpoints at steps 2, 4, 6, and its per-step losses."""
    out = tmp_path_factory.mktemp("finished")
    history = trainer(out).train()
    return out, [r["loss"] for r in history]


def test_half_written_and_altered_checkpoints_are_never_chosen(finished, tmp_path, caplog):
    out, _ = finished
    root = tmp_path / "checkpoints"
    shutil.copytree(out / "checkpoints", root)
    assert latest_verified_checkpoint(str(root)).endswith("step-00000006")
    unsealed = root / "step-00000008"  # a save cut short: files, no checksums.json
    shutil.copytree(root / "step-00000006", unsealed)
    os.remove(unsealed / "checksums.json")
    altered = root / "step-00000006" / ".metadata"
    altered.write_bytes(altered.read_bytes() + b"\0")
    assert sealed_steps(str(root)) == [2, 4, 6]
    assert latest_verified_checkpoint(str(root)).endswith("step-00000004")
    assert "skipping checkpoint" in caplog.text and "step-00000006" in caplog.text
    assert latest_verified_checkpoint(str(tmp_path / "nothing-here")) is None


def test_auto_resume_continues_the_newest_and_logs_each_step_once(finished, tmp_path):
    out, losses = finished
    run = tmp_path / "run"
    shutil.copytree(out, run)
    # a failed attempt: it logged steps 5 and 6 but its step-6 checkpoint never got sealed
    os.remove(run / "checkpoints" / "step-00000006" / "checksums.json")
    t = trainer(run)
    assert t.resume().endswith("step-00000004") and t.step == 4
    rest = t.train()
    assert [r["step"] for r in rest] == [5, 6]
    assert [r["loss"] for r in rest] == pytest.approx(losses[4:], abs=1e-6)
    rows = [json.loads(line) for line in open(run / "metrics.jsonl")]
    assert [r["step"] for r in rows if "loss" in r] == [1, 2, 3, 4, 5, 6]
    assert t.loader.consumed_samples == 6 * 8


def test_a_finished_run_resumed_does_nothing(finished, tmp_path):
    out, _ = finished
    run = tmp_path / "run"
    shutil.copytree(out, run)
    t = trainer(run)
    assert t.resume().endswith("step-00000006")
    assert t.train() == []
    rows = [json.loads(line) for line in open(run / "metrics.jsonl")]
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 5, 6]  # nothing logged again


def test_null_starts_fresh_and_an_explicit_path_yields_to_the_runs_own_after_a_restart(
        finished, tmp_path, monkeypatch):
    out, _ = finished
    run = tmp_path / "run"
    shutil.copytree(out, run)
    assert trainer(run, **{"checkpoint.resume": None}).resume() is None
    explicit = str(out / "checkpoints" / "step-00000002")
    first = trainer(run, **{"checkpoint.resume": explicit})
    assert first.resume() == explicit and first.step == 2
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "1")
    restarted = trainer(run, **{"checkpoint.resume": explicit})
    assert restarted.resume().endswith("step-00000006") and restarted.step == 6
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "1")
    fresh_restart = trainer(tmp_path / "empty", **{"checkpoint.resume": None})
    assert fresh_restart.resume() is None and fresh_restart.step == 0
