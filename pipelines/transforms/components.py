"""Connected components of a large edge list, in grouped rounds (large-star / small-star).

Kiveris et al., "Connected Components in MapReduce and Beyond" (SoCC 2014).  Nodes are any
totally ordered, deterministically encoded values; each component converges to a star around its
SMALLEST node.  With node = ``keep_rank`` tuple, that root is the document the keep rule keeps.

A round is two shuffles: group by node (large-star: every larger neighbour of u is linked to the
smallest node of u's closed neighbourhood) and group by the larger endpoint (small-star: u and
its smaller neighbours are linked to the smallest of them).  Duplicate edges are not removed by
a shuffle of their own: every step reads neighbours into a set, and neither step emits more
edges than it reads.

Converged components stop early.  In the large-star step every node also reports its role: a
root (no smaller neighbour) sends its degree to itself, a leaf (exactly one neighbour, smaller)
sends a message to that neighbour.  In the small-star step a root that heard from as many leaves
as it has neighbours is the centre of a finished star (a star is a fixed point of both steps), so
it marks itself FINAL for the next round, whose large-star step routes its edges to the ``done``
output instead of the next shuffle.  A component thus costs one round after it has become a star,
and once every component is done the later rounds shuffle nothing.  Beam graphs are static, so
``rounds`` rounds are unrolled; whatever is still active after the last one is checked to be stars
(else the job fails, naming the setting to raise).  No step needs more than one node's
neighbourhood on a worker.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

import apache_beam as beam

# Value tags.  Large-star input: (NBR, v) a neighbour, (FINAL, None) "your star is finished".
# Small-star input: (NBR, m) an edge (m, u) with m < u, (ROOT, degree), (LEAF, None).
NBR, FINAL, ROOT, LEAF = 0, 1, 2, 3
DONE, FINAL_TAG = "done", "final"
NAMESPACE = "connected_components"


def both_directions(edge: tuple[Any, Any]) -> Iterator[tuple[Any, tuple[int, Any]]]:
    u, v = edge
    yield u, (NBR, v)
    yield v, (NBR, u)


def large_star(u: Any, values: Iterable[tuple[int, Any]]) -> Iterator[tuple[str, Any]]:
    """One node's large-star step.  Yields ``("next", (v, (tag, x)))`` messages for the
    small-star shuffle (keyed by node) or ``(DONE, (root, leaf))`` edges of a finished star."""
    nbrs, final = set(), False
    for tag, x in values:
        if tag == NBR:
            nbrs.add(x)
        else:
            final = True
    if final:  # u is the root of a star found finished in the previous round
        for v in nbrs:
            yield DONE, (u, v)
        return
    m = min(nbrs) if nbrs else u
    if m < u:
        if len(nbrs) == 1:
            yield "next", (m, (LEAF, None))
    else:
        m = u
        yield "next", (u, (ROOT, len(nbrs)))
    for v in nbrs:
        if v > u:
            yield "next", (v, (NBR, m))


def small_star(u: Any, values: Iterable[tuple[int, Any]]) -> Iterator[tuple[str, Any]]:
    """One node's small-star step: ``("edge", (m, v))`` for the next round, or
    ``("final", u)`` when u is a root whose neighbours are all its leaves."""
    smaller, degree, leaves = set(), None, 0
    for tag, x in values:
        if tag == NBR:
            smaller.add(x)
        elif tag == ROOT:
            degree = x
        else:
            leaves += 1
    if smaller:
        m = min(smaller)
        yield "edge", (m, u)
        for v in smaller:
            if v != m:
                yield "edge", (m, v)
    elif degree is not None and leaves == degree:
        yield "final", u


class _LargeStarFn(beam.DoFn):
    def process(self, element):
        u, values = element
        for tag, out in large_star(u, values):
            yield out if tag == "next" else beam.pvalue.TaggedOutput(DONE, out)


class _SmallStarFn(beam.DoFn):
    def process(self, element):
        u, values = element
        for tag, out in small_star(u, values):
            yield out if tag == "edge" else beam.pvalue.TaggedOutput(FINAL_TAG, out)


def _count(label: str):
    counter = beam.metrics.Metrics.counter(NAMESPACE, label)

    def inc(x):
        counter.inc()
        return x
    return inc


class _Round(beam.PTransform):
    """(active edges, FINAL roots) -> (active edges, FINAL roots, done edges)."""

    def expand(self, pcolls):
        edges, finals = pcolls
        to_large = ((edges | "BothDirections" >> beam.FlatMap(both_directions),
                     finals | "FinalMark" >> beam.Map(lambda r: (r, (FINAL, None))))
                    | "LargeStarIn" >> beam.Flatten())
        large = (to_large
                 | "GroupNeighbours" >> beam.GroupByKey()
                 | "LargeStar" >> beam.ParDo(_LargeStarFn()).with_outputs(DONE, main="next"))
        small = (large.next
                 | "GroupSmaller" >> beam.GroupByKey()
                 | "SmallStar" >> beam.ParDo(_SmallStarFn()).with_outputs(FINAL_TAG, main="edges"))
        return small.edges, small[FINAL_TAG], large[DONE]


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


def _round_row(i: int, tallies) -> dict:
    row = {"round": i, **dict(tallies)}
    if row["edges"]:
        beam.metrics.Metrics.counter(NAMESPACE, "rounds_used").inc()
    return row


def round_rows(tallies: list, rounds: int, label: str = "RoundRows"):
    """Partial tallies ``((round, "edges" | "done"), n)`` (a list of PCollections) -> one row
    ``{"round", "edges", "done"}`` per round 1..``rounds`` (zeros where nothing was tallied)."""
    zeros = tallies[0].pipeline | f"{label}Zeros" >> beam.Create(
        [((i, k), 0) for i in range(1, rounds + 1) for k in ("edges", "done")], reshuffle=False)
    return (
        (*tallies, zeros)
        | f"{label}All" >> beam.Flatten()
        | f"{label}Sum" >> beam.CombinePerKey(sum)
        | f"{label}ByRound" >> beam.MapTuple(lambda ik, n: (ik[0], (ik[1], n)))
        | f"{label}Group" >> beam.GroupByKey()
        | label >> beam.MapTuple(_round_row))


class ConnectedComponents(beam.PTransform):
    """edges (u, v), u != v -> (node, root) for every non-root node of every component.

    With ``round_counts=True`` the result is ``{"labels": ..., "rounds": ...}`` where
    ``rounds`` holds one ``{"round": i, "edges": active, "done": finished}`` per round i >= 1:
    the edges that entered the round's shuffles (duplicates included) and the edges of finished
    stars it routed out.  Rounds used = the rounds with active edges, also counted in
    ``connected_components/rounds_used``; ``connected_components/round_XX`` counts each round's
    active edges.
    """

    def __init__(self, rounds: int, setting: str = "dedup.fuzzy.max_rounds",
                 round_counts: bool = False, label: str | None = None) -> None:
        super().__init__(label)
        if rounds < 1:
            raise ValueError(f"{setting} must be >= 1")
        self.rounds, self.setting, self.round_counts = rounds, setting, round_counts

    def expand(self, edges):
        edges = edges | "Orient" >> beam.Map(lambda e: (min(e), max(e)))
        finals = edges.pipeline | "NoFinals" >> beam.Create([], reshuffle=False)
        done, tallies = [], []
        for i in range(1, self.rounds + 1):
            active = edges | f"Count{i:02d}" >> beam.Map(_count(f"round_{i:02d}"))
            edges, finals, finished = (active, finals) | f"Round{i:02d}" >> _Round()
            done.append(finished)
            if self.round_counts:  # fused into the round's own steps: no extra pass
                tallies.append(active | f"TallyActive{i:02d}" >> beam.Map(lambda _, i=i: ((i, "edges"), 1)))
                tallies.append(finished | f"TallyDone{i:02d}" >> beam.Map(lambda _, i=i: ((i, "done"), 1)))
        labels = (
            (tuple(done) | "AllDone" >> beam.Flatten()
             | "DoneLabels" >> beam.Map(lambda e: (e[1], e[0])),
             self._check(edges | "Unfinished" >> beam.Map(_count("unfinished_after_last_round"))))
            | "AllLabels" >> beam.Flatten())
        if not self.round_counts:
            return labels
        return {"labels": labels, "rounds": round_rows(tallies, self.rounds)}

    def _check(self, edges):
        as_parent = edges | "ByParent" >> beam.Map(lambda e: (e[0], e[1]))
        as_child = edges | "ByChild" >> beam.Map(lambda e: (e[1], e[0]))
        return (
            {"child": as_parent, "parent": as_child}
            | "JoinRoles" >> beam.CoGroupByKey()
            | "CheckStars" >> beam.ParDo(_CheckStar(self.rounds, self.setting))
        )
