"""``PartitionedDedup`` (the curate job's file-backed dedup) makes exactly the decisions, group
rows, bucket reports and input counts of the record-based ``ExactDedup`` + ``FuzzyDedup``, on a
corpus with exact and near duplicates across parts, an oversized bucket, documents too short
for MinHash, and an older run's index (``--dedup-against``); and it applies them to the parts."""
from __future__ import annotations

import dataclasses
import glob
import json
import os
import random

import apache_beam as beam
import pyarrow.parquet as pq
import pandas as pd
import pytest

from curation.dedup_records import dedup_records, index_row, record_from_row
from curation.document import Decision, Document
from curation.exact_dedup import priority_map
from curation.fuzzy_config import FuzzyDedupConfig
from infra.hashing import bytes_sha256
from infra.storage.files import parquet_bytes
from dedup_reference import DECISIONS, GROUPS, INPUTS, ExactDedup
from pipelines.dedup.index import INDEX_SCHEMA
from pipelines.dedup.apply import ApplyPartFn, check_applied
from pipelines.dedup.stage import PartitionedDedup
from pipelines.dedup.tables import part_key
from dedup_reference import BUCKETS, FuzzyDedup
from pipelines.plumbing.parts import WriteParts, read_part
from pipeline_fixtures import doc, english, local_pipeline

FUZZY = FuzzyDedupConfig(num_perm=64, bands=16, rows=4, threshold=0.7, max_rounds=6, max_bucket=3,
                         bucket_shards=4)
PRIORITY = ["wikipedia", "realnews", "openwebtext2"]


def _edit(text: str, seed: int, n: int) -> str:
    words, rnd = text.split(" "), random.Random(seed)
    for i in rnd.sample(range(5, len(words) - 5, 12), n):
        words[i] = f"zz{seed}x{i}"
    return " ".join(words)


def _corpus() -> tuple[list[Document], list[Document]]:
    old = [Document(f"o{k}", "wikipedia", english(100 + k)) for k in range(4)]
    old.append(Document("oe", "wikipedia", english(7)))
    new = [Document(f"a{k}", "realnews", _edit(old[k].text, 10 + k, 2)) for k in range(4)]
    new += [Document(f"b{k}", "realnews", _edit(new[k].text, 20 + k, 2)) for k in range(4)]
    new.append(Document("ne", "realnews", "  " + english(7).upper()))  # exact copy of an older one
    new += [Document(f"x{i}", s, english(300)) for i, s in enumerate(("realnews", "openwebtext2", "realnews"))]
    words = english(4).split(" ")  # 8 near copies of one text: buckets over max_bucket
    new += [Document(f"w{i}", "openwebtext2", " ".join(words[:i] + ["zebra"] + words[i + 1:])) for i in range(8)]
    new += [Document(f"u{i}", "realnews", english(400 + i)) for i in range(5)]
    new += [Document("t0", "realnews", "too short"), Document("t1", "openwebtext2", "too short")]
    random.Random(0).shuffle(new)
    return old, new


def _older_index(tmp_path, old: list[Document]) -> list[tuple[str, str]]:
    rows = [{**index_row(r), "dedup_kept": True, "kept_id": None, "kept_source": None}
            for r in dedup_records(old, FUZZY, priority_map(PRIORITY))]
    out = []
    for i in range(0, len(rows), 2):
        path = str(tmp_path / f"older-{i}.parquet")
        data = parquet_bytes(rows[i:i + 2], INDEX_SCHEMA)
        open(path, "wb").write(data)
        out.append((path, bytes_sha256(data)))
    return out


def _dump(pcoll, path: str, label: str):
    return (pcoll | f"{label}List" >> beam.combiners.ToList()
            | f"{label}Write" >> beam.Map(lambda xs: open(path, "w").write(json.dumps(sorted(xs, key=json.dumps)))))


def _decision(d: Decision) -> list:
    return [d.id, d.source, d.stage, d.reason, d.detail["kept"], d.detail["kept_source"]]


def _inputs(pcolls, label):
    return (pcolls | f"{label}All" >> beam.Flatten() | f"{label}Sum" >> beam.CombinePerKey(sum)
            | f"{label}Row" >> beam.MapTuple(lambda k, n: [list(k), n]))


@pytest.mark.parametrize("verify", ["exact", "estimated"])
def test_same_decisions_as_the_record_based_dedup(tmp_path, verify):
    old, new = _corpus()
    cfg = dataclasses.replace(FUZZY, verify=verify)
    older = _older_index(tmp_path, old)
    with local_pipeline(test=False) as p:
        _ = p | beam.Create(new) | WriteParts(str(tmp_path / "run"), "read", rows=5)
    parts = sorted(glob.glob(str(tmp_path / "run" / "_w" / "stages" / "read" / "*.parquet")))
    assert len(parts) >= 4
    out = str(tmp_path / "out")
    with local_pipeline(test=False) as p:  # the record-based transforms
        records = p | "Docs" >> beam.Create(new) | "Batch" >> beam.BatchElements(max_batch_size=128) \
            | "Records" >> beam.FlatMap(lambda ds: dedup_records(ds, cfg, priority_map(PRIORITY)))
        older_recs = p | "Older" >> beam.Create([record_from_row(r) for path, _ in older
                                                 for r in pq.read_table(path).to_pylist()])
        ex = {"records": records, "older": older_recs} | ExactDedup()
        fz = {"records": records, "members": ex["kept"], "older": older_recs} | FuzzyDedup(cfg)
        _dump((ex[DECISIONS], fz[DECISIONS]) | "Decisions" >> beam.Flatten() | beam.Map(_decision),
              str(tmp_path / "want_decisions.json"), "D")
        _dump((ex[GROUPS], fz[GROUPS]) | "Groups" >> beam.Flatten(), str(tmp_path / "want_groups.json"), "G")
        _dump(fz[BUCKETS], str(tmp_path / "want_buckets.json"), "B")
        _dump(_inputs((ex[INPUTS], fz[INPUTS]), "I"), str(tmp_path / "want_inputs.json"), "I")
    with local_pipeline(test=False) as p:  # the file-backed one, over the parts
        got = p | beam.Create(parts) | PartitionedDedup(out, True, cfg, PRIORITY, older, len(old), 5)
        removals = got["removed"] | beam.Map(lambda r: _decision(Decision(
            r.doc.id, r.doc.source, r.stage, r.reason, r.detail)))
        _dump(removals, str(tmp_path / "got_decisions.json"), "D")
        group_rows = (got["group_files"] | "GroupFiles" >> beam.Flatten()
                      | "GroupRows" >> beam.FlatMap(lambda d: pq.read_table(d["url"]).to_pylist()))
        _dump(group_rows, str(tmp_path / "got_groups.json"), "G")
        _dump(got["buckets"], str(tmp_path / "got_buckets.json"), "B")
        _dump(_inputs(got["inputs"], "I"), str(tmp_path / "got_inputs.json"), "I")
        _dump(got["parts"] | beam.FlatMap(lambda d: [x.id for x in read_part(d["url"])]),
              str(tmp_path / "got_kept.json"), "K")
        _dump(got["index"] | beam.Map(lambda d: d["url"]), str(tmp_path / "got_index.json"), "X")
    for name in ("decisions", "groups", "buckets", "inputs"):
        want = json.load(open(tmp_path / f"want_{name}.json"))
        assert json.load(open(tmp_path / f"got_{name}.json")) == want, name
        assert want, name
    removed = {d[0] for d in json.load(open(tmp_path / "want_decisions.json"))}
    assert {"ne", "x1", "x2"} <= removed and any(r.startswith("w") for r in removed)
    assert sorted(json.load(open(tmp_path / "got_kept.json"))) == sorted(d.id for d in new if d.id not in removed)
    # the index: every exact survivor with its features and what fuzzy dedup decided
    index = [r for url in json.load(open(tmp_path / "got_index.json")) for r in pq.read_table(url).to_pylist()]
    exact = {d[0] for d in json.load(open(tmp_path / "want_decisions.json")) if d[2] == "exact_dedup"}
    fuzzy = {d[0]: d[4] for d in json.load(open(tmp_path / "want_decisions.json")) if d[2] == "fuzzy_dedup"}
    recs = {r.id: r for r in dedup_records(new, cfg, priority_map(PRIORITY))}
    assert sorted(r["id"] for r in index) == sorted(set(recs) - exact)
    for r in index:
        assert {k: r[k] for k in index_row(recs[r["id"]])} == index_row(recs[r["id"]])
        assert (r["dedup_kept"], r["kept_id"]) == (r["id"] not in fuzzy, fuzzy.get(r["id"]))


def _one_part(tmp_path, docs) -> dict:
    with local_pipeline(test=False) as p:
        _ = p | beam.Create(docs) | WriteParts(str(tmp_path), "read")
    url = glob.glob(os.path.join(str(tmp_path), "_w", "stages", "read", "*.parquet"))[0]
    features = str(tmp_path / "features.parquet")
    from pipelines.dedup.tables import features_table, write_features

    write_features(features, features_table(dedup_records(list(read_part(url)), None)))
    return {"key": part_key(url), "part": url, "features": features}


def test_apply_removes_each_document_once_by_the_earlier_stage(tmp_path):
    docs = [Document(f"d{i}", "wikipedia", english(i)) for i in range(6)]
    desc = _one_part(tmp_path, docs)
    decisions = [Decision("d3", "wikipedia", "exact_dedup", "duplicate", {"kept": "d1", "kept_source": "w"}),
                 Decision("d4", "wikipedia", "fuzzy_dedup", "near_duplicate", {"kept": "d2", "kept_source": "w"}),
                 Decision("d4", "wikipedia", "exact_dedup", "duplicate", {"kept": "d1", "kept_source": "w"})]
    fn = ApplyPartFn(str(tmp_path / "out"), ("exact_dedup", "fuzzy_dedup"), fuzzy=False)
    out = list(fn.apply(desc, decisions))
    parts = [o for o in out if isinstance(o, dict)]
    kept = [d.id for p in parts for d in read_part(p["url"])]
    assert [d.text for d in read_part(parts[0]["url"])] == [english(int(i[1:])) for i in kept]
    removed = [(o.value.doc.id, o.value.stage, o.value.doc.text == english(int(o.value.doc.id[1:])))
               for o in out if getattr(o, "tag", None) == "removed"]
    assert sorted(kept) == ["d0", "d1", "d2", "d5"]
    assert sorted(removed) == [("d3", "exact_dedup", True), ("d4", "exact_dedup", True)]
    index = [o.value for o in out if getattr(o, "tag", None) == "index"]
    assert sorted(pq.read_table(index[0]["url"]).column("id").to_pylist()) == ["d0", "d1", "d2", "d5"]


def test_a_decision_for_an_unknown_document_fails(tmp_path):
    desc = _one_part(tmp_path, [Document("a", "wikipedia", "x")])
    fn = ApplyPartFn(str(tmp_path / "out"), ("exact_dedup",), fuzzy=False)
    with pytest.raises(RuntimeError, match="not in part"):
        list(fn.apply(desc, [Decision("zz", "s", "exact_dedup", "duplicate")]))
    # a decision naming a part that no step read is never applied: the job's check fails
    assert check_applied([("decided", 3), ("applied", 2), ("applied", 1)]) == 3
    with pytest.raises(RuntimeError, match="1 dedup decision.*never read"):
        check_applied([("decided", 3), ("applied", 2)])


def _dedup_stage(tmp_path, docs, exact: bool, fuzzy: FuzzyDedupConfig) -> tuple[list, list]:
    """The dedup stage curate ships (``pipelines.build``: records from the parts, exact then
    fuzzy decisions, applied in the parts) on ``docs``: (kept ids, (id, stage, kept) removed)."""
    import glob

    from pipelines.config.job import CurateConfig, DecontaminationStage, DedupConfig, InputSpec
    from pipelines.build import Stage, StageEnv
    from pipelines.plumbing.parts import WriteParts, part_urls, read_part

    cfg = CurateConfig(inputs=[InputSpec("realnews", ["parts, not read"], "realnews")],  # (stage input: parts)
                       dedup=DedupConfig(exact=exact, fuzzy=fuzzy),
                       decontamination=DecontaminationStage(enabled=False))
    read_dir, out_dir = str(tmp_path / "read"), str(tmp_path / "dedup")
    with local_pipeline(test=False) as p:
        urls = part_urls(p | beam.Create(docs) | WriteParts(read_dir, "read", rows=2))
        _ = urls | Stage("dedup", StageEnv(cfg, out_dir, vocab_size=50257))
    kept = [d.id for f in glob.glob(os.path.join(out_dir, "_w", "stages", "dedup", "*.parquet"))
            for d in read_part(f)]
    removed = [(r["id"], r["stage"], r["detail"]["kept"])
               for f in glob.glob(os.path.join(out_dir, "_w", "removed", "*", "*.jsonl.gz"))
               for r in pd.read_json(f, lines=True).to_dict("records")]
    return sorted(kept), sorted(removed)


def test_dedup_stage_applies_exact_then_fuzzy_decisions(tmp_path):
    base, text = english(4), english(2)
    docs = [doc("owt/1", base.replace("library", "museum", 1), "openwebtext2"), doc("wiki/1", base, "wikipedia"),
            doc("cc/2", text, "cc_2020_50"), doc("wiki/2", text.upper(), "wikipedia"), doc("tiny", "short")]
    kept, removed = _dedup_stage(tmp_path / "both", docs, True, FuzzyDedupConfig(threshold=0.7))
    assert kept == ["tiny", "wiki/1", "wiki/2"]
    assert removed == [("cc/2", "exact_dedup", "wiki/2"), ("owt/1", "fuzzy_dedup", "wiki/1")]
    kept, removed = _dedup_stage(tmp_path / "fuzzy", docs, False, FuzzyDedupConfig())
    assert [(i, s) for i, s, _ in removed] == [("cc/2", "fuzzy_dedup"), ("owt/1", "fuzzy_dedup")]
