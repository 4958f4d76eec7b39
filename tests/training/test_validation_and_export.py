"""The held-out split: the manifest carries Megatron's train/valid/test split, the trainer
evaluates the validation loss every N steps and at the end, into metrics.jsonl and TensorBoard;
the Hugging Face export carries the tokenizer and a generation config."""

import json

import pytest
import torch

from training_fixtures import write_manifest
from training.config import TrainConfig
from training.trainer import Trainer

SEQ = 32


def split_manifest(directory) -> str:
    import dataclasses

    from blending.manifest import load_manifest, write_manifest as write
    path = write_manifest(str(directory), repeat=10)
    manifest = load_manifest(path, verify_checksums=False)
    write(dataclasses.replace(manifest, split=(8.0, 2.0, 0.0)), path)
    return path


def test_split_ranges_follow_megatron():
    from blending.manifest import split_bounds
    assert split_bounds((969, 30, 1), 1000) == [0, 969, 999, 1000]
    assert split_bounds((8, 2, 0), 30) == [0, 24, 30, 30]
    assert split_bounds((1, 1, 1), 10) == [0, 4, 7, 10]  # 3+3+3 rounds short: every boundary +1


def test_valid_split_is_held_out(tmp_path):
    from blending.manifest import load_manifest
    from blending.sampling import BlendedDataset
    path = split_manifest(tmp_path)
    manifest = load_manifest(path)
    assert manifest.split == (8.0, 2.0, 0.0)
    src = manifest.sources[0]
    assert manifest.split_range(src, "train") == (0, 24)
    assert manifest.split_range(src, "valid") == (24, 30)
    train = BlendedDataset(manifest, SEQ, 40, cache_dir=None)
    valid = BlendedDataset(manifest, SEQ, 10, cache_dir=None, split="valid")
    # wiki: 3 texts x 10 = 30 documents, books: 2 x 10 = 20; 80% train, 20% valid each
    assert [d.doc_lengths.size for d in train.datasets] == [24, 16]
    assert [(d.first_doc, d.doc_lengths.size) for d in valid.datasets] == [(24, 6), (16, 4)]
    assert len(valid[0]) == SEQ + 1


def test_validation_loss_in_metrics_and_tensorboard(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    path = split_manifest(tmp_path / "blend")
    cfg = TrainConfig.from_settings({
        "model.name": "tiny", "seq_length": SEQ, "global_batch_size": 4, "micro_batch_size": 2,
        "train_steps": 4, "lr": 3e-3, "warmup_tokens": 0, "decay_tokens": 10**6,
        "validation.interval": 2, "validation.batches": 1, "export_hf": True,
        "output_dir": str(tmp_path / "out")})
    trainer = Trainer.from_manifest(cfg, path)
    history = trainer.train()
    rows = [json.loads(line) for line in open(cfg.metrics_path)]
    val = [r for r in rows if "val_loss" in r]
    assert [r["step"] for r in val] == [2, 4]  # every 2 steps; the end is step 4
    assert all(0 < r["val_loss"] < 12 for r in val)
    assert [r["step"] for r in rows if "loss" in r] == [1, 2, 3, 4]
    events = EventAccumulator(str(tmp_path / "out" / "tensorboard")).Reload()
    assert [e.step for e in events.Scalars("val/loss")] == [2, 4]
    assert len(events.Scalars("train/loss")) == 4
    assert events.Scalars("train/loss")[0].value == pytest.approx(history[0]["loss"])

    # --- the Hugging Face export of the same run: weights, tokenizer, generation config ---
    transformers = pytest.importorskip("transformers")
    hf = tmp_path / "out" / "hf"
    tok = transformers.AutoTokenizer.from_pretrained(str(hf))
    assert len(tok) == 50257
    text = "The quick brown fox jumps over the lazy dog."
    ids = tok(text)["input_ids"]
    assert tok.decode(ids) == text and len(ids) > 5
    assert tok.eos_token_id == 50256
    gen = transformers.GenerationConfig.from_pretrained(str(hf))
    assert gen.eos_token_id == 50256 and gen.pad_token_id == 50256
    model = transformers.GPT2LMHeadModel.from_pretrained(str(hf)).eval()
    out = model.generate(torch.tensor([ids]), max_new_tokens=5, generation_config=gen)
    assert out.shape[1] > len(ids) and tok.decode(out[0]).startswith(text)
    with torch.no_grad():  # the export's logits are our model's
        ours = trainer.model.eval()(torch.tensor([ids]))[..., :50257]
        torch.testing.assert_close(model(torch.tensor([ids])).logits, ours, atol=1e-4,
                                   rtol=1e-4)
