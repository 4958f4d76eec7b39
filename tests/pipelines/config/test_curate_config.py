import os

import pytest

from pipelines import curate
from infra.config import ConfigError
from pipelines.config.job import load_config
from pipeline_fixtures import GPT2, write_config, write_corpus


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


def test_input_root_on_the_command_line_is_relative_to_the_working_folder(tmp_path, corpus,
                                                                          monkeypatch):
    """`mtnlg curate --config demo --input-root raw`: `raw` is where the user stands, not
    inside the installed package's config folder."""
    (tmp_path / "cfg").mkdir()
    path = write_config(str(tmp_path / "cfg" / "c.yaml"), "ignored")
    monkeypatch.chdir(os.path.dirname(corpus))
    cfg = load_config(path, input_root=os.path.basename(corpus))
    assert cfg.input_root == corpus


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
    ({"language": {"block_chars": 0}}, r"language\.block_chars: must be >= 1"),
    ({"site_boilerplate": {"host_documents": 0}}, r"site_boilerplate\.host_documents: must be >= 1"),
    ({"site_boilerplate": {"enabled": "yes"}}, r"site_boilerplate\.enabled: expected true or false"),
    ({"decontamination": {"tasks": ["none/*.jsonl"]}}, r"decontamination\.tasks"),
    ({"decontamination": {"tasks": ["tasks/*.jsonl"], "max_splits": 0}}, r"decontamination"),
    ({"tokenizer": {"path": "/does/not/exist"}}, r"tokenizer\.path"),
    ({"tokenizer": {"path": "x", "min_tokens": 0}}, r"tokenizer\.min_tokens"),
    ({"shards": {"max_tokens_per_shard": -1}}, r"shards\.max_tokens_per_shard"),
    ({"removed_sample": "some"}, r"removed_sample"),
    ({"priority": ["books3", "Books3"]}, r"priority"),
    # issue 15: values of the wrong type, and settings that mean nothing where they are
    ({"dedup": {"exact": "no"}}, r"dedup\.exact: expected true or false, got str 'no'"),
    ({"language": {"allowed": "en"}}, r"language\.allowed: expected a list of strings, got str"),
    ({"removed_sample": True}, r"removed_sample: expected a string or an integer, got bool"),
    ({"inputs": [{"reader": "pile", "source": "books3", "paths": ["pile/*.jsonl.zst"]}]},
     r"inputs\[0\]\.source: not used by reader 'pile'"),
    ({"inputs": [{"reader": "pile", "paths": [3]}]}, r"inputs\[0\]\.paths\[0\]: expected a string, got int 3"),
    ({"inputs": [{"reader": "pile", "paths": "pile/*.jsonl.zst"}]}, r"inputs\[0\]\.paths: expected a list"),
    ({"inputs": [{"reader": "realnews", "source": "realnews", "extractor": "justext",
                  "paths": ["realnews/*.jsonl"]}]}, r"inputs\[0\]\.extractor: only used by reader 'warc'"),
    ({"inputs": [{"reader": "pile"}]}, r"inputs\[0\]\.paths: required setting is missing"),
    ({"inputs": "pile/*.jsonl.zst"}, r"inputs: expected a list"),
    ({"dedup": {"fuzzy": {"threshold": "0.8"}}}, r"dedup\.fuzzy\.threshold: expected a number"),
    ({"dedup": {"fuzzy": {"num_perm": 12.5}}}, r"dedup\.fuzzy\.num_perm: expected an integer"),
    ({"heuristics": {"min_words": "50"}}, r"heuristics\.min_words: expected an integer or null"),
    ({"heuristics": {"min_wrds": 50}}, r"heuristics\.min_wrds: unknown setting; did you mean 'min_words'"),
    ({"decontamination": {"enabled": "yes"}}, r"decontamination\.enabled: expected true or false"),
    ({"decontamination": {"ngram_word": 13}}, r"decontamination\.ngram_word: unknown setting"),
    ({"tokenizer": {"path": GPT2, "min_tokens": True}}, r"tokenizer\.min_tokens: expected an integer, got bool"),
    ({"skip_sources": {"language": "github"}}, r"skip_sources\.language: expected a list of strings"),
    ({"quality": {"threshold": "high"}}, r"quality\.threshold: expected a number"),
    ({"name": 5}, r"name: expected a string"),
    ({"bogus": 1}, r"bogus: unknown setting"),
])
def test_invalid_settings_are_named(tmp_path, corpus, overrides, setting):
    with pytest.raises(ConfigError, match=setting):
        _load(tmp_path, corpus, **overrides)


def test_demo_config_parses_without_inputs(tmp_path):
    from infra.resources import config_path, local_path

    cfg = load_config(config_path("sources", "demo"), input_root=str(tmp_path), check_paths=False)
    assert {s.reader for s in cfg.inputs} == {"pile", "warc", "realnews", "cc_stories"}
    # The shipped tokenizer travels as a package reference, resolved on each worker.
    assert cfg.tokenizer.path == "pkg://data_manifests/tokenizers/gpt2"
    assert cfg.tokenizer.min_tokens == 128 and os.path.isdir(local_path(cfg.tokenizer.path))


def test_config_error_stops_curate_before_any_work(tmp_path, corpus):
    path = write_config(str(tmp_path / "c.yaml"), corpus, dedup={"exact": "no"})
    out = tmp_path / "run"
    assert curate.run(["--config", path, "--output", str(out)]) == 2
    assert not out.exists()  # refused before the output was even prepared


@pytest.mark.parametrize("case, message", [
    ("output_is_an_input_file", "--output: '{root}/realnews/rn.jsonl' is an existing file, not a folder"),
    ("empty_tokenizer_folder", "tokenizer.path: tokenizer directory '{tmp}/tok' has neither tokenizer.json "
                               "nor vocab.json + merges.txt"),
    ("corrupt_tokenizer_json", "tokenizer.path: tokenizer '{tmp}/tok': {tmp}/tok/tokenizer.json cannot be "
                               "loaded (Exception: EOF while parsing"),
])
def test_unusable_output_or_tokenizer_is_one_line_before_any_work(tmp_path, corpus, capsys, case, message):
    """Each was a traceback (issue 25): one ``mtnlg curate: config error: ...`` line, exit 2,
    and nothing written (the input file is untouched)."""
    tok, out = tmp_path / "tok", tmp_path / "run"
    tok.mkdir()
    if case == "corrupt_tokenizer_json":
        (tok / "tokenizer.json").write_text('{"model": ')
    if case == "output_is_an_input_file":
        path, out = write_config(str(tmp_path / "c.yaml"), corpus), tmp_path / "raw" / "realnews" / "rn.jsonl"
        before = out.read_bytes()
    else:
        path = write_config(str(tmp_path / "c.yaml"), corpus, tokenizer={"path": str(tok), "min_tokens": 128})
    assert curate.run(["--config", path, "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mtnlg curate: config error: " + message.format(root=corpus, tmp=tmp_path))
    assert err.count("\n") == 1 and "Traceback" not in err
    if case == "output_is_an_input_file":
        assert out.read_bytes() == before
    else:
        assert not out.exists()


def _two_inputs(first: list[str], second: list[str]) -> list[dict]:
    return [{"reader": "realnews", "source": "realnews", "paths": first},
            {"reader": "cc_stories", "source": "cc_stories", "paths": second}]


def test_overlapping_globs_are_refused_naming_both(tmp_path, corpus):
    with pytest.raises(ConfigError, match=r"inputs\[0\]\.paths\[1\]: .*rn\.jsonl' already matched by "
                                          r"inputs\[0\]\.paths\[0\]"):
        _load(tmp_path, corpus, inputs=[{"reader": "realnews", "source": "realnews",
                                         "paths": ["realnews/*.jsonl", "realnews/rn.jsonl"]}])


def test_same_file_through_a_symlink_or_hard_link_is_refused(tmp_path, corpus):
    os.symlink(os.path.join(corpus, "realnews"), os.path.join(corpus, "news_link"))
    with pytest.raises(ConfigError, match=r"inputs\[1\]\.paths\[0\].*already matched by inputs\[0\]"
                                          r"\.paths\[0\].*the same file"):
        _load(tmp_path, corpus, inputs=[
            {"reader": "realnews", "source": "realnews", "paths": ["realnews/*.jsonl"]},
            {"reader": "realnews", "source": "realnews", "paths": ["news_link/*.jsonl"]}])
    os.link(os.path.join(corpus, "cc_stories", "s1.txt"), os.path.join(corpus, "s1_again.txt"))
    with pytest.raises(ConfigError, match=r"inputs\[1\]\.paths\[1\].*s1_again\.txt.*the same file"):
        _load(tmp_path, corpus, inputs=_two_inputs(["realnews/*.jsonl"],
                                                   ["cc_stories/*.txt", "s1_again.txt"]))


def test_same_base_name_in_two_folders_is_fine_and_ids_differ(tmp_path, corpus):
    from curation.readers.files import id_path

    os.makedirs(os.path.join(corpus, "more", "realnews"))
    with open(os.path.join(corpus, "more", "realnews", "rn.jsonl"), "w") as f:
        f.write("{}\n")
    cfg = _load(tmp_path, corpus, inputs=_two_inputs(["realnews/*.jsonl", "more/realnews/*.jsonl"],
                                                     ["cc_stories/*.txt"]))
    assert len(cfg.inputs[0].paths) == 2
    assert {id_path(p, cfg.input_root) for p in (os.path.join(corpus, "realnews", "rn.jsonl"),
                                                 os.path.join(corpus, "more", "realnews", "rn.jsonl"))
            } == {"realnews/rn.jsonl", "more/realnews/rn.jsonl"}


def test_a_key_given_twice_is_refused(tmp_path, corpus):
    path = write_config(str(tmp_path / "c.yaml"), corpus)
    with open(path, "a") as f:
        f.write("name: second\n")
    with pytest.raises(ConfigError, match=r"^name: duplicate key in .*c\.yaml' \(lines \d+ and \d+\)"):
        load_config(path)


def test_not_utf8_config_is_a_config_error(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(ConfigError, match=r"--config"):
        load_config(str(path))


def test_an_empty_config_file_is_refused_naming_the_file(tmp_path, capsys):
    """Read as no settings, an empty file was refused as "inputs: required setting is missing"
    (issue 45): the message names the file and says it is empty."""
    path = tmp_path / "c.yaml"
    path.write_text("")
    out = tmp_path / "run"
    assert curate.run(["--config", str(path), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--config: '{path}' is empty: the file is empty" in err and "inputs" not in err
    assert not out.exists()
