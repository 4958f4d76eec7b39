"""Connected components over spill files equal union-find and ``ConnectedComponents``' trace;
spill files round-trip their partitions; a chain too long for the rounds fails the job."""
from __future__ import annotations

import random

import apache_beam as beam
import pytest
from apache_beam.pvalue import AsSingleton
from apache_beam.testing.util import assert_that, equal_to

from pipelines.dedup.components import round_rows
from pipelines.dedup.components import FileComponents
from pipelines.dedup.steps import edge_spills
from pipelines.plumbing.spill import Spiller, read_chunk, read_partition, write_spill
from test_components import disjoint_union, simulate, union_find_labels
from pipeline_fixtures import local_pipeline


def node(i: int) -> tuple:
    """A dedup node (four rank values, id, source, part key, row) that orders like ``i``."""
    return (i, 0, 0.0, 0, f"d{i:05d}", "src", 2**64 - 1 - i % 3, i)


def test_spill_files_hold_each_record_in_its_partition(tmp_path):
    records = [(i, "x" * (i % 7), None) for i in range(100)]
    spill = Spiller(4, lambda r: r[0] % 4).extend(records)
    desc = spill.write(str(tmp_path / "a.spill"))
    assert desc["records"] == 100
    assert [read_chunk(desc["url"], p) for p in range(4)] == [records[p::4] for p in range(4)]
    empty = write_spill(str(tmp_path / "b.spill"), [[], []])
    assert empty["records"] == 0 and read_chunk(empty["url"], 1) == []
    assert list(read_partition([desc, empty], 2)) == records[2::4]  # the empty file is not opened
    with pytest.raises(ValueError, match="4 partitions"):
        read_chunk(desc["url"], 4)


def _components(tmp_path, edges, rounds: int, partitions: int = 3):
    first = edge_spills([(node(u), node(v), 0.9) for u, v in edges], partitions, str(tmp_path))
    p = local_pipeline()
    each = p | "Ids" >> beam.Create(list(range(partitions)))
    size = AsSingleton(p | "P" >> beam.Create([partitions]))
    cc = p | "First" >> beam.Create([{"p": 0, **first}]) | FileComponents(str(tmp_path), each, size, rounds)
    labels = (cc["labels"]
              | "AllLabels" >> beam.Flatten()
              | "Read" >> beam.FlatMap(lambda d: [rec for q in range(partitions)
                                                  for rec in read_chunk(d["labels"]["url"], q)])
              | "AsInts" >> beam.MapTuple(lambda leaf, root: (leaf[0], root[0])))
    rows = round_rows(cc["tallies"], rounds) | "Trace" >> beam.Map(lambda r: (r["round"], r["edges"], r["done"]))
    return p, labels, rows


def test_file_components_equal_union_find_and_the_round_trace(tmp_path):
    rng = random.Random(3)
    specs = [("chain", 300, 1), ("star", 40, 2)] + [("pairs", 2, i) for i in range(30)] + \
        [(rng.choice(["chain", "star", "pairs", "random"]), rng.randint(2, 40), i) for i in range(40)]
    edges = disjoint_union(specs)
    done: list[int] = []
    _, _, trace = simulate(edges, 12, done)
    p, labels, rows = _components(tmp_path, edges, 12)
    assert_that(labels, equal_to(union_find_labels(edges)), label="labels")
    assert_that(rows, equal_to([(i, n, d) for i, (n, d) in enumerate(zip(trace, done), 1)]), label="trace")
    p.run().wait_until_finish()


def test_file_components_fail_loudly_when_not_converged(tmp_path):
    p, _, _ = _components(tmp_path, [(i, i + 1) for i in range(64)], rounds=1)
    with pytest.raises(Exception, match="max_rounds"):
        p.run().wait_until_finish()
