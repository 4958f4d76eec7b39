"""What every stage writes: document parts round-trip every field, the row writer rolls and
describes its files, one stats row per outcome."""

import glob
import json
import os

import apache_beam as beam
import numpy as np
import pandas as pd
from apache_beam.testing.util import assert_that, equal_to

from curation.document import Document, Removal
from pipeline_fixtures import doc
from pipelines.plumbing.parts import from_row, to_row
from pipelines.plumbing.sinks import WriteRowsFn
from pipelines.plumbing.stats import stats_row


def test_document_parts_round_trip_every_field(tmp_path):
    d = Document("s/f:1", "books3", "text é\n", url="http://x", meta={"pieces": [{"id": "a", "chars": 3}]},
                 lang="en", lang_score=0.5, quality_score=None, tokens=7)
    assert from_row(to_row(d)) == d
    assert from_row(to_row(Document("i", "s", "t"))) == Document("i", "s", "t")


def test_row_writer_rolls_files_and_describes_them(pipeline, tmp_path):
    out = str(tmp_path)
    rows = [("a/part", {"i": i}) for i in range(7)] + [("b/part", {"i": 99})]
    with pipeline as p:
        descs = (p | beam.Create(rows)
                 | beam.ParDo(WriteRowsFn(out, "jsonl", max_rows=3, row_group=2)))
        assert_that(descs | beam.Map(lambda d: (d["dest"], d["rows"])) | beam.combiners.Count.PerElement(),
                    equal_to([(("a/part", 3), 2), (("a/part", 1), 1), (("b/part", 1), 1)]))
    files = glob.glob(os.path.join(out, "_w", "a", "part-*.jsonl.gz"))
    got = sorted(json.loads(line)["i"] for f in files for line in pd.read_json(f, lines=True).to_json(
        orient="records", lines=True).splitlines())
    assert got == list(range(7))


def test_stats_rows_cover_every_outcome():
    import numpy as np
    from curation.document import DeadLetter
    from pipelines.plumbing.stats import ROW_SCHEMA

    kept = (doc("k", "a b c", tokens=4), np.arange(4))
    rem = Removal(doc("r", "x y"), "heuristics", "too_few_words")
    dead = DeadLetter("books3", "f.zst:3", "JSONDecodeError: bad")
    rows = [stats_row(x) for x in (kept, rem, dead)]
    assert [(r["id"], r["outcome"], r["stage"], r["reason"], r["words"]) for r in rows] == [
        ("k", "kept", "tokenize", None, 3), ("r", "removed", "heuristics", "too_few_words", 2),
        ("f.zst:3", "dead_letter", "read", "JSONDecodeError", 0)]
    assert all(list(r) == ROW_SCHEMA.names for r in rows)  # one builder, one schema
