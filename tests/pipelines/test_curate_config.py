import os

import pytest

from pipelines.config import ConfigError, load_config
from pipeline_fixtures import write_config, write_corpus


@pytest.fixture
def corpus(tmp_path):
    root = str(tmp_path / "raw")
    write_corpus(root)
    return root


def _load(tmp_path, root, **overrides):
    return load_config(write_config(str(tmp_path / "c.yaml"), root, **overrides))


def test_loads_and_resolves_paths(tmp_path, corpus):
    cfg = _load(tmp_path, corpus)
    assert cfg.inputs[0].paths == [os.path.join(corpus, "pile/*.jsonl.zst")]
    assert cfg.decontamination.tasks == [os.path.join(corpus, "tasks/*.jsonl")]
    assert cfg.dedup.fuzzy.bands == 16 and cfg.decontamination.rule.ngram_words == 13


def test_input_root_override_and_default(tmp_path, corpus):
    path = write_config(str(tmp_path / "c.yaml"), "ignored")
    cfg = load_config(path, input_root=corpus)
    assert cfg.input_root == corpus
    with pytest.raises(ConfigError, match=r"inputs\[0\]\.paths.*matches no file"):
        load_config(path)  # 'ignored' relative to the config's folder does not exist


@pytest.mark.parametrize("overrides, setting", [
    ({"inputs": [{"reader": "parquet", "paths": ["x"]}]}, r"inputs\[0\]\.reader"),
    ({"inputs": [{"reader": "realnews", "paths": ["realnews/*.jsonl"]}]}, r"inputs\[0\]\.source"),
    ({"inputs": [{"reader": "realnews", "source": "RealNews", "paths": ["realnews/*.jsonl"]}]},
     r"inputs\[0\]\.source"),
    ({"inputs": [{"reader": "pile", "paths": ["nothing/*.zst"]}]}, r"inputs\[0\]\.paths"),
    ({"inputs": [{"reader": "warc", "source": "cc_2020_50", "extractor": "lynx",
                  "paths": ["pile/*"]}]}, r"inputs\[0\]\.extractor"),
    ({"dedup": {"fuzzy": {"threshold": 1.5}}}, r"dedup\.fuzzy\.threshold"),
    ({"dedup": {"fuzzy": {"num_perm": 64, "bands": 20, "rows": 4}}}, r"dedup\.fuzzy\.bands"),
    ({"dedup": {"fuzzy": {"bands": 10}}}, r"dedup\.fuzzy\.bands/rows"),
    ({"dedup": {"fuzzy": {"nperm": 3}}}, r"dedup\.fuzzy\.nperm: unknown setting"),
    ({"language": {"min_score": 2.0}}, r"language"),
    ({"decontamination": {"tasks": ["none/*.jsonl"]}}, r"decontamination\.tasks"),
    ({"decontamination": {"tasks": ["tasks/*.jsonl"], "max_splits": 0}}, r"decontamination"),
    ({"tokenizer": {"path": "/does/not/exist"}}, r"tokenizer\.path"),
    ({"tokenizer": {"path": "x", "min_tokens": 0}}, r"tokenizer\.min_tokens"),
    ({"shards": {"max_tokens_per_shard": -1}}, r"shards\.max_tokens_per_shard"),
    ({"removed_sample": "some"}, r"removed_sample"),
    ({"priority": ["books3", "Books3"]}, r"priority"),
])
def test_invalid_settings_are_named(tmp_path, corpus, overrides, setting):
    with pytest.raises(ConfigError, match=setting):
        _load(tmp_path, corpus, **overrides)


def test_demo_config_parses_without_inputs(tmp_path):
    from mtnlg.resources import config_path, local_path

    cfg = load_config(config_path("sources", "demo"), input_root=str(tmp_path), check_paths=False)
    assert {s.reader for s in cfg.inputs} == {"pile", "warc", "realnews", "cc_stories"}
    # The shipped tokenizer travels as a package reference, resolved on each worker.
    assert cfg.tokenizer.path == "pkg://data_manifests/tokenizers/gpt2"
    assert cfg.tokenizer.min_tokens == 128 and os.path.isdir(local_path(cfg.tokenizer.path))
