"""The decontamination stage in Beam: planted task passages gone, clean documents untouched,
the corpus-wide frequency guard, the split limit, piece ids, cuts and per-task stats."""
from __future__ import annotations

import json
import os

import apache_beam as beam
from apache_beam.internal import pickler
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.util import assert_that, equal_to

from curation.decontamination import DecontaminationConfig
from curation.document import Document
from curation.pieces import piece_documents, split_pieces
from pipelines.decontaminate import Decontaminate, MatchFn, TaskIndex
from pipeline_fixtures import doc, english, local_pipeline
from task_bucket import TaskBucket

SAMPLE_TASKS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "data_manifests", "eval_tasks", "sample")


def _rows(name):
    with open(os.path.join(SAMPLE_TASKS, f"{name}.jsonl")) as f:
        return [json.loads(line) for line in f]


def _passages():
    return ([("lambada", r["text"]) for r in _rows("lambada")]
            + [("squad_v2", r["context"]) for r in _rows("squad_v2")])


def _planted(i: int, passage: str) -> Document:
    """A clean body with the passage as its own paragraph in the middle, as the sample does."""
    paras = english(100 + i, 400).split("\n\n")
    paras.insert(len(paras) // 2, passage)
    return Document(f"owt/{i}", "openwebtext2", "\n\n".join(paras))


def _check(fn):
    def matcher(actual):
        fn(list(actual))
    return matcher


def test_planted_passages_are_gone_and_clean_documents_identical(pipeline):
    passages = _passages()
    planted = [_planted(i, p) for i, (_, p) in enumerate(passages)]
    clean = [Document(f"wiki/{i}", "wikipedia", english(500 + i, 300)) for i in range(5)]
    texts = [p for _, p in passages]

    def kept_ok(docs):
        by_id = {d.id: d for d in docs}
        for c in clean:  # byte-identical and with no meta added
            assert by_id[c.id].text == c.text and by_id[c.id].meta == {}
        for d in docs:
            assert not any(t[:80] in d.text for t in texts), d.id
            for piece in piece_documents(d):
                assert piece.source == d.source and piece.id.startswith(d.id)
        split = [d for d in docs if d.meta.get("pieces")]
        assert split and all(split_pieces(d)[0] and d.meta["pieces"][0]["id"] == d.id + "#p0" for d in split)

    def cuts_ok(cuts):
        assert cuts and all(c["detail"]["task"] in ("lambada", "squad_v2") and len(c["detail"]["ngram"].split()) == 13
                            for c in cuts)

    def tasks_ok(rows):
        by_task = {r["task"]: r for r in rows}
        assert by_task["lambada"]["ngrams"] > 1000 and by_task["squad_v2"]["ngrams"] > 1000
        assert sum(r["documents_split"] + r["documents_removed"] for r in rows) == len(planted)

    with pipeline as p:
        out = p | beam.Create(planted + clean) | Decontaminate(
            [os.path.join(SAMPLE_TASKS, "*.jsonl")], DecontaminationConfig())
        assert_that(out["kept"], _check(kept_ok), label="kept")
        assert_that(out["cuts"], _check(cuts_ok), label="cuts")
        assert_that(out["tasks"], _check(tasks_ok), label="tasks")
        assert_that(out["contamination"] | beam.Map(lambda r: r["documents"]) | beam.CombineGlobally(sum),
                    equal_to([len(planted)]), label="contamination")


TASK = ("the quick brown fox jumps over the lazy dog near the riverbank while the farmer "
        "watches the sunset quietly")


def _write_task(tmp_path, name="lambada", texts=(TASK,)):
    (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    return str(tmp_path / f"{name}.jsonl")


def test_frequency_guard_counts_over_the_corpus(pipeline, tmp_path):
    """An n-gram occurring 10 times across the corpus is a common phrase; 9 times is not."""
    tasks = [_write_task(tmp_path)]
    dirty = lambda i: Document(f"d/{i}", "realnews", english(i, 150) + "\n\n" + TASK + "\n\n" + english(50 + i, 150))

    def run(n):
        p = local_pipeline(test=False)
        out = p | f"C{n}" >> beam.Create([dirty(i) for i in range(n)]) | Decontaminate(tasks, DecontaminationConfig())
        assert_that(out["kept"] | beam.Map(lambda d: TASK in d.text), equal_to([n >= 10] * n))
        p.run().wait_until_finish()

    run(9)
    run(10)


def test_matched_documents_wait_for_the_frequency_guard_in_files(tmp_path):
    """With ``spill_dir`` the matched documents go to spill files (not through the local
    runner's driver) and the results are the same: 10 occurrences still make a common phrase."""
    tasks = [_write_task(tmp_path)]
    dirty = lambda i: Document(f"d/{i}", "realnews", english(i, 150) + "\n\n" + TASK + "\n\n" + english(50 + i, 150))
    for n in (9, 10):
        spill = tmp_path / f"spill{n}"
        with local_pipeline() as p:
            out = p | beam.Create([dirty(i) for i in range(n)]) | Decontaminate(
                tasks, DecontaminationConfig(), spill_dir=str(spill))
            assert_that(out["kept"] | beam.Map(lambda d: TASK in d.text), equal_to([n >= 10] * n))
        assert list((spill / "_tmp" / "decontaminate_matched").glob("*.spill"))


def test_ten_splits_kept_eleven_removed(pipeline, tmp_path):
    distinct = [f"passage number {w} tells the reader about a very particular thing that happened in the {w} town"
                for w in ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda".split())]
    tasks = [_write_task(tmp_path, "race", distinct)]

    def doc(k):
        parts = [english(300 + j, 90) for j in range(k + 1)]
        return Document(f"s/{k}", "books3", "".join(parts[j] + " " + distinct[j] + ". " for j in range(k)) + parts[k])

    with pipeline as p:
        out = p | beam.Create([doc(10), doc(11)]) | Decontaminate(tasks, DecontaminationConfig())
        assert_that(out["kept"] | beam.Map(lambda d: (d.id, d.meta["decontamination"]["splits"])),
                    equal_to([("s/10", 10)]), label="kept")
        assert_that(out["removed"] | beam.Map(lambda r: (r.doc.id, r.reason, r.detail["task"], r.detail["splits"])),
                    equal_to([("s/11", "too_many_splits", "race", 11)]), label="removed")


def test_index_built_once_per_worker_from_task_urls(tmp_path):
    """Task files are URLs read through FileSystems by the worker; the index is built once per
    process (one build, one read of each file) and never travels with the DoFn."""
    (tmp_path / "tasks").mkdir()
    _write_task(tmp_path / "tasks", "squad_v2", [p for _, p in _passages()])
    TaskBucket.use(tmp_path)
    tasks = ["taskbucket://tasks/*.jsonl"]
    passages = _passages()
    planted = [_planted(i, p) for i, (_, p) in enumerate(passages[:6])]
    clean = [Document(f"wiki/{i}", "wikipedia", english(500 + i, 300)) for i in range(30)]

    p = local_pipeline(test=False)
    out = p | beam.Create(planted + clean, reshuffle=False) | Decontaminate(tasks, DecontaminationConfig())
    assert_that(out["kept"] | beam.Filter(lambda d: not d.meta) | beam.Map(lambda d: d.id),
                equal_to([d.id for d in clean]), label="clean")
    assert_that(out["contamination"] | beam.Map(lambda r: (r["task"], r["documents"])),
                equal_to([("squad_v2", len(planted))]), label="contamination")
    result = p.run()
    result.wait_until_finish()
    builds = result.metrics().query(MetricsFilter().with_name("index_build_ms"))["distributions"]
    assert sum(b.committed.count for b in builds) == 1
    assert TaskBucket.opened == ["taskbucket://tasks/squad_v2.jsonl"]
    # what ships with the stage is the task list and the rule, not the index
    assert len(pickler.dumps(MatchFn(TaskIndex(tasks, DecontaminationConfig())))) < 4000


def test_decontaminate_splits_out_task_ngrams(pipeline, tmp_path):
    task = ("the quick brown fox jumps over the lazy dog near the riverbank while the farmer "
            "watches the sunset quietly")
    (tmp_path / "lambada.jsonl").write_text('{"text": "%s"}\n' % task)
    text = english(6, 300)
    contaminated = text[:1000] + " " + task + " " + text[1000:]
    docs = [doc("clean", english(7)), doc("dirty", contaminated), doc("all", task)]
    rule = DecontaminationConfig()
    with pipeline as p:
        out = p | beam.Create(docs) | Decontaminate([str(tmp_path / "*.jsonl")], rule)
        assert_that(out["kept"] | beam.Map(lambda d: (d.id, len(split_pieces(d)), task in d.text)),
                    equal_to([("clean", 1, False), ("dirty", 2, False)]), label="kept")
        assert_that(out["removed"] | "R" >> beam.Map(lambda r: (r.doc.id, r.stage, r.reason)),
                    equal_to([("all", "decontamination", "contaminated")]), label="removed")
