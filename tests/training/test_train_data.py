import pytest
import torch

from training_fixtures import RepeatedDataset
from training.data import DistributedSampleLoader


def loaders(dp, mbs=2, seq=8):
    ds = RepeatedDataset(seq, num_samples=64, distinct=64)
    return ds, [DistributedSampleLoader(ds, seq, mbs, r, dp) for r in range(dp)]


def test_ranks_partition_the_global_batch():
    ds, ls = loaders(dp=2)
    steps = [l.next_step(8) for l in ls]
    seen = [tuple(t.tolist()) for s in steps for x, y in s.micro_batches for t in x]
    single = DistributedSampleLoader(ds, 8, 2).next_step(8)
    assert sorted(seen) == sorted(tuple(t.tolist()) for x, _ in single.micro_batches for t in x)
    assert len(set(seen)) == 8
    # Megatron order: rounds of mbs*dp samples, rank r takes the r-th micro-batch of each round
    assert ls[0].rank_indices(0, 8) == [[0, 1], [4, 5]]
    assert ls[1].rank_indices(0, 8) == [[2, 3], [6, 7]]


def test_inputs_and_targets_shift_by_one():
    ds, (l,) = loaders(dp=1)
    x, y = l.next_step(2).micro_batches[0]
    assert x.shape == y.shape == (2, 8) and x.dtype == torch.int64
    assert torch.equal(x[0, 1:], y[0, :-1])
    assert torch.equal(torch.cat([x[0], y[0, -1:]]), torch.from_numpy(ds[0]))


def test_resume_from_consumed_samples():
    ds, (a,) = loaders(dp=1)
    a.next_step(4)
    state = a.state_dict()
    want = a.next_step(4)
    b = DistributedSampleLoader(ds, 8, 2)
    b.load_state_dict(state)
    got = b.next_step(4)
    for (x1, _), (x2, _) in zip(want.micro_batches, got.micro_batches):
        assert torch.equal(x1, x2)
    assert b.consumed_samples == 8


def test_source_tokens_cover_global_batch():
    _, (l,) = loaders(dp=2)[0], loaders(dp=2)[1][1:]
    step = l.next_step(8)
    assert step.source_tokens == {"a": 4 * 8, "b": 4 * 8}  # same on every rank


def test_errors():
    ds, (l,) = loaders(dp=1)
    with pytest.raises(ValueError, match="micro_batch_size"):
        l.next_step(3)
    with pytest.raises(IndexError, match="num_samples"):
        l.next_step(128)
    wrong = DistributedSampleLoader(ds, 7, 1)
    with pytest.raises(ValueError, match="seq_length \\+ 1"):
        wrong.next_step(1)
