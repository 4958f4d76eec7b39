"""Distributed connected components equal union-find (property tests, hypothesis).

Each example runs one Beam pipeline over the disjoint union of several generated graphs
(random graphs, long chains, stars, many small components), so the expensive part -- a
pipeline -- runs a few times while the graphs vary widely.
"""
from __future__ import annotations

import random

import pytest

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.components import ConnectedComponents


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


def run_components(edges, rounds=12):
    with TestPipeline(runner="FnApiRunner") as p:
        labels = p | beam.Create(edges) | ConnectedComponents(rounds)
        assert_that(labels, equal_to(union_find_labels(edges)))


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(graphs)
def test_components_equal_union_find(specs):
    run_components(disjoint_union(specs))


@pytest.mark.slow
def test_long_chain_star_and_many_small_components():
    edges = disjoint_union([("chain", 2000, 1), ("star", 500, 2), ("chain", 300, 3)]
                           + [("pairs", 2, i) for i in range(300)] + [("random", 40, i) for i in range(20)])
    run_components(edges)


@pytest.mark.slow
def test_round_counts_trace_convergence():
    edges = shaped("chain", 64, 0)
    with TestPipeline(runner="FnApiRunner") as p:
        out = p | beam.Create(edges) | ConnectedComponents(8, round_counts=True)
        assert_that(out["labels"], equal_to(union_find_labels(edges)), label="labels")
        last = out["rounds"] | beam.Filter(lambda r: r["round"] == 8) | beam.Map(lambda r: r["edges"])
        assert_that(last, equal_to([63]), label="star")  # converged: one edge per non-root node
