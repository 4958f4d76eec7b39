"""Connected components of the verified edges, over spill files, in unrolled rounds.

The large-star / small-star rounds of ``groups.large_star`` / ``small_star``, each step a DoFn
over partition ids that reads partition ``p`` of the previous step's spill files
(``pipelines.plumbing.spill``) and groups by node in memory: a partition holds its nodes'
neighbourhoods only.  Records are ``(node, tag, value)`` keyed by the node:

- large-star input: ``(u, NBR, v)`` per edge direction, ``(r, FINAL, None)`` for a finished star;
- small-star input: what ``large_star`` sends to ``v`` as ``(v, tag, x)``;
- labels: ``(leaf, root)``, from the finished stars each large-star step routes out and from the
  check after the last round (every edge still active must belong to a star, else the job
  fails naming the setting to raise).

Beam graphs are static, so ``rounds`` rounds are unrolled.  The round trace (active edges per
round, finished-star edges routed out) comes out as tallies ``((round, "edges" | "done"), n)``
for ``round_rows``, and as the ``connected_components`` counters.  A step whose inputs are all
empty opens no file, so the rounds after every component has finished cost one small Beam step
each.
"""
from __future__ import annotations

from collections import defaultdict

import apache_beam as beam
from apache_beam.pvalue import AsList

from pipelines.dedup.groups import DONE, FINAL, NBR, NotConvergedError, large_star, small_star
from pipelines.dedup.steps import node_partition
from pipelines.plumbing.outputs import count
from pipelines.plumbing.spill import Spiller, read_partition, spill_url
from pipelines.plumbing.timing import timed

NAMESPACE = "connected_components"
"""Counters of the rounds: ``round_XX`` (edges active in round XX), ``rounds_used``,
``unfinished_after_last_round``."""
TALLY = "tally"
"""Tagged output of the round steps' counts ``((round, "edges" | "done"), n)``."""


def _grouped(descriptors: list[dict], name: str, p: int) -> dict:
    by_node: dict[tuple, list] = defaultdict(list)
    for node, tag, value in read_partition([d[name] for d in descriptors], p):
        by_node[node].append((tag, value))
    return by_node


class LargeStepFn(beam.DoFn):
    """Round ``i``'s large-star step: ``next`` (small-star input), ``done`` (labels)."""

    def __init__(self, out_dir: str, i: int) -> None:
        self.out_dir, self.i = out_dir, i

    @timed("fuzzy_dedup")
    def process(self, p: int, partitions: int, previous: list[dict]):
        nxt = Spiller(partitions, lambda r: node_partition(r[0], partitions))
        done = Spiller(partitions, lambda r: node_partition(r[0], partitions))
        for u, values in sorted(_grouped(previous, "edges", p).items()):
            for tag, out in large_star(u, values):
                if tag == DONE:
                    root, leaf = out
                    done.add((leaf, root))
                else:
                    v, (t, x) = out
                    nxt.add((v, t, x))
        yield {"p": p, "next": nxt.write(spill_url(self.out_dir, f"cc{self.i:02d}-large")),
               "labels": done.write(spill_url(self.out_dir, f"cc{self.i:02d}-done"))}
        yield beam.pvalue.TaggedOutput(TALLY, ((self.i, "done"), done.records))


class SmallStepFn(beam.DoFn):
    """Round ``i``'s small-star step: the next round's large-star input (``edges``)."""

    def __init__(self, out_dir: str, i: int, rounds: int) -> None:
        self.out_dir, self.i, self.rounds = out_dir, i, rounds

    @timed("fuzzy_dedup")
    def process(self, p: int, partitions: int, large: list[dict]):
        out = Spiller(partitions, lambda r: node_partition(r[0], partitions))
        edges = 0
        for u, values in sorted(_grouped(large, "next", p).items()):
            for tag, value in small_star(u, values):
                if tag == "edge":
                    a, b = value
                    out.add((a, NBR, b))
                    out.add((b, NBR, a))
                    edges += 1
                else:
                    out.add((value, FINAL, None))
        yield {"p": p, "edges": out.write(spill_url(self.out_dir, f"cc{self.i:02d}-small"))}
        if self.i < self.rounds:  # the edges active in the next round
            beam.metrics.Metrics.counter(NAMESPACE, f"round_{self.i + 1:02d}").inc(edges)
            yield beam.pvalue.TaggedOutput(TALLY, ((self.i + 1, "edges"), edges))
        else:
            beam.metrics.Metrics.counter(NAMESPACE, "unfinished_after_last_round").inc(edges)


class CheckStepFn(beam.DoFn):
    """After the last round: every node still linked is a root (only larger neighbours) or a
    leaf with one parent -> its label; anything else fails the job."""

    def __init__(self, out_dir: str, rounds: int, setting: str) -> None:
        self.out_dir, self.rounds, self.setting = out_dir, rounds, setting

    def process(self, p: int, partitions: int, last: list[dict]):
        labels = Spiller(partitions, lambda r: node_partition(r[0], partitions))
        for node, values in sorted(_grouped(last, "edges", p).items()):
            nbrs = {x for tag, x in values if tag == NBR}  # active edges are (smaller, larger)
            parents = {x for x in nbrs if x < node}
            if len(parents) > 1 or (parents and len(parents) < len(nbrs)):
                raise NotConvergedError(
                    f"connected components did not converge in {self.rounds} rounds "
                    f"(node {node!r} is not in a star); raise {self.setting}")
            if parents:
                labels.add((node, next(iter(parents))))
        yield {"p": p, "labels": labels.write(spill_url(self.out_dir, "cc-check"))}


def _first_round(descriptor: dict) -> tuple:
    """A first-round input's tally: its edges (each written in both directions)."""
    edges = descriptor["edges"]["records"] // 2
    beam.metrics.Metrics.counter(NAMESPACE, "round_01").inc(edges)
    return (1, "edges"), edges


class FileComponents(beam.PTransform):
    """The first round's inputs (descriptors with ``edges``: ``(u, NBR, v)`` both directions)
    -> ``{"labels": descriptors whose ``labels`` spill holds ``(leaf, root)`` keyed by leaf,
    "tallies": [PCollections of round tallies]}``, in ``rounds`` unrolled rounds."""

    def __init__(self, out_dir: str, each, partitions, rounds: int,
                 setting: str = "dedup.fuzzy.max_rounds", label: str | None = None) -> None:
        super().__init__(label)
        if rounds < 1:
            raise ValueError(f"{setting} must be >= 1")
        self.out_dir, self.each, self.partitions = out_dir, each, partitions
        self.rounds, self.setting = rounds, setting

    def expand(self, first):
        edges, labels = first, []
        tallies = [first | "Tally01" >> beam.Map(_first_round)]
        for i in range(1, self.rounds + 1):
            large = self.each | f"Large{i:02d}" >> beam.ParDo(
                LargeStepFn(self.out_dir, i), self.partitions, AsList(edges)).with_outputs(TALLY, main="spills")
            small = self.each | f"Small{i:02d}" >> beam.ParDo(
                SmallStepFn(self.out_dir, i, self.rounds), self.partitions, AsList(large.spills)
            ).with_outputs(TALLY, main="spills")
            labels.append(large.spills)
            tallies += [large[TALLY], small[TALLY]]
            edges = small.spills
        labels.append(self.each | "CheckStars" >> beam.ParDo(
            CheckStepFn(self.out_dir, self.rounds, self.setting), self.partitions, AsList(edges)))
        return {"labels": labels, "tallies": tallies}


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


def count_round(row: dict) -> dict:
    """Rounds used also as the ``curate`` counter fuzzy_dedup/all/component_rounds
    (``stats/counters.json``)."""
    if row["edges"]:
        count("fuzzy_dedup", "all", "component_rounds")
    return row
