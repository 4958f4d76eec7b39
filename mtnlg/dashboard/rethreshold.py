"""The re-threshold panel: move a filter threshold in the page and see at once what each source
would keep, from the run's filter-score grid (``stats/filter_grid.parquet``, written by curate;
``curation.threshold_grid`` documents it and is the tested reference of the arithmetic).

The page never sees a per-document row: it embeds the grid's cells (documents, tokens and
characters per source, fate and score cell) and the spec, and its script walks the rules over
the cells exactly as ``curation.threshold_grid.evaluate`` does.  The decision is exported as a
``language:`` / ``heuristics:`` / ``quality:`` YAML fragment for ``mtnlg curate --config``.
Also here: the personal-data panel (``stats/pii.parquet``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .htmlkit import esc, not_available, table, td, td_num, th

GRID_FILE = "filter_grid.parquet"
PII_FILE = "pii.parquet"


def load_grid(run_dir: Path, notes: list[str]) -> dict[str, Any] | None:
    """``{"spec", "sources", "cells": [[source index, fate, [coordinates], documents, tokens,
    chars], ...]}`` or None (with a note when the table is damaged)."""
    from pipelines.plumbing.stats import read_grid

    path = run_dir / "stats" / GRID_FILE
    if not path.exists():
        return None
    try:
        spec, rows = read_grid(pq.read_table(path))
    except (OSError, ValueError, KeyError, pa.ArrowException) as err:
        notes.append(f"could not read stats/{GRID_FILE}: {type(err).__name__}: {err}")
        return None
    if spec is None:
        notes.append(f"stats/{GRID_FILE} has no grid spec in its metadata; ignored")
        return None
    from curation.threshold_grid import parse_cell

    sources = sorted({r["source"] for r in rows})
    index = {s: i for i, s in enumerate(sources)}
    cells = [[index[r["source"]], r["fate"], parse_cell(r["cell"]), r["documents"], r["tokens"], r["chars"]]
             for r in rows]
    return {"spec": spec.to_json(), "sources": sources, "cells": cells}


def load_pii(run: dict[str, Any], run_dir: Path, notes: list[str]) -> dict[str, Any] | None:
    """``{"enabled", "rows": [{source, outcome, kind, documents, matches}]}``; None when the run
    predates the stage (no table and no ``pii`` config)."""
    enabled = bool(((run.get("config") or {}).get("pii") or {}).get("enabled"))
    path = run_dir / "stats" / PII_FILE
    if not path.exists():
        return {"enabled": enabled, "rows": []} if "pii" in (run.get("config") or {}) else None
    try:
        rows = pq.read_table(path).to_pylist()
    except (OSError, ValueError, pa.ArrowException) as err:
        notes.append(f"could not read stats/{PII_FILE}: {type(err).__name__}: {err}")
        return None
    return {"enabled": enabled, "rows": rows}


def panel(runs: list[dict[str, Any]]) -> str:
    """A container per run with a grid; the script builds the controls and tables."""
    parts = []
    for i, r in enumerate(runs):
        head = f"<h3>{esc(r['label'])}</h3>" if len(runs) > 1 else ""
        if not r.get("grid"):
            parts.append(head + not_available("Filter-score grid (stats/filter_grid.parquet)"))
            continue
        parts.append(
            f'{head}<div class="rethreshold" data-run="{i}">'
            "<noscript>The re-threshold controls need JavaScript.</noscript></div>")
    intro = ("<p>Move a threshold: the table shows at once how many documents and tokens each source "
             "would keep and which rule would be the first to remove the others. Counts are exact for "
             "the thresholds offered (every run threshold is one of them), computed from the run's "
             "aggregated score grid; documents a later stage removed (dedup, decontamination, too few "
             "tokens) stay removed, documents an earlier filter removed have no later score "
             "(<i>unscored</i>), and tokens of documents the run did not keep are estimated from their "
             "characters (<i>est.</i>).</p>")
    return intro + "".join(parts)


def pii_panel(runs: list[dict[str, Any]]) -> str:
    """Personal data found and replaced, per source and kind (one table per run)."""
    out = []
    for r in runs:
        head = f"<h3>{esc(r['label'])}</h3>" if len(runs) > 1 else ""
        info = r.get("pii")
        if info is None:
            out.append(head + not_available("Personal-data counts (stats/pii.parquet)"))
            continue
        if not info["enabled"]:
            out.append(head + '<p class="na">The personal-data stage was off in this run (pii.enabled).</p>')
            continue
        kinds = ("email", "ip_address", "phone_number")
        per: dict[str, dict[str, list[int]]] = {}
        for row in info["rows"]:
            cell = per.setdefault(row["source"], {k: [0, 0, 0] for k in kinds}).get(row["kind"])
            if cell is not None:
                cell[0] += row["documents"]
                cell[1] += row["matches"]
                cell[2] += row["matches"] if row["outcome"] == "kept" else 0
        headers = [th("source")] + [th(f"{k}: documents / replaced (in kept)") for k in kinds]
        rows = [[td(src)] + [td(f"{per[src][k][0]:,} / {per[src][k][1]:,} ({per[src][k][2]:,})") for k in kinds]
                for src in sorted(per)]
        total = [sum(per[s][k][1] for s in per) for k in kinds]
        rows.append([td("TOTAL replaced")] + [td_num(n) for n in total])
        out.append(head + ('<p>No personal data found.</p>' if not per else table(headers, rows)))
    return "".join(out)


JS = r"""
(function () {
  "use strict";
  var SVG_NS = "http://www.w3.org/2000/svg";
  var data = JSON.parse(document.getElementById("dashboard-data").textContent);
  function el(tag, text, cls) {
    var n = document.createElement(tag);
    if (text !== undefined && text !== null) { n.textContent = String(text); }
    if (cls) { n.className = cls; }
    return n;
  }
  function svg(tag, attrs) {
    var n = document.createElementNS(SVG_NS, tag);
    for (var k in attrs) { n.setAttribute(k, String(attrs[k])); }
    return n;
  }
  function num(v) { return Math.round(v).toLocaleString("en-US"); }
  // b(v) = #edges < v + #edges <= v; a threshold is edge j of its dimension.
  function edgeIndex(edges, t) {
    for (var j = 0; j < edges.length; j++) { if (edges[j] === t) return j; }
    throw new Error("threshold " + t + " is not a grid candidate");
  }
  function threshold(rule, s) {
    var q = s["quality.threshold"];
    if (rule.control === "quality.as_run") return q === "as_run" ? 0 : null;
    if (rule.control === null) return rule.fixed;
    var v = s[rule.control];
    return v === "as_run" || v === undefined ? null : v;
  }
  function fails(spec, rule, b, t) {
    if (rule.bound === "zero") return b === 0;
    if (rule.bound === "flag") return b >= 2;
    var j = edgeIndex(spec.dims[rule.dim], t);
    return rule.bound === "min" ? b <= 2 * j : b >= 2 * j + 2;
  }
  function firstFailure(spec, dimIndex, source, cell, s) {
    for (var i = 0; i < spec.rules.length; i++) {
      var rule = spec.rules[i], t = threshold(rule, s);
      if (t === null) continue;
      var b = cell[dimIndex[rule.dim]];
      if (b === null) {
        var skipped = rule.stage === "quality" ? (spec.quality_sources || []).indexOf(source) < 0
                                               : (spec.skip[rule.stage] || []).indexOf(source) >= 0;
        if (skipped) continue;
        return "unscored";
      }
      if (fails(spec, rule, b, t)) return rule.stage + "/" + rule.reason;
    }
    return null;
  }
  // The same per-source figures as curation.threshold_grid.evaluate.
  function evaluate(grid, s) {
    var spec = grid.spec, dimIndex = {}, names = Object.keys(spec.dims), out = {}, num_ = {}, den = {};
    names.forEach(function (d, i) { dimIndex[d] = i; });
    var totalNum = 0, totalDen = 0;
    grid.cells.forEach(function (c) {
      if (c[1] !== "kept") return;
      var src = grid.sources[c[0]];
      num_[src] = (num_[src] || 0) + c[4]; den[src] = (den[src] || 0) + c[5];
      totalNum += c[4]; totalDen += c[5];
    });
    grid.cells.forEach(function (c) {
      var src = grid.sources[c[0]];
      var o = out[src] || (out[src] = {documents: 0, tokens: 0, pass_filters: 0, removed: {}, unscored: 0,
                                       removed_later: 0, tokens_estimated: 0});
      var why = firstFailure(spec, dimIndex, src, c[2], s), n = c[3];
      if (why === "unscored") { o.unscored += n; }
      else if (why !== null) { o.removed[why] = (o.removed[why] || 0) + n; }
      else {
        o.pass_filters += n;
        if (c[1] === "later") { o.removed_later += n; }
        else if (c[1] === "kept") { o.documents += n; o.tokens += c[4]; }
        else {
          var rate = den[src] ? num_[src] / den[src] : totalNum / Math.max(1, totalDen);
          var est = Math.round(c[5] * rate);
          o.documents += n; o.tokens += est; o.tokens_estimated += est;
        }
      }
    });
    return out;
  }
  function currentSettings(spec) {
    var s = {};
    spec.controls.forEach(function (c) { s[c.id] = c.current; });
    s["quality.threshold"] = "as_run";
    return s;
  }
  function yamlNumber(v) { return (Number.isInteger(v) && Math.abs(v) >= 1) ? String(v) : String(Number(v).toFixed(4).replace(/0+$/, "").replace(/\.$/, ".0")); }
  function fragment(spec, s) {
    var lines = ["language:", "  min_score: " + yamlNumber(s["language.min_score"]), "heuristics:"], nested = {};
    spec.controls.forEach(function (c) {
      if (c.section !== "heuristics") return;
      var v = s[c.id];
      if (c.setting === "drop_lorem_ipsum") { lines.push("  drop_lorem_ipsum: " + (v !== null)); return; }
      if (c.n !== null) {
        if (!nested[c.setting]) { nested[c.setting] = []; lines.push("  " + c.setting + ": @" + c.setting); }
        if (v !== null) nested[c.setting].push("    " + c.n + ": " + yamlNumber(v));
        return;
      }
      lines.push("  " + c.setting + ": " + (v === null ? "null" : yamlNumber(v)));
    });
    var out = [];
    lines.forEach(function (l) {
      var m = l.match(/^  (\w+): @(\w+)$/);
      if (!m) { out.push(l); return; }
      out.push("  " + m[1] + ":" + (nested[m[2]].length ? "" : " {}"));
      nested[m[2]].forEach(function (x) { out.push(x); });
    });
    if (spec.quality_sources !== null && s["quality.threshold"] !== "as_run") {
      out.push("quality:", "  rule: threshold", "  threshold: " + yamlNumber(s["quality.threshold"]));
    }
    return out.join("\n") + "\n";
  }
  // Histogram of one control's dimension for a source: bars between the candidate edges.
  function histogram(grid, control, rule, sourceIdx) {
    var spec = grid.spec, names = Object.keys(spec.dims), d = names.indexOf(control.dim);
    var edges = spec.dims[control.dim], nb = edges.length + 1, counts = [];
    for (var i = 0; i < nb; i++) counts.push(0);
    var up = rule && rule.bound === "min";  // min rules: bars [e(k-1), e(k)); max: (e(k-1), e(k)]
    grid.cells.forEach(function (c) {
      if (sourceIdx >= 0 && c[0] !== sourceIdx) return;
      var b = c[2][d];
      if (b === null) return;
      counts[up ? Math.ceil(b / 2) : Math.floor(b / 2)] += c[3];
    });
    return {edges: edges, counts: counts, up: up};
  }
  function drawHistogram(box, h, current, chosen, bound) {
    while (box.firstChild) box.removeChild(box.firstChild);
    var W = 300, H = 90, n = h.counts.length, bw = W / n, max = Math.max.apply(null, h.counts.concat([1]));
    var g = svg("svg", {width: W, height: H + 14, role: "img"});
    function failsBar(k, t) {
      if (t === null || t === undefined || t === "as_run") return false;
      var j = h.edges.indexOf(t);
      if (bound === "flag") return k >= 1;
      return bound === "min" ? k <= j : k > j;
    }
    for (var k = 0; k < n; k++) {
      var v = h.counts[k], hh = H * v / max;
      var r = svg("rect", {x: k * bw + 0.5, y: H - hh, width: Math.max(1, bw - 1), height: hh,
                           fill: failsBar(k, chosen) ? "#dd6b20" : "#2b6cb0"});
      var lo = k === 0 ? "-inf" : h.edges[k - 1], hi = k === n - 1 ? "+inf" : h.edges[k];
      var t = document.createElementNS(SVG_NS, "title");
      t.textContent = (h.up ? "[" : "(") + lo + ", " + hi + (h.up ? ")" : "]") + ": " + v + " documents";
      r.appendChild(t);
      g.appendChild(r);
    }
    function mark(value, color, cls) {
      if (value === null || value === undefined || value === "as_run") return;
      var j = h.edges.indexOf(value);
      var x = (j + (h.up ? 0 : 1)) * bw;
      g.appendChild(svg("line", {x1: x, y1: 0, x2: x, y2: H, stroke: color, "stroke-width": 2,
                                 "stroke-dasharray": cls === "run" ? "4,3" : "", "class": "marker " + cls}));
    }
    mark(current, "#c53030", "run");
    mark(chosen, "#1a202c", "chosen");
    g.appendChild(svg("text", {x: 0, y: H + 12}));
    g.lastChild.textContent = String(h.edges[0]);
    g.appendChild(svg("text", {x: W, y: H + 12, "text-anchor": "end"}));
    g.lastChild.textContent = String(h.edges[h.edges.length - 1]);
    box.appendChild(g);
  }

  function build(container, grid, label) {
    // dims arrive as [name, edges] pairs (the cells' coordinate order)
    if (Array.isArray(grid.spec.dims)) {
      var dims = {};
      grid.spec.dims.forEach(function (d) { dims[d[0]] = d[1]; });
      grid.spec.dims = dims;
    }
    var spec = grid.spec, settings = currentSettings(spec), base = evaluate(grid, settings);
    var sourceSel = el("select"), allOpt = el("option", "all sources");
    allOpt.value = "-1"; sourceSel.appendChild(allOpt);
    grid.sources.forEach(function (s, i) { var o = el("option", s); o.value = String(i); sourceSel.appendChild(o); });
    var summary = el("div", null, "rt-summary"), yaml = el("pre", null, "rt-yaml"), reset = el("button", "Reset to the run's thresholds");
    var controlsBox = el("div", null, "rt-controls");
    var ruleOf = {};
    spec.rules.forEach(function (r) { if (r.control && !ruleOf[r.control]) ruleOf[r.control] = r; });
    var cards = [];
    spec.controls.forEach(function (c) {
      var card = el("div", null, "rt-card"), head = el("div", null, "rt-head");
      var rule = ruleOf[c.id], optional = c.section !== "language";
      var check = el("input"); check.type = "checkbox";
      var range = el("input"); range.type = "range"; range.min = "0"; range.max = String(c.values.length - 1); range.step = "1";
      range.setAttribute("data-control", c.id); check.setAttribute("data-control-on", c.id);
      var value = el("span", null, "rt-value"), box = el("div", null, "rt-hist");
      var title = el("b", c.id);
      var bound = rule ? rule.bound : "min";
      title.title = (bound === "min" ? "removes documents scoring below" : bound === "max" ? "removes documents scoring above" : "removes documents scoring above 0") +
        "; run: " + (c.section === "quality" && spec.quality_rule !== "threshold" ? spec.quality_rule + " rule" : c.current);
      head.appendChild(title);
      if (optional) {
        var lab = el("label"); lab.appendChild(check);
        lab.appendChild(document.createTextNode(c.section === "quality" ? " threshold rule" : " on"));
        head.appendChild(lab);
      }
      head.appendChild(value);
      card.appendChild(head); card.appendChild(range); card.appendChild(box);
      controlsBox.appendChild(card);
      function sync() {
        var v = settings[c.id];
        var on = c.section === "quality" ? v !== "as_run" : v !== null;
        check.checked = on; range.disabled = optional && !on;
        var shown = on ? v : (c.section === "quality" ? "as run (" + spec.quality_rule + ")" : "off");
        var idx = on ? c.values.indexOf(v) : Math.max(0, c.values.indexOf(c.current));
        range.value = String(idx < 0 ? 0 : idx);
        value.textContent = " " + shown + (c.section === "quality" ? "" : (c.current === null ? " (run: off)" : " (run: " + c.current + ")"));
        drawHistogram(box, histogram(grid, c, rule, +sourceSel.value), c.section === "quality" ? null : c.current,
                      on ? v : null, bound);
      }
      range.addEventListener("input", function () { settings[c.id] = c.values[+range.value]; update(); });
      check.addEventListener("change", function () {
        var off = c.section === "quality" ? "as_run" : null;
        settings[c.id] = check.checked ? c.values[+range.value] : off;
        update();
      });
      cards.push(sync);
    });
    function update() {
      cards.forEach(function (f) { f(); });
      var res = evaluate(grid, settings);
      while (summary.firstChild) summary.removeChild(summary.firstChild);
      var t = el("table"), hr = el("tr");
      ["source", "kept documents (run)", "kept documents (new)", "Δ", "kept tokens (new)", "unscored",
       "removed later", "first rule removing documents (new)"].forEach(function (h) { hr.appendChild(el("th", h)); });
      var thead = el("thead"); thead.appendChild(hr); t.appendChild(thead);
      var tb = el("tbody"), tot = [0, 0, 0, 0, 0];
      grid.sources.forEach(function (src) {
        var o = res[src], b0 = base[src], tr = el("tr");
        tr.setAttribute("data-source", src);
        var reasons = Object.keys(o.removed).sort(function (a, b) { return o.removed[b] - o.removed[a]; });
        var cells = [src, num(b0.documents), num(o.documents), (o.documents - b0.documents >= 0 ? "+" : "") + num(o.documents - b0.documents),
                     num(o.tokens) + (o.tokens_estimated ? " (" + num(o.tokens_estimated) + " est.)" : ""),
                     num(o.unscored), num(o.removed_later),
                     reasons.slice(0, 3).map(function (r) { return r + " " + num(o.removed[r]); }).join(", ") || "-"];
        cells.forEach(function (v, k) { var c = el("td", v); if (k > 0 && k < 7) c.className = "num"; tr.appendChild(c); });
        tb.appendChild(tr);
        tot[0] += b0.documents; tot[1] += o.documents; tot[2] += o.tokens; tot[3] += o.unscored; tot[4] += o.removed_later;
      });
      var trT = el("tr"); trT.setAttribute("data-source", "TOTAL");
      ["TOTAL", num(tot[0]), num(tot[1]), (tot[1] - tot[0] >= 0 ? "+" : "") + num(tot[1] - tot[0]), num(tot[2]), num(tot[3]), num(tot[4]), ""]
        .forEach(function (v, k) { var c = el("td", v); if (k > 0 && k < 7) c.className = "num"; trT.appendChild(c); });
      tb.appendChild(trT);
      t.appendChild(tb);
      summary.appendChild(t);
      yaml.textContent = fragment(spec, settings);
    }
    reset.addEventListener("click", function () { settings = currentSettings(spec); update(); });
    sourceSel.addEventListener("change", update);
    var bar = el("div", null, "rt-bar");
    bar.appendChild(document.createTextNode("Histograms of: ")); bar.appendChild(sourceSel); bar.appendChild(reset);
    container.appendChild(summary);
    container.appendChild(el("h3", "Config fragment for mtnlg curate (language / heuristics / quality sections)"));
    container.appendChild(yaml);
    container.appendChild(bar);
    container.appendChild(controlsBox);
    update();
    return {evaluate: function (s) { return evaluate(grid, s); }, settings: function () { return settings; },
            current: function () { return currentSettings(spec); }, fragment: function (s) { return fragment(spec, s || settings); }};
  }
  var api = [];
  var boxes = document.querySelectorAll(".rethreshold");
  for (var i = 0; i < boxes.length; i++) {
    var k = +boxes[i].getAttribute("data-run"), run = data.runs[k];
    if (run && run.grid) api[k] = build(boxes[i], run.grid, run.label);
  }
  window.__rethreshold = api;
})();
"""

CSS = """
.rt-controls { display: grid; grid-template-columns: repeat(auto-fill, minmax(320px, 1fr)); gap: 10px; }
.rt-card { border: 1px solid var(--line); border-radius: 4px; padding: 6px 8px; }
.rt-card input[type=range] { width: 300px; }
.rt-head { font-size: 12px; } .rt-head label { margin-left: 8px; } .rt-value { color: var(--muted); }
.rt-bar { margin: 8px 0; } .rt-bar button { margin-left: 12px; }
.rt-summary td.num { text-align: right; }
"""
