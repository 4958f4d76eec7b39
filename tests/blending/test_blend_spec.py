import os

import pytest

from blending.spec import blend_spec_from_dict, load_blend_spec, plan_table
from infra.config import ConfigError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BLENDS = os.path.join(ROOT, "data_manifests", "blends")
SLUGS = ["books3", "openwebtext2", "stackexchange", "pubmed_abstracts", "wikipedia",
         "gutenberg_pg19", "bookcorpus2", "nih_exporter", "pile_cc", "arxiv", "github",
         "cc_2020_50", "cc_2021_04", "realnews", "cc_stories"]
# REFERENCE.md Table 1 epochs column.
EPOCHS = {"books3": "1.51", "openwebtext2": "3.53", "stackexchange": "1.32",
          "pubmed_abstracts": "1.78", "wikipedia": "3.07", "gutenberg_pg19": "0.87",
          "bookcorpus2": "1.81", "nih_exporter": "1.87", "pile_cc": "0.51", "arxiv": "0.18",
          "github": "0.18", "cc_2020_50": "0.51", "cc_2021_04": "0.51", "realnews": "1.10",
          "cc_stories": "0.44"}


def test_mtnlg_spec_matches_table_1():
    spec = load_blend_spec(os.path.join(BLENDS, "mtnlg-530b.yaml"))
    assert [s.name for s in spec.sources] == SLUGS
    assert spec.train_tokens == 270e9 and spec.dataset_tokens == 339e9
    assert abs(sum(spec.weights) - 1.0) < 1e-9
    assert spec.source("books3").weight == 0.14336
    assert round(sum(s.paper_tokens_b for s in spec.sources), 1) == 338.6
    assert not spec.source("arxiv").paper_tokens_confirmed
    assert spec.source("wikipedia").aliases == ("Wikipedia (en)",)


def test_plan_table_reproduces_epochs_column():
    spec = load_blend_spec(os.path.join(BLENDS, "mtnlg-530b.yaml"))
    table = plan_table(spec)
    for line in table.splitlines():
        name = line.split(" ")[0]
        if name in EPOCHS:
            assert line.split()[-1 if "unconfirmed" not in line else -2] == EPOCHS[name], line
    assert all(name in table for name in SLUGS)


def test_demo_spec_same_sources_and_weights():
    full = load_blend_spec(os.path.join(BLENDS, "mtnlg-530b.yaml"))
    demo = load_blend_spec(os.path.join(BLENDS, "demo.yaml"))
    assert [(s.name, s.weight) for s in demo.sources] == [(s.name, s.weight) for s in full.sources]
    assert demo.train_tokens < 1e6


def _spec(**over):
    d = {"name": "x", "train_tokens": 100,
         "sources": [{"name": "a", "weight": 0.5}, {"name": "b", "weight": 0.5}]}
    d.update(over)
    return d


@pytest.mark.parametrize("data,match", [
    (_spec(sources=[{"name": "a", "weight": 0.6}, {"name": "b", "weight": 0.5}]),
     r"^sources: the weights must sum to 1"),
    (_spec(sources=[{"name": "a", "weight": 1.5}, {"name": "b", "weight": -0.5}]),
     r"^sources\[1\]\.weight: \(b\) must be >= 0"),
    (_spec(sources=[{"name": "a", "weight": 0.5}, {"name": "a", "weight": 0.5}]),
     r"^sources\[1\]\.name: duplicate source name 'a'"),
    (_spec(sources=[{"name": "a", "weight": "lots"}]), r"^sources\[0\]\.weight: expected a number"),
    (_spec(sources=[{"name": "a"}]), r"^sources\[0\]\.weight: required setting is missing"),
    (_spec(train_tokens=0), "^train_tokens: must be > 0"),
    (_spec(epoch_cap=-1), "^epoch_cap: must be > 0"),
    (_spec(sources=[]), "^sources: list at least one source"),
    (_spec(wieghts=1), "^wieghts: unknown setting"),
    (_spec(sources=[{"name": "a", "weight": 1.0, "colour": "red"}]),
     r"^sources\[0\]\.colour: unknown setting"),
    (_spec(split=[1, 1]), r"^split: expected a list of 3 numbers or null, got list \[1, 1\]"),
    (_spec(split=[0, 1, 1]), r"^split: the train weight must be > 0"),
    (_spec(sources=[{"name": "a", "weight": 1.0, "aliases": "A"}]),
     r"^sources\[0\]\.aliases: expected a list of strings, got str 'A' \(write \['A'\]"),
])
def test_validation_names_the_setting(data, match):
    with pytest.raises(ConfigError, match=match):
        blend_spec_from_dict(data)


def test_weight_sum_tolerance():
    ok = _spec(sources=[{"name": "a", "weight": 0.5 + 5e-7}, {"name": "b", "weight": 0.5}])
    blend_spec_from_dict(ok)
    bad = _spec(sources=[{"name": "a", "weight": 0.5 + 2e-6}, {"name": "b", "weight": 0.5}])
    with pytest.raises(ConfigError):
        blend_spec_from_dict(bad)


def test_scientific_notation_is_a_number_and_quoted_numbers_are_strings(tmp_path):
    """YAML 1.1 (PyYAML) reads 270e9 without a dot as a string; the config loader reads it as
    YAML 1.2 does, a number. A number in quotes is a string, and refused."""
    path = tmp_path / "b.yaml"
    path.write_text("train_tokens: 270e9\nsources: [{name: a, weight: 1}]\nsplit: [969, 30, 1]\n")
    spec = load_blend_spec(str(path))
    assert spec.train_tokens == 270e9 and spec.name == "b" and spec.path == str(path)
    assert spec.split == (969.0, 30.0, 1.0) and spec.sources[0].weight == 1.0
    with pytest.raises(ConfigError, match=r"^train_tokens: expected a number, got str '270e9'"):
        blend_spec_from_dict(_spec(train_tokens="270e9"))
    path.write_text("train_tokens: 100\npath: /elsewhere\nsources: [{name: a, weight: 1}]\n")
    with pytest.raises(ConfigError, match=r"^path: unknown setting"):
        load_blend_spec(str(path))
