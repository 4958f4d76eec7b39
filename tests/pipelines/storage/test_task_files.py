"""Task texts read through FileSystems: files, globs and datasets.save_to_disk folders at URLs
that no local open can read."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curation.eval_tasks import TaskSource
from pipelines.storage.task_files import source_exists, task_texts
from task_bucket import TaskBucket


@pytest.fixture
def bucket(tmp_path):
    from datasets import Dataset, DatasetDict

    evals = tmp_path / "evals"
    evals.mkdir()
    (evals / "piqa.jsonl").write_text(json.dumps({"goal": "g", "sol1": "s1", "sol2": "s2", "label": 0}) + "\n")
    pq.write_table(pa.table({"sentence1": ["a"], "sentence2": ["b"]}), evals / "wic.parquet")
    Dataset.from_dict({"passage": ["p1", "p2"], "question": ["q1", "q2"]}).save_to_disk(str(evals / "drop"))
    DatasetDict({"validation": Dataset.from_dict({"ctx": ["v"], "endings": [["e1", "e2"]]}),
                 "test": Dataset.from_dict({"ctx": ["t"], "endings": [[]]})}).save_to_disk(str(evals / "hellaswag"))
    TaskBucket.use(tmp_path)
    return "taskbucket://evals"


def test_a_glob_finds_files_and_saved_folders(bucket):
    got = list(task_texts([TaskSource(f"{bucket}/*")]))
    assert sorted(got) == sorted([
        ("drop", "p1"), ("drop", "q1"), ("drop", "p2"), ("drop", "q2"),
        ("hellaswag", "v"), ("hellaswag", "e1"), ("hellaswag", "e2"), ("hellaswag", "t"),
        ("piqa", "g"), ("piqa", "s1"), ("piqa", "s2"), ("wic", "a"), ("wic", "b")])
    assert all(path.startswith("taskbucket://") for path in TaskBucket.opened)
    assert len(TaskBucket.opened) == len(set(TaskBucket.opened))  # every file read once


def test_saved_folder_by_url_with_a_split(bucket):
    assert list(task_texts([TaskSource(f"{bucket}/hellaswag/", split="test")])) == [("hellaswag", "t")]
    assert list(task_texts([TaskSource(f"{bucket}/drop", task="drop_dev", fields=("question",))])) == [
        ("drop_dev", "q1"), ("drop_dev", "q2")]
    with pytest.raises(ValueError, match="no split 'train'"):
        list(task_texts([TaskSource(f"{bucket}/hellaswag", split="train")]))


def test_nothing_matched_names_the_source(bucket):
    with pytest.raises(FileNotFoundError, match="evals/nope"):
        list(task_texts([TaskSource(f"{bucket}/nope*.jsonl")]))


def test_source_exists_agrees_with_the_reader(bucket):
    for pattern in (f"{bucket}/*", f"{bucket}/drop", f"{bucket}/hellaswag/", f"{bucket}/*.jsonl"):
        assert source_exists(pattern) and list(task_texts([TaskSource(pattern)])), pattern
    assert not source_exists(f"{bucket}/nope*.jsonl") and not source_exists("nosuchscheme://x/y")
