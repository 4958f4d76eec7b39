"""The feasible mixtures of a blend search, and how candidate mixtures are drawn from them.

A mixture is a weight vector over the spec's sources (same order), non-negative, summing to 1.
The search only ever trains or proposes a mixture inside ``MixtureSpace``:

- ``hi[i] = min(bound max, epoch_cap x train_tokens_available[i] / spec.train_tokens)``: the
  spec's epoch cap made a hard limit (``mtnlg blend`` only warns), counted on the tokens of the
  source's *train* split, at the spec's ``train_tokens`` (the run the proposal is for, not the
  proxies' budget); a source with no train tokens gets ``hi = 0``;
- ``lo[i]`` / an extra ``hi[i]``: optional per-source bounds of the search (``--bound``), not part
  of the blend spec contract.

The region {lo <= w <= hi, sum w = 1} is convex, so an average of feasible mixtures (the
proposal's top-k mean) is feasible too.  Sampling follows RegMix (Liu et al., 2024): Dirichlet
draws around a centre (the spec's weights) whose concentration is itself drawn log-uniformly, so
a set of mixtures holds both near and far variations; each draw is then mapped into the region
(``project``), which keeps its shape where the bounds do not bite.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from infra.config import ConfigError

TOL = 1e-9


@dataclass(frozen=True)
class MixtureSpace:
    """The box-constrained simplex the search draws from (every array in source order)."""

    names: tuple[str, ...]
    lo: np.ndarray
    hi: np.ndarray
    why_hi: tuple[str, ...] = ()
    """Per source, what set its upper bound (``epoch cap``, ``--bound``, ``no train tokens``)."""

    def __post_init__(self) -> None:
        lo, hi = np.asarray(self.lo, float), np.asarray(self.hi, float)
        if lo.shape != (len(self.names),) or hi.shape != lo.shape:
            raise ValueError("lo and hi need one value per source")
        for n, a, b in zip(self.names, lo, hi):
            if not 0.0 <= a <= b + TOL:
                raise ConfigError(f"--bound {n}: the lower bound {a:g} exceeds the upper bound "
                                  f"{b:g} (its epoch cap or its own maximum)")
        if lo.sum() > 1.0 + 1e-9:
            raise ConfigError(f"--bound: the lower bounds sum to {lo.sum():.4f} > 1")
        if hi.sum() < 1.0 - 1e-9:
            detail = ", ".join(f"{n} <= {b:.4g} ({w})" for n, b, w in
                               zip(self.names, hi, self.why_hi or [""] * len(hi)))
            raise ConfigError(f"epoch_cap / --bound: the sources can supply at most "
                              f"{hi.sum():.4f} of train_tokens, so no mixture summing to 1 fits "
                              f"({detail}); raise the spec's epoch_cap, lower train_tokens or "
                              f"loosen --bound")
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)

    @property
    def dim(self) -> int:
        return len(self.names)

    def contains(self, w, tol: float = 1e-6) -> bool:
        w = np.asarray(w, float)
        return bool(abs(w.sum() - 1.0) <= tol and np.all(w >= self.lo - tol)
                    and np.all(w <= self.hi + tol))

    def project(self, x) -> np.ndarray:
        """A feasible mixture close to ``x`` (one vector, or rows of a matrix): ``clip(s * x,
        lo, hi)`` with the scale ``s`` that makes it sum to 1 (keeps the ratios between the
        sources no bound clips); where that cannot reach 1 (the mass is on capped sources),
        ``clip(x + t, lo, hi)`` instead (the Euclidean projection)."""
        x = np.clip(np.asarray(x, float), 0.0, None)
        X = np.atleast_2d(x)
        lo, hi = self.lo, self.hi
        # multiplicative reaches 1 iff the sources x puts weight on can hold the rest
        reach = np.where(X > 0, hi, lo).sum(axis=1) >= 1.0 - 1e-12
        out = np.empty_like(X)
        if reach.any():
            Xm = X[reach]
            a = np.full(len(Xm), -28.0)  # log scale: 1e-12 .. 1e12
            b = np.full(len(Xm), 28.0)
            for _ in range(80):
                m = (a + b) / 2
                low = np.clip(np.exp(m)[:, None] * Xm, lo, hi).sum(axis=1) < 1.0
                a, b = np.where(low, m, a), np.where(low, b, m)
            out[reach] = np.clip(np.exp(b)[:, None] * Xm, lo, hi)
            # a scale beyond the bracket (weights of 1e-13) did not reach 1: additive instead
            reach[reach] = np.abs(out[reach].sum(axis=1) - 1.0) <= 1e-9
        if (~reach).any():
            Xa = X[~reach]
            a = -1.0 - Xa.max(axis=1)
            b = np.ones(len(Xa))
            for _ in range(80):
                m = (a + b) / 2
                low = np.clip(Xa + m[:, None], lo, hi).sum(axis=1) < 1.0
                a, b = np.where(low, m, a), np.where(low, b, m)
            out[~reach] = np.clip(Xa + b[:, None], lo, hi)
        out = self._fix_sum(out)
        return out[0] if x.ndim == 1 else out

    def _fix_sum(self, W: np.ndarray) -> np.ndarray:
        """Put the last ~1e-12 of bisection error on the source with the most room, so every
        row sums to 1 to float precision."""
        err = 1.0 - W.sum(axis=1)
        room = np.where(err[:, None] > 0, self.hi - W, W - self.lo)
        i = np.argmax(room, axis=1)
        W = W.copy()
        W[np.arange(len(W)), i] += err
        return np.clip(W, self.lo, self.hi)

    def sample(self, n: int, rng: np.random.Generator, center=None,
               concentration: tuple[float, float] = (10.0, 200.0)) -> np.ndarray:
        """``n`` feasible mixtures: Dirichlet(c x center), the total concentration ``c``
        log-uniform in ``concentration`` (small: far from the centre, sparse; large: close to
        it); None center: uniform over the sources that may be non-zero."""
        if n <= 0:
            return np.zeros((0, self.dim))
        c = (self.project(np.ones(self.dim)) if center is None
             else self.project(np.asarray(center, float)))
        support = self.hi > 0
        lo_c, hi_c = concentration
        if not 0 < lo_c <= hi_c:
            raise ConfigError(f"--concentration: need 0 < low <= high, got {lo_c}, {hi_c}")
        conc = np.exp(rng.uniform(math.log(lo_c), math.log(hi_c), size=n))
        # a floor keeps tiny centre weights (0.002) drawable without 1e-30 underflow
        alpha = np.maximum(c[support], 1e-3)
        alpha = conc[:, None] * (alpha / alpha.sum())[None, :]
        # Dirichlet draws as normalised gammas, all rows at once (rng.dirichlet takes one alpha)
        g = rng.standard_gamma(alpha)
        g_sum = g.sum(axis=1, keepdims=True)
        draws = np.zeros((n, self.dim))
        draws[:, support] = np.where(g_sum > 0, g / np.where(g_sum > 0, g_sum, 1.0),
                                     1.0 / support.sum())
        return self.project(draws)


def space_for_spec(spec, train_tokens_available: dict[str, float],
                   bounds: dict[str, tuple[float, float]] | None = None) -> MixtureSpace:
    """The search region of a blend spec: its epoch cap at its ``train_tokens`` over each
    source's train-split tokens, intersected with ``bounds`` (name -> (lo, hi))."""
    bounds = dict(bounds or {})
    unknown = sorted(set(bounds) - {s.name for s in spec.sources})
    if unknown:
        raise ConfigError(f"--bound: no source {unknown[0]!r} in blend {spec.name!r} "
                          f"(sources: {', '.join(s.name for s in spec.sources)})")
    lo, hi, why = [], [], []
    for s in spec.sources:
        avail = float(train_tokens_available.get(s.name, 0.0))
        cap = spec.epoch_cap * avail / spec.train_tokens
        b_lo, b_hi = bounds.get(s.name, (0.0, 1.0))
        if avail <= 0:
            why.append("no train tokens")
        elif cap < b_hi:
            why.append(f"epoch cap {spec.epoch_cap:g}")
        else:
            why.append("--bound" if b_hi < 1.0 else "none")
        lo.append(b_lo)
        hi.append(min(b_hi, cap, 1.0))
    return MixtureSpace(tuple(s.name for s in spec.sources), np.array(lo), np.array(hi),
                        tuple(why))


def parse_bounds(items: list[str]) -> dict[str, tuple[float, float]]:
    """``--bound NAME=LO:HI`` (either side may be empty: ``books3=:0.2``, ``arxiv=0.01:``)."""
    out = {}
    for item in items:
        name, sep, rng = item.partition("=")
        lo_s, sep2, hi_s = rng.partition(":")
        try:
            if not (sep and sep2 and name):
                raise ValueError
            lo = float(lo_s) if lo_s.strip() else 0.0
            hi = float(hi_s) if hi_s.strip() else 1.0
        except ValueError:
            raise ConfigError(f"--bound {item!r}: expected NAME=LO:HI, e.g. books3=0.05:0.3") \
                from None
        if not 0.0 <= lo <= hi <= 1.0:
            raise ConfigError(f"--bound {item!r}: need 0 <= LO <= HI <= 1")
        out[name.strip()] = (lo, hi)
    return out
