"""Load one RUN directory (docs/run-layout.md) into the JSON-able aggregates the page shows.

``load_run`` never raises on missing or damaged parts of a run: each panel's data is None when
its input is absent, and ``notes`` says why, so the page can print "not available in this run".
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from . import aggregates as agg
from . import panels_boilerplate, rethreshold, samples
from .extras import load_extras

# The aggregate tables the page is drawn from (the pipeline writes them; per-document rows,
# stats/documents/, are never read here).
HIST_COLUMNS = ("kind", "source", "outcome", "bin_lo", "bin_hi", "count")
LANG_COLUMNS = ("source", "lang", "documents")
# run.json fields shown verbatim in the run-health panel.
META_FIELDS = ("format_version", "runner", "started_at", "finished_at", "wall_seconds", "config_path",
               "accounting_ok", "totals", "tokenizer", "pipeline_options", "config", "dedup_against")


def _read_json(path: Path, notes: list[str]) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        notes.append(f"{path.name} is missing")
    except (OSError, ValueError) as err:
        notes.append(f"could not read {path.name}: {type(err).__name__}: {err}")
    return None


def _read_parquet(path: Path, columns: tuple[str, ...] | None, notes: list[str]) -> pa.Table | None:
    if not path.exists():
        notes.append(f"stats/{path.name} is missing")
        return None
    try:
        names = pq.read_schema(path).names
        return pq.read_table(path, columns=[c for c in columns if c in names] if columns else None)
    except (OSError, ValueError, pa.ArrowException) as err:
        notes.append(f"could not read stats/{path.name}: {type(err).__name__}: {err}")
        return None


def _require(table: pa.Table | None, name: str, columns: tuple[str, ...], notes: list[str]) -> pa.Table | None:
    """The table, or None (with a note) when it lacks a column the contract promises."""
    missing = [c for c in columns if table is not None and c not in table.column_names]
    if missing:
        notes.append(f"stats/{name} lacks column(s) {', '.join(missing)}; ignored")
        return None
    return table


def _source_order(run: dict[str, Any], counts: list[dict[str, Any]]) -> list[str]:
    """Sources in run.json order (the config's order), then any others the stats mention."""
    names = list((run.get("sources") or {}).keys())
    names += sorted({r["source"] for r in counts if r.get("source") is not None} - set(names))
    return names


def _rows(run_dir: Path, name: str, columns: tuple[str, ...], notes: list[str]) -> list[dict] | None:
    """Rows of an aggregate table under stats/, or None (with a note) when absent or damaged."""
    table = _require(_read_parquet(run_dir / "stats" / name, None, notes), name, columns, notes)
    return table.to_pylist() if table is not None else None


def load_run(run_dir: str | Path, label: str | None = None) -> dict[str, Any]:
    """All aggregates for one run, as plain JSON-able data."""
    run_dir = Path(run_dir)
    notes: list[str] = []
    run = _read_json(run_dir / "run.json", notes) or {}
    counts = _rows(run_dir, "counts.parquet", ("source", "stage", "outcome", "documents"), notes)

    # The funnel comes from counts.parquet (the contract's aggregate); run.json's coarse counts
    # keep the page useful for a run whose stats were not written, and the note says which.
    if counts is not None:
        counts_from = "stats/counts.parquet"
    elif run.get("sources"):
        counts, counts_from = agg.counts_from_run_json(run), "run.json (coarse)"
    else:
        counts, counts_from = [], None
    sources = _source_order(run, counts)

    tokens = {s: (run.get("sources") or {}).get(s, {}).get("tokens") for s in sources}
    if all(v is None for v in tokens.values()):
        tokens = None

    dead_count = (run.get("totals") or {}).get("dead_lettered")
    if dead_count is None and counts:
        dead_count = sum(int(r["documents"]) for r in counts if r.get("outcome") == "dead_letter")

    funnel = agg.funnel(counts, sources) if counts else None
    hist_rows = _rows(run_dir, "histograms.parquet", HIST_COLUMNS, notes) or []
    lang_rows = _rows(run_dir, "languages.parquet", LANG_COLUMNS, notes)
    return {
        "label": label or run_dir.name,
        "path": str(run_dir),
        "meta": {k: run[k] for k in META_FIELDS if k in run},
        "sources": sources,
        "counts_from": counts_from,
        "funnel": funnel,
        "reasons": agg.reasons(counts) if counts else None,
        "tokens": tokens,
        "kept": {s: funnel[s][-1]["out"] for s in sources} if funnel else {},
        "quality": agg.histograms_from_rows(hist_rows, "quality_score", sources),
        "length_chars": agg.histograms_from_rows(hist_rows, "chars", sources),
        "length_words": agg.histograms_from_rows(hist_rows, "words", sources),
        "languages": agg.languages_from_rows(lang_rows) if lang_rows is not None else None,
        "dead_letters": {"count": dead_count, "samples": samples.dead_letter_samples(run_dir, notes)},
        "removed_samples": samples.removed_samples(run_dir, notes),
        "kept_samples": samples.kept_samples(run_dir, notes),
        "grid": rethreshold.load_grid(run_dir, notes),
        "pii": rethreshold.load_pii(run, run_dir, notes),
        "site_boilerplate": panels_boilerplate.load(run, run_dir, notes),
        **load_extras(run, run_dir, notes),
        "notes": notes,
    }


def load_manifest(path: str | Path) -> dict[str, Any]:
    """Per-source target weight, available tokens and epochs from a blend manifest.

    Accepts ``sources`` as a mapping name -> fields or a list of objects with a ``name``; the
    field names tried cover the manifest contract (weight, available tokens, epochs).
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    raw = data.get("sources") or {}
    if isinstance(raw, list):
        raw = {str(item.get("name") or item.get("source")): item for item in raw}
    out = {}
    for name, info in raw.items():
        info = info if isinstance(info, dict) else {}
        out[name] = {
            "weight": _first(info, "weight", "target_weight", "share"),
            "available_tokens": _first(info, "available_tokens", "tokens"),
            "epochs": _first(info, "epochs"),
            "target_tokens": _first(info, "target_tokens", "sampled_tokens", "train_tokens"),
        }
    return {"path": str(path), "format_version": data.get("format_version"), "sources": out,
            "totals": data.get("totals")}


def _first(info: dict[str, Any], *keys: str) -> Any:
    return next((info[k] for k in keys if info.get(k) is not None), None)
