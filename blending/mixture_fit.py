"""From mixture weights to a target: the fitted model, its held-out rank correlation, the proposal.

RegMix (Liu et al., 2024) regresses validation loss on mixture weights over many small proxy runs
(LightGBM, 512 proxies) and takes the mixture the regression predicts best.  Here the regressors
are scikit-learn's, chosen by how many proxies there are:

- ``linear``: ridge regression on the weights (RegMix's linear baseline); its optimum is always a
  corner of the feasible region;
- ``loglinear``: ridge on ``log(w + eps)``: a per-source diminishing return, the shape of loss
  against a domain's share seen in mixing-law work (Ye et al., 2024), with an interior optimum;
  few parameters (one per source), so it fits with fewer proxies than sources x 2;
- ``quadratic``: ridge on the weights and their pairwise products (interactions between sources;
  needs many proxies);
- ``gbm``: gradient-boosted trees (RegMix's choice; needs hundreds of proxies);
- ``auto``: the one of these (gbm only from 100 proxies on) whose out-of-fold predictions
  (k-fold over the fitting proxies only) rank the proxies best (Spearman).

``held_out_spearman`` reports how well a model fitted on the other proxies ranks proxies it never
saw: the number to read before trusting a proposal (docs/blend-search.md).  ``propose`` evaluates
the fitted model on many feasible mixtures drawn like the proxies were, averages the best
``top_k`` (RegMix's averaging: a convex combination, so still feasible) and refines around it.
scikit-learn is imported lazily: it comes with the ``[train]`` install option.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from blending.mixture_space import MixtureSpace

MODELS = ("auto", "linear", "loglinear", "quadratic", "gbm")
LOG_EPS = 1e-3  # log(w + eps): a weight of 0 stays finite; below ~0.1% a source counts as absent


def _features(W: np.ndarray, kind: str) -> np.ndarray:
    W = np.asarray(W, float)
    if kind == "loglinear":
        return np.log(W + LOG_EPS)
    if kind == "quadratic":
        iu = np.triu_indices(W.shape[1])
        return np.hstack([W, (W[:, :, None] * W[:, None, :])[:, iu[0], iu[1]]])
    return W


def _estimator(kind: str, seed: int):
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if kind == "gbm":
        from sklearn.ensemble import GradientBoostingRegressor

        return GradientBoostingRegressor(n_estimators=300, max_depth=2, learning_rate=0.05,
                                         subsample=0.8, random_state=seed)
    return make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-4, 3, 15)))


@dataclass
class MixtureModel:
    """A fitted regressor from weights to the target (``predict`` takes an [n, sources] array)."""

    kind: str
    estimator: Any
    n_fit: int
    cv_spearman: dict[str, float | None] = field(default_factory=dict)
    """With ``auto``: each candidate's out-of-fold Spearman on the fitting proxies."""

    def predict(self, W) -> np.ndarray:
        W = np.atleast_2d(np.asarray(W, float))
        return np.asarray(self.estimator.predict(_features(W, self.kind)), float)


def spearman(a, b) -> float | None:
    """Spearman's rank correlation; None with fewer than 3 points or a constant side."""
    from scipy.stats import spearmanr

    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return float(spearmanr(a, b).statistic)


def _fit_kind(W, y, kind: str, seed: int) -> MixtureModel:
    est = _estimator(kind, seed)
    est.fit(_features(W, kind), y)
    return MixtureModel(kind, est, len(y))


def _oof_spearman(W, y, kind: str, seed: int, folds: int = 5) -> float | None:
    n = len(y)
    k = min(folds, n)
    if k < 3:
        return None
    order = np.random.default_rng(seed).permutation(n)
    pred = np.empty(n)
    for f in range(k):
        test = order[f::k]
        train = np.setdiff1d(order, test)
        pred[test] = _fit_kind(W[train], y[train], kind, seed).predict(W[test])
    return spearman(pred, y)


def fit_mixture_model(W, y, kind: str = "auto", seed: int = 0) -> MixtureModel:
    """Fit ``kind`` (see the module docstring) on mixtures ``W`` [n, sources] and targets ``y``."""
    W, y = np.asarray(W, float), np.asarray(y, float)
    if kind not in MODELS:
        raise ValueError(f"--model must be one of {', '.join(MODELS)}, got {kind!r}")
    if len(y) < 2:
        raise ValueError(f"a fit needs at least 2 proxies with a measured target, got {len(y)}")
    if kind != "auto":
        return _fit_kind(W, y, kind, seed)
    candidates = [k for k in MODELS[1:] if k != "gbm" or len(y) >= 100]  # trees need many points
    scores = {k: _oof_spearman(W, y, k, seed) for k in candidates}
    best = max(candidates, key=lambda k: -2.0 if scores[k] is None else scores[k])
    model = _fit_kind(W, y, best, seed)
    model.cv_spearman = scores
    return model


def holdout_split(n: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (fit, held out): ``fraction`` of ``n`` proxies held out (at least 3 when there
    are 6 or more proxies, none below that), chosen by ``seed``."""
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"--holdout must be in [0, 1), got {fraction}")
    k = int(round(fraction * n))
    if fraction > 0 and n >= 6:
        k = max(k, 3)
    k = min(k, n - 2) if n >= 6 else 0
    order = np.random.default_rng(seed).permutation(n)
    return np.sort(order[k:]), np.sort(order[:k])


def held_out_spearman(W, y, fraction: float = 0.25, kind: str = "auto",
                      seed: int = 0) -> dict[str, Any]:
    """Fit on the proxies not held out, predict the held-out ones: their Spearman rank
    correlation with the measured targets, and the predictions (for the report)."""
    W, y = np.asarray(W, float), np.asarray(y, float)
    fit_idx, test_idx = holdout_split(len(y), fraction, seed)
    if len(test_idx) == 0:
        return {"held_out": [], "predicted": [], "spearman": None, "kind": None}
    model = fit_mixture_model(W[fit_idx], y[fit_idx], kind, seed)
    pred = model.predict(W[test_idx])
    return {"held_out": test_idx.tolist(), "predicted": pred.tolist(),
            "spearman": spearman(pred, y[test_idx]), "kind": model.kind,
            "cv_spearman": model.cv_spearman}


def propose(model: MixtureModel, space: MixtureSpace, rng: np.random.Generator, centers,
            minimize: bool = True, candidates: int = 20000, top_k: int = 100,
            rounds: int = 4, concentration: tuple[float, float] = (10.0, 200.0)) -> np.ndarray:
    """The feasible mixture with the best predicted target, by search: ``candidates`` mixtures
    drawn around each of ``centers`` (as the proxies were), the mean of the best ``top_k``,
    then ``rounds`` of draws ever closer around the current best (kept only where the model
    predicts better)."""
    sign = 1.0 if minimize else -1.0
    per = max(1, candidates // max(1, len(centers)))
    cand = np.vstack([space.sample(per, rng, c, concentration) for c in centers])
    score = sign * model.predict(cand)
    top = cand[np.argsort(score)[:top_k]]
    best = space.project(top.mean(axis=0))
    best_score = sign * float(model.predict(best)[0])
    for r in range(rounds):
        conc = 200.0 * 4.0 ** r
        local = space.sample(max(200, candidates // 10), rng, best, (conc, conc * 4))
        s = sign * model.predict(local)
        i = int(np.argmin(s))
        if s[i] < best_score:
            best, best_score = local[i], float(s[i])
    return best
