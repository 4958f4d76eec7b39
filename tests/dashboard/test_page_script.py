"""The page's inline script, run under Node.js against a minimal DOM stand-in.

The fast companion of test_browser.py (no Chromium needed): it proves the script parses, reads the embedded JSON
exactly as the page carries it, draws an SVG for every chart (and for every choice of a
drop-down) without throwing, and puts data strings into text nodes only.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from mtnlg.dashboard import build_dashboard
from mtnlg.dashboard.assets import JS

NODE = shutil.which("node")

# Just enough DOM for assets.JS: elements with attributes, children, text and change listeners.
DOM_SHIM = r"""
const fs = require("fs");
const page = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
class El {
  constructor(tag) { this.tagName = tag; this.attrs = {}; this.children = []; this.text = "";
                     this.style = {}; this.listeners = {}; this.value = ""; }
  setAttribute(k, v) { if (typeof v !== "string") throw new Error("non-string attribute " + k); this.attrs[k] = v; }
  getAttribute(k) { return this.attrs[k]; }
  appendChild(c) { this.children.push(c); return c; }
  removeChild(c) { this.children.splice(this.children.indexOf(c), 1); return c; }
  get firstChild() { return this.children[0] || null; }
  set textContent(t) { this.children = []; this.text = t; }
  get textContent() { return this.text + this.children.map(c => c.textContent).join(""); }
  set innerHTML(v) { throw new Error("innerHTML used"); }
  addEventListener(type, fn) { this.listeners[type] = fn; }
  all(tag) { return [].concat(...this.children.map(c => (c.tagName === tag ? [c] : []).concat(c.all ? c.all(tag) : []))); }
}
const containers = page.charts.map(id => { const e = new El("div"); e.attrs["data-chart"] = id; return e; });
global.document = {
  createElement: t => new El(t),
  createElementNS: (ns, t) => { if (ns !== "http://www.w3.org/2000/svg") throw new Error(ns); return new El(t); },
  createTextNode: t => ({ textContent: String(t) }),
  getElementById: id => { if (id !== "dashboard-data") throw new Error(id); return { textContent: page.data }; },
  querySelectorAll: sel => containers,
};
global.window = {};
eval(page.script);
if (window.__dashboardReady !== true) throw new Error("ready flag not set");
const result = {};
for (const c of containers) {
  const selects = c.all("select");
  const drawn = [];
  const options = selects.length ? selects[0].children.length : 1;
  for (let i = 0; i < options; i++) {
    if (selects.length) { selects[0].value = String(i); selects[0].listeners.change(); }
    drawn.push({ svgs: c.all("svg").length, rects: c.all("rect").length + c.all("circle").length,
                 markers: c.all("line").filter(l => l.attrs.class === "marker").length,
                 titles: c.all("title").map(t => t.textContent), text: c.textContent });
  }
  result[c.attrs["data-chart"]] = drawn;
}
console.log(JSON.stringify(result));
"""


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_script_draws_every_chart(tmp_path, fake_run, fake_run_b):
    page = build_dashboard([fake_run, fake_run_b], tmp_path / "d.html").read_text(encoding="utf-8")
    data_text = re.search(r'<script type="application/json" id="dashboard-data">(.*?)</script>', page, re.S).group(1)
    script = re.findall(r"<script>(.*?)</script>", page, re.S)[-1]
    chart_ids = re.findall(r'data-chart="([^"]+)"', page)
    (tmp_path / "page.json").write_text(json.dumps({"data": data_text, "script": script, "charts": chart_ids}))
    (tmp_path / "shim.js").write_text(DOM_SHIM)
    proc = subprocess.run([NODE, str(tmp_path / "shim.js"), str(tmp_path / "page.json")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    drawn = json.loads(proc.stdout)
    assert set(drawn) == {"funnel", "reasons", "tokens", "quality", "languages", "length_chars", "length_words",
                          "dedup_clusters", "stage_seconds", "contamination"}
    for chart_id, views in drawn.items():
        for view in views:
            assert view["svgs"] == 1 and view["rects"] > 0, chart_id
    # The funnel's drop-down covers all sources plus the total, each drawn with both runs.
    assert len(drawn["funnel"]) == 4
    total_read = [t for t in drawn["funnel"][0]["titles"] if "| read:" in t]
    assert total_read == ["run-a | read: 281 documents", "run-b | read: 336 documents"]
    # Both runs have the same quality threshold: one marker line on every quality histogram.
    assert all(view["markers"] == 1 for view in drawn["quality"])
    assert all(view["markers"] == 0 for view in drawn["length_chars"])
    assert "run-a" in drawn["reasons"][0]["text"] and "heuristics/too_few_words" in drawn["reasons"][0]["text"]


def test_script_never_parses_data_as_html():
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in JS
