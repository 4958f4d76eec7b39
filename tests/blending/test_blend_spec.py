import os

import pytest

from blending.spec import BlendSpecError, blend_spec_from_dict, load_blend_spec, plan_table

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
    (_spec(sources=[{"name": "a", "weight": 0.6}, {"name": "b", "weight": 0.5}]), r"sum to 1"),
    (_spec(sources=[{"name": "a", "weight": 1.5}, {"name": "b", "weight": -0.5}]),
     r"sources\[1\]\.weight"),
    (_spec(sources=[{"name": "a", "weight": 0.5}, {"name": "a", "weight": 0.5}]), "duplicate"),
    (_spec(sources=[{"name": "a", "weight": "lots"}]), r"sources\[0\]\.weight"),
    (_spec(sources=[{"name": "a"}]), r"sources\[0\]\.weight.*required"),
    (_spec(train_tokens=0), "train_tokens"),
    (_spec(epoch_cap=-1), "epoch_cap"),
    (_spec(sources=[]), "sources"),
    (_spec(wieghts=1), "unknown blend setting"),
    (_spec(sources=[{"name": "a", "weight": 1.0, "colour": "red"}]), "unknown blend setting"),
])
def test_validation_names_the_setting(data, match):
    with pytest.raises(BlendSpecError, match=match):
        blend_spec_from_dict(data)


def test_weight_sum_tolerance():
    ok = _spec(sources=[{"name": "a", "weight": 0.5 + 5e-7}, {"name": "b", "weight": 0.5}])
    blend_spec_from_dict(ok)
    bad = _spec(sources=[{"name": "a", "weight": 0.5 + 2e-6}, {"name": "b", "weight": 0.5}])
    with pytest.raises(BlendSpecError):
        blend_spec_from_dict(bad)


def test_string_scientific_notation_accepted():
    assert blend_spec_from_dict(_spec(train_tokens="270e9")).train_tokens == 270e9
