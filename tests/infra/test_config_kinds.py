"""The same hostile settings against all four kinds of config (issue 25): the curate source
config, the blend spec, the training config and the quality-classifier training config are
read by one loader (infra.config), so each refuses the same things with the same message,
naming the setting by its dotted path, before any work starts.

Each kind starts from its shipped demo file, read through its real entry point."""
from __future__ import annotations

import copy
import json
import re

import pytest

from infra.config import ConfigError, read_config_file
from infra.resources import config_path


def _load_curate(path):
    from pipelines.config.job import load_config

    return load_config(path, check_paths=False)


def _load_blend(path):
    from blending.spec import load_blend_spec

    return load_blend_spec(path)


def _load_train(path):
    from training.config import TrainConfig

    return TrainConfig.from_yaml(path)


def _load_quality(path):
    from curation.quality_train import load_train_config

    return load_train_config(path)


# kind: (shipped config, loader, an integer or number setting, a float setting,
#        (section of a misspelt key, misspelt, meant))
KINDS = {
    "curate": (("sources", "demo"), _load_curate, "shards.max_tokens_per_shard",
               "dedup.fuzzy.threshold", ("dedup.fuzzy", "treshold", "threshold")),
    "blend": (("blends", "demo"), _load_blend, "train_tokens", "sources[2].weight",
              ("sources[2]", "wieght", "weight")),
    "train": (("train", "demo"), _load_train, "schedule.train_steps", "optimizer.lr",
              ("optimizer", "weight_decey", "weight_decay")),
    "quality": (("quality", "demo"), _load_quality, "fasttext.epoch", "holdout_fraction",
                ("fasttext", "wordNgram", "wordNgrams")),
}

_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _steps(path: str) -> list:
    return [int(i) if i else k for k, i in _STEP.findall(path)]


def _set(data, path: str, value) -> None:
    *parents, last = _steps(path)
    for step in parents:
        data = data[step]
    data[last] = value


def _write(tmp_path, data, duplicate: str | None = None) -> str:
    """``data`` as YAML (JSON's flow syntax, so every string stays quoted); with
    ``duplicate``, that setting's key is given twice (3, then 7)."""
    if duplicate:
        data = copy.deepcopy(data)
        _set(data, duplicate, "@DUP@")
    text = json.dumps(data, indent=1).replace("NaN", ".nan")
    if duplicate:
        key = json.dumps(_steps(duplicate)[-1])
        text = text.replace(f'{key}: "@DUP@"', f"{key}: 3,\n{key}: 7")
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _base(kind: str, tmp_path) -> dict:
    data = read_config_file(config_path(*KINDS[kind][0]))
    if kind == "quality":  # inputs that exist, so a valid file loads completely
        for spec in data["positives"] + data["negatives"]:
            spec["paths"] = [str(tmp_path / "config.yaml")]
    return data


HOSTILE = {
    # case: (change to the base mapping, expected message with {number}/{float}/{section}/...)
    "duplicate key": (None, r"^{number}: duplicate key in '.*config\.yaml' \(lines \d+ and \d+\)"),
    "unknown key": ("misspelt", r"^{section}\.{wrong}: unknown setting; did you mean '{meant}'\?"),
    "wrong type": (("number", [1]),
                   r"^{number}: expected (an integer|a number)( or null)?, got list \[1\]$"),
    "string number": (("float", "1e-3"), r"^{float}: expected a number, got str '1e-3' \(a number "
                                         r"in quotes is a string: remove the quotes\)$"),
    "NaN": (("float", float("nan")), r"^{float}: must be a finite number, got nan$"),
    "bool as number": (("number", True),
                       r"^{number}: expected (an integer|a number)( or null)?, got bool True$"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
@pytest.mark.parametrize("kind", list(KINDS))
def test_hostile_settings_are_refused_by_name(kind, case, tmp_path):
    _, load, number, float_setting, (section, wrong, meant) = KINDS[kind]
    data = _base(kind, tmp_path)
    change, message = HOSTILE[case]
    duplicate = None
    if change is None:
        duplicate = number
    elif change == "misspelt":
        _set(data, f"{section}.{wrong}", 1)
    else:
        which, value = change
        _set(data, number if which == "number" else float_setting, value)
    path = _write(tmp_path, data, duplicate)
    expected = message.format(number=re.escape(number), float=re.escape(float_setting),
                              section=re.escape(section), wrong=wrong, meant=meant)
    with pytest.raises(ConfigError, match=expected):
        load(path)


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_shipped_demo_file_loads_unchanged(kind, tmp_path):
    """The base of the hostile cases is valid: each error above comes from its one change."""
    load = KINDS[kind][1]
    assert load(_write(tmp_path, _base(kind, tmp_path))) is not None
