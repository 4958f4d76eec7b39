"""The reference of the dedup stage's connected components (``pipelines.dedup.components``):
the same large-star / small-star rounds (``pipelines.dedup.groups.large_star`` / ``small_star``)
as Beam shuffles, each round two GroupByKeys.  Not used by the curate job.

Beam graphs are static, so ``rounds`` rounds are unrolled; a component whose star is finished
routes its edges out (``done``), so once every component is done the later rounds shuffle
nothing; whatever is still active after the last one is checked to be stars (else the job
fails, naming the setting to raise).
"""
from __future__ import annotations

import apache_beam as beam

from pipelines.dedup.components import NAMESPACE, round_rows
from pipelines.dedup.groups import DONE, FINAL, NotConvergedError, both_directions, large_star, small_star

FINAL_TAG = "final"


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
