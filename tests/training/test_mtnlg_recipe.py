"""The shipped MT-NLG 530B recipe: `--plan` validates it, prints memory per device and the
meta-device parameter check (agrees with the formula at tp 8 x pp 35); a scaled-down copy
(same sections and schedule kind, tiny sizes) trains on CPU with 4 pipeline processes, the batch
ramp starting below the number of pipeline stages. (Data parallelism with pipelines is covered in
test_parallel_layouts; 8 gloo ranks here ran past 4 minutes on CI's 2 cores.)"""

from pathlib import Path

import pytest
import yaml

from test_parallel_layouts import torchrun
from training.launch import main

RECIPE = Path(__file__).parents[2] / "training" / "configs" / "mtnlg-530b.yaml"


def test_plan_validates_recipe_and_meta_check_agrees(capsys, monkeypatch):
    monkeypatch.setattr("training.launch.setup_logging", lambda: None)
    assert main(["--plan", "--config", str(RECIPE)]) == 0
    out = capsys.readouterr().out
    assert "dp 8 x pp 35 x tp 8 = 2240 devices" in out and "model state total" in out
    (line,) = [l for l in out.splitlines() if "meta" in l]
    assert "2,058,580,480 parameters per device" in line and line.endswith("agree")
    assert "mismatch" not in out


def scaled_down() -> dict:
    """The recipe's settings with model, batch and layout shrunk to 4 CPU processes."""
    recipe = yaml.safe_load(RECIPE.read_text())
    settings = {f"{section}.{k}": v for section, values in recipe.items()
                if isinstance(values, dict) for k, v in values.items()}
    settings.update({
        "model.name": "tiny", "model.overrides": {"n_layers": 8}, "model.seq_length": 16,
        "parallelism.tp": 1, "parallelism.pp": 4, "parallelism.dp": 1,
        "parallelism.virtual_stages": 2,
        # ramp 2 -> 8 by 2 over 96 tokens: 2 micro-batches at first, fewer than the 4 stages
        "schedule.global_batch_size": 8, "schedule.rampup_batch_start": 2,
        "schedule.rampup_batch_increment": 2, "schedule.rampup_tokens": 96,
        "schedule.train_tokens": None, "schedule.train_steps": 4,
        "schedule.warmup_tokens": 32, "schedule.decay_tokens": 10**4, "optimizer.lr": 3e-3,
        "validation.batches": 0, "checkpoint.interval": 2, "logging.tensorboard": False})
    return settings


@pytest.mark.slow
def test_scaled_down_recipe_trains_on_cpu(tmp_path):
    settings = scaled_down()
    assert settings["parallelism.pp_schedule"] == "interleaved_1f1b"
    assert settings["model.dtype"] == "bfloat16"
    assert settings["parallelism.activation_checkpoint"] == "full"
    # 27 s alone on 2 cores; generous bound for a loaded CI box (a hang still fails)
    rows = torchrun(4, tmp_path / "rows.json", timeout=600, **settings, output_dir=str(tmp_path))
    assert [r["global_batch"] for r in rows] == [2, 4, 8, 8]  # 2 micro-batches < 4 stages first
    assert all(0 < r["loss"] < 10 for r in rows)
    for step in (2, 4):  # async saves, sealed
        assert (tmp_path / "checkpoints" / f"step-{step:08d}" / "checksums.json").exists()


def test_scaled_down_settings_are_valid():
    from training.config import TrainConfig
    cfg = TrainConfig.from_settings(scaled_down())
    cfg.check_layout(1, 4)
