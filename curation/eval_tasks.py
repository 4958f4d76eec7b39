"""Evaluation-task sources for decontamination: one small adapter per task.

An adapter knows which fields of a task row hold evaluation text (the text that must not leak
into training data); the rest (ids, labels, answer offsets) is ignored.  Field names follow the
Hugging Face datasets layouts of the tasks MT-NLG decontaminated against (REFERENCE.md section
2).  A field may be dotted (``question.text``) and may hold a string or a list of strings.

Task files are read from local storage (benchmarks cannot be downloaded at run time):

- JSON Lines (``.jsonl``, ``.json``, optionally ``.gz``), one row per line;
- Parquet (``.parquet``);
- a folder written by ``datasets.Dataset.save_to_disk`` / ``DatasetDict.save_to_disk``
  (every split is read unless ``split`` is given).

``TaskSource`` names a task and where its rows are; ``read_task_texts`` yields
``(task, text)`` pairs for ``curation.decontamination.build_task_ngrams`` (``pipelines.storage.task_files``
reads the same sources through Beam's FileSystems, remote URLs included).  Texts are yielded
raw: ``build_task_ngrams`` normalises them exactly as documents are normalised.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import posixpath
from dataclasses import dataclass
from typing import Any, Iterable, Iterator


@dataclass(frozen=True)
class TaskAdapter:
    """Which fields of a row hold evaluation text."""

    name: str
    fields: tuple[str, ...]

    def texts(self, row: dict[str, Any]) -> list[str]:
        out: list[str] = []
        for f in self.fields:
            _collect(_get(row, f), out)
        if not out and self.fields != ("text",):  # plain {"text": ...} task files work for every task
            _collect(row.get("text"), out)
        return out


def _get(row: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if isinstance(row, dict):
            row = row.get(part)
        elif isinstance(row, list):  # a field inside a list of records: take it from each
            row = [r.get(part) if isinstance(r, dict) else None for r in row]
        else:
            return None
    return row


def _collect(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        if value.strip():
            out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _collect(v, out)


# The MT-NLG task list.  Passages and questions are both indexed where a task has both: either
# can be copied verbatim into web text (SQuAD contexts are Wikipedia paragraphs, RACE articles
# are published exam texts).
ADAPTERS: dict[str, TaskAdapter] = {a.name: a for a in (
    TaskAdapter("lambada", ("text",)),
    TaskAdapter("squad_v2", ("context", "question")),
    TaskAdapter("natural_questions", ("question.text", "question")),  # full NQ and nq_open
    TaskAdapter("trivia_qa", ("question",)),
    TaskAdapter("web_questions", ("question",)),
    TaskAdapter("race", ("article", "question", "options")),
    TaskAdapter("drop", ("passage", "question")),
    TaskAdapter("coqa", ("story", "questions", "questions.input_text")),
    TaskAdapter("piqa", ("goal", "sol1", "sol2")),
    TaskAdapter("boolq", ("passage", "question")),
    TaskAdapter("hellaswag", ("ctx", "endings")),
    TaskAdapter("winogrande", ("sentence",)),
    TaskAdapter("anli", ("premise", "hypothesis")),
    TaskAdapter("hans", ("premise", "hypothesis")),
    TaskAdapter("wic", ("sentence1", "sentence2")),
)}
# Other spellings of the same tasks (file names, HF dataset ids).
ALIASES = {"squad": "squad_v2", "nq": "natural_questions", "nq_open": "natural_questions",
           "triviaqa": "trivia_qa", "webquestions": "web_questions", "webqs": "web_questions",
           "lambada_openai": "lambada",
           # the task names `mtnlg eval` (and lm-eval) use for the same files
           "anli_r1": "anli", "anli_r2": "anli", "anli_r3": "anli", "race_high": "race",
           "race_h": "race"}
GENERIC = TaskAdapter("text", ("text",))
"""Any other task: rows with a ``text`` field."""


def adapter_for(task: str, fields: Iterable[str] | None = None) -> TaskAdapter:
    """The adapter of ``task`` (or its alias); explicit ``fields`` override it."""
    if fields:
        return TaskAdapter(task, tuple(fields))
    key = task.lower().replace("-", "_")
    return ADAPTERS.get(ALIASES.get(key, key), GENERIC)


@dataclass(frozen=True)
class TaskSource:
    """One task's rows: where they are, and how to read them."""

    path: str
    """A file, a ``save_to_disk`` folder, or a glob of either."""
    task: str | None = None
    """Task name (stats, ``removed/``); default: the file's base name before the first dot."""
    fields: tuple[str, ...] | None = None
    """Text fields; default: the task's adapter (``ADAPTERS``), else ``("text",)``."""
    split: str | None = None
    """For a ``DatasetDict`` folder: the split to read (default: every split)."""

    def task_for(self, path: str) -> str:
        return self.task or posixpath.basename(path.rstrip("/")).split(".")[0]


def _jsonl_rows(data: bytes, path: str) -> Iterator[dict]:
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    for n, line in enumerate(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")):
        line = line.strip()
        if line:
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:  # a task file is config: fail loudly, say where
                raise ValueError(f"{path}:{n + 1}: not JSON ({e})") from None
            yield row if isinstance(row, dict) else {"text": row}


def _parquet_rows(data: bytes) -> Iterator[dict]:
    import pyarrow.parquet as pq

    yield from pq.read_table(io.BytesIO(data)).to_pylist()


def _saved_dataset_rows(path: str, split: str | None) -> Iterator[dict]:
    try:
        from datasets import DatasetDict, load_from_disk
    except ImportError:  # not in the base install: JSONL/Parquet task files need nothing
        from infra.extras import pip_install

        raise ValueError(f"{path}: a datasets.save_to_disk folder needs Hugging Face datasets "
                         f"({pip_install('hf')}), or export the task to JSONL/Parquet") from None

    ds = load_from_disk(path)
    parts = ([ds[split]] if split else list(ds.values())) if isinstance(ds, DatasetDict) else [ds]
    for part in parts:
        yield from part


def is_saved_dataset(path: str) -> bool:
    return os.path.isdir(path) and any(
        os.path.exists(os.path.join(path, f)) for f in ("dataset_dict.json", "state.json"))


def rows_from_bytes(path: str, data: bytes) -> Iterator[dict]:
    """Rows of one task file given its bytes (so Beam's FileSystems can open remote files)."""
    name = path[:-3] if path.endswith(".gz") else path
    if name.endswith(".parquet"):
        return _parquet_rows(data)
    if name.endswith((".jsonl", ".json")):
        return _jsonl_rows(data, path)
    raise ValueError(f"{path}: unknown task file format (expected .jsonl, .json, .parquet, "
                     f"optionally .gz, or a datasets.save_to_disk folder)")


def texts_from_rows(source: TaskSource, path: str, rows: Iterable[dict]) -> Iterator[tuple[str, str]]:
    task = source.task_for(path)
    adapter = adapter_for(task, source.fields)
    for row in rows:
        for text in adapter.texts(row):
            yield task, text


def read_task_texts(source: TaskSource) -> Iterator[tuple[str, str]]:
    """``(task, text)`` for every evaluation text of a local task source."""
    import glob

    paths = sorted(glob.glob(source.path)) or [source.path]
    for path in paths:
        if is_saved_dataset(path):
            rows: Iterable[dict] = _saved_dataset_rows(path, source.split)
        else:
            with open(path, "rb") as f:
                rows = rows_from_bytes(path, f.read())
        yield from texts_from_rows(source, path, rows)


def task_source(entry: str | dict | TaskSource) -> TaskSource:
    """A ``TaskSource`` from a config entry: a path/glob, or a mapping of its fields."""
    if isinstance(entry, TaskSource):
        return entry
    if isinstance(entry, str):
        return TaskSource(entry)
    if not isinstance(entry, dict):
        raise ValueError(f"expected a path or a mapping, got {type(entry).__name__}")
    unknown = set(entry) - {"path", "task", "fields", "split"}
    if unknown:
        raise ValueError(f"unknown key {sorted(unknown)[0]!r} (expected path, task, fields, split)")
    if not entry.get("path"):
        raise ValueError("'path' is required")
    fields = entry.get("fields")
    if isinstance(fields, str):
        fields = [fields]
    return TaskSource(str(entry["path"]), entry.get("task"), tuple(fields) if fields else None,
                      entry.get("split"))
