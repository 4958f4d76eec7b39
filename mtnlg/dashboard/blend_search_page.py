"""The blend search report: one self-contained HTML page in the dashboard's style.

Rendered from ``SEARCH/results.json`` (``mtnlg blend search`` writes both): the proposal against
the spec's weights per source (with each source's upper bound and what set it), predicted
against measured target on the held-out proxies (the fit's rank correlation), the verification
runs, and every proxy's mixture and measured target.  Inline SVG drawn here; no script, nothing
fetched; every string from the data goes through ``esc``.

    python -m mtnlg.dashboard.blend_search_page SEARCH/results.json --output report.html
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .assets import CSS
from .htmlkit import esc, table, td, td_num, th

SPEC, PROPOSAL, PROXY, HELD = "#2b6cb0", "#dd6b20", "#a0aec0", "#c53030"


def _num(v: Any, digits: int = 4) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def weights_chart(names: list[str], spec: list[float], prop: list[float],
                  hi: list[float]) -> str:
    """Horizontal bars per source: spec (blue) and proposal (orange); a tick at the bound."""
    row, left, width = 26, 150, 420
    top = max(max(spec), max(prop), 1e-9)
    scale = min(1.0, max(top * 1.15, 0.05))
    h = row * len(names) + 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 70}" height="{h}" '
             'role="img" aria-label="weights per source: spec and proposal">']
    for i, n in enumerate(names):
        y = 10 + i * row
        parts.append(f'<text x="{left - 6}" y="{y + 14}" text-anchor="end" font-size="11">'
                     f'{esc(n)}</text>')
        for k, (v, color) in enumerate(((spec[i], SPEC), (prop[i], PROPOSAL))):
            w = width * min(v, scale) / scale
            parts.append(f'<rect x="{left}" y="{y + k * 10}" width="{w:.1f}" height="9" '
                         f'fill="{color}"><title>{esc(n)}: {v:.4f}</title></rect>')
        parts.append(f'<text x="{left + width * min(max(spec[i], prop[i]), scale) / scale + 4:.1f}"'
                     f' y="{y + 14}" font-size="10" fill="#718096">{spec[i]:.3f} → '
                     f'{prop[i]:.3f}</text>')
        if hi[i] < scale:
            x = left + width * hi[i] / scale
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y - 2}" y2="{y + 21}" '
                         f'stroke="#1a202c" stroke-dasharray="2,2"><title>upper bound '
                         f'{hi[i]:.4f}</title></line>')
    parts.append(f'<text x="{left}" y="{h - 4}" font-size="10" fill="#718096">weight, 0 to '
                 f'{scale:.3f} (dashed: the source\'s upper bound)</text></svg>')
    return "".join(parts)


def scatter(points: list[tuple[float, float, bool, str]], label: str) -> str:
    """Predicted (x) against measured (y) target; held-out proxies in red, the others grey."""
    if not points:
        return '<p class="na">no proxies with a measured target</p>'
    size, pad = 320, 46
    xs = [p[0] for p in points] + [p[1] for p in points]
    lo, hi = min(xs), max(xs)
    span = (hi - lo) or 1.0
    lo, hi = lo - 0.05 * span, hi + 0.05 * span
    s = lambda v: pad + (v - lo) / (hi - lo) * (size - pad - 10)  # noqa: E731
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" '
             f'role="img" aria-label="predicted against measured {esc(label)}">',
             f'<rect x="{pad}" y="10" width="{size - pad - 10}" height="{size - pad - 10}" '
             'fill="none" stroke="#cbd5e0"/>',
             f'<line x1="{s(lo):.1f}" y1="{size - s(lo):.1f}" x2="{s(hi):.1f}" '
             f'y2="{size - s(hi):.1f}" stroke="#cbd5e0" stroke-dasharray="4,3"/>']
    for k in range(3):
        v = lo + (hi - lo) * (k + 0.5) / 3
        parts.append(f'<text x="{s(v):.1f}" y="{size - pad + 26}" font-size="10" '
                     f'text-anchor="middle">{v:.3f}</text><text x="{pad - 4}" '
                     f'y="{size - s(v) + 3:.1f}" font-size="10" text-anchor="end">{v:.3f}</text>')
    for pred, meas, held, name in sorted(points, key=lambda p: p[2]):
        parts.append(f'<circle cx="{s(pred):.1f}" cy="{size - s(meas):.1f}" r="{4 if held else 3}"'
                     f' fill="{HELD if held else PROXY}"><title>{esc(name)}: predicted '
                     f'{pred:.4f}, measured {meas:.4f}{" (held out)" if held else ""}</title>'
                     '</circle>')
    parts.append(f'<text x="{(size + pad) / 2:.0f}" y="{size - 4}" font-size="11" '
                 f'text-anchor="middle">predicted</text><text x="12" y="{size / 2:.0f}" '
                 f'font-size="11" transform="rotate(-90 12 {size / 2:.0f})" '
                 f'text-anchor="middle">measured</text></svg>')
    return "".join(parts)


def _summary(r: dict) -> str:
    fit, prop = r["fit"], r["proposal"]
    better = "lower" if r["minimize"] else "higher"
    items = [f"target <b>{esc(r['target'])}</b> ({better} is better), "
             f"{len(r['proxies'])} runs over {len(r['sources'])} sources",
             f"fit <b>{esc(fit['kind'])}</b> on {fit['n_fit']} proxies; held-out Spearman "
             f"<b>{esc(_num(fit['held_out_spearman'], 3))}</b> over {fit['n_held_out']} "
             f"proxies the fit did not see ({esc(fit['held_out_kind'] or '–')})"
             + (f"; 5-fold out-of-fold Spearman over all proxies (how <i>auto</i> chose the "
                f"model, so optimistic): {esc(_num(fit['cv_spearman'].get(fit['kind']), 3))}"
                if fit.get("cv_spearman") else ""),
             f"predicted: spec {esc(_num(prop['spec_predicted']))}, proposal "
             f"{esc(_num(prop['predicted']))}; the proposal's nearest proxy is at L1 distance "
             f"{esc(_num(prop['nearest_proxy_l1'], 3))}"]
    for v in r.get("verification", []):
        items.append(f"measured (seed {esc(v['seed'])}): spec <b>{esc(_num(v['spec']))}</b>, "
                     f"proposal <b>{esc(_num(v['proposal']))}</b>")
    items.append(f"proposed spec <code>{esc(prop['spec'])}</code>, manifest "
                 f"<code>{esc(prop['manifest'])}</code>")
    return "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"


def _weights_section(r: dict) -> str:
    names, prop = r["sources"], r["proposal"]["weights"]
    avail = r.get("train_tokens_available", {})
    rows = [[td(n), td_num(round(a, 5)), td_num(round(b, 5)), td_num(round(b - a, 5)),
             td_num(round(lo, 4)), td_num(round(hi, 4)), td(why), td_num(avail.get(n))]
            for n, a, b, lo, hi, why in zip(names, r["spec_weights"], prop, r["lo"], r["hi"],
                                            r["why_hi"])]
    heads = [th(h) for h in ("source", "spec", "proposal", "Δ", "min", "max", "max set by",
                             "train tokens")]
    return (weights_chart(names, r["spec_weights"], prop, r["hi"])
            + '<div class="legend"><span><i style="background:' + SPEC + '"></i>spec</span>'
            '<span><i style="background:' + PROPOSAL + '"></i>proposal</span></div>'
            + table(heads, rows))


def _verification(r: dict) -> str:
    checks = r.get("verification") or []
    if not checks:
        return '<p class="na">not run (mtnlg blend search --verify trains the proposal and the ' \
               'spec\'s weights with the proxies\' budget)</p>'
    names = r["sources"]
    heads = [th("source")] + [th(f"{k} (seed {v['seed']})") for v in checks
                              for k in ("spec", "proposal")]
    rows = [[td(r["target"])] + [td_num(round(v[k], 4)) if v[k] is not None else td("–")
                                 for v in checks for k in ("spec", "proposal")]]
    for n in names:
        rows.append([td(n)] + [td_num(None if (v[f"{k}_per_source"] or {}).get(n) is None
                                      else round(v[f"{k}_per_source"][n], 4))
                               for v in checks for k in ("spec", "proposal")])
    return table(heads, rows)


def _proxies(r: dict) -> str:
    names = r["sources"]
    heads = [th(h) for h in ("run", "role", "measured", "held out", "predicted", "seconds")] + \
        [th(n) for n in names]
    rows = []
    for p in r["proxies"]:
        rows.append([td(p["name"]), td(p["role"]), td_num(None if p["target"] is None
                                                          else round(p["target"], 4)),
                     td("yes" if p.get("held_out") else ""),
                     td_num(None if p.get("predicted") is None else round(p["predicted"], 4)),
                     td_num(round(p["seconds"], 1))]
                    + [td_num(round(w, 4)) for w in p["weights"]])
    return table(heads, rows)


def render(r: dict[str, Any]) -> str:
    pts = [(p["predicted"], p["target"], True, p["name"]) for p in r["proxies"]
           if p.get("held_out") and p.get("predicted") is not None]
    sections = [
        ("summary", "Summary", _summary(r)),
        ("weights", "Proposal against the spec's weights", _weights_section(r)),
        ("fit", "Predicted against measured (held-out proxies)",
         scatter(pts, r["target"]) + '<p class="doc-meta">Each held-out proxy: the target the '
         'fit (on the other proxies) predicts, against the one its training measured. Points '
         'along the dashed diagonal in the same order are what a trustworthy fit looks like.'
         '</p>'),
        ("verify", "Verification: trained with the proxies' budget", _verification(r)),
        ("proxies", "Proxies: mixture and measured target", _proxies(r)),
        ("settings", "Settings", f"<pre>{esc(json.dumps(r.get('settings', {}), indent=2))}</pre>"),
    ]
    nav = "".join(f'<a href="#{k}">{esc(n)}</a>' for k, n, _ in sections)
    body = "".join(f'<section id="{k}"><h2>{esc(n)}</h2>{html}</section>'
                   for k, n, html in sections)
    title = f"Blend search: {r['spec']}"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
            f"<header><h1>{esc(title)}</h1><div class=\"runs\"><span><code>"
            f"{esc(r['spec_path'])}</code></span></div></header><nav>{nav}</nav>"
            f"<main>{body}</main></body></html>\n")


def write_report(results: dict[str, Any], output: str | Path) -> Path:
    from .cli import write_atomically

    out = Path(output)
    write_atomically(out, render(results))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mtnlg.dashboard.blend_search_page",
                                description="Render a blend search's results.json as HTML.")
    p.add_argument("results", help="SEARCH/results.json from `mtnlg blend search`")
    p.add_argument("--output", "-o", default="blend-search.html")
    args = p.parse_args(argv)
    out = write_report(json.loads(Path(args.results).read_text()), args.output)
    print(f"report written to {out.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
