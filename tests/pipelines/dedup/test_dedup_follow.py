"""The file-backed survivor joins (``pipelines.dedup.decide.FollowStepFn``) give what the
reference's ``final_decisions`` gives (test_dedup_provenance's case: exact -> fuzzy -> older run, decisions without a link
unchanged), and every decision comes out in the partition of the part holding its document."""
from __future__ import annotations

import apache_beam as beam
from apache_beam.pvalue import AsList, AsSingleton
from apache_beam.testing.util import assert_that, equal_to

from curation.document import Decision
from pipelines.dedup.decide import DECIDED, FollowStepFn
from pipelines.dedup.steps import decision_partition, key_partition
from pipelines.plumbing.spill import Spiller, read_chunk
from pipeline_fixtures import local_pipeline

P = 3


def d(doc, stage, reason, kept):
    return Decision(doc, "s", stage, reason, {"kept": kept, "kept_source": "s"})


def _spill(tmp_path, name, records, key) -> dict:
    return Spiller(P, key).extend(records).write(str(tmp_path / f"{name}.spill"))


def test_follow_steps_name_the_final_survivor(tmp_path):
    exact = [d("a", "exact_dedup", "duplicate", "b"), d("c", "exact_dedup", "duplicate", "k"),
             d("e", "exact_dedup", "dedup_against/exact", "o")]
    fuzzy = [d("b", "fuzzy_dedup", "dedup_against/fuzzy", "o"), d("f", "fuzzy_dedup", "near_duplicate", "k")]
    older = [((True, "o", "s"), ("o2", "s", ())), ((True, "k", "s"), ("never", "s", ()))]  # an older "k" is not ours
    refs = {x.id: (1000 + i, i) for i, x in enumerate(exact + fuzzy)}  # (part key, row) of each document
    by_named = lambda r: decision_partition(r, P)
    steps = {"exact": {"decisions": _spill(tmp_path, "e", [(*refs[x.id], x) for x in exact], by_named)},
             "fuzzy": {"decisions": _spill(tmp_path, "f", [(*refs[x.id], x) for x in fuzzy], by_named)},
             "older": {"links": _spill(tmp_path, "o", older, lambda kl: key_partition(kl[0], P))}}
    out = str(tmp_path / "out")
    with local_pipeline() as p:
        each = p | "Ids" >> beam.Create(list(range(P)))
        size = AsSingleton(p | "P" >> beam.Create([P]))
        spilled = {k: AsList(p | f"Create{k}" >> beam.Create([v])) for k, v in steps.items()}
        fz = each | "FollowFuzzy" >> beam.ParDo(FollowStepFn(out, emit_links=True), size, spilled["fuzzy"],
                                                spilled["older"]).with_outputs(DECIDED, main="spills")
        ex = each | "FollowExact" >> beam.ParDo(FollowStepFn(out, emit_links=False), size, spilled["exact"],
                                                spilled["older"], AsList(fz.spills)).with_outputs(DECIDED, main="spills")
        finals = ((fz.spills, ex.spills) | "Finals" >> beam.Flatten()
                  | "Read" >> beam.FlatMap(lambda s: [(q, r) for q in range(P) for r in read_chunk(s["final"]["url"], q)]))
        assert_that(finals | "InItsPart" >> beam.MapTuple(lambda q, r: q == r[0] % P and refs[r[2].id] == r[:2]),
                    equal_to([True] * 5), label="partitions")
        assert_that(finals | "Survivors" >> beam.MapTuple(
            lambda q, r: (r[2].id, r[2].detail["kept"], [v["id"] for v in r[2].detail.get("via", [])])),
            equal_to([("a", "o2", ["b", "o"]), ("c", "k", []), ("e", "o2", ["o"]),
                      ("b", "o2", ["o"]), ("f", "k", [])]), label="survivors")
        assert_that((fz[DECIDED], ex[DECIDED]) | "Decided" >> beam.Flatten() | beam.CombinePerKey(sum),
                    equal_to([("decided", 5)]), label="decided")
