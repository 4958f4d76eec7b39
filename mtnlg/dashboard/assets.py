"""The page's inline stylesheet and chart script (no external libraries, nothing fetched).

The script reads the embedded JSON and draws the specs from ``charts.py`` as SVG.  It builds
every node with ``createElement``/``createElementNS`` and sets strings with ``textContent`` or
``setAttribute``: data never passes through an HTML parser, so a source or reason name holding
markup stays text.
"""

CSS = """
:root { --fg: #1a202c; --muted: #718096; --line: #e2e8f0; --bg: #f7fafc; --a: #2b6cb0; --b: #dd6b20; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
       background: var(--bg); margin: 0; }
header { background: #1a365d; color: #fff; padding: 14px 24px; }
header h1 { margin: 0 0 4px; font-size: 20px; }
header .runs span { margin-right: 18px; }
nav { position: sticky; top: 0; background: #fff; border-bottom: 1px solid var(--line);
      padding: 6px 24px; z-index: 2; }
nav a { margin-right: 14px; color: var(--a); text-decoration: none; }
main { padding: 8px 24px 40px; max-width: 1400px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px 18px;
          margin: 16px 0; }
h2 { font-size: 17px; margin: 4px 0 10px; }
h3 { font-size: 15px; margin: 14px 0 6px; }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; }
th, td { border: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #edf2f7; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.delta-pos { color: #276749; } td.delta-neg { color: #9b2c2c; }
.cmp span { display: block; } .cmp .d { color: var(--muted); font-size: 12px; }
.scroll { overflow-x: auto; }
.na { color: var(--muted); font-style: italic; padding: 6px 0; }
.notes li { color: #9b2c2c; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 14px; }
pre { white-space: pre-wrap; word-break: break-word; background: #f7fafc; border: 1px solid var(--line);
      padding: 6px 8px; margin: 4px 0 10px; font-size: 12px; max-height: 260px; overflow: auto; }
.doc-meta { font-size: 12px; color: var(--muted); }
.chart select { margin: 4px 0; }
.chart svg text { font-size: 11px; fill: var(--fg); }
.legend span { display: inline-block; margin-right: 14px; font-size: 12px; }
.heat { min-width: 48px; }
details.matrix summary { cursor: pointer; font-weight: 600; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: middle; }
"""

JS = r"""
(function () {
  "use strict";
  var SVG_NS = "http://www.w3.org/2000/svg";
  var PALETTE = ["#2b6cb0", "#dd6b20", "#38a169", "#c53030", "#805ad5", "#d69e2e", "#718096"];
  var WIDTH = 820;

  function svgEl(tag, attrs, text) {
    var node = document.createElementNS(SVG_NS, tag);
    for (var k in attrs) { node.setAttribute(k, String(attrs[k])); }
    if (text !== undefined) { node.textContent = String(text); }
    return node;
  }
  function htmlEl(tag, text) {
    var node = document.createElement(tag);
    if (text !== undefined) { node.textContent = String(text); }
    return node;
  }
  function fmt(v) {
    var a = Math.abs(v);
    if (a >= 1e12) return (v / 1e12).toFixed(1) + "T";
    if (a >= 1e9) return (v / 1e9).toFixed(1) + "B";
    if (a >= 1e6) return (v / 1e6).toFixed(1) + "M";
    if (a >= 1e4) return (v / 1e3).toFixed(1) + "k";
    return String(Math.round(v * 1000) / 1000);
  }
  function color(s, j) { return s.color || PALETTE[j % PALETTE.length]; }
  function maxOf(series) {
    var m = 0;
    series.forEach(function (s) { s.values.forEach(function (v) { if (v > m) m = v; }); });
    return m || 1;
  }
  function legend(series) {
    var div = htmlEl("div");
    div.className = "legend";
    series.forEach(function (s, j) {
      var item = htmlEl("span"), swatch = htmlEl("i");
      swatch.style.background = color(s, j);
      item.appendChild(swatch);
      item.appendChild(document.createTextNode(s.name));
      div.appendChild(item);
    });
    return div;
  }

  // Grouped horizontal bars: a row per category, a bar per series.
  function bars(spec) {
    var labelW = 230, valueW = 70, plotW = WIDTH - labelW - valueW, barH = 12;
    var groupH = spec.series.length * barH + 8, max = maxOf(spec.series);
    var svg = svgEl("svg", {width: WIDTH, height: spec.categories.length * groupH + 4, role: "img"});
    spec.categories.forEach(function (cat, i) {
      var y0 = i * groupH + 2;
      var label = svgEl("text", {x: labelW - 6, y: y0 + groupH / 2 + 3, "text-anchor": "end"},
                        cat.length > 36 ? cat.slice(0, 35) + "\u2026" : cat);
      label.appendChild(svgEl("title", {}, cat));
      svg.appendChild(label);
      spec.series.forEach(function (s, j) {
        var v = s.values[i] || 0, w = Math.max(v > 0 ? 1 : 0, plotW * v / max), y = y0 + j * barH;
        var rect = svgEl("rect", {x: labelW, y: y, width: w, height: barH - 2,
                                  fill: color(s, j)});
        rect.appendChild(svgEl("title", {}, s.name + " | " + cat + ": " + v + " " + (spec.unit || "")));
        svg.appendChild(rect);
        svg.appendChild(svgEl("text", {x: labelW + w + 4, y: y + barH - 3}, fmt(v)));
      });
    });
    return svg;
  }

  // Grouped vertical bars over histogram bins [edges[i], edges[i+1]).
  function hist(spec) {
    var left = 56, bottom = 34, height = 240, plotW = WIDTH - left - 10, plotH = height - bottom - 10;
    var nb = spec.edges.length - 1, groupW = plotW / Math.max(nb, 1), max = maxOf(spec.series);
    var barW = Math.max(1, (groupW - 2) / spec.series.length);
    var svg = svgEl("svg", {width: WIDTH, height: height, role: "img"});
    svg.appendChild(svgEl("line", {x1: left, y1: 10 + plotH, x2: left + plotW, y2: 10 + plotH, stroke: "#a0aec0"}));
    svg.appendChild(svgEl("text", {x: left - 4, y: 16, "text-anchor": "end"}, fmt(max)));
    svg.appendChild(svgEl("text", {x: left - 4, y: 10 + plotH, "text-anchor": "end"}, "0"));
    var every = Math.ceil(nb / 12);
    for (var i = 0; i < nb; i++) {
      spec.series.forEach(function (s, j) {
        var v = s.values[i] || 0, h = plotH * v / max;
        var rect = svgEl("rect", {x: left + i * groupW + 1 + j * barW, y: 10 + plotH - h, width: barW,
                                  height: h, fill: color(s, j)});
        rect.appendChild(svgEl("title", {}, s.name + " | [" + spec.edges[i] + ", " + spec.edges[i + 1] +
                                                "): " + v + " " + (spec.unit || "")));
        svg.appendChild(rect);
      });
      if (i % every === 0) {
        svg.appendChild(svgEl("text", {x: left + i * groupW, y: height - bottom + 16, "text-anchor": "middle"},
                              fmt(spec.edges[i])));
      }
    }
    svg.appendChild(svgEl("text", {x: left + plotW, y: height - bottom + 16, "text-anchor": "end"},
                          fmt(spec.edges[nb])));
    (spec.markers || []).forEach(function (m) {
      var x = left + plotW;
      for (var b = 0; b < nb; b++) {
        if (m.value >= spec.edges[b] && m.value < spec.edges[b + 1]) {
          x = left + (b + (m.value - spec.edges[b]) / (spec.edges[b + 1] - spec.edges[b])) * groupW;
          break;
        }
      }
      if (m.value < spec.edges[0]) { x = left; }
      svg.appendChild(svgEl("line", {x1: x, y1: 6, x2: x, y2: 10 + plotH, stroke: "#c53030",
                                     "stroke-width": 2, "stroke-dasharray": "5,3", "class": "marker"}));
      svg.appendChild(svgEl("text", {x: x + 4, y: 16, fill: "#c53030"}, m.label));
    });
    if (spec.log_x) {
      svg.appendChild(svgEl("text", {x: left + plotW / 2, y: height - 4, "text-anchor": "middle"},
                            "bins double in width (log scale)"));
    }
    return svg;
  }

  // Points joined by lines on log10 axes, decade ticks on both.
  function loglog(spec) {
    var left = 56, bottom = 40, height = 280, plotW = WIDTH - left - 20, plotH = height - bottom - 14;
    var xs = [], ys = [];
    spec.series.forEach(function (s) { s.points.forEach(function (p) { xs.push(p[0]); ys.push(p[1]); }); });
    var lx0 = Math.floor(Math.log10(Math.min.apply(null, xs.concat([1])))),
        lx1 = Math.max(lx0 + 1, Math.ceil(Math.log10(Math.max.apply(null, xs.concat([10]))))),
        ly0 = Math.floor(Math.log10(Math.min.apply(null, ys.concat([1])))),
        ly1 = Math.max(ly0 + 1, Math.ceil(Math.log10(Math.max.apply(null, ys.concat([10])))));
    function px(v) { return left + plotW * (Math.log10(v) - lx0) / (lx1 - lx0); }
    function py(v) { return 14 + plotH - plotH * (Math.log10(v) - ly0) / (ly1 - ly0); }
    var svg = svgEl("svg", {width: WIDTH, height: height, role: "img"});
    svg.appendChild(svgEl("line", {x1: left, y1: 14 + plotH, x2: left + plotW, y2: 14 + plotH, stroke: "#a0aec0"}));
    svg.appendChild(svgEl("line", {x1: left, y1: 14, x2: left, y2: 14 + plotH, stroke: "#a0aec0"}));
    for (var e = lx0; e <= lx1; e++) {
      svg.appendChild(svgEl("text", {x: px(Math.pow(10, e)), y: 14 + plotH + 16, "text-anchor": "middle"},
                            fmt(Math.pow(10, e))));
    }
    for (var f = ly0; f <= ly1; f++) {
      svg.appendChild(svgEl("text", {x: left - 6, y: py(Math.pow(10, f)) + 4, "text-anchor": "end"},
                            fmt(Math.pow(10, f))));
    }
    svg.appendChild(svgEl("text", {x: left + plotW / 2, y: height - 4, "text-anchor": "middle"}, spec.x_label));
    svg.appendChild(svgEl("text", {x: 4, y: 10}, spec.y_label));
    spec.series.forEach(function (s, j) {
      var d = s.points.map(function (p, i) { return (i ? "L" : "M") + px(p[0]).toFixed(1) + "," + py(p[1]).toFixed(1); });
      if (d.length > 1) {
        svg.appendChild(svgEl("path", {d: d.join(""), fill: "none", stroke: color(s, j), "stroke-width": 1.5}));
      }
      s.points.forEach(function (p) {
        var dot = svgEl("circle", {cx: px(p[0]), cy: py(p[1]), r: 3.5, fill: color(s, j)});
        dot.appendChild(svgEl("title", {}, s.name + " | size " + p[0] + ": " + p[1] + " clusters"));
        svg.appendChild(dot);
      });
    });
    return svg;
  }

  function draw(container, spec) {
    while (container.firstChild) { container.removeChild(container.firstChild); }
    if (spec.type === "choice") {
      var labels = Object.keys(spec.options), select = htmlEl("select"), inner = htmlEl("div");
      labels.forEach(function (label, i) {
        var opt = htmlEl("option", label);
        opt.value = String(i);
        select.appendChild(opt);
      });
      select.addEventListener("change", function () { draw(inner, spec.options[labels[+select.value]]); });
      container.appendChild(select);
      container.appendChild(inner);
      if (labels.length) { draw(inner, spec.options[labels[0]]); }
      return;
    }
    container.appendChild(htmlEl("h3", spec.title));
    container.appendChild(legend(spec.series));
    var render = {hist: hist, loglog: loglog, bars: bars}[spec.type];
    if (!render) { throw new Error("unknown chart type " + spec.type); }
    container.appendChild(render(spec));
  }

  var data = JSON.parse(document.getElementById("dashboard-data").textContent);
  var nodes = document.querySelectorAll("[data-chart]");
  for (var n = 0; n < nodes.length; n++) {
    var spec = data.charts[nodes[n].getAttribute("data-chart")];
    if (spec) { draw(nodes[n], spec); }
  }
  // Benchmarks and browser tests wait for this: every chart has been drawn.
  window.__dashboardReadyAt = performance.now();
  window.__dashboardReady = true;
})();
"""
