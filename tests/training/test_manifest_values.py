"""`mtnlg train` refuses a manifest whose own values were edited, before any work starts (no
process group, no model), with one line naming the field, whatever the shard checks say
(`--verify-shards none` here: the value checks do not depend on them, and a tamperer who
recomputes checksums gains nothing).  A hidden corpus of artefact faults found that a weight
edited to a negative number trained and silently dropped that source."""

import json
import math

import pytest

from training_fixtures import small_tokenizer, write_manifest
from training.launch import main
from training.manifest_values import check_manifest_values


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    blend = tmp_path_factory.mktemp("blend")
    path = write_manifest(str(blend), repeat=2, tokenizer_path=small_tokenizer(str(blend / "tok")))
    check_manifest_values(path)  # what `mtnlg blend` writes passes
    return path


def reweight(d: dict, i: int, weight) -> None:
    """A tamperer who edits a weight and recomputes what follows from it."""
    s = d["sources"][i]
    s["weight"] = weight
    s["target_tokens"] = weight * d["blend"]["train_tokens"]
    s["epochs"] = s["target_tokens"] / s["available_tokens"]


def setter(path: list, value):
    def edit(d):
        *head, last = path
        for key in head:
            d = d[key]
        d[last] = value(d[last]) if callable(value) else value
    return edit


FAULTS = {
    # the case, with target_tokens and epochs recomputed to match
    "sources[1].weight": lambda d: reweight(d, 1, -0.5),
    "sources[0].weight": setter(["sources", 0, "weight"], math.nan),
    "sources[*].weight": lambda d: reweight(d, 1, 0.7),  # weights sum to 1.2
    "sources[0].target_tokens": setter(["sources", 0, "target_tokens"], 1.0),
    "sources[0].epochs": setter(["sources", 0, "epochs"], 99.0),
    "sources[0].available_tokens": setter(["sources", 0, "available_tokens"], lambda v: v + 1),
    "sources[0].documents": setter(["sources", 0, "documents"], -1),
    "sources[0].shards[0].tokens": setter(["sources", 0, "shards", 0, "tokens"], -3),
    "sources[0].shards[0].documents": setter(["sources", 0, "shards", 0, "documents"], 1.5),
    "sources[0].shards[0].bin_sha256": setter(["sources", 0, "shards", 0, "bin_sha256"], "x" * 64),
    "sources[0].shards[0].path": setter(["runs"], ["elsewhere"]),  # a shard outside the runs
    "sources[1].name": setter(["sources", 1, "name"], "wiki"),  # a duplicate
    "sources": setter(["sources"], []),
    "runs": setter(["runs"], "run"),
    "blend.train_tokens": setter(["blend", "train_tokens"], 0),
    "blend.epoch_cap": setter(["blend", "epoch_cap"], -1),
    "blend.dataset_tokens": setter(["blend", "dataset_tokens"], "lots"),
    "blend.split": setter(["blend", "split"], [0, 1, 1]),
    "tokenizer.vocab_size": setter(["tokenizer", "vocab_size"], True),
    "tokenizer.eod_id": setter(["tokenizer", "eod_id"], 320),
    "tokenizer.sha256": setter(["tokenizer", "sha256"], "abc"),
    "format_version": setter(["format_version"], 2),
}


def edited(manifest: str, tmp_path, edit) -> str:
    with open(manifest) as f:
        d = json.load(f)
    edit(d)
    path = tmp_path / "manifest.json"  # next to the original's folder layout: absolute shard paths
    path.write_text(json.dumps(d))
    return str(path)


@pytest.mark.parametrize("field", FAULTS)
def test_train_refuses_an_edited_value_naming_the_field_before_any_work(
        field, manifest, tmp_path, monkeypatch, capsys):
    def no_work(*args, **kwargs):
        raise AssertionError("the process group was started for a faulty manifest")
    monkeypatch.setattr("training.launch.setup_logging", lambda: None)
    monkeypatch.setattr("training.trainer.init_distributed", no_work)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    path = edited(manifest, tmp_path, FAULTS[field])
    code = main(["--manifest", path, "--steps", "1", "--verify-shards", "none",
                 "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"manifest field '{field}'" in err and err.strip().count("\n") == 0, err


def test_the_launcher_refuses_it_before_any_rank_starts(manifest, tmp_path, monkeypatch, capsys):
    started = []
    monkeypatch.setattr("training.launch.setup_logging", lambda: None)
    monkeypatch.setattr("training.elastic.run_node", lambda *a, **k: started.append(a) or 0)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    path = edited(manifest, tmp_path, FAULTS["sources[1].weight"])
    assert main(["--manifest", path, "--nproc", "2", "--steps", "1",
                 "--output", str(tmp_path / "out")]) == 2
    assert "manifest field 'sources[1].weight' must be a finite number >= 0, got -0.5" in \
        capsys.readouterr().err
    assert started == []
