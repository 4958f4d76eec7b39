import pathlib

import pytest

from infra.config import ConfigError, parse_overrides
from training.config import TrainConfig

CONFIGS = pathlib.Path(__file__).parents[2] / "training" / "configs"
DEMO = CONFIGS / "demo.yaml"


def settings(**kw) -> TrainConfig:
    return TrainConfig.from_settings({"train_steps": 1, **kw})


def test_defaults_are_mtnlg_recipe():
    c = settings()
    s, o = c.schedule, c.optimizer
    assert (o.lr, s.min_lr_ratio, s.warmup_tokens, s.decay_tokens) == (5e-5, 0.1, 10**9,
                                                                        340 * 10**9)
    assert (o.adam_beta1, o.adam_beta2, o.adam_eps) == (0.9, 0.95, 1e-8)
    assert (o.weight_decay, o.grad_clip) == (0.1, 1.0)
    assert s.rampup_batch_increment == 32 and s.rampup_tokens == 12 * 10**9


def test_demo_yaml_loads():
    c = TrainConfig.from_yaml(str(DEMO))
    assert c.model.name == "tiny" and c.seq_length == 128 and c.schedule.train_steps == 48
    c.check_dp(2)  # the demo runs on 2 processes


def test_mtnlg_530b_yaml_is_the_paper_recipe():
    c = TrainConfig.from_yaml(str(CONFIGS / "mtnlg-530b.yaml"))
    m = c.model_config(50257)
    assert (m.n_layers, m.hidden, m.n_heads, c.seq_length) == (105, 20480, 128, 2048)
    assert m.std == 4.0e-3 and c.model.dtype == "bfloat16"
    s, o, p = c.schedule, c.optimizer, c.parallelism
    assert (s.global_batch_size, s.rampup_batch_start, s.rampup_batch_increment,
            s.rampup_tokens) == (1920, 32, 32, 12 * 10**9)
    assert (o.lr, s.warmup_tokens, s.decay_tokens, s.min_lr_ratio) == (5e-5, 10**9,
                                                                       340 * 10**9, 0.1)
    assert s.train_tokens == 270 * 10**9 and s.micro_batch_size == 1
    assert (o.adam_beta1, o.adam_beta2, o.adam_eps, o.weight_decay, o.grad_clip) == (
        0.9, 0.95, 1e-8, 0.1, 1.0)
    assert (p.tp, p.pp, p.dp, p.activation_checkpoint) == (8, 35, 8, "full")
    assert p.pp_schedule == "interleaved_1f1b"
    c.check_layout(8, 35)  # every ramp step (4 .. 240 micro-batches) fits the schedule
    one_f_one_b = TrainConfig.from_yaml(str(CONFIGS / "mtnlg-530b.yaml"),
                                        ["pp_schedule=1f1b", "virtual_stages=1"])
    with pytest.raises(ConfigError, match="^parallelism.pp_schedule: .* 4 micro-batches .* "
                                          "1F1B needs at least pp = 35"):
        one_f_one_b.check_layout(8, 35)


def test_yaml_with_cli_overrides(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("model: {name: tiny}\nschedule: {train_steps: 3, warmup_tokens: 1e3}\n"
                 "optimizer: {lr: 1e-3}\n")
    c = TrainConfig.from_yaml(str(p), ["optimizer.lr=2e-3", "model.overrides={n_layers: 3}",
                                       "tp=1"])
    assert c.optimizer.lr == 2e-3 and isinstance(c.optimizer.lr, float)
    assert c.schedule.warmup_tokens == 1000 and isinstance(c.schedule.warmup_tokens, int)
    assert c.model_config(vocab_size=100).n_layers == 3
    assert c.model_config(vocab_size=100).vocab_size == 100
    assert c.metrics_path.endswith("metrics.jsonl")


@pytest.mark.parametrize("kw, named", [
    ({"model.name": "gpt-9"}, "model.name"),
    (dict(global_batch_size=6, micro_batch_size=4), "schedule.global_batch_size"),
    (dict(train_steps=None), "schedule.train_steps"),
    (dict(train_tokens=100), "schedule.train_steps"),  # both set
    (dict(lr=0.0), "optimizer.lr"),
    (dict(dtype="float16"), "model.dtype"),
    (dict(decay_tokens=10, warmup_tokens=10), "schedule.decay_tokens"),
    (dict(min_lr_ratio=2.0), "schedule.min_lr_ratio"),
    (dict(adam_beta2=1.0), "optimizer.adam_beta2"),
    (dict(seq_length=4096), "model.seq_length"),  # tiny's positions stop at 128
    (dict(rampup_batch_start=4, rampup_batch_increment=5, global_batch_size=16),
     "schedule.rampup_batch_increment"),
    ({"model.overrides": {"layers": 2}}, "model.overrides.layers"),
    ({"model.overrides": {"n_layers": "2"}}, "model.overrides.n_layers"),
    (dict(grad_clip=-1.0), "optimizer.grad_clip"),
    (dict(tp=0), "parallelism.tp"),
    (dict(tp=3), "parallelism.tp"),  # does not divide the 4 heads of tiny
    (dict(data_parallel="allreduce"), "parallelism.data_parallel"),
    ({"checkpoint.keep_last": -1}, "checkpoint.keep_last"),
    ({"checkpoint.enabled": False, "checkpoint.interval": 5}, "checkpoint.interval"),
    ({"checkpoint.enabled": False, "checkpoint.export_hf": True}, "checkpoint.export_hf"),
    ({"validation.interval": -1}, "validation.interval"),
    (dict(verify_shards="sometimes"), "data.verify_shards"),
    (dict(verify_shards=True), "data.verify_shards"),  # a bool is not a mode
    (dict(max_restarts=-1), "launch.max_restarts"),
    (dict(train_steps=2.5), "schedule.train_steps"),
])
def test_validation_errors_name_the_setting(kw, named):
    with pytest.raises(ConfigError, match=rf"^{named}:"):
        settings(**kw)


def test_unknown_and_misplaced_keys_in_yaml(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("schedule: {train_steps: 3}\noptimizer: {learning_rate: 1e-3}\n")
    with pytest.raises(ConfigError, match="^optimizer.learning_rate: unknown setting"):
        TrainConfig.from_yaml(str(p))
    p.write_text("schedule: {train_steps: 3}\nlr: 1e-3\n")
    with pytest.raises(ConfigError, match="^lr: unknown setting; it is a setting of 'optimizer'"):
        TrainConfig.from_yaml(str(p))


def test_bare_names_resolve_or_say_they_are_ambiguous():
    assert settings(lr=1e-3).optimizer.lr == 1e-3
    with pytest.raises(ConfigError, match="^interval: ambiguous; write one of validation.interval"):
        settings(interval=3)
    with pytest.raises(ConfigError, match="^nonsense: unknown setting"):
        settings(nonsense=1)


def test_non_numeric_value_named():
    with pytest.raises(ConfigError, match="^optimizer.lr: expected a number"):
        TrainConfig.from_yaml(None, ["train_steps=1", "lr=fast"])


def test_bad_override_syntax():
    with pytest.raises(ConfigError, match="SECTION.FIELD=VALUE"):
        parse_overrides(["lr"])


def test_check_dp_names_setting():
    c = settings(global_batch_size=6, micro_batch_size=2)
    c.check_dp(3)
    with pytest.raises(ConfigError, match="^schedule.global_batch_size: 6 is not a multiple"):
        c.check_dp(2)
    r = settings(global_batch_size=8, rampup_batch_start=2, rampup_batch_increment=2)
    with pytest.raises(ConfigError, match="^schedule.rampup_batch_start"):
        r.check_dp(4)


def test_duplicate_keys_and_quoted_numbers_are_refused(tmp_path):
    """Issue 25: the training config took a duplicate `train_steps: 3 / 7` as 7 and the string
    "1e-3" as a learning rate; unquoted 1e-3 (a YAML 1.2 number) is a number."""
    p = tmp_path / "c.yaml"
    p.write_text("schedule:\n  train_steps: 3\n  train_steps: 7\n")
    with pytest.raises(ConfigError, match=r"^schedule\.train_steps: duplicate key .*lines 2 and 3"):
        TrainConfig.from_yaml(str(p))
    p.write_text("schedule: {train_steps: 3}\noptimizer: {lr: \"1e-3\"}\n")
    with pytest.raises(ConfigError, match=r"^optimizer\.lr: expected a number, got str '1e-3' "
                                          r"\(a number in quotes is a string"):
        TrainConfig.from_yaml(str(p))
    p.write_text("schedule: {train_steps: 3, warmup_tokens: 1e3}\noptimizer: {lr: 1e-3}\n")
    c = TrainConfig.from_yaml(str(p), ["lr=2e-3"])
    assert c.optimizer.lr == 2e-3 and c.schedule.warmup_tokens == 1000


def test_overrides_reach_into_mapping_settings():
    c = TrainConfig.from_yaml(None, ["train_steps=1", "model.overrides.n_layers=3"])
    assert c.model_config(vocab_size=100).n_layers == 3
    with pytest.raises(ConfigError, match=r"^optimizer\.lr\.x: optimizer\.lr is a single setting"):
        TrainConfig.from_yaml(None, ["train_steps=1", "optimizer.lr.x=3"])
