"""Evaluation-task texts read where the code runs (a Beam worker), through Beam's FileSystems.

Every task source (``curation.eval_tasks.TaskSource``) may be a local path or any FileSystems
URL (``gs://``, ``s3://``, ``hdfs://``), a file, a glob, or a ``datasets.save_to_disk`` folder
(``Dataset`` or ``DatasetDict``), also remote: the folder's JSON metadata and Arrow files are
opened one by one, so nothing needs ``datasets`` or a local copy.  A glob matches task files and
saved folders alike (``evals/*`` finds ``evals/lambada.jsonl`` and ``evals/hellaswag/``).
"""
from __future__ import annotations

import json
from typing import Iterator

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from curation.eval_tasks import TaskSource, rows_from_bytes, texts_from_rows

_DATASET_MARKERS = ("dataset_dict.json", "state.json")


def _read(path: str) -> bytes:
    # raw bytes: the readers decide on .gz themselves (AUTO would decompress twice)
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return f.read()


def _matched(pattern: str) -> list[str]:
    return sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)


def _saved_dataset_rows(root: str, split: str | None) -> Iterator[dict]:
    """Rows of a ``save_to_disk`` folder: every split of a ``DatasetDict`` (or only ``split``),
    in the order ``dataset_dict.json`` lists them; each split's Arrow files in order."""
    import pyarrow as pa

    marker = FileSystems.join(root, "dataset_dict.json")
    if FileSystems.exists(marker):
        splits = json.loads(_read(marker))["splits"]
        if split is not None:
            if split not in splits:
                raise ValueError(f"{root}: no split {split!r} (it has {', '.join(splits)})")
            splits = [split]
        folders = [FileSystems.join(root, s) for s in splits]
    else:
        folders = [root]
    for folder in folders:
        state = json.loads(_read(FileSystems.join(folder, "state.json")))
        for data_file in state["_data_files"]:
            with pa.ipc.open_stream(_read(FileSystems.join(folder, data_file["filename"]))) as reader:
                yield from reader.read_all().to_pylist()


def resolve(pattern: str) -> tuple[list[str], list[str]]:
    """``(save_to_disk folders, task files)`` that a task path or glob names."""
    pattern = pattern.rstrip("/")
    if any(FileSystems.exists(FileSystems.join(pattern, m)) for m in _DATASET_MARKERS):
        return [pattern], []
    roots = sorted({FileSystems.split(p)[0] for m in _DATASET_MARKERS
                    for p in _matched(FileSystems.join(pattern, m))})
    files = [p for p in _matched(pattern) if not any(p.startswith(r + "/") for r in roots)]
    return roots, files


def source_exists(pattern: str) -> bool:
    """Whether a task path or glob names anything readable (config validation, on the driver)."""
    try:
        roots, files = resolve(pattern)
    except Exception:  # noqa: BLE001 - an unreachable or malformed location names nothing
        return False
    return bool(roots or files)


def source_texts(source: TaskSource) -> Iterator[tuple[str, str]]:
    """``(task, text)`` for every evaluation text of one task source."""
    roots, files = resolve(source.path)
    if not roots and not files:
        raise FileNotFoundError(f"decontamination task source {source.path!r} matches no task file "
                                f"and no datasets.save_to_disk folder")
    for root in roots:
        yield from texts_from_rows(source, root, _saved_dataset_rows(root, source.split))
    for path in files:
        yield from texts_from_rows(source, path, rows_from_bytes(path, _read(path)))


def task_texts(sources: list[TaskSource]) -> Iterator[tuple[str, str]]:
    """``(task, text)`` pairs of all task sources."""
    for source in sources:
        yield from source_texts(source)
