"""Prompt formats (lm-eval's, written out by hand), local task files, few-shot sampling, and the
link to decontamination: the shipped samples are read by the decontamination adapters too."""
import json
import os

import pytest

from curation.eval_tasks import TaskSource, adapter_for, read_task_texts
from training.eval.data import bundled_data_dir, fewshot_prefixes, load_task_data
from training.eval.tasks import MTNLG_TASKS, TASKS, get_task, parse_tasks


def test_prompt_formats_are_lm_evals():
    piqa = {"goal": "Open a jar", "sol1": "twist", "sol2": "bite", "label": 0}
    assert TASKS["piqa"].requests(piqa) == [("Question: Open a jar\nAnswer:", " twist"),
                                            ("Question: Open a jar\nAnswer:", " bite")]
    boolq = {"passage": "P.", "question": "is it", "label": 1}
    assert TASKS["boolq"].requests(boolq)[1] == ("P.\nQuestion: is it?\nAnswer:", " yes")
    anli = {"premise": "A.", "hypothesis": "B.", "label": 2}
    assert TASKS["anli_r2"].requests(anli)[2] == (
        "A.\nQuestion: B. True, False, or Neither?\nAnswer:", " False")
    assert TASKS["lambada"].requests({"text": "a b c"}) == [("a b", " c")]
    hs = TASKS["hellaswag"].doc({"activity_label": "Cooking", "ctx_a": "He stirs [step] the pot.",
                                 "ctx_b": "then", "endings": ["[title] it boils.", "x"],
                                 "label": "0"})
    assert hs["query"] == "Cooking: He stirs the pot. Then"
    assert TASKS["hellaswag"].requests(hs)[0][1] == "  it boils."  # bracket tags removed


def test_race_prompt_answers_earlier_questions():
    doc = {"article": "Text.", "problems": repr([
        {"question": "Who?", "options": ["a", "b", "c", "d"], "answer": "B"},
        {"question": "It is  _  .", "options": ["e", "f", "g", "h"], "answer": "D"},
        {"question": "Why?", "options": ["i", "j", "k", "l"], "answer": "A"}])}
    (ctx, cont), *_ = TASKS["race"].requests(doc)
    assert ctx == "Article: Text.\n\nQuestion: Who?\nAnswer: b\nIt is h\nWhy?"
    assert cont == " i" and TASKS["race"].gold(doc) == 0


def test_task_names_and_aliases():
    assert [t.name for t in parse_tasks("mtnlg")] == list(MTNLG_TASKS)
    assert [t.name for t in parse_tasks("lambada_openai,race_h,piqa,piqa")] == \
        ["lambada", "race", "piqa"]
    with pytest.raises(ValueError, match="unknown task 'mmlu'"):
        get_task("mmlu")


def test_every_sample_task_loads_and_decontamination_reads_the_same_files():
    folder = bundled_data_dir()
    for name in MTNLG_TASKS:
        data = load_task_data(TASKS[name])
        assert len(data.docs) >= 6 and data.source["sha256"]
        # one file, two readers: the decontamination adapter finds text in every row
        texts = list(read_task_texts(TaskSource(os.path.join(folder, f"{name}.jsonl"))))
        assert {t for t, _ in texts} == {name}
        assert len(texts) >= len(data.docs), name
        assert adapter_for(name).name != "text" or name == "lambada", f"{name}: no adapter"


def test_fewshot_is_seeded_lm_eval_sampling_and_never_shows_the_row_itself():
    data = load_task_data(TASKS["lambada"])  # no training split: examples from the scored rows
    a, b = fewshot_prefixes(data, 3, 1234), fewshot_prefixes(data, 3, 1234)
    assert a == b and a != fewshot_prefixes(data, 3, 7)
    for doc, prefix in zip(data.docs, a):
        assert prefix.count("\n\n") == 3
        assert TASKS["lambada"].fewshot_text(doc) not in prefix
    # a task with a training split draws only from it
    piqa = load_task_data(TASKS["piqa"])
    train_goals = {d["goal"] for d in piqa.fewshot_docs}
    for prefix in fewshot_prefixes(piqa, 2, 1234):
        goals = [line[len("Question: "):] for line in prefix.split("\n") if line.startswith("Question: ")]
        assert len(goals) == 2 and set(goals) <= train_goals
    with pytest.raises(ValueError, match="needed"):
        fewshot_prefixes(piqa, len(piqa.fewshot_docs), 1234)


def test_limit_takes_the_first_rows_and_the_prefixes_do_not_depend_on_it():
    data = load_task_data(TASKS["boolq"])
    assert fewshot_prefixes(data, 1, 1234, limit=3) == fewshot_prefixes(data, 1, 1234)[:3]


def test_bad_rows_and_missing_files_fail_with_the_location(tmp_path):
    (tmp_path / "piqa.jsonl").write_text(json.dumps({"goal": "g", "sol1": "a"}) + "\n")
    with pytest.raises(ValueError, match=r"piqa.jsonl: row 0 is not a piqa row \(KeyError"):
        load_task_data(TASKS["piqa"], str(tmp_path))
    (tmp_path / "boolq.jsonl").write_text(json.dumps({"passage": "p", "question": "q",
                                                      "label": 5}) + "\n")
    with pytest.raises(ValueError, match="label 5 is not one of 2 choices"):
        load_task_data(TASKS["boolq"], str(tmp_path))
    with pytest.raises(FileNotFoundError, match="--task-data hellaswag=PATH"):
        load_task_data(TASKS["hellaswag"], str(tmp_path))


def test_save_to_disk_folder_uses_the_tasks_splits(tmp_path):
    datasets = pytest.importorskip("datasets")
    rows = [json.loads(line) for line in open(os.path.join(bundled_data_dir(), "anli_r1.jsonl"))]
    train = [json.loads(line) for line in
             open(os.path.join(bundled_data_dir(), "fewshot", "anli_r1.jsonl"))]
    datasets.DatasetDict({"test_r1": datasets.Dataset.from_list(rows),
                          "train_r1": datasets.Dataset.from_list(train)}).save_to_disk(
        str(tmp_path / "anli"))  # one saved facebook/anli serves every round
    data = load_task_data(TASKS["anli_r1"], str(tmp_path))
    assert [d["uid"] for d in data.docs] == [r["uid"] for r in rows]
    assert [d["uid"] for d in data.fewshot_docs] == [r["uid"] for r in train]
    assert data.source["split"] == "test_r1"
