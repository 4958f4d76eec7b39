"""The page's panels, rendered server-side from the loaded runs (tables, samples, notes).

Each panel function takes the list of runs (one or two) and returns an HTML fragment; charts are
placeholders (``data-chart``) that the inline script fills from the embedded JSON.  Every value
from the data goes through ``htmlkit``'s escaping helpers.
"""
from __future__ import annotations

from typing import Any

from curation.document import STAGES

from .aggregates import TOTAL
from .charts import stage_key
from .htmlkit import (esc, metric_cells, metric_headers, not_available, pre, pretty_json, table, td,
                      td_num, td_stacked, th)

Runs = list[dict[str, Any]]


def _labels(runs: Runs) -> list[str]:
    return [r["label"] for r in runs]


def _sources(runs: Runs) -> list[str]:
    out: list[str] = []
    for r in runs:
        out += [s for s in r["sources"] if s not in out]
    return out


def chart(chart_id: str, charts: dict[str, Any]) -> str:
    if not charts.get(chart_id):
        return ""
    return (f'<div class="chart" data-chart="{esc(chart_id)}">'
            "<noscript>Charts need JavaScript; the tables below hold the same numbers.</noscript></div>")


def _per_run(runs: Runs, body) -> str:
    """Render ``body(run)`` for each run, side by side when there are two."""
    if len(runs) == 1:
        return body(runs[0])
    cols = "".join(f"<div><h3>{esc(r['label'])}</h3>{body(r)}</div>" for r in runs)
    return f'<div class="grid">{cols}</div>'


def health(runs: Runs, charts: dict[str, Any]) -> str:
    labels = _labels(runs)
    rows = []
    for key in ("runner", "started_at", "finished_at", "wall_seconds", "accounting_ok", "config_path"):
        rows.append([td(key)] + metric_cells([r["meta"].get(key) for r in runs]))
    for key in ("read", "kept", "removed", "dead_lettered", "tokens"):
        rows.append([td(f"totals.{key}")] + metric_cells([(r["meta"].get("totals") or {}).get(key) for r in runs]))
    rows.append([td("dead letters")] + metric_cells([r["dead_letters"]["count"] for r in runs]))
    rows.append([td("funnel computed from")] + metric_cells([r["counts_from"] for r in runs]))
    out = table([th("")] + metric_headers("value", labels), rows)
    out += "<h3>Time per stage</h3>" + (chart("stage_seconds", charts) if charts.get("stage_seconds") else
                                        not_available("Time per stage (run.json stage_seconds)"))

    def details(r: dict[str, Any]) -> str:
        parts = []
        if r["notes"]:
            items = "".join(f"<li>{esc(n)}</li>" for n in r["notes"])
            parts.append(f'<h3>Notes</h3><ul class="notes">{items}</ul>')
        samples = r["dead_letters"]["samples"]
        parts.append("<h3>Dead letters (sample)</h3>")
        if samples:
            parts.append(table([th("source"), th("location"), th("error"), th("raw input")],
                               [[td(s["source"]), td(s["location"]), td(s["error"]), td(s["raw"])]
                                for s in samples]))
        else:
            parts.append('<p class="na">No dead-letter records in this run.</p>')
        for key, title in (("pipeline_options", "Pipeline options"), ("tokenizer", "Tokenizer"),
                           ("config", "Resolved config")):
            if key in r["meta"]:
                parts.append(f"<details><summary>{esc(title)}</summary>{pretty_json(r['meta'][key])}</details>")
            else:
                parts.append(not_available(title))
        return "".join(parts)

    return out + _per_run(runs, details)


def funnel(runs: Runs, charts: dict[str, Any]) -> str:
    if not any(r["funnel"] for r in runs):
        return not_available("Funnel (no stats/counts.parquet or run.json)")
    rows = []
    for src in _sources(runs) + [TOTAL]:
        per_run = [(r["funnel"] or {}).get(src) for r in runs]
        cells = [td(src), td_stacked([p[0]["in"] if p else None for p in per_run])]
        for i in range(len(STAGES)):
            cells.append(td_stacked([p[i]["out"] if p else None for p in per_run]))
        rows.append(cells)
    headers = [th("source"), th("read (in)")] + [th(f"after {s}" if s != "tokenize" else "kept") for s in STAGES]
    note = ("<p>Documents remaining after each stage (dead letters leave at <em>read</em>)." +
            (" Each cell: first run, second run, Δ." if len(runs) == 2 else "") + "</p>")
    return chart("funnel", charts) + note + table(headers, rows)


def reasons(runs: Runs, charts: dict[str, Any]) -> str:
    if not any(r["reasons"] for r in runs):
        return not_available("Removal reasons")
    keyed = [{(x["stage"], x["reason"]): x for x in r["reasons"] or []} for r in runs]
    keys: list[tuple[str, str]] = []
    for k in keyed:
        keys += [key for key in k if key not in keys]
    keys.sort(key=stage_key)
    sources = _sources(runs)
    rows = []
    for key in keys:
        rows.append([td(key[0]), td(key[1])] + metric_cells([k.get(key, {}).get("documents", 0) for k in keyed])
                    + [td_stacked([k.get(key, {}).get("by_source", {}).get(s, 0) for k in keyed]) for s in sources])
    headers = [th("stage"), th("reason")] + metric_headers("documents", _labels(runs)) + [th(s) for s in sources]
    return chart("reasons", charts) + table(headers, rows)


def tokens(runs: Runs, charts: dict[str, Any], manifest: dict[str, Any] | None) -> str:
    if not any(r["tokens"] for r in runs):
        return not_available("Tokens per source")
    sources = _sources(runs) + [s for s in (manifest or {}).get("sources", {}) if s not in _sources(runs)]
    totals = [sum(v or 0 for v in (r["tokens"] or {}).values()) for r in runs]
    headers = [th("source")] + metric_headers("kept documents", _labels(runs)) + metric_headers("tokens", _labels(runs))
    headers += metric_headers("share %", _labels(runs))
    if manifest:
        headers += [th("target weight %"), th("manifest available tokens"), th("target tokens"), th("epochs")]
    wsum = sum((m.get("weight") or 0) for m in (manifest or {}).get("sources", {}).values()) or 1
    rows = []
    for s in sources:
        toks = [(r["tokens"] or {}).get(s) for r in runs]
        share = [round(100 * (t or 0) / (tot or 1), 3) for t, tot in zip(toks, totals)]
        row = [td(s)] + metric_cells([r["kept"].get(s) for r in runs]) + metric_cells(toks) + metric_cells(share)
        if manifest:
            m = manifest["sources"].get(s, {})
            weight = None if m.get("weight") is None else round(100 * m["weight"] / wsum, 3)
            row += [td_num(weight), td_num(m.get("available_tokens")), td_num(m.get("target_tokens")),
                    td_num(m.get("epochs"))]
        rows.append(row)
    out = chart("tokens", charts) + chart("share", charts) + table(headers, rows)
    if manifest:
        out = f"<p>Blend manifest: <code>{esc(manifest['path'])}</code></p>" + out
    else:
        out += '<p class="na">No blend manifest given (--manifest): target weights not shown.</p>'
    return out


def histogram_panel(runs: Runs, charts: dict[str, Any], keys: list[tuple[str, str]]) -> str:
    """Chart(s) plus a per-source table of how many documents each histogram covers."""
    parts = []
    for key, title in keys:
        if not any(r[key] for r in runs):
            parts.append(not_available(title))
            continue
        rows = []
        for src in _sources(runs) + [TOTAL]:
            per = [((r[key] or {}).get("series", {}).get(src) or {}) for r in runs]
            rows.append([td(src)] + metric_cells([sum(p.get("kept", [])) for p in per])
                        + metric_cells([sum(p.get("removed", [])) for p in per]))
        headers = ([th("source")] + metric_headers("kept", _labels(runs)) + metric_headers("removed", _labels(runs)))
        parts.append(chart(key, charts) + f"<details><summary>{esc(title)}: documents counted</summary>"
                     + table(headers, rows) + "</details>")
    return "".join(parts)


def languages(runs: Runs, charts: dict[str, Any]) -> str:
    if not any(r["languages"] for r in runs):
        return not_available("Language distribution")
    totals = [(r["languages"] or {}).get(TOTAL, {}) for r in runs]
    langs: list[str] = []
    for t in totals:
        langs += [lang for lang in sorted(t, key=lambda x: -t[x]) if lang not in langs]
    sources = _sources(runs)
    rows = [[td(lang)] + metric_cells([t.get(lang, 0) for t in totals])
            + [td_stacked([((r["languages"] or {}).get(s) or {}).get(lang, 0) for r in runs]) for s in sources]
            for lang in langs]
    headers = [th("language")] + metric_headers("documents", _labels(runs)) + [th(s) for s in sources]
    return chart("languages", charts) + table(headers, rows)


def _doc(meta: str, text: str) -> str:
    return f'<div class="doc-meta">{meta}</div>{pre(text or "(empty text)")}'


def samples(runs: Runs) -> str:
    def body(r: dict[str, Any]) -> str:
        parts = ["<h3>Removed documents, by stage</h3>"]
        if not r["removed_samples"]:
            parts.append(not_available("Removed documents (RUN/removed)"))
        for stage, docs in r["removed_samples"].items():
            if not docs:
                continue
            inner = "".join(_doc(f"{esc(d['source'])} · {esc(d['id'])} · reason <b>{esc(d['reason'])}</b> · "
                                 f"{esc(d['detail'])}", d["text"]) for d in docs)
            parts.append(f"<details><summary>{esc(stage)} ({len(docs)} shown)</summary>{inner}</details>")
        parts.append("<h3>Kept documents, by source</h3>")
        if not r["kept_samples"]:
            parts.append(not_available("Kept documents (RUN/documents)"))
        for src, docs in r["kept_samples"].items():
            inner = "".join(_doc(f"{esc(d['id'])} · quality {esc(d['quality_score'] or '–')} · "
                                 f"tokens {esc(d['tokens'] or '–')}", d["text"]) for d in docs)
            parts.append(f"<details><summary>{esc(src)} ({len(docs)} shown)</summary>{inner}</details>")
        return "".join(parts)
    return _per_run(runs, body)
