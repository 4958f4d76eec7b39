"""The mixture model: it recovers a known optimum on synthetic response surfaces, and its
held-out rank correlation says whether it can be trusted."""
from __future__ import annotations

import numpy as np
import pytest

from blending.mixture_fit import fit_mixture_model, held_out_spearman, holdout_split, propose
from blending.mixture_space import MixtureSpace

NAMES = ("a", "b", "c", "d")


def test_quadratic_surface_optimum_is_recovered_inside_the_bounds():
    space = MixtureSpace(NAMES, np.zeros(4), np.array([1.0, 0.5, 1.0, 0.6]))
    optimum, curvature = np.array([0.4, 0.3, 0.2, 0.1]), np.array([3.0, 1.0, 2.0, 5.0])
    rng = np.random.default_rng(1)
    W = np.vstack([space.sample(30, rng, None, (2, 50)), space.sample(30, rng, optimum[::-1])])
    y = ((W - optimum) ** 2 * curvature).sum(axis=1) + rng.normal(0, 1e-4, len(W))
    held = held_out_spearman(W, y, 0.25, "auto", seed=0)
    assert held["kind"] == "quadratic" and held["spearman"] > 0.95
    model = fit_mixture_model(W, y, held["kind"], seed=0)  # auto's choice, on every proxy
    best = propose(model, space, rng, [None], minimize=True)
    assert space.contains(best)
    assert np.abs(best - optimum).sum() < 0.03


def test_log_surface_optimum_under_a_binding_cap():
    # maximise sum c_i log(w_i): optimum w proportional to c = (0.5, 0.2, 0.2, 0.1); a cap of
    # 0.35 on "a" moves it to (0.35, 0.26, 0.26, 0.13)
    c = np.array([0.5, 0.2, 0.2, 0.1])
    space = MixtureSpace(NAMES, np.zeros(4), np.array([0.35, 1, 1, 1]))
    rng = np.random.default_rng(2)
    W = space.sample(40, rng, None, (2, 50))
    y = (np.log(W + 1e-3) * c).sum(axis=1)  # a score: higher is better
    model = fit_mixture_model(W, y, "auto", seed=0)
    assert model.kind == "loglinear"
    best = propose(model, space, rng, [None], minimize=False)
    expected = np.array([0.35, 0.26, 0.26, 0.13])
    assert space.contains(best) and np.abs(best - expected).sum() < 0.02


def test_noise_gives_a_low_held_out_rank_correlation():
    rng = np.random.default_rng(4)
    W = MixtureSpace(NAMES, np.zeros(4), np.ones(4)).sample(40, rng, None)
    held = held_out_spearman(W, rng.normal(size=40), 0.25, "linear", seed=0)
    assert len(held["held_out"]) == 10 and abs(held["spearman"]) < 0.7


def test_holdout_split_sizes():
    fit, out = holdout_split(16, 0.25, 0)
    assert len(out) == 4 and sorted(np.concatenate([fit, out]).tolist()) == list(range(16))
    assert len(holdout_split(8, 0.1, 0)[1]) == 3  # at least 3 for a rank correlation
    assert len(holdout_split(5, 0.5, 0)[1]) == 0  # too few proxies to spare any
    with pytest.raises(ValueError, match="--holdout"):
        holdout_split(10, 1.0, 0)
