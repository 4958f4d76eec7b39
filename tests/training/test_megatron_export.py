"""Megatron interop: a trainer checkpoint exported to Megatron's per-rank GPT layout for a tp x
pp, loaded by megatron-core itself on CPU (logits equal the trainer's to 1e-5), and imported
back as a trainer checkpoint that the trainer continues from."""
import importlib.util
from pathlib import Path

import pytest
import torch

import spawn
from training_fixtures import TOKENIZER, RepeatedDataset
from training.checkpoint import load_plain_model, verify_checkpoint
from training.config import TrainConfig
from training.megatron_export import export_checkpoint, import_checkpoint, read_megatron
from training.megatron_layout import MegatronLayout, from_megatron, megatron_vocab, to_megatron
from training.model import GPT, GPTConfig
from training.trainer import Trainer

pytestmark = pytest.mark.xdist_group(spawn.RANK_SERVER_GROUP)

WORKER = Path(__file__).with_name("megatron_worker.py")
CFG = GPTConfig(n_layers=4, hidden=64, n_heads=4, max_seq_length=64, vocab_size=250)


def test_round_trip_through_every_layout_is_exact():
    model = GPT(CFG, seed=3)
    state = model.state_dict()
    for layout in (MegatronLayout(1, 1), MegatronLayout(2, 2), MegatronLayout(4, 1),
                   MegatronLayout(2, 2, 2), MegatronLayout(1, 4)):
        back = from_megatron(to_megatron(state, CFG, layout), CFG, layout)
        assert set(back) == set(state), layout
        for k, v in state.items():
            assert torch.equal(back[k], v), (layout, k)


def test_the_documented_key_layout_and_shards():
    """Names, local layer numbering and per-rank shapes of megatron-core's local GPT spec
    (``get_gpt_layer_local_spec``, as listed by a GPTModel's state_dict)."""
    ranks = to_megatron(GPT(CFG, seed=3).state_dict(), CFG, MegatronLayout(tp=2, pp=2))
    assert sorted(ranks) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    _, padded = megatron_vocab(CFG, 2)
    assert padded == CFG.padded_vocab_size() == 256  # divisible_by 64 x tp 2 = our 128
    first, last = ranks[(1, 0)][0], ranks[(1, 1)][0]
    layer = {k.split(".", 3)[3]: v for k, v in first.items() if k.startswith("decoder.layers.1.")}
    shapes = {k: tuple(v.shape) for k, v in layer.items() if v is not None}
    assert shapes == {
        "input_layernorm.weight": (64,), "input_layernorm.bias": (64,),
        "self_attention.linear_qkv.weight": (96, 64), "self_attention.linear_qkv.bias": (96,),
        "self_attention.linear_proj.weight": (64, 32), "self_attention.linear_proj.bias": (64,),
        "pre_mlp_layernorm.weight": (64,), "pre_mlp_layernorm.bias": (64,),
        "mlp.linear_fc1.weight": (128, 64), "mlp.linear_fc1.bias": (128,),
        "mlp.linear_fc2.weight": (64, 128), "mlp.linear_fc2.bias": (64,)}
    assert {k for k, v in layer.items() if v is None} == {
        f"{m}._extra_state" for m in ("self_attention.linear_qkv", "self_attention.linear_proj",
                                      "mlp.linear_fc1", "mlp.linear_fc2")}
    assert not any(k.startswith("decoder.layers.2.") for k in first)  # numbered per stage
    assert first["embedding.word_embeddings.weight"].shape == (128, 64)  # vocab rows split
    assert "output_layer.weight" not in first and "decoder.final_layernorm.weight" in last
    assert last["output_layer.weight"].shape == (128, 64)  # the last stage's tied copy
    assert "embedding.word_embeddings.weight" not in last


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny trainer checkpoint (4 layers, vocab 256) after 3 steps."""
    out = tmp_path_factory.mktemp("trained")
    cfg = TrainConfig.from_settings({
        "model.name": "tiny", "model.overrides": {"n_layers": 4}, "seq_length": 32,
        "global_batch_size": 4, "micro_batch_size": 4, "train_steps": 3, "lr": 3e-3,
        "warmup_tokens": 0, "decay_tokens": 3 * 4 * 32, "output_dir": str(out),
        "tensorboard": False})
    Trainer(cfg, RepeatedDataset(32), TOKENIZER).train()
    return str(out / "checkpoints" / "step-00000003")


def test_export_then_import_gives_the_same_model_and_the_trainer_continues(trained, tmp_path):
    export_checkpoint(trained, str(tmp_path / "mg"), tp=2, pp=2)
    assert (tmp_path / "mg" / "latest_checkpointed_iteration.txt").read_text() == "3"
    args, layout, _, iteration = read_megatron(str(tmp_path / "mg"))
    assert (layout, iteration) == (MegatronLayout(2, 2), 3)
    assert args.consumed_train_samples == 12 and args.padded_vocab_size == 256
    back = str(tmp_path / "imported")
    import_checkpoint(str(tmp_path / "mg"), back)
    verify_checkpoint(back)  # sealed like any trainer checkpoint
    original, imported = load_plain_model(trained), load_plain_model(back)
    tokens = torch.randint(0, 256, (2, 32), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(imported(tokens), original(tokens), rtol=0, atol=0)
    cfg = TrainConfig.from_settings({
        "model.name": "tiny", "model.overrides": {"n_layers": 4}, "seq_length": 32,
        "global_batch_size": 4, "micro_batch_size": 4, "train_steps": 5, "lr": 3e-3,
        "warmup_tokens": 0, "decay_tokens": 5 * 4 * 32, "output_dir": str(tmp_path / "cont"),
        "tensorboard": False})
    t = Trainer(cfg, RepeatedDataset(32), TOKENIZER)
    t.load_checkpoint(back)
    assert (t.step, t.loader.consumed_samples, t.consumed_tokens) == (3, 12, 12 * 32)
    assert [r["step"] for r in t.train()] == [4, 5]


def test_import_refuses_what_the_model_cannot_represent(trained, tmp_path):
    from training.checkpoint import CheckpointError

    export_checkpoint(trained, str(tmp_path / "mg"))
    path = tmp_path / "mg" / "iter_0000003" / "mp_rank_00" / "model_optim_rng.pt"
    doc = torch.load(path, weights_only=False)
    doc["args"].position_embedding_type = "rope"
    doc["args"].swiglu = True
    torch.save(doc, path)
    with pytest.raises(CheckpointError, match="learned_absolute.*swiglu"):
        import_checkpoint(str(tmp_path / "mg"), str(tmp_path / "bad"))


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("megatron") is None
                    or importlib.util.find_spec("megatron.core") is None,
                    reason="megatron-core is not installed (pip install megatron-core==0.16.1)")
@pytest.mark.parametrize("tp, pp", [(1, 1), (2, 2)])
def test_megatron_core_loads_the_export_with_equal_logits(trained, tmp_path, tp, pp):
    export_checkpoint(trained, str(tmp_path / "mg"), tp=tp, pp=pp)
    tokens = torch.randint(0, 256, (2, 32), generator=torch.Generator().manual_seed(1))
    torch.save(tokens, tmp_path / "tokens.pt")
    # tp ranks in torchrun's environment (forked by spawn.py's rank server)
    rc, log = spawn.run(tp, WORKER, tmp_path / "mg", tmp_path / "tokens.pt",
                        tmp_path / "logits.pt")
    assert rc == 0, log[-4000:]
    theirs = torch.load(tmp_path / "logits.pt")
    with torch.no_grad():
        ours = load_plain_model(trained)(tokens)
    assert theirs.shape == ours.shape == (2, 32, 256)
    assert (theirs - ours).abs().max().item() < 1e-5
