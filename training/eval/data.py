"""Task rows from local files (never a hub download), and deterministic few-shot examples.

A task's data lives in a folder (``--data DIR``, default: the bundled samples), read with the same
readers decontamination uses (``curation.eval_tasks``), so the files that were removed from the
training data are the files that are scored:

    DIR/<task>.jsonl | .jsonl.gz | .json | .parquet   rows that are scored
    DIR/fewshot/<task>.<same formats>                  few-shot examples (the training split)
    DIR/<task>/                                        or a datasets.save_to_disk folder: the
                                                       task's eval split is scored and its
                                                       training split gives the examples

``--task-data NAME=PATH`` points one task at a file or folder anywhere. Where a task has no
few-shot rows (LAMBADA, RACE), examples come from the scored rows, never the row being scored.

Few-shot sampling is lm-evaluation-harness's (``ContextSampler``): one ``random.Random(seed)``
per task, consumed in row order; for every row draw ``k + 1`` examples, drop any equal to the
row, keep ``k``. The same seed gives the same prompts, on any number of processes, and the same
prompts lm-eval builds from the same files and seed.
"""
from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from typing import Any

from infra.hashing import file_sha256
from curation.eval_tasks import is_saved_dataset, rows_from_bytes
from training.eval.tasks import Task

FORMATS = (".jsonl", ".jsonl.gz", ".json", ".json.gz", ".parquet")


def bundled_data_dir() -> str:
    """The tiny licence-clean sample tasks shipped in ``data_manifests/eval_tasks/samples``."""
    from infra.resources import local_path, ref

    return local_path(ref("data_manifests", "eval_tasks", "samples"))


@dataclass
class TaskData:
    task: Task
    docs: list[dict]
    """Scored rows, prepared (``Task.prepare``), in file order."""
    fewshot_docs: list[dict] | None
    """Example pool; None means: the scored rows."""
    source: dict[str, Any] = field(default_factory=dict)
    """Where the rows came from (path, split, sha256 of the file) for the results file."""


def _file_for(folder: str, name: str) -> str | None:
    for ext in FORMATS:
        path = os.path.join(folder, name + ext)
        if os.path.isfile(path):
            return path
    return None


def _locate(task: Task, data_dir: str) -> str:
    """The task's file, else its save_to_disk folder, under its own name or another it uses."""
    for name in (task.name, *task.data_names):
        found = _file_for(data_dir, name)
        if found:
            return found
    for name in (task.name, *task.data_names):
        if is_saved_dataset(os.path.join(data_dir, name)):
            return os.path.join(data_dir, name)
    return os.path.join(data_dir, task.name)


def _read_file(path: str) -> list[dict]:
    with open(path, "rb") as f:
        return list(rows_from_bytes(path, f.read()))


def _read_split(path: str, split: str | None) -> list[dict] | None:
    try:
        from datasets import DatasetDict, load_from_disk
    except ImportError:  # in [hf] only: JSONL/Parquet task files need nothing (curation.eval_tasks)
        from infra.extras import pip_install

        raise ValueError(f"{path}: a datasets.save_to_disk folder needs Hugging Face datasets "
                         f"({pip_install('hf')}), or export the task to JSONL/Parquet") from None

    ds = load_from_disk(path)
    if isinstance(ds, DatasetDict):
        if split not in ds:
            return None
        ds = ds[split]
    return [dict(r) for r in ds]


def load_task_data(task: Task, data_dir: str | None = None, path: str | None = None) -> TaskData:
    """The rows of ``task`` from ``path`` (a file or save_to_disk folder) or from ``data_dir``."""
    data_dir = data_dir or bundled_data_dir()
    where = path or _locate(task, data_dir)
    if is_saved_dataset(where):
        rows = _read_split(where, task.eval_split)
        if rows is None:
            raise ValueError(f"{where}: no {task.eval_split!r} split for task {task.name}")
        shots = _read_split(where, task.fewshot_split) if task.fewshot_split else None
        source = {"path": where, "split": task.eval_split, "fewshot_split": task.fewshot_split
                  if shots is not None else None}
    elif os.path.isfile(where):
        rows = _read_file(where)
        shot_file = _file_for(os.path.join(os.path.dirname(where), "fewshot"), task.name)
        shots = _read_file(shot_file) if shot_file else None
        source = {"path": where, "sha256": file_sha256(where), "fewshot_path": shot_file}
    else:
        raise FileNotFoundError(
            f"no data for task {task.name!r}: expected {task.name}.jsonl (or .parquet, or a "
            f"datasets.save_to_disk folder {task.name}/) in {data_dir}; set --data DIR or "
            f"--task-data {task.name}=PATH")
    if not rows:
        raise ValueError(f"{where}: task {task.name} has no rows")
    docs = [_checked(task, task.doc(r), where, i) for i, r in enumerate(rows)]
    fewshot = [task.doc(r) for r in shots] if shots else None
    return TaskData(task, docs, fewshot, source)


def _checked(task: Task, doc: dict, where: str, i: int) -> dict:
    """Build the row's requests once, so a malformed row fails here with its location."""
    try:
        reqs = task.requests(doc)
        if task.kind == "multiple_choice":
            gold = task.gold(doc)
            if not 0 <= gold < len(reqs):
                raise ValueError(f"label {gold} is not one of {len(reqs)} choices")
    except (KeyError, ValueError, IndexError, TypeError, SyntaxError) as err:
        raise ValueError(f"{where}: row {i} is not a {task.name} row "
                         f"({type(err).__name__}: {err})") from None
    return doc


def fewshot_prefixes(data: TaskData, shots: int, seed: int, limit: int | None = None) -> list[str]:
    """The few-shot prefix of every scored row (``""`` at zero shots), lm-eval's sampling."""
    docs = data.docs[:limit] if limit else data.docs
    if shots <= 0:
        return [""] * len(docs)
    pool = data.fewshot_docs if data.fewshot_docs is not None else data.docs
    if len(pool) < shots + 1:  # k + 1 are drawn, so that the scored row can be dropped
        raise ValueError(f"--shots {shots}: task {data.task.name} has {len(pool)} few-shot "
                         f"rows; {shots + 1} are needed")
    rnd = random.Random(seed)
    out = []
    for doc in docs:
        picked = [x for x in rnd.sample(pool, shots + 1) if x != doc][:shots]
        if len(picked) < shots:  # the row occurs more than once in the pool
            picked = rnd.sample([x for x in pool if x != doc], shots)
        out.append("".join(data.task.fewshot_text(x) for x in picked))
    return out


__all__ = ["TaskData", "bundled_data_dir", "load_task_data", "fewshot_prefixes"]
