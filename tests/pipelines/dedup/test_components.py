"""Distributed connected components equal union-find; converged components stop early.

The round logic (``large_star`` / ``small_star``, the functions the Beam DoFns call) is run
in memory over hundreds of generated graphs (random graphs, long chains, stars, many small
components; hypothesis), which is fast; one Beam pipeline then runs the real transform over the
disjoint union of many such graphs and checks labels, rounds used and the per-round trace.
"""
from __future__ import annotations

import random
from collections import defaultdict

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dedup_reference_components import ConnectedComponents
from pipelines.dedup.groups import DONE, FINAL, both_directions, large_star, small_star
from pipeline_fixtures import local_pipeline


def union_find_labels(edges) -> list[tuple[int, int]]:
    """(node, smallest node of its component) for every non-smallest node."""
    parent: dict[int, int] = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for u, v in edges:
        ru, rv = find(u), find(v)
        if ru != rv:
            parent[max(ru, rv)] = min(ru, rv)
    return sorted((x, find(x)) for x in list(parent) if find(x) != x)


def shaped(kind: str, n: int, seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    nodes = list(range(n))
    rng.shuffle(nodes)  # node order unrelated to the shape
    if kind == "chain":
        return [(nodes[i], nodes[i + 1]) for i in range(n - 1)]
    if kind == "star":
        return [(nodes[0], v) for v in nodes[1:]]
    if kind == "pairs":
        return [(nodes[i], nodes[i + 1]) for i in range(0, n - 1, 2)]
    m = rng.randint(1, 2 * n)  # random graph
    return [(rng.choice(nodes), rng.choice(nodes)) for _ in range(m)]


graphs = st.lists(st.tuples(st.sampled_from(["chain", "star", "pairs", "random"]),
                            st.integers(2, 60), st.integers(0, 10**6)), min_size=1, max_size=8)


def disjoint_union(specs) -> list[tuple[int, int]]:
    edges, offset = [], 0
    for kind, n, seed in specs:
        edges += [(u + offset, v + offset) for u, v in shaped(kind, n, seed) if u != v]
        offset += n
    return edges


def simulate(edges, rounds: int, done_per_round: list | None = None):
    """The Beam transform's rounds with dicts for shuffles: (labels, unfinished edges,
    active edges per round); ``done_per_round`` gets the finished-star edges each round routes out."""
    edges, finals, done, trace = [(min(e), max(e)) for e in edges], [], [], []
    for _ in range(rounds):
        trace.append(len(edges))
        done_before = len(done)
        by_node = defaultdict(list)
        for e in edges:
            for k, v in both_directions(e):
                by_node[k].append(v)
        for r in finals:
            by_node[r].append((FINAL, None))
        by_larger = defaultdict(list)
        for u, values in by_node.items():
            for tag, out in large_star(u, values):
                if tag == DONE:
                    done.append(out)
                else:
                    by_larger[out[0]].append(out[1])
        if done_per_round is not None:
            done_per_round.append(len(done) - done_before)
        edges, finals = [], []
        for u, values in by_larger.items():
            for tag, out in small_star(u, values):
                (edges if tag == "edge" else finals).append(out)
    return sorted((v, r) for r, v in done), edges, trace


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(graphs)
def test_round_logic_equals_union_find_and_finishes_every_star(specs):
    edges = disjoint_union(specs)
    labels, unfinished, trace = simulate(edges, 12)
    assert not unfinished  # every component routed out as a finished star
    assert labels == union_find_labels(edges)
    used = sum(1 for n in trace if n)
    assert trace[used:] == [0] * (12 - used)  # nothing shuffled once all components are done


def test_converged_components_stop_early():
    assert simulate([(1, 2)], 12)[2][:3] == [1, 1, 0]  # a pair: found, routed out, nothing
    assert simulate([(1, 2), (1, 3), (1, 4)], 12)[2][:3] == [3, 3, 0]
    # a long chain converges in a few rounds; the many pairs beside it stop after round 2
    chain = shaped("chain", 500, 0)
    pairs = [(1000 + 2 * i, 1001 + 2 * i) for i in range(200)]
    _, _, alone = simulate(chain, 12)
    labels, unfinished, trace = simulate(chain + pairs, 12)
    assert not unfinished and labels == union_find_labels(chain + pairs)
    assert trace[2:] == alone[2:]  # from round 3 on only the chain is shuffled
    assert 0 < sum(1 for n in trace if n) < 12


@pytest.mark.slow
def test_components_pipeline_equals_union_find_and_reports_rounds():
    rng = random.Random(7)
    specs = [("chain", 2000, 1), ("star", 500, 2), ("chain", 300, 3)] + \
        [("pairs", 2, i) for i in range(300)] + \
        [(rng.choice(["chain", "star", "pairs", "random"]), rng.randint(2, 60), i) for i in range(150)]
    edges = disjoint_union(specs)
    _, _, trace = simulate(edges, 12)
    used = sum(1 for n in trace if n)
    assert used < 12
    with local_pipeline() as p:
        out = p | beam.Create(edges) | ConnectedComponents(12, round_counts=True)
        assert_that(out["labels"], equal_to(union_find_labels(edges)), label="labels")
        assert_that(out["rounds"] | beam.Map(lambda r: (r["round"], r["edges"])),
                    equal_to(list(enumerate(trace, 1))), label="trace")
        assert_that(out["rounds"] | "Used" >> beam.Filter(lambda r: r["edges"] > 0)
                    | beam.combiners.Count.Globally(), equal_to([used]), label="used")
