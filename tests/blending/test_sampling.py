import pickle

import numpy as np
import pytest

from blending.build import build_manifest
from blending.sampling import BlendedDataset, GPTSampleIndex, blend_indices
from blending.spec import blend_spec_from_dict

from blend_fixtures import make_run, random_docs

MTNLG_WEIGHTS = [0.14336, 0.19336, 0.05689, 0.02897, 0.04771, 0.00873, 0.01007, 0.00208,
                 0.09446, 0.01359, 0.01588, 0.13017, 0.15652, 0.08962, 0.00859]


def test_blend_indices_golden():
    # Worked by hand from Megatron's rule: argmax of w*max(i,1) - count, ties to lowest.
    idx, within = blend_indices([0.5, 0.3, 0.2], 6)
    assert idx.tolist() == [0, 1, 2, 0, 1, 0]
    assert within.tolist() == [0, 0, 0, 1, 1, 2]
    assert blend_indices([0.5, 0.5], 4)[0].tolist() == [0, 1, 0, 1]  # tie at i=2 -> index 0
    assert blend_indices([2, 6], 4)[0].tolist() == [1, 0, 1, 1]  # weights are normalised


def test_blend_proportions_one_million_samples():
    n = 1_000_000
    idx, within = blend_indices(MTNLG_WEIGHTS, n)
    counts = np.bincount(idx, minlength=15)
    shares = counts / n
    assert np.all(np.abs(shares - np.array(MTNLG_WEIGHTS)) <= 0.001 * np.array(MTNLG_WEIGHTS) + 1e-12)
    # The greedy rule keeps every running count within one sample of weight x i.
    assert np.all(np.abs(counts - np.array(MTNLG_WEIGHTS) * n) <= 1.0)
    # within-source indices count up 0, 1, 2, ... per source
    for d in (0, 7, 14):
        assert within[idx == d].tolist() == list(range(counts[d]))


def _source(tmp_path, docs_per_shard, name="alpha"):
    run = make_run(str(tmp_path / "run"), {name: docs_per_shard})
    spec = blend_spec_from_dict({"name": "t", "train_tokens": 10,
                                 "sources": [{"name": name, "weight": 1.0}]})
    return build_manifest(spec, [run], str(tmp_path / "m.json")).source(name)


def test_worked_example(tmp_path):
    src = _source(tmp_path, [[[1, 2, 3, 4, 999], [5, 6, 7, 999]]])
    gi = GPTSampleIndex(src, seq_length=3, num_samples=2, seed=0, shuffle_samples=False)
    assert gi.num_epochs == 1
    stream = np.concatenate([[[1, 2, 3, 4, 999], [5, 6, 7, 999]][d] for d in gi.document_index])
    assert gi[0].tolist() == stream[0:4].tolist() and gi[1].tolist() == stream[3:7].tolist()
    assert GPTSampleIndex(src, 3, 3, seed=0).num_epochs == 2


@pytest.mark.parametrize("seq_length,num_samples", [(7, 200), (1, 50), (64, 40), (500, 3)])
def test_samples_tile_the_shuffled_stream(tmp_path, seq_length, num_samples):
    rng = np.random.default_rng(seq_length)
    shards = [random_docs(rng, 13), random_docs(rng, 9, lo=0, hi=3), random_docs(rng, 11)]
    src = _source(tmp_path, shards)
    docs = [d for shard in shards for d in shard]
    gi = GPTSampleIndex(src, seq_length, num_samples, seed=42, shuffle_samples=False)
    n_docs = len(docs)
    # Every epoch is a permutation of all documents.
    for e in range(gi.num_epochs):
        assert sorted(gi.document_index[e * n_docs:(e + 1) * n_docs].tolist()) == list(range(n_docs))
    # Exactly as many epochs as needed: one fewer would not hold the last sample.
    tokens = sum(map(len, docs))
    assert gi.num_epochs * tokens >= num_samples * seq_length + 1
    assert (gi.num_epochs - 1) * tokens < num_samples * seq_length + 1
    stream = np.concatenate([docs[d] for d in gi.document_index])
    rebuilt = [gi[0]] + [gi[j][1:] for j in range(1, num_samples)]  # drop the 1-token overlap
    rebuilt = np.concatenate(rebuilt)
    assert rebuilt.tolist() == stream[:num_samples * seq_length + 1].tolist()
    assert all(gi[j].dtype == np.int64 and len(gi[j]) == seq_length + 1 for j in range(num_samples))


def test_sample_shuffle_is_a_permutation(tmp_path):
    rng = np.random.default_rng(0)
    src = _source(tmp_path, [random_docs(rng, 30)])
    a = GPTSampleIndex(src, 8, 60, seed=1)
    b = GPTSampleIndex(src, 8, 60, seed=1, shuffle_samples=False)
    # The shuffle covers every sample the stream holds (>= the 60 asked for), as Megatron's.
    total = len(a.sample_index) - 1
    assert total >= 60 and sorted(a.shuffle_index.tolist()) == list(range(total))
    assert a.shuffle_index[:60].tolist() != list(range(60))
    assert a[5].tolist() == b[int(a.shuffle_index[5])].tolist()


def _two_source_manifest(tmp_path, weights=(0.75, 0.25)):
    rng = np.random.default_rng(5)
    # alpha tokens < 500, beta tokens >= 500 (EOD 999 in both) to see where a sample came from
    alpha = [[list(rng.integers(0, 500, int(rng.integers(1, 30)))) + [999] for _ in range(40)]]
    beta = [[list(rng.integers(500, 998, int(rng.integers(1, 30)))) + [999] for _ in range(15)]]
    run = make_run(str(tmp_path / "run"), {"alpha": alpha, "beta": beta})
    spec = blend_spec_from_dict({"name": "t", "train_tokens": 5000, "sources": [
        {"name": "alpha", "weight": weights[0]}, {"name": "beta", "weight": weights[1]}]})
    return build_manifest(spec, [run], str(tmp_path / "m.json"))


def test_blended_dataset(tmp_path):
    m = _two_source_manifest(tmp_path)
    ds = BlendedDataset(m, seq_length=16, num_samples=400, seed=7)
    assert len(ds) == 400
    shares = ds.realized_shares()
    assert shares["alpha"] == pytest.approx(0.75, abs=1 / 400)
    for i in range(len(ds)):
        x = ds[i]
        assert x.dtype == np.int64 and x.shape == (17,)
        body = x[x != 999]
        if ds.source_of(i) == "alpha":
            assert (body < 500).all()
        else:
            assert (body >= 500).all()
    assert ds.epochs()["beta"] > 1  # small source repeated in shuffled epochs
    again = BlendedDataset(m, 16, 400, seed=7)
    other = BlendedDataset(m, 16, 400, seed=8)
    assert all((ds[i] == again[i]).all() for i in range(0, 400, 7))
    assert any((ds[i] != other[i]).any() for i in range(0, 400, 7))
    clone = pickle.loads(pickle.dumps(ds))
    assert all((ds[i] == clone[i]).all() for i in range(0, 400, 13))
    assert ds[-1].tolist() == ds[399].tolist()
    with pytest.raises(IndexError):
        ds[400]


def test_zero_weight_source_never_sampled(tmp_path):
    m = _two_source_manifest(tmp_path, weights=(1.0, 0.0))
    ds = BlendedDataset(m, seq_length=8, num_samples=100, seed=0)
    assert {ds.source_of(i) for i in range(100)} == {"alpha"}
