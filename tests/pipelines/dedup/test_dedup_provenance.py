"""A removal names the document that survives dedup, in one run and across --dedup-against.

Planted: R (300 words), B (R minus 5 words: a near duplicate, Jaccard 0.86), A (B exactly) and
N (B minus 5 other words: near B, 0.86, but not near R, 0.74 < threshold 0.75).  Exact dedup
keeps B of {A, B}; fuzzy dedup then removes B as a near duplicate of R.  A's removal must name
R (the survivor), with B on the way (``detail.via``); the group rows keep B as the exact step's
survivor.  Across runs: the older run is that one (B removed, kept R); a new run with A and N
against it must name R for both, though B is what they match in the older run's index.
"""
from __future__ import annotations

import glob
import gzip
import json
import os

import pyarrow.parquet as pq
import pytest

from pipeline_fixtures import english, write_config
from pipelines import curate
from dedup_reference import final_decisions

FUZZY = {"num_perm": 128, "shingle": "word", "ngram": 5, "threshold": 0.75, "verify": "exact"}


def _drop(text: str, positions: set[int]) -> str:
    return " ".join(w for i, w in enumerate(text.split(" ")) if i not in positions)


R = english(900, 300)
B = _drop(R, {40, 90, 140, 190, 240})
N = _drop(B, {20, 65, 115, 165, 215})


def _write(root: str, name: str, texts: list[str]) -> None:
    os.makedirs(os.path.join(root, "realnews"), exist_ok=True)
    with open(os.path.join(root, "realnews", name), "w") as f:
        f.write("".join(json.dumps({"text": t}) + "\n" for t in texts))


def _run(tmp, name: str, texts: list[str], *extra: str) -> str:
    root, out = str(tmp / f"{name}-raw"), str(tmp / name)
    _write(root, f"{name}.jsonl", texts)
    cfg = write_config(str(tmp / f"{name}.yaml"), root,
                       inputs=[{"reader": "realnews", "source": "realnews", "paths": ["realnews/*.jsonl"]}],
                       dedup={"exact": True, "fuzzy": FUZZY}, decontamination={"enabled": False})
    assert curate.run(["--config", cfg, "--output", out, *extra, "--direct_running_mode=in_memory",
                       "--direct_num_workers=1"]) == 0
    return out


def _removed(run: str) -> dict[str, dict]:
    rows = {}
    for path in glob.glob(os.path.join(run, "removed", "*_dedup", "*.jsonl.gz")):
        with gzip.open(path, "rt") as f:
            rows.update((r["id"], r) for r in map(json.loads, f))
    return rows


def _kept(run: str) -> set[str]:
    return {i for p in glob.glob(os.path.join(run, "documents", "*", "*.parquet"))
            for i in pq.read_table(p, columns=["id"]).column("id").to_pylist()}


def _groups(run: str) -> list[dict]:
    return pq.read_table(sorted(glob.glob(os.path.join(run, "dedup", "groups-*.parquet")))).to_pylist()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("provenance")
    one = _run(tmp, "one", [R, B, B])  # lines: 0 R, 1 B, 2 A (B's text)
    # the older run of the second test is the first test's run (a curate run costs ~4 s of CPU)
    new = _run(tmp, "new", [B, N], "--dedup-against", one)  # 0 A (B's text), 1 N
    return {"one": one, "old": one, "new": new}


@pytest.mark.slow
def test_in_one_run_the_exact_duplicate_names_the_fuzzy_survivor(runs):
    run = runs["one"]
    r, b, a = (f"realnews/realnews/one.jsonl:{i}" for i in range(3))
    removed = _removed(run)
    assert _kept(run) == {r}
    assert removed[b]["stage"] == "fuzzy_dedup" and removed[b]["detail"]["kept"] == r
    assert removed[a]["stage"] == "exact_dedup" and removed[a]["reason"] == "duplicate"
    assert removed[a]["detail"] == {"kept": r, "kept_source": "realnews",
                                    "via": [{"id": b, "source": "realnews"}]}
    exact = {g["id"]: g for g in _groups(run) if g["kind"] == "exact"}
    assert exact[a]["kept_id"] == b and exact[b]["kept"]  # the intermediate step, as decided


@pytest.mark.slow
def test_across_runs_the_named_older_document_is_in_the_older_corpus(runs):
    r, b = "realnews/realnews/one.jsonl:0", "realnews/realnews/one.jsonl:1"
    a, n = "realnews/realnews/new.jsonl:0", "realnews/realnews/new.jsonl:1"
    assert _kept(runs["old"]) == {r} and _removed(runs["old"])[b]["detail"]["kept"] == r
    removed = _removed(runs["new"])
    assert (removed[a]["reason"], removed[n]["reason"]) == ("dedup_against/exact", "dedup_against/fuzzy")
    for doc in (a, n):
        assert removed[doc]["detail"] == {"kept": r, "kept_source": "realnews",
                                          "via": [{"id": b, "source": "realnews"}]}, doc
    assert _kept(runs["new"]) == set()
    index = {row["id"]: row for p in glob.glob(os.path.join(runs["new"], "dedup_index", "*.parquet"))
             for row in pq.read_table(p, columns=["id", "kept_id"]).to_pylist()}
    assert index[n]["kept_id"] == r  # a later run chaining on this one is told the survivor too


def test_final_decisions_follow_fuzzy_and_older_links(pipeline):
    """The transform alone: exact -> fuzzy -> older run, and decisions without a link unchanged."""
    import apache_beam as beam
    from apache_beam.testing.util import assert_that, equal_to

    from curation.document import Decision

    def d(doc, stage, reason, kept):
        return Decision(doc, "s", stage, reason, {"kept": kept, "kept_source": "s"})

    exact = [d("a", "exact_dedup", "duplicate", "b"), d("c", "exact_dedup", "duplicate", "k"),
             d("e", "exact_dedup", "dedup_against/exact", "o")]
    fuzzy = [d("b", "fuzzy_dedup", "dedup_against/fuzzy", "o"), d("f", "fuzzy_dedup", "near_duplicate", "k")]
    older = [((True, "o", "s"), ("o2", "s", ())), ((True, "k", "s"), ("never", "s", ()))]  # an older "k" is not ours
    with pipeline as p:
        out = final_decisions(p | "E" >> beam.Create(exact), p | "F" >> beam.Create(fuzzy),
                              p | "O" >> beam.Create(older))
        assert_that(out | beam.Map(lambda x: (x.id, x.detail["kept"], [v["id"] for v in x.detail.get("via", [])])),
                    equal_to([("a", "o2", ["b", "o"]), ("c", "k", []), ("e", "o2", ["o"]),
                              ("b", "o2", ["o"]), ("f", "k", [])]))
