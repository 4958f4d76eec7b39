"""The vectorized blend index must equal Megatron's greedy loop exactly, for any weights."""
import numpy as np
import pytest

from blending.blend_index import blend_indices, blend_indices_reference

MTNLG_WEIGHTS = [0.14336, 0.19336, 0.05689, 0.02897, 0.04771, 0.00873, 0.01007, 0.00208,
                 0.09446, 0.01359, 0.01588, 0.13017, 0.15652, 0.08962, 0.00859]


def _same(weights, size, chunk_steps=None):
    want = blend_indices_reference(weights, size)
    got = blend_indices(weights, size, chunk_steps=chunk_steps)
    assert got[0].dtype == np.int16 and got[1].dtype == np.int64
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_equals_loop_on_random_weight_vectors():
    rng = np.random.default_rng(2024)
    for trial in range(60):
        n = int(rng.integers(1, 24))
        # Spiky (0.05), even (1) and near-uniform (50) Dirichlet draws; some exact zeros.
        w = rng.dirichlet(np.full(n, rng.choice([0.05, 1.0, 50.0])))
        if trial % 4 == 0 and n > 1:
            w[rng.integers(0, n)] = 0.0
        if trial % 7 == 0:
            w = np.round(w, 3) + 1e-3  # few distinct values: many exact float ties
        size = int(rng.integers(0, 6000))
        # Short chunks force many chunks whose guessed starting counts are wrong.
        _same(w, size, chunk_steps=int(rng.integers(1, 400)))


@pytest.mark.parametrize("weights", [[1.0], [0.5, 0.5], [1, 1, 1], [3, 0, 1], [0, 0, 2, 1],
                                     [1e-9, 1.0], MTNLG_WEIGHTS])
@pytest.mark.parametrize("chunk_steps", [None, 1, 7, 256])
def test_equals_loop_on_edge_cases(weights, chunk_steps):
    _same(weights, 3000, chunk_steps)


def test_equals_loop_at_scale_with_the_mtnlg_weights():
    # 300k samples, ~1200 chunks of the default size: the production path.
    _same(MTNLG_WEIGHTS, 300_000)


def test_golden():
    idx, within = blend_indices([0.5, 0.3, 0.2], 6)
    assert idx.tolist() == [0, 1, 2, 0, 1, 0] and within.tolist() == [0, 0, 0, 1, 1, 2]


@pytest.mark.parametrize("weights,size,match", [
    ([], 5, "non-empty"), ([0.0, 0.0], 5, "positive sum"), ([0.5, -0.5, 1], 5, "non-negative"),
    ([1.0], -1, "size must be >= 0"),
])
def test_bad_arguments(weights, size, match):
    with pytest.raises(ValueError, match=match):
        blend_indices(weights, size)
    with pytest.raises(ValueError, match=match):
        blend_indices_reference(weights, size)
