"""Small samples read from a run's outputs: dead letters, removed and kept documents.

Readers stream and stop early (a run's ``removed/`` can hold millions of documents) and never
raise on a damaged file: a problem becomes a note shown on the page, because a dashboard that
crashes on a half-written run is useless exactly when it is needed.
"""
from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

import pyarrow.parquet as pq

from curation.document import STAGES

TEXT_CHARS = 600  # characters of a document shown in a sample
RAW_CHARS = 300  # characters of a dead letter's raw input shown
DEAD_LETTER_SAMPLES = 20
REMOVED_PER_STAGE = 5
KEPT_PER_SOURCE = 3
SCAN_LIMIT = 500  # records read per stage to find a variety of reasons


def truncate(text: Any, limit: int) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} more chars]"


def _jsonl_records(paths: list[Path], notes: list[str]) -> Iterator[dict[str, Any]]:
    for path in paths:
        try:
            with gzip.open(path, "rt", encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if line.strip():
                        yield json.loads(line)
        except (OSError, EOFError, ValueError) as err:
            notes.append(f"could not read {path.name}: {type(err).__name__}: {err}")


def dead_letter_samples(run_dir: Path, notes: list[str]) -> list[dict[str, str]]:
    paths = sorted((run_dir / "dead_letter").glob("*.jsonl.gz"))
    out = []
    for rec in _jsonl_records(paths, notes):
        out.append({"source": str(rec.get("source", "")), "location": str(rec.get("location", "")),
                    "error": truncate(rec.get("error"), RAW_CHARS),
                    "raw": truncate(rec.get("raw"), RAW_CHARS)})
        if len(out) >= DEAD_LETTER_SAMPLES:
            break
    return out


def removed_samples(run_dir: Path, notes: list[str]) -> dict[str, list[dict[str, str]]]:
    """A few removed documents per stage, round-robin over reasons so rare reasons show too."""
    root = run_dir / "removed"
    stages = sorted((p.name for p in root.iterdir() if p.is_dir()), key=_stage_order) if root.is_dir() else []
    out: dict[str, list[dict[str, str]]] = {}
    for stage in stages:
        by_reason: dict[str, list[dict[str, Any]]] = defaultdict(list)
        paths = sorted((root / stage).glob("*.jsonl.gz"))
        for i, rec in enumerate(_jsonl_records(paths, notes)):
            if i >= SCAN_LIMIT:
                break
            by_reason[str(rec.get("reason") or "(no reason)")].append(rec)
        picked: list[dict[str, Any]] = []
        while len(picked) < REMOVED_PER_STAGE and any(by_reason.values()):
            for reason in sorted(by_reason):
                if by_reason[reason] and len(picked) < REMOVED_PER_STAGE:
                    picked.append(by_reason[reason].pop(0))
        out[stage] = [{"id": str(r.get("id", "")), "source": str(r.get("source", "")),
                       "reason": str(r.get("reason") or ""),
                       "detail": truncate(json.dumps(r.get("detail") or {}, sort_keys=True), 200),
                       "text": truncate(r.get("text"), TEXT_CHARS)} for r in picked]
    return out


def _stage_order(stage: str) -> int:
    return STAGES.index(stage) if stage in STAGES else len(STAGES)


def kept_samples(run_dir: Path, notes: list[str]) -> dict[str, list[dict[str, str]]]:
    """The first few kept documents of each source (reads one small batch per source)."""
    root = run_dir / "documents"
    out: dict[str, list[dict[str, str]]] = {}
    for src_dir in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []:
        rows: list[dict[str, Any]] = []
        for path in sorted(src_dir.glob("*.parquet")):
            try:
                pf = pq.ParquetFile(path)
                cols = [c for c in ("id", "text", "quality_score", "tokens") if c in pf.schema_arrow.names]
                for batch in pf.iter_batches(batch_size=KEPT_PER_SOURCE, columns=cols):
                    rows.extend(batch.to_pylist())
                    break
            except (OSError, ValueError) as err:
                notes.append(f"could not read {src_dir.name}/{path.name}: {type(err).__name__}: {err}")
            if len(rows) >= KEPT_PER_SOURCE:
                break
        out[src_dir.name] = [{"id": str(r.get("id", "")), "quality_score": _fmt(r.get("quality_score")),
                              "tokens": _fmt(r.get("tokens")), "text": truncate(r.get("text"), TEXT_CHARS)}
                             for r in rows[:KEPT_PER_SOURCE]]
    return out


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    return f"{value:.3f}" if isinstance(value, float) else str(value)
