"""Task adapters and readers: JSONL, Parquet, datasets.save_to_disk, config entries."""
from __future__ import annotations

import json
import pickle

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curation.eval_tasks import ADAPTERS, TaskSource, adapter_for, read_task_texts, task_source

REFERENCE_TASKS = {"lambada", "squad_v2", "natural_questions", "trivia_qa", "web_questions", "race", "drop",
                   "coqa", "piqa", "boolq", "hellaswag", "winogrande", "anli", "hans", "wic"}


def test_every_mtnlg_task_has_an_adapter():
    assert set(ADAPTERS) == REFERENCE_TASKS
    assert adapter_for("SQuAD").name == "squad_v2" and adapter_for("nq_open").name == "natural_questions"
    pickle.loads(pickle.dumps(ADAPTERS))


def test_adapters_pick_the_text_fields():
    assert adapter_for("squad_v2").texts({"id": "x", "context": "C", "question": "Q",
                                          "answers": {"text": ["A"]}}) == ["C", "Q"]
    assert adapter_for("natural_questions").texts({"question": {"text": "who?"}}) == ["who?"]
    assert adapter_for("hellaswag").texts({"ctx": "c", "endings": ["e1", "e2"], "label": "0"}) == ["c", "e1", "e2"]
    assert adapter_for("race").texts({"text": "plain"}) == ["plain"]  # {"text"} files work for any task
    assert adapter_for("mytask", ["a.b"]).texts({"a": [{"b": "x"}, {"b": "y"}]}) == ["x", "y"]


def test_readers_jsonl_parquet_and_saved_dataset(tmp_path):
    (tmp_path / "piqa.jsonl").write_text(json.dumps({"goal": "g", "sol1": "s1", "sol2": "s2", "label": 0}) + "\n")
    pq.write_table(pa.table({"sentence1": ["a"], "sentence2": ["b"]}), tmp_path / "wic.parquet")
    from datasets import Dataset

    Dataset.from_dict({"passage": ["p"], "question": ["q"]}).save_to_disk(str(tmp_path / "drop"))
    got = [t for src in ("piqa.jsonl", "wic.parquet", "drop") for t in read_task_texts(TaskSource(str(tmp_path / src)))]
    assert got == [("piqa", "g"), ("piqa", "s1"), ("piqa", "s2"), ("wic", "a"), ("wic", "b"),
                   ("drop", "p"), ("drop", "q")]
    renamed = TaskSource(str(tmp_path / "*.jsonl"), task="piqa_test", fields=("goal",))
    assert list(read_task_texts(renamed)) == [("piqa_test", "g")]


def test_task_source_config_errors_name_the_key():
    assert task_source({"path": "x.jsonl", "fields": "q"}).fields == ("q",)
    with pytest.raises(ValueError, match="'path'"):
        task_source({"task": "x"})
    with pytest.raises(ValueError, match="unknown key 'colums'"):
        task_source({"path": "x", "colums": ["a"]})
