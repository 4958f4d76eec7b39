"""The per-source sample index from document lengths alone, checked against the raw stream."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from blending.sample_index import build_gpt_indices, build_sample_index, plan_epochs


def _docs(lengths):
    """Document d holds tokens 1000*d + [0, len): every token in the source is unique."""
    return [1000 * d + np.arange(n, dtype=np.int64) for d, n in enumerate(lengths)]


def _sample(docs, document_index, sample_index, j):
    """Stream sample j read through the index (the same recipe GPTSampleIndex uses)."""
    (k0, o0), (k1, o1) = sample_index[j], sample_index[j + 1]
    if k0 == k1:
        return docs[document_index[k0]][o0:o1 + 1]
    parts = [docs[document_index[k0]][o0:]] + [docs[document_index[k]] for k in range(k0 + 1, k1)]
    return np.concatenate(parts + [docs[document_index[k1]][:o1 + 1]])


def test_worked_example():
    _, doc, sample, _ = build_gpt_indices(np.array([5, 4], np.int32), 3, 2,
                                          np.random.SeedSequence(0), shuffle_samples=False)
    assert sorted(doc.tolist()) == [0, 1] and doc.dtype == np.int32
    first = 5 if doc[0] == 0 else 4
    assert sample.tolist() == [[0, 0], [0, 3], [0 if first > 6 else 1, 6 - first]]
    assert plan_epochs(9, 3, 2).num_epochs == 1 and plan_epochs(9, 3, 3).num_epochs == 2


@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.integers(0, 40), min_size=1, max_size=30).filter(lambda x: sum(x) > 0),
       seq_length=st.integers(1, 50), num_samples=st.integers(1, 120), seed=st.integers(0, 9))
def test_samples_tile_the_raw_stream(lengths, seq_length, num_samples, seed):
    lengths = np.array(lengths, dtype=np.int32)
    plan, doc, sample, shuffle = build_gpt_indices(lengths, seq_length, num_samples,
                                                   np.random.SeedSequence(seed))
    n = len(lengths)
    assert len(doc) == plan.num_epochs * n
    for e in range(plan.num_epochs):  # every epoch holds every document exactly once
        assert sorted(doc[e * n:(e + 1) * n].tolist()) == list(range(n))
    assert (plan.num_epochs - 1) * lengths.sum() < num_samples * seq_length + 1 \
        <= plan.num_epochs * lengths.sum()
    docs = _docs(lengths)
    stream = np.concatenate([docs[d] for d in doc])
    total = plan.stream_samples
    assert len(sample) == total + 1 >= num_samples + 1
    samples = [_sample(docs, doc, sample, j) for j in range(total)]
    assert all(len(s) == seq_length + 1 for s in samples)
    # Dropping the one shared token, consecutive samples rebuild the stream: no token lost or
    # repeated at any boundary, within or across epochs.
    rebuilt = np.concatenate([samples[0]] + [s[1:] for s in samples[1:]])
    np.testing.assert_array_equal(rebuilt, stream[:total * seq_length + 1])
    assert sorted(shuffle.tolist()) == list(range(total))


def test_separate_final_epoch():
    lengths = np.full(1000, 10, dtype=np.int32)  # 10,000 tokens: 99 samples of 100 per epoch
    # 2.1 epochs' worth: the third epoch gives 11 samples (< 80% of 99), shuffled apart.
    plan, _, _, shuffle = build_gpt_indices(lengths, 100, 209, np.random.SeedSequence(1))
    assert (plan.num_epochs, plan.samples_before_final_epoch) == (3, 199)
    assert plan.separate_final_epoch and plan.stream_samples == 299
    assert sorted(shuffle[:199].tolist()) == list(range(199))
    served_last = shuffle[199:209]
    assert (served_last >= 199).all()
    # drawn from the whole final epoch, not its first 10 samples
    assert served_last.max() - served_last.min() > 30
    # 2.9 epochs: the final epoch supplies 90 samples (>= 80%), one joint shuffle
    plan = plan_epochs(10_000, 100, 289)
    assert plan.num_epochs == 3 and not plan.separate_final_epoch


def test_one_epoch_serves_a_random_subset_of_its_samples():
    lengths = np.full(500, 41, dtype=np.int32)
    plan, _, _, shuffle = build_gpt_indices(lengths, 20, 100, np.random.SeedSequence(3))
    assert plan.num_epochs == 1 and plan.stream_samples == (500 * 41 - 1) // 20
    assert shuffle[:100].max() > 200  # spread over the epoch, as Megatron's shuffle


def test_dtypes_and_determinism():
    lengths = np.random.default_rng(0).integers(1, 300, 2000).astype(np.int32)
    a = build_gpt_indices(lengths, 64, 5000, np.random.SeedSequence([7, 1]))
    b = build_gpt_indices(lengths, 64, 5000, np.random.SeedSequence([7, 1]))
    c = build_gpt_indices(lengths, 64, 5000, np.random.SeedSequence([8, 1]))
    assert a[1].dtype == np.int32 and a[2].dtype == np.int32 and a[3].dtype == np.uint32
    for x, y in zip(a[1:], b[1:]):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[1], c[1])


def test_errors():
    with pytest.raises(ValueError, match="no tokens"):
        plan_epochs(0, 8, 1)
    with pytest.raises(ValueError, match="seq_length"):
        plan_epochs(10, 0, 1)
    with pytest.raises(ValueError, match="need more than"):
        build_sample_index(np.array([4], np.int32), np.array([0], np.int32), 2, 2)
    assert plan_epochs(0, 8, 0).num_epochs == 0
