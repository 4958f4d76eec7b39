"""``ExactDedup`` / ``FuzzyDedup`` with older runs' index records: the same removals as one joint
dedup over old + new, older documents never removed, fuzzy transitivity through new documents."""
import json
import random

import apache_beam as beam

from curation.dedup_records import dedup_records, index_row, is_older, record_from_row, similarity
from curation.document import Document
from curation.exact_dedup import priority_map
from curation.fuzzy_config import FuzzyDedupConfig
from dedup_reference import DECISIONS, ExactDedup
from dedup_reference import FuzzyDedup
from pipeline_fixtures import english

FUZZY = FuzzyDedupConfig(num_perm=100, threshold=0.8)
PRIORITY = priority_map(["wikipedia", "realnews"])  # old snapshot: wikipedia; new: realnews


def _edit(text: str, seed: int, n: int) -> str:
    """``n`` words replaced at spread-out positions (each costs up to 5 shared 5-grams)."""
    words, rnd = text.split(" "), random.Random(seed)
    for i in rnd.sample(range(5, len(words) - 5, 12), n):
        words[i] = f"zz{seed}x{i}"
    return " ".join(words)


def _corpus():
    old, new = [], []
    for k in range(12):  # chains: old O, new A ~ O, new B ~ A (B further from O)
        o = english(100 + k)
        a = _edit(o, 1000 + k, 3)
        b = _edit(a, 2000 + k, 3)
        old.append(Document(id=f"o{k}", source="wikipedia", text=o))
        new += [Document(id=f"a{k}", source="realnews", text=a), Document(id=f"b{k}", source="realnews", text=b)]
    old.append(Document(id="oe", source="wikipedia", text=english(7)))
    new.append(Document(id="ne", source="realnews", text="  " + english(7).upper()))  # exact (canonical)
    new += [Document(id=f"n{i}", source="realnews", text=english(300)) for i in range(2)]  # new-new dups
    new += [Document(id=f"u{i}", source="realnews", text=english(400 + i)) for i in range(5)]
    return old, new


def _dedup(records, older=None, label=""):
    ex = ({"records": records, "older": older} if older is not None else records) | f"Exact{label}" >> ExactDedup()
    inputs = {"records": records, "members": ex["kept"]}
    if older is not None:
        inputs["older"] = older
    fz = inputs | f"Fuzzy{label}" >> FuzzyDedup(FUZZY)
    return (ex[DECISIONS], fz[DECISIONS]) | f"All{label}" >> beam.Flatten()


def _collect(pcoll, path, label):
    return (pcoll
            | f"{label}Rows" >> beam.Map(lambda d: [d.id, d.stage, d.reason, d.detail["kept"]])
            | f"{label}List" >> beam.combiners.ToList()
            | f"{label}Write" >> beam.Map(lambda rows: json.dump(sorted(rows), open(path, "w"))))


def test_against_older_records_removes_what_a_joint_dedup_removes(pipeline, tmp_path):
    old, new = _corpus()
    old_recs = dedup_records(old, FUZZY, PRIORITY)
    new_recs = dedup_records(new, FUZZY, PRIORITY)
    older = [record_from_row(index_row(r)) for r in old_recs]  # through the index's table form
    assert all(is_older(r.node) for r in older) and min(r.node for r in older) < min(r.node for r in new_recs)
    _collect(_dedup(pipeline | "Joint" >> beam.Create(old_recs + new_recs), label="J"),
             str(tmp_path / "joint.json"), "J")
    _collect(_dedup(pipeline | "New" >> beam.Create(new_recs), pipeline | "Older" >> beam.Create(older), "A"),
             str(tmp_path / "against.json"), "A")
    pipeline.run().wait_until_finish()
    joint = json.load(open(tmp_path / "joint.json"))
    against = json.load(open(tmp_path / "against.json"))
    old_ids = {d.id for d in old}
    assert not any(d[0] in old_ids for d in against)  # older documents are never removed
    assert {d[0] for d in against} == {d[0] for d in joint if d[0] not in old_ids}
    reasons = {d[0]: (d[1], d[2], d[3]) for d in against}
    assert reasons["ne"] == ("exact_dedup", "dedup_against/exact", "oe")
    assert reasons["n1"][1:] == ("duplicate", "n0")
    for d in against:  # removed because of an older document <=> reason dedup_against/*
        assert d[2].startswith("dedup_against/") == (d[3] in old_ids)
    # transitivity: some B is removed although it is below the threshold to its old document
    by_id = {r.id: r for r in old_recs + new_recs}
    far = [k for k in range(12) if similarity(by_id[f"o{k}"].shingles, by_id[f"b{k}"].shingles, "exact") < 0.8]
    assert far and any(reasons.get(f"b{k}", (None, None))[1] == "dedup_against/fuzzy" for k in far)
