"""Reading the read stage's work items: documents, removals and dead letters routed; a large file
read as slices, each record once."""

import os

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from pipeline_fixtures import read_inputs, write_corpus
from pipelines.config.job import InputSpec
from pipelines.plumbing.outputs import REMOVED


def ids(pcoll, label):
    return pcoll | label >> beam.Map(lambda d: d.id)


def removals(pcoll, label):
    return pcoll | label >> beam.Map(lambda r: (r.doc.id, r.stage, r.reason))


def test_reading_routes_documents_removals_and_dead_letters(pipeline, tmp_path):
    root = str(tmp_path)
    write_corpus(root)
    spec = InputSpec(reader="pile", paths=[os.path.join(root, "pile", "*.jsonl.zst")])
    with pipeline as p:
        out = read_inputs(p, [spec])
        assert_that(ids(out["docs"], "D"), equal_to([
            "wikipedia/00.jsonl.zst:0", "books3/00.jsonl.zst:1", "openwebtext2/00.jsonl.zst:2",
            "pile_cc/00.jsonl.zst:4", "wikipedia/00.jsonl.zst:6"]), label="docs")
        assert_that(removals(out["removed"], "R"), equal_to([
            ("pile_other/00.jsonl.zst:5", "read", "pile_subset_not_in_blend")]), label="removed")
        assert_that(out["dead_letter"] | beam.Map(lambda d: d.location.rsplit("/", 1)[-1]),
                    equal_to(["00.jsonl.zst:3"]), label="dead")


def test_large_files_are_read_as_slices_each_record_once(pipeline, tmp_path, monkeypatch):
    from pipelines.read import plan, readers
    from pipelines.config.job import InputSpec
    from pipeline_fixtures import write_corpus

    write_corpus(str(tmp_path))
    monkeypatch.setattr(plan, "SLICE_BYTES", 100)  # the tiny Pile file becomes several slices
    spec = InputSpec(reader="pile", paths=[os.path.join(str(tmp_path), "pile", "*.jsonl.zst")])
    size = os.path.getsize(os.path.join(str(tmp_path), "pile", "00.jsonl.zst"))
    with pipeline as p:
        items = p | plan.PlanWork([spec])
        out = items | beam.ParDo(readers.ReadWorkFn([spec])).with_outputs(*readers.OUTPUT_TAGS, main="docs")
        assert_that(items | "Slices" >> beam.combiners.Count.Globally(),
                    equal_to([plan.slices_for(size)]), label="slices")
        assert_that(out.docs | beam.Map(lambda d: d.id.rsplit(":", 1)[1]),
                    equal_to(["0", "1", "2", "4", "6"]), label="docs")
        assert_that(out[REMOVED] | beam.Map(lambda r: r.reason), equal_to(["pile_subset_not_in_blend"]),
                    label="removed")
        assert_that(out["dead_letter"] | "Dead" >> beam.combiners.Count.Globally(), equal_to([1]), label="dead")
        # 7 records read, each by exactly one slice
        assert_that(out[readers.READ] | beam.Values() | beam.CombineGlobally(sum), equal_to([7]), label="read")
