"""The site-boilerplate panel: characters removed per source and host.

Reads ``stats/site_boilerplate.parquet`` (``pipelines.filters.site_boilerplate``: per source
the hosts with most characters removed, and a ``*`` row with the source's totals).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .htmlkit import esc, not_available, table, td, td_num, th

FILE = "site_boilerplate.parquet"
ALL_HOSTS = "*"  # pipelines.filters.site_boilerplate.ALL_HOSTS (the dashboard imports no Beam)
HOSTS_SHOWN = 10


def load(run: dict[str, Any], run_dir: Path, notes: list[str]) -> dict[str, Any] | None:
    """``{"enabled", "rows"}``; None for a run that predates the stage (no table, no config)."""
    cfg = (run.get("config") or {}).get("site_boilerplate")
    enabled = bool((cfg or {}).get("enabled"))
    path = run_dir / "stats" / FILE
    if not path.exists():
        return {"enabled": enabled, "rows": []} if cfg is not None else None
    try:
        rows = pq.read_table(path).to_pylist()
    except (OSError, ValueError, pa.ArrowException) as err:
        notes.append(f"could not read stats/{FILE}: {type(err).__name__}: {err}")
        return None
    return {"enabled": enabled, "rows": rows, "config": cfg}


def panel(runs: list[dict[str, Any]]) -> str:
    """Per run: each source's totals, then its hosts with most characters removed."""
    out = []
    for r in runs:
        head = f"<h3>{esc(r['label'])}</h3>" if len(runs) > 1 else ""
        info = r.get("site_boilerplate")
        if info is None:
            out.append(head + not_available(f"Site-boilerplate counts (stats/{FILE})"))
            continue
        if not info["enabled"]:
            out.append(head + '<p class="na">The site-boilerplate stage was off in this run '
                              '(site_boilerplate.enabled).</p>')
            continue
        cfg = info.get("config") or {}
        rule = (f"<p>Lines found in more than {esc(cfg.get('host_documents'))} documents of one host"
                + (f" or more than {esc(cfg['corpus_documents'])} of the corpus"
                   if cfg.get("corpus_documents") else "") + " were removed.</p>")
        headers = [th("source"), th("host"), th("documents"), th("documents changed"),
                   th("lines removed"), th("characters removed")]
        rows = []
        for src in sorted({x["source"] for x in info["rows"]}):
            mine = [x for x in info["rows"] if x["source"] == src]
            total = [x for x in mine if x["host"] == ALL_HOSTS]
            hosts = sorted((x for x in mine if x["host"] != ALL_HOSTS and x["chars_removed"]),
                           key=lambda x: (-x["chars_removed"], x["host"]))[:HOSTS_SHOWN]
            for x in total + hosts:
                rows.append([td(src), td("all hosts" if x["host"] == ALL_HOSTS else x["host"]),
                             td_num(x["documents"]), td_num(x["documents_changed"]),
                             td_num(x["lines_removed"]), td_num(x["chars_removed"])])
        none = "<p>No document with a URL was judged.</p>"
        out.append(head + rule + (table(headers, rows) if rows else none))
    return "".join(out)
