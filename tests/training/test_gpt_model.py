import math
import pathlib

import pytest
import torch

from training.model import GPT, PRESETS, GPTConfig, cross_entropy_loss, param_groups

# Exact counts (tied embeddings once, vocab padded to 50304, learned positions).
GOLDEN_PARAMS = {
    "tiny": 3_327_744,
    "gpt-125m": 125_262_336,
    "gpt-1.3b": 1_315_819_520,
    "mtnlg-530b": 529_582_469_120,
}


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_param_count_golden(name):
    cfg = GPTConfig.preset(name)
    assert cfg.num_params() == GOLDEN_PARAMS[name]
    with torch.device("meta"):  # 530B parameters: shape only
        model = GPT(cfg)
    assert sum(p.numel() for p in model.parameters()) == GOLDEN_PARAMS[name]


def test_mtnlg_shape():
    cfg = GPTConfig.preset("mtnlg-530b")
    assert (cfg.n_layers, cfg.hidden, cfg.n_heads, cfg.max_seq_length) == (105, 20480, 128, 2048)
    assert cfg.std == pytest.approx(4.03e-3, rel=1e-2)  # sqrt(1/(3h)), REFERENCE: about 4.0e-3


def test_vocab_padding():
    cfg = GPTConfig.preset("tiny")
    assert cfg.padded_vocab_size() == 50304  # a multiple of 128, whatever the tp:
    assert 50304 % 8 == 0 and 50304 % 128 == 0  # every tp up to 128 divides it
    assert GPTConfig.preset("tiny", vocab_size=256).padded_vocab_size() == 256


def test_forward_shapes_and_tied_output():
    torch.manual_seed(0)
    model = GPT(GPTConfig.preset("tiny", vocab_size=300))
    tokens = torch.randint(0, 300, (3, 16))
    logits = model(tokens)
    assert logits.shape == (3, 16, 384)
    assert model.output.weight is model.tok_embeddings.weight
    loss = cross_entropy_loss(logits, tokens)
    assert loss.ndim == 0 and math.isfinite(loss.item())


def test_causal():
    torch.manual_seed(0)
    model = GPT(GPTConfig.preset("tiny", vocab_size=300)).eval()
    a = torch.randint(0, 300, (1, 20))
    b = a.clone()
    b[0, 10:] = (b[0, 10:] + 1) % 300
    torch.testing.assert_close(model(a)[:, :10], model(b)[:, :10])
    assert not torch.allclose(model(a)[:, 10:], model(b)[:, 10:])


def test_init_std():
    torch.manual_seed(0)
    cfg = GPTConfig(n_layers=8, hidden=256, n_heads=4, max_seq_length=32, vocab_size=4096)
    model = GPT(cfg)
    std = math.sqrt(1 / (3 * 256))
    layer = model.layers["3"]
    assert layer.attn.wq.weight.std().item() == pytest.approx(std, rel=0.03)
    assert layer.mlp.fc1.weight.std().item() == pytest.approx(std, rel=0.03)
    assert layer.attn.wo.weight.std().item() == pytest.approx(std / 4, rel=0.05)  # sqrt(2*8)
    assert layer.mlp.fc2.weight.std().item() == pytest.approx(std / 4, rel=0.05)
    assert model.tok_embeddings.weight.std().item() == pytest.approx(std, rel=0.03)
    assert torch.all(layer.attn.wq.bias == 0) and torch.all(layer.attn_norm.weight == 1)


def test_layers_keyed_by_global_index():
    model = GPT(GPTConfig.preset("tiny", n_layers=4, vocab_size=128))
    del model.layers["0"], model.layers["1"]  # what a pipeline stage will do
    names = {n.split(".")[1] for n, _ in model.named_parameters() if n.startswith("layers.")}
    assert names == {"2", "3"}


def test_stage_without_embeddings_or_norm_passes_hidden_states():
    model = GPT(GPTConfig.preset("tiny", vocab_size=128))
    model.tok_embeddings, model.pos_embeddings, model.norm, model.output = None, None, None, None
    h = torch.randn(2, 8, 64)
    assert model(h).shape == (2, 8, 64)


def test_param_groups_no_decay_on_biases_and_norms():
    model = GPT(GPTConfig.preset("tiny", vocab_size=128))
    decay, no_decay = param_groups(model, 0.1)
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert all(p.ndim == 2 for p in decay["params"])
    assert all(p.ndim == 1 for p in no_decay["params"])
    n = len(decay["params"]) + len(no_decay["params"])
    assert n == len(list(model.parameters()))


@pytest.mark.parametrize("bad, setting", [
    (dict(hidden=65), "model.hidden"),
    (dict(n_layers=0), "model.n_layers"),
    (dict(dropout=1.0), "model.dropout"),
])
def test_config_validation_names_setting(bad, setting):
    with pytest.raises(ValueError, match=setting):
        GPTConfig.preset("tiny", **bad)


def test_unknown_preset():
    with pytest.raises(ValueError, match="mtnlg-530b"):
        GPTConfig.preset("gpt-9000")


def test_model_file_never_imports_torch_distributed():
    src = pathlib.Path(__file__).parents[2].joinpath("training", "model.py").read_text()
    assert "import torch.distributed" not in src and "from torch.distributed" not in src


def test_init_rows_are_cpu_values_whatever_the_default_device():
    """The bare-loop benchmark builds the model under ``with torch.device("cuda")``: init_rows
    drew with a CPU generator on the default device and failed on the first GPU run. Under
    another default device (meta here, the one every CPU machine has) the values are the same
    CPU tensor."""
    from training.model import init_rows

    cfg = PRESETS["tiny"]
    rows, cols = torch.tensor([0, 5, 1100]), torch.tensor([3, 1])
    want = init_rows(cfg, "tok_embeddings.weight", 7, (2000, 64), rows, cols)
    with torch.device("meta"):
        got = init_rows(cfg, "tok_embeddings.weight", 7, (2000, 64), rows, cols)
        ones = init_rows(cfg, "norm.weight", 7, (64,), torch.arange(64))
    assert got.device.type == "cpu" and torch.equal(got, want)
    assert ones.device.type == "cpu" and torch.equal(ones, torch.ones(64))
