"""Hugging Face GPT-2 export (transformers is a dev dependency) and SIGTERM checkpoints."""

import json
import os
import signal

import pytest
import torch

from training_fixtures import TOKENIZER, RepeatedDataset
from training.config import TrainConfig
from training.hf_export import export_checkpoint, load_plain_model
from training.trainer import Trainer

SEQ = 32


def config(tmp_path, **kw) -> TrainConfig:
    base = dict(vocab_size=300, seq_length=SEQ, global_batch_size=4,
                micro_batch_size=2, train_steps=3, lr=3e-3, warmup_tokens=0,
                decay_tokens=10**6, output_dir=str(tmp_path / "out"))
    base.update(kw)
    return TrainConfig.from_settings({"model.name": "tiny", **base})


def test_export_loads_in_transformers_with_same_logits(tmp_path):
    transformers = pytest.importorskip("transformers")
    trainer = Trainer(config(tmp_path, export_hf=True), RepeatedDataset(SEQ), TOKENIZER)
    trainer.train()
    hf_dir = tmp_path / "out" / "hf"
    assert json.loads((hf_dir / "config.json").read_text())["vocab_size"] == 300
    hf = transformers.GPT2LMHeadModel.from_pretrained(str(hf_dir)).eval()
    ours = trainer.model.eval()
    tokens = torch.randint(0, 300, (2, 20), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = ours(tokens)[..., :300]  # our embedding is padded to 384 rows
        got = hf(tokens).logits
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)


def test_export_from_checkpoint_cli(tmp_path):
    trainer = Trainer(config(tmp_path, train_steps=1), RepeatedDataset(SEQ), TOKENIZER)
    trainer.train()
    out = export_checkpoint(trainer.checkpoint_path(), str(tmp_path / "hf"))
    assert os.path.exists(os.path.join(out, "model.safetensors"))
    plain = load_plain_model(trainer.checkpoint_path())
    torch.testing.assert_close(plain.layers["1"].mlp.fc2.weight,
                               trainer.model.layers["1"].mlp.fc2.weight)


def test_resume_is_bit_for_bit(tmp_path):
    full = Trainer(config(tmp_path / "a", train_steps=6), RepeatedDataset(SEQ), TOKENIZER).train()
    Trainer(config(tmp_path / "b", train_steps=3), RepeatedDataset(SEQ), TOKENIZER).train()
    resumed = Trainer(config(tmp_path / "b", train_steps=6, seed=99), RepeatedDataset(SEQ),
                      TOKENIZER)
    resumed.load_checkpoint(str(tmp_path / "b" / "out" / "checkpoints" / "step-00000003"))
    rest = resumed.train()
    assert [r["loss"] for r in rest] == [r["loss"] for r in full[3:]]  # exact
    assert [r["grad_norm"] for r in rest] == [r["grad_norm"] for r in full[3:]]


def test_sigterm_checkpoints_and_stops(tmp_path):
    trainer = Trainer(config(tmp_path, train_steps=10), RepeatedDataset(SEQ), TOKENIZER)
    step = trainer.train_step

    def step_then_preempt(batch):
        record = step(batch)
        if record["step"] == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        return record
    trainer.train_step = step_then_preempt
    history = trainer.train()
    assert len(history) == 2
    assert (tmp_path / "out" / "checkpoints" / "step-00000002" / ".metadata").exists()
    assert signal.getsignal(signal.SIGTERM) is not None  # handler restored


def test_a_sigterm_taken_during_the_stop_agreement_is_kept(monkeypatch):
    """The ranks agree to stop by an all-reduce of their requests; a SIGTERM whose handler runs
    while that all-reduce waits for a slow peer came after this rank's flag was read.  It must
    stop the next step, not be overwritten by the agreed "no" (the ranks then trained on until
    the agent killed them, without a checkpoint: seen under load in the elastic launch test)."""
    from types import SimpleNamespace

    import training.trainer as trainer_module

    ranks = SimpleNamespace(mesh=object(), device="cpu", _stop_requested=False)

    def all_reduce_with_a_signal(flag, op):  # every peer said no; the handler runs meanwhile
        ranks._stop_requested = True
    monkeypatch.setattr(trainer_module.dist, "all_reduce", all_reduce_with_a_signal)
    assert Trainer._agree_to_stop(ranks) is False  # this step's agreement: no one asked yet
    assert ranks._stop_requested
    monkeypatch.setattr(trainer_module.dist, "all_reduce", lambda flag, op: None)
    assert Trainer._agree_to_stop(ranks) is True  # the next step's: this rank asks


def test_metrics_have_throughput_and_shares(tmp_path):
    cfg = config(tmp_path, train_steps=1, **{"checkpoint.enabled": False})
    Trainer(cfg, RepeatedDataset(SEQ), TOKENIZER, source_targets={"a": 0.5, "b": 0.5}).train()
    assert not list((tmp_path / "out").glob("checkpoints/step-*"))  # checkpoint.enabled false
    row = json.loads(open(cfg.metrics_path).readline())
    for key in ("tflops_per_device", "mfu", "peak_memory_bytes", "source_share",
                "source_target"):
        assert key in row
    assert row["mfu"] is None  # CPU: no peak FLOP/s known
    assert row["source_share"] == {"a": 0.5, "b": 0.5}
