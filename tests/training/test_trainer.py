import json
import pathlib

import pytest

from training_fixtures import TOKENIZER, RepeatedDataset, write_manifest
from training.config import TrainConfig
from training.trainer import Trainer

SEQ = 32


def config(tmp_path, **kw) -> TrainConfig:
    base = dict(seq_length=SEQ, global_batch_size=8, micro_batch_size=4,
                train_steps=30, lr=3e-3, warmup_tokens=2 * 8 * SEQ, decay_tokens=30 * 8 * SEQ,
                output_dir=str(tmp_path / "out"), seed=1234)
    base.update(kw)
    return TrainConfig.from_settings({"model.name": "tiny", **base})


# First losses of the tiny model (vocab 256, fp32, seed 1234) on RepeatedDataset(32):
# a regression guard for the model, init, data order and optimizer together. (Changed with the
# per-parameter, layout-independent init of issue 17; the old values came from one sequential
# RNG stream over the whole model, which a rank holding one shard cannot reproduce.)
GOLDEN_FIRST_LOSSES = [5.726721, 5.726721, 5.074965, 4.302438]


def test_loss_falls_on_repeated_dataset(tmp_path):
    trainer = Trainer(config(tmp_path), RepeatedDataset(SEQ), TOKENIZER)
    history = trainer.train()
    losses = [r["loss"] for r in history]
    assert len(losses) == 30
    assert losses[:4] == pytest.approx(GOLDEN_FIRST_LOSSES, rel=1e-4)
    assert losses[-1] < 0.2 * losses[0]
    assert history[0]["lr"] == 0.0 and history[2]["lr"] == pytest.approx(3e-3)
    assert history[-1]["consumed_tokens"] == 30 * 8 * SEQ
    assert history[-1]["source_tokens"] == {"a": 120 * SEQ, "b": 120 * SEQ}


def test_metrics_jsonl_and_end_checkpoint(tmp_path):
    cfg = config(tmp_path, train_steps=3)
    Trainer(cfg, RepeatedDataset(SEQ), TOKENIZER).train()
    rows = [json.loads(line) for line in open(cfg.metrics_path)]
    assert [r["step"] for r in rows] == [1, 2, 3]
    for key in ("loss", "grad_norm", "lr", "global_batch", "tokens", "tokens_per_s",
                "consumed_tokens", "source_tokens"):
        assert key in rows[0]
    ckpt = tmp_path / "out" / "checkpoints" / "step-00000003"
    assert (ckpt / ".metadata").exists() and (ckpt / "config.json").exists()


def test_resume_from_checkpoint_continues_exactly(tmp_path):
    full = Trainer(config(tmp_path / "a", train_steps=6), RepeatedDataset(SEQ), TOKENIZER).train()
    first = Trainer(config(tmp_path / "b", train_steps=3), RepeatedDataset(SEQ), TOKENIZER)
    first.train()
    resumed = Trainer(config(tmp_path / "b", train_steps=6, seed=99), RepeatedDataset(SEQ),
                      TOKENIZER)
    resumed.load_checkpoint(str(tmp_path / "b" / "out" / "checkpoints" / "step-00000003"))
    assert resumed.step == 3 and resumed.loader.consumed_samples == 24
    rest = resumed.train()
    assert [r["step"] for r in rest] == [4, 5, 6]
    assert [r["loss"] for r in rest] == pytest.approx([r["loss"] for r in full[3:]], abs=1e-6)


def test_bf16_autocast_runs(tmp_path):
    history = Trainer(config(tmp_path, train_steps=2, dtype="bfloat16"), RepeatedDataset(SEQ),
                      TOKENIZER).train()
    assert history[-1]["loss"] < 6.0


# --- refusals before any compute ---------------------------------------------------------------
@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    return write_manifest(str(tmp_path_factory.mktemp("blend")), repeat=5)


@pytest.fixture
def no_model(monkeypatch):
    """Fail the test if the trainer gets as far as building a model."""
    def refuse(*a, **k):
        raise AssertionError("model built before the manifest was refused")
    monkeypatch.setattr("training.trainer.GPT", refuse)


def test_model_vocab_smaller_than_tokenizer_refused(tmp_path, manifest, no_model):
    cfg = config(tmp_path, vocab_size=50000)
    with pytest.raises(ValueError, match="^model.vocab_size: .*50000.* 50257"):
        Trainer.from_manifest(cfg, manifest)


@pytest.mark.parametrize("suffix", [".bin", ".idx"])
def test_tampered_shard_refused(tmp_path, no_model, suffix):
    path = write_manifest(str(tmp_path / "blend"), repeat=2)
    shard = tmp_path / "blend" / "shards" / "wiki" / f"wiki_00000{suffix}"
    data = bytearray(shard.read_bytes())
    data[-1] ^= 1  # the last byte: a document's token, or the idx's last document index
    shard.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=f"checksum mismatch for .*wiki_00000\\{suffix}"):
        Trainer.from_manifest(config(tmp_path), path)


# a vocab_size that still holds the EOD id (a smaller one is refused by the value checks first,
# test_manifest_values): the tokenizer file itself disagrees
@pytest.mark.parametrize("field, value", [("sha256", "f" * 64), ("vocab_size", 60000),
                                          ("eod_id", 0)])
def test_tokenizer_mismatch_refused(tmp_path, manifest, no_model, field, value):
    doc = json.load(open(manifest))
    doc["tokenizer"][field] = value
    # the edited copy lives next to the original so its relative shard paths stay valid
    edited = pathlib.Path(manifest).with_name(f"edited-{field}.json")
    edited.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=f"tokenizer mismatch: tokenizer.{field}"):
        Trainer.from_manifest(config(tmp_path), str(edited))


def test_manifest_end_to_end_single_process(tmp_path, manifest):
    cfg = config(tmp_path, train_steps=4, global_batch_size=4, micro_batch_size=2, seq_length=64,
                 warmup_tokens=0, decay_tokens=10**6)
    history = Trainer.from_manifest(cfg, manifest).train()
    assert history[-1]["loss"] < history[0]["loss"]
    assert set(history[-1]["source_tokens"]) == {"wiki", "books"}
    assert sum(history[-1]["source_tokens"].values()) == 4 * 4 * 64


def test_train_tokens_with_batch_rampup(tmp_path):
    # ramp 4 -> 8 in steps of 2 over 512 tokens: one increment per 256 consumed tokens
    cfg = config(tmp_path, train_steps=None, train_tokens=1800, global_batch_size=8,
                 micro_batch_size=2, rampup_batch_start=4, rampup_batch_increment=2,
                 rampup_tokens=512)
    history = Trainer(cfg, RepeatedDataset(SEQ), TOKENIZER).train()
    assert [r["global_batch"] for r in history] == [4, 4, 6, 6, 8, 8, 8, 8, 8]
    assert history[-1]["consumed_tokens"] == 60 * SEQ  # first count >= 1800
