"""Connected components of a large edge list, in grouped rounds (large-star / small-star).

Kiveris et al., "Connected Components in MapReduce and Beyond" (SoCC 2014).  Nodes are any
totally ordered, deterministically encoded values; each component converges to a star around its
SMALLEST node.  With node = ``keep_rank`` tuple, that root is the document the keep rule keeps.

Beam graphs are static, so ``rounds`` (large-star then small-star) are unrolled; a final check
fails the job if the edges are not yet stars, naming the setting to raise.  No step needs more
than one node's neighbourhood on a worker.
"""
from __future__ import annotations

from typing import Any, Iterable

import apache_beam as beam


def _large_star(element: tuple[Any, Iterable[Any]]):
    """Connect every larger neighbour of u to the smallest node of u's closed neighbourhood."""
    u, nbrs = element
    nbrs = set(nbrs)
    m = min(min(nbrs), u)
    for v in nbrs:
        if v > u and v != m:
            yield (m, v)


def _small_star(element: tuple[Any, Iterable[Any]]):
    """u with its smaller neighbours N: connect N and u to min(N)."""
    u, smaller = element
    smaller = set(smaller)
    m = min(smaller)
    yield (m, u)
    for v in smaller:
        if v != m:
            yield (m, v)


def _count_edges(label: str):
    counter = beam.metrics.Metrics.counter("connected_components", label)

    def inc(edge):
        counter.inc()
        return edge
    return inc


class _Round(beam.PTransform):
    def expand(self, edges):
        large = (
            edges
            | "BothDirections" >> beam.FlatMap(lambda e: [(e[0], e[1]), (e[1], e[0])])
            | "GroupNeighbours" >> beam.GroupByKey()
            | "LargeStar" >> beam.FlatMap(_large_star)
            | "DistinctLarge" >> beam.Distinct()
        )
        return (
            large
            | "KeyByLarger" >> beam.Map(lambda e: (e[1], e[0]))
            | "GroupSmaller" >> beam.GroupByKey()
            | "SmallStar" >> beam.FlatMap(_small_star)
            | "DistinctSmall" >> beam.Distinct()
        )


class NotConvergedError(RuntimeError):
    pass


class _CheckStar(beam.DoFn):
    """Per node: fail unless it is a root (only children) or a leaf with exactly one parent."""

    def __init__(self, rounds: int, setting: str) -> None:
        self.rounds, self.setting = rounds, setting

    def process(self, element):
        node, grouped = element
        parents = set(grouped["parent"])
        children = list(grouped["child"])
        if len(parents) > 1 or (parents and children):
            raise NotConvergedError(
                f"connected components did not converge in {self.rounds} rounds "
                f"(node {node!r} is not in a star); raise {self.setting}")
        if parents:
            yield (node, next(iter(parents)))


class ConnectedComponents(beam.PTransform):
    """edges (u, v), u != v -> (node, root) for every non-root node of every component.

    With ``round_counts=True`` the result is ``{"labels": ..., "rounds": ...}`` where
    ``rounds`` holds one ``{"round": i, "edges": n}`` per round (round 0: the input edges), the
    convergence trace the dedup stats report; a component is a star once the count stops
    changing.  Every round's edge count also goes to the counter ``connected_components/round_XX``.
    """

    def __init__(self, rounds: int, setting: str = "dedup.fuzzy.max_rounds",
                 round_counts: bool = False, label: str | None = None) -> None:
        super().__init__(label)
        if rounds < 1:
            raise ValueError(f"{setting} must be >= 1")
        self.rounds, self.setting, self.round_counts = rounds, setting, round_counts

    def expand(self, edges):
        edges = (edges
                 | "Orient" >> beam.Map(lambda e: (min(e), max(e)))
                 | "DistinctInput" >> beam.Distinct())
        counts = []
        for i in range(self.rounds + 1):
            if i:
                edges = edges | f"Round{i:02d}" >> _Round()
            edges = edges | f"Count{i:02d}" >> beam.Map(_count_edges(f"round_{i:02d}"))
            if self.round_counts:
                counts.append(edges
                              | f"Size{i:02d}" >> beam.combiners.Count.Globally()
                              | f"Row{i:02d}" >> beam.Map(lambda n, i=i: {"round": i, "edges": n}))
        labels = self._check(edges)
        if self.round_counts:
            return {"labels": labels, "rounds": counts | "AllRounds" >> beam.Flatten()}
        return labels

    def _check(self, edges):
        as_parent = edges | "ByParent" >> beam.Map(lambda e: (e[0], e[1]))
        as_child = edges | "ByChild" >> beam.Map(lambda e: (e[1], e[0]))
        return (
            {"child": as_parent, "parent": as_child}
            | "JoinRoles" >> beam.CoGroupByKey()
            | "CheckStars" >> beam.ParDo(_CheckStar(self.rounds, self.setting))
        )
