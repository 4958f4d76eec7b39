"""The takedown section: what ``mtnlg takedown`` removed from a run, one row per request.

Read from ``run.json``'s ``takedowns`` list (aggregates only: counts, shards, the request
file's sha256; the removed ids stay in run.json and are never printed on the page).  A run with
no takedown gets no section.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .htmlkit import esc, fmt, table, td, td_num, th


def takedowns_of(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``takedowns`` entries of a loaded run (``run["path"]``/run.json); [] when none."""
    try:
        data = json.loads((Path(run["path"]) / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError):
        return []
    items = data.get("takedowns") if isinstance(data, dict) else None
    return [t for t in items if isinstance(t, dict)] if isinstance(items, list) else []


def takedowns(runs: list[dict[str, Any]]) -> str | None:
    """HTML for the runs' takedowns, or None when no run had one (the section is left out)."""
    parts = []
    for run in runs:
        items = takedowns_of(run)
        if not items:
            continue
        rows = []
        for t in items:
            manifest = (t.get("manifest") or {}).get("path")
            rows.append([
                td(str(t.get("at", ""))[:19].replace("T", " ")), td(t.get("by", "id")),
                td(f"{str(t.get('request_sha256', ''))[:12]}…"),
                td_num(t.get("requested")), td_num(t.get("documents")),
                td_num(len(t.get("unknown") or [])), td_num(len(t.get("not_kept") or {})),
                td_num(t.get("tokens_removed")), td_num(len(t.get("shards_rewritten") or [])),
                td(Path(manifest).name if manifest else "-"),
            ])
        total = sum(int(t.get("documents") or 0) for t in items)
        head = [th(h) for h in ("when (UTC)", "by", "request sha256", "requested", "removed",
                                "unknown", "not kept", "tokens removed", "shards rewritten",
                                "new manifest")]
        parts.append(f"<h3>{esc(run.get('label', ''))}</h3>"
                     f"<p>{esc(fmt(total))} documents taken down in {len(items)} request(s); "
                     "every other shard is byte-identical to the curated one. Removed documents "
                     "count as removed at stage <code>takedown</code> in the funnel and reasons "
                     "above.</p>" + table(head, rows))
    return "".join(parts) or None
