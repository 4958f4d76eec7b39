"""Meta-device initialisation: every rank builds the model on the meta device, applies its
parallelism and initialises only its own shards, with exactly the values of the eager,
single-process model of the same seed, in every layout."""

import json
from pathlib import Path

import pytest
import torch

import spawn
from training.model import GPT, GPTConfig, init_rows
from training.parallelize import materialize

pytestmark = pytest.mark.xdist_group(spawn.RANK_SERVER_GROUP)

ROOT = Path(__file__).parents[2]


def test_meta_then_materialize_equals_eager_in_one_process():
    cfg = GPTConfig.preset("tiny", n_layers=3, vocab_size=300)
    eager = GPT(cfg, seed=5)
    with torch.device("meta"):
        lazy = GPT(cfg)
    assert all(p.is_meta for p in lazy.parameters())
    materialize(lazy, torch.device("cpu"), seed=5)
    for (name, a), (_, b) in zip(eager.named_parameters(), lazy.named_parameters()):
        assert torch.equal(a, b), name
    assert lazy.output.weight is lazy.tok_embeddings.weight
    assert not torch.equal(GPT(cfg, seed=6).layers["0"].mlp.fc1.weight,
                           eager.layers["0"].mlp.fc1.weight)


def test_rows_depend_only_on_seed_name_and_index():
    cfg = GPTConfig.preset("tiny", vocab_size=300)
    shape = (256, 64)
    full = init_rows(cfg, "layers.0.mlp.fc1.weight", 1, shape, torch.arange(256))
    rows, cols = torch.tensor([255, 3, 128]), torch.tensor([63, 0])
    assert torch.equal(init_rows(cfg, "layers.0.mlp.fc1.weight", 1, shape, rows, cols),
                       full[rows][:, cols])
    # the last pipeline stage's copy of the tied embedding draws the embedding's values
    emb = init_rows(cfg, "tok_embeddings.weight", 1, (384, 64), torch.arange(4))
    assert torch.equal(init_rows(cfg, "output.weight", 1, (384, 64), torch.arange(4)), emb)


@pytest.mark.slow
def test_meta_init_equals_eager_in_every_layout(tmp_path):
    out = tmp_path / "init.json"
    rc, log = spawn.run(4, ROOT / "tests" / "training" / "init_worker.py", out)
    assert rc == 0, log[-4000:]
    results = json.loads(out.read_text())
    assert len(results) == 4 * 6
    for r in results:
        assert r["parameters"] > 0
        assert r["max_abs_diff"] == 0.0, r  # bit-identical to the eager model
