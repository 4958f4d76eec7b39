"""The evaluation report: accuracy versus training tokens, one line per task, and the table.

A self-contained HTML page (inline SVG drawn here, no script, no network) from one or more
`mtnlg eval` results files; several files (or one file with several checkpoints) become one curve
per task over consumed tokens, the view training users read (MT-NLG's paper plots accuracy over
training). Each task is plotted by its primary metric (``acc``; ``acc_norm`` for HellaSwag), with
a one-standard-error band.

    mtnlg eval --checkpoint RUN/checkpoints --output eval.json --report eval.html
    python -m mtnlg.dashboard.eval_page eval-a.json eval-b.json --output eval.html
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .htmlkit import esc, fmt

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b",
           "#e377c2", "#7f7f7f", "#bcbd22"]
CSS = ("body{font:14px system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse;"
       "margin-top:16px}td,th{border:1px solid #ccc;padding:3px 8px}td.num{text-align:right;"
       "font-variant-numeric:tabular-nums;white-space:nowrap}th{background:#f3f3f3}.note{color:#666}"
       ".charts{display:flex;flex-wrap:wrap;gap:8px}")


def evaluations(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every evaluated checkpoint of every results file, in training order (tokens, step)."""
    out = [ev for r in results for ev in r.get("checkpoints", [])]
    return sorted(out, key=lambda e: (e.get("consumed_tokens") or 0, e.get("step") or 0))


def curves(evals: list[dict[str, Any]]) -> dict[str, list[tuple[float, float, float]]]:
    """task -> [(tokens, value, stderr)] of its primary metric."""
    out: dict[str, list[tuple[float, float, float]]] = {}
    for ev in evals:
        x = ev.get("consumed_tokens")
        if x is None:
            x = ev.get("step") or 0
        for task, m in ev["tasks"].items():
            key = m.get("primary", "acc")
            if m.get(key) is not None:
                out.setdefault(task, []).append((float(x), float(m[key]),
                                                 float(m.get(key + "_stderr") or 0.0)))
    return out


def svg_chart(task: str, pts: list[tuple[float, float, float]], x_label: str, metric: str,
              color: str = PALETTE[0], width: int = 300, height: int = 210) -> str:
    """One task's curve (small multiples: one chart per task, shared 0..1 accuracy axis)."""
    left, right, top, bottom = 40, 12, 24, 40
    xs = [p[0] for p in pts] or [0.0]
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    pw, ph = width - left - right, height - top - bottom
    sx = lambda x: left + (x - x0) / (x1 - x0) * pw  # noqa: E731
    sy = lambda y: top + (1 - y) * ph  # noqa: E731
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" aria-label="{esc(task)} {esc(metric)} versus {esc(x_label)}">',
             f'<text x="{left}" y="15" font-size="13" font-weight="bold">{esc(task)}</text>'
             f'<text x="{left + pw}" y="15" font-size="11" text-anchor="end" fill="#666">'
             f'{esc(metric)}</text>']
    for k in range(6):
        y = k / 5
        parts.append(f'<line x1="{left}" x2="{left + pw}" y1="{sy(y):.1f}" y2="{sy(y):.1f}" '
                     f'stroke="#eee"/><text x="{left - 5}" y="{sy(y) + 4:.1f}" font-size="10" '
                     f'text-anchor="end">{y:.1f}</text>')
    for k in range(3):
        x = x0 + (x1 - x0) * k / 2
        parts.append(f'<text x="{sx(x):.1f}" y="{top + ph + 14}" font-size="10" '
                     f'text-anchor="middle">{esc(fmt(int(round(x))))}</text>')
    parts.append(f'<text x="{left + pw / 2:.1f}" y="{height - 6}" font-size="11" '
                 f'text-anchor="middle">{esc(x_label)}</text>'
                 f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" '
                 f'stroke="#999"/>')
    band = [(sx(x), sy(min(1.0, y + e))) for x, y, e in pts] + \
           [(sx(x), sy(max(0.0, y - e))) for x, y, e in reversed(pts)]
    parts.append(f'<polygon points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in band)}" '
                 f'fill="{color}" fill-opacity="0.15" stroke="none"/>')
    line = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y, _ in pts)
    parts.append(f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="2"/>')
    for x, y, e in pts:
        parts.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{color}">'
                     f'<title>{y:.4f} ± {e:.4f} at {esc(fmt(int(x)))}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def _cell(m: dict[str, Any], key: str) -> str:
    if m.get(key) is None:
        return '<td class="num">–</td>'
    se = m.get(key + "_stderr")
    text = f"{m[key]:.4f}" + (f" ± {se:.4f}" if se is not None else "")
    return f'<td class="num">{esc(text)}</td>'


def render(results: list[dict[str, Any]]) -> str:
    evals = evaluations(results)
    if not evals:
        raise ValueError("no evaluated checkpoints in the results")
    has_tokens = all(e.get("consumed_tokens") is not None for e in evals)
    settings = results[-1].get("settings", {})
    rows = []
    for ev in evals:
        for task, m in ev["tasks"].items():
            rows.append("<tr>" + "".join([
                f"<td>{esc(Path(ev['checkpoint']).name)}</td>",
                f'<td class="num">{esc(fmt(ev.get("consumed_tokens")))}</td>',
                f"<td>{esc(task)}</td>", f'<td class="num">{esc(fmt(m.get("shots")))}</td>',
                f'<td class="num">{esc(fmt(m.get("n")))}</td>', _cell(m, "acc"),
                _cell(m, "acc_norm"), _cell(m, "ppl")]) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("checkpoint", "tokens", "task", "shots", "n", "acc",
                                              "acc_norm", "ppl"))
    primary = {t: m.get("primary", "acc") for ev in evals for t, m in ev["tasks"].items()}
    chart = "".join(svg_chart(task, pts, "training tokens" if has_tokens else "step",
                              primary[task], PALETTE[i % len(PALETTE)])
                    for i, (task, pts) in enumerate(curves(evals).items()))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>Evaluation</title><style>{CSS}</style></head><body>"
            "<h1>Zero/few-shot evaluation</h1>"
            f"<p class=\"note\">{len(evals)} checkpoint(s); tasks {esc(', '.join(settings.get('tasks', [])))};"
            f" {esc(settings.get('shots', 0))}-shot; prompts and metrics as lm-evaluation-harness "
            "(acc; acc_norm for HellaSwag); band = one standard error.</p>"
            f"<div class=\"charts\">{chart}</div><table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            "</body></html>\n")


def write_eval_report(results: list[dict[str, Any]], output: str | Path) -> Path:
    from .cli import write_atomically

    out = Path(output)
    write_atomically(out, render(results))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mtnlg.dashboard.eval_page",
                                description="Render `mtnlg eval` results as an HTML page.")
    p.add_argument("results", nargs="+", help="results JSON files from `mtnlg eval --output`")
    p.add_argument("--output", "-o", default="eval.html")
    args = p.parse_args(argv)
    loaded = [json.loads(Path(r).read_text()) for r in args.results]
    print(f"report written to {write_eval_report(loaded, args.output).resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
