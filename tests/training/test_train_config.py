import pathlib

import pytest

from training.config import TrainConfig, parse_overrides

DEMO = pathlib.Path(__file__).parents[2] / "training" / "configs" / "demo.yaml"


def test_defaults_are_mtnlg_recipe():
    c = TrainConfig(train_steps=1)
    assert (c.lr, c.min_lr_ratio, c.warmup_tokens, c.decay_tokens) == (5e-5, 0.1, 10**9, 340 * 10**9)
    assert (c.adam_beta1, c.adam_beta2, c.adam_eps) == (0.9, 0.95, 1e-8)
    assert (c.weight_decay, c.grad_clip) == (0.1, 1.0)
    assert c.rampup_batch_increment == 32 and c.rampup_tokens == 12 * 10**9


def test_demo_yaml_loads():
    c = TrainConfig.from_yaml(str(DEMO))
    assert c.model == "tiny" and c.effective_seq_length == 128 and c.train_steps == 48
    c.check_dp(2)  # the demo runs on 2 processes


def test_yaml_with_cli_overrides(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("model: tiny\ntrain_steps: 3\nlr: 1e-3\nwarmup_tokens: 1e3\n")
    c = TrainConfig.from_yaml(str(p), ["lr=2e-3", "model_overrides={n_layers: 3}", "tp=1"])
    assert c.lr == 2e-3 and isinstance(c.lr, float)
    assert c.warmup_tokens == 1000 and isinstance(c.warmup_tokens, int)
    assert c.model_config(vocab_size=100).n_layers == 3
    assert c.model_config(vocab_size=100).vocab_size == 100
    assert c.metrics_path.endswith("metrics.jsonl")


@pytest.mark.parametrize("settings, named", [
    (dict(model="gpt-9"), "model"),
    (dict(global_batch_size=6, micro_batch_size=4), "global_batch_size"),
    (dict(train_steps=None), "train_steps"),
    (dict(train_tokens=100), "train_steps"),  # both set
    (dict(lr=0.0), "lr"),
    (dict(dtype="float16"), "dtype"),
    (dict(decay_tokens=10, warmup_tokens=10), "decay_tokens"),
    (dict(min_lr_ratio=2.0), "min_lr_ratio"),
    (dict(adam_beta2=1.0), "adam_beta2"),
    (dict(seq_length=4096), "seq_length"),  # tiny's positions stop at 128
    (dict(rampup_batch_start=4, rampup_batch_increment=5, global_batch_size=16),
     "rampup_batch_increment"),
    (dict(model_overrides={"layers": 2}), "model_overrides"),
    (dict(grad_clip=-1.0), "grad_clip"),
    (dict(tp=0), "tp"),
])
def test_validation_errors_name_the_setting(settings, named):
    base = dict(train_steps=1)
    base.update(settings)
    with pytest.raises(ValueError, match=rf"^{named}:"):
        TrainConfig(**base)


def test_unknown_setting_in_yaml(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("train_steps: 3\nlearning_rate: 1e-3\n")
    with pytest.raises(ValueError, match="learning_rate"):
        TrainConfig.from_yaml(str(p))


def test_non_numeric_value_named():
    with pytest.raises(ValueError, match="^lr: expected a number"):
        TrainConfig.from_yaml(None, ["train_steps=1", "lr=fast"])


def test_bad_override_syntax():
    with pytest.raises(ValueError, match="SETTING=VALUE"):
        parse_overrides(["lr"])


def test_check_dp_names_setting():
    c = TrainConfig(train_steps=1, global_batch_size=6, micro_batch_size=2)
    c.check_dp(3)
    with pytest.raises(ValueError, match="^global_batch_size: 6 is not a multiple"):
        c.check_dp(2)
    r = TrainConfig(train_steps=1, global_batch_size=8, rampup_batch_start=2,
                    rampup_batch_increment=2)
    with pytest.raises(ValueError, match="^rampup_batch_start"):
        r.check_dp(4)
