"""Assemble the self-contained dashboard page from one or two loaded runs.

The page is one HTML file: inline CSS, inline script, and the aggregates embedded as JSON in a
``<script type="application/json">`` block.  Nothing is fetched, so it opens offline and can be
attached to a ticket.  The output depends only on the runs (no timestamps), so a rerun writes
the same bytes.
"""
from __future__ import annotations

import math
from typing import Any

from curation.document import STAGES

from . import panels, panels_boilerplate, panels_dedup, panels_takedown, rethreshold
from .assets import CSS, JS
from .charts import build_charts
from .htmlkit import esc, json_script

FORMAT_VERSION = 1

# (anchor, title, panel function(report) -> HTML)
PANELS = (
    ("health", "Run health", lambda r: panels.health(r["runs"], r["charts"])),
    ("funnel", "Filter funnel", lambda r: panels.funnel(r["runs"], r["charts"])),
    ("reasons", "Removal reasons", lambda r: panels.reasons(r["runs"], r["charts"])),
    ("tokens", "Tokens per source", lambda r: panels.tokens(r["runs"], r["charts"], r["manifest"])),
    ("quality", "Quality scores", lambda r: panels.histogram_panel(
        r["runs"], r["charts"], [("quality", "Quality-score histograms (kept vs removed)")])),
    ("rethreshold", "Re-threshold filters", lambda r: rethreshold.panel(r["runs"])),
    ("languages", "Languages", lambda r: panels.languages(r["runs"], r["charts"])),
    ("lengths", "Document lengths", lambda r: panels.histogram_panel(
        r["runs"], r["charts"], [("length_chars", "Characters per document"),
                                 ("length_words", "Words per document")])),
    ("dedup", "Duplicates", lambda r: panels_dedup.dedup(r["runs"], r["charts"])),
    ("contamination", "Contamination", lambda r: panels_dedup.contamination(r["runs"], r["charts"])),
    ("pii", "Personal data", lambda r: rethreshold.pii_panel(r["runs"])),
    ("site_boilerplate", "Site boilerplate", lambda r: panels_boilerplate.panel(r["runs"])),
    ("samples", "Sample documents", lambda r: panels.samples(r["runs"])),
)
# Shown only when the panel function returns HTML (None: the runs have nothing to show).
OPTIONAL_PANELS = (
    ("takedown", "Takedowns", lambda r: panels_takedown.takedowns(r["runs"])),
)


def _clean(value: Any) -> Any:
    """NaN/inf are not JSON; a run.json written by Python may still hold them."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _unique_labels(runs: list[dict[str, Any]]) -> None:
    # Two runs with the same folder name (a/run, b/run) must stay distinguishable everywhere.
    if len(runs) == 2 and runs[0]["label"] == runs[1]["label"]:
        for i, r in enumerate(runs):
            r["label"] = f"{r['label']} #{i + 1}"


def build_report(runs: list[dict[str, Any]], manifest: dict[str, Any] | None = None) -> dict[str, Any]:
    """The data behind the page (also what the page embeds as JSON)."""
    if not 1 <= len(runs) <= 2:
        raise ValueError(f"the dashboard shows one run or compares two; got {len(runs)}")
    _unique_labels(runs)
    report = {"format_version": FORMAT_VERSION, "stages": list(STAGES), "runs": runs, "manifest": manifest}
    report["charts"] = build_charts(runs, manifest)
    return _clean(report)


def render_html(report: dict[str, Any]) -> str:
    runs = report["runs"]
    title = "Curation dashboard: " + " vs ".join(r["label"] for r in runs)
    run_line = "".join(f"<span><b>{esc(r['label'])}</b> <code>{esc(r['path'])}</code></span>" for r in runs)
    shown = [(key, name, render(report)) for key, name, render in PANELS]
    shown += [(key, name, html) for key, name, render in OPTIONAL_PANELS
              if (html := render(report)) is not None]
    nav = "".join(f'<a href="#{key}">{esc(name)}</a>' for key, name, _ in shown)
    sections = "".join(f'<section id="{key}"><h2>{esc(name)}</h2>{html}</section>'
                       for key, name, html in shown)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(title)}</title><style>{CSS}{rethreshold.CSS}</style></head><body>"
        f"<header><h1>{esc(title)}</h1><div class=\"runs\">{run_line}</div></header>"
        f"<nav>{nav}</nav><main>{sections}</main>"
        f"{json_script('dashboard-data', report)}<script>{JS}\n{rethreshold.JS}</script></body></html>\n"
    )
