"""The dashboard in a real headless Chromium: loads offline with no console errors, draws every
panel, and never runs the markup planted in the data.  Skipped (with the reason) without Chromium.
"""
from __future__ import annotations

import json

import pytest

from mtnlg.dashboard import build_dashboard
from mtnlg.dashboard.render import PANELS

# Per panel (section id): SVGs with drawn shapes, table body rows, documents shown as text.
PANEL_CONTENT = """
(() => {
  const out = {};
  for (const s of document.querySelectorAll("main > section")) {
    const svgs = [...s.querySelectorAll("svg")].filter(g => g.querySelector("rect, circle, path"));
    out[s.id] = {svgs: svgs.length, rows: s.querySelectorAll("tbody tr").length,
                 docs: s.querySelectorAll("pre").length, na: s.querySelectorAll(".na").length};
  }
  return out;
})()
"""
# Choose every option of every drop-down; returns how many charts were redrawn.
EVERY_OPTION = """
(() => {
  let drawn = 0;
  for (const sel of document.querySelectorAll(".chart select")) {
    for (let i = 0; i < sel.options.length; i++) {
      sel.value = String(i);
      sel.dispatchEvent(new Event("change"));
      if (sel.parentNode.querySelector("svg")) drawn++;
    }
  }
  return drawn;
})()
"""


def open_dashboard(browser, tmp_path, runs, name="d.html"):
    out = build_dashboard(runs, tmp_path / name)
    page = browser.open(out.resolve().as_uri())
    page.wait_for("window.__dashboardReady === true", timeout=20)
    return page


def assert_clean(page):
    assert page.errors == []
    assert page.dialogs == []
    assert page.evaluate("typeof window.__pwned") == "undefined"


def test_every_panel_renders_without_errors(browser, tmp_path, fake_run):
    page = open_dashboard(browser, tmp_path, [fake_run])
    try:
        content = page.evaluate(PANEL_CONTENT)
        assert set(content) == {key for key, _, _ in PANELS}
        for panel, c in content.items():
            assert c["svgs"] + c["rows"] + c["docs"] > 0, (panel, c)
        # Panels whose data the fake run has draw a chart (dedup: clusters; health: stage times).
        for panel in ("health", "funnel", "reasons", "tokens", "quality", "languages", "lengths", "dedup",
                      "contamination"):
            assert content[panel]["svgs"] >= 1, panel
        assert content["lengths"]["svgs"] == 2  # characters and words
        assert content["samples"]["docs"] >= 6  # removed per stage, kept per source
        assert page.evaluate("document.querySelectorAll('#quality line.marker').length") == 1
        assert page.evaluate(EVERY_OPTION) >= 4 * 4  # funnel, quality, lengths, languages x sources+total
        assert_clean(page)
    finally:
        page.close()


def test_planted_markup_never_executes_and_shows_as_text(browser, tmp_path, fake_run, fake):
    page = open_dashboard(browser, tmp_path, [fake_run])
    try:
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        assert_clean(page)
        assert page.evaluate("document.querySelectorAll('script').length") == 2
        assert page.evaluate("document.querySelectorAll('img, iframe, object, embed').length") == 0
        assert page.evaluate("[...document.querySelectorAll('*')].filter(e => e.hasAttribute('onerror')).length") == 0
        # The document text is on the page, as text, in the removed-samples <pre>.
        texts = page.evaluate("[...document.querySelectorAll('#samples pre')].map(p => p.textContent)")
        assert fake.PLANTED in texts
        assert fake.PLANTED in page.evaluate("document.getElementById('contamination').textContent")
    finally:
        page.close()


def test_two_runs_every_panel_shows_both(browser, tmp_path, fake_run, fake_run_b):
    page = open_dashboard(browser, tmp_path, [fake_run, fake_run_b])
    try:
        assert_clean(page)
        content = page.evaluate(PANEL_CONTENT)
        for panel, c in content.items():
            assert c["svgs"] + c["rows"] + c["docs"] > 0, (panel, c)
        legends = page.evaluate("""(() => { const o = {};
            for (const s of document.querySelectorAll('main > section'))
              o[s.id] = [...s.querySelectorAll('.legend span')].map(x => x.textContent); return o; })()""")
        for panel in ("funnel", "reasons", "tokens", "languages", "dedup", "contamination"):
            assert any("run-a" in t for t in legends[panel]) and any("run-b" in t for t in legends[panel]), panel
        assert "run-a: kept" in legends["quality"] and "run-b: removed" in legends["quality"]
        # Tables carry the differences: a delta column or stacked delta cells in every table panel.
        deltas = page.evaluate("""(() => { const o = {};
            for (const s of document.querySelectorAll('main > section'))
              o[s.id] = s.querySelectorAll('th, .cmp .d').length && [...s.querySelectorAll('th, .cmp .d')]
                        .filter(x => x.textContent.startsWith('Δ')).length; return o; })()""")
        for panel in ("health", "funnel", "reasons", "tokens", "languages", "dedup", "contamination"):
            assert deltas[panel] > 0, panel
        heads = page.evaluate("[...document.querySelectorAll('#contamination thead th')].map(x => x.textContent)")
        assert len(heads) == len(set(heads)) and {"Books3", "CC-2020-50"} <= set(heads)
    finally:
        page.close()


def test_run_without_optional_stats_says_so(browser, tmp_path, fake):
    run = fake.make_run(tmp_path, "bare", with_quality=False, with_extras=False)
    for p in sorted((run / "dedup").rglob("*"), reverse=True):
        p.unlink()
    (run / "dedup").rmdir()
    page = open_dashboard(browser, tmp_path, [run])
    try:
        assert_clean(page)
        notes = page.evaluate("[...document.querySelectorAll('.na')].map(x => x.textContent)")
        joined = json.dumps(notes)
        for what in ("Quality-score histograms", "Cluster sizes", "Cross-source duplicate matrix",
                     "Contamination per task", "Time per stage"):
            assert f"{what}" in joined and "not available in this run" in joined, what
    finally:
        page.close()


@pytest.mark.parametrize("kind", ["stats tables", "dedup rows"])
def test_dedup_matrix_from_either_input(browser, tmp_path, fake, kind):
    import pyarrow as pa
    import pyarrow.parquet as pq

    run = fake.make_run(tmp_path, "m")
    if kind == "stats tables":
        pq.write_table(pa.table({"kind": ["fuzzy", "exact"], "kept_source": ["Books3", "Wikipedia"],
                                 "removed_source": ["CC-2020-50", "Books3"], "documents": [7, 3]}),
                       run / "stats" / "dedup_matrix.parquet")
        pq.write_table(pa.table({"kind": ["fuzzy", "fuzzy"], "size": [2, 1000], "clusters": [50, 1]}),
                       run / "stats" / "dedup_clusters.parquet")
    page = open_dashboard(browser, tmp_path, [run])
    try:
        assert_clean(page)
        cells = page.evaluate("document.querySelectorAll('#dedup details.matrix td.heat').length")
        assert cells > 0
        points = page.evaluate("document.querySelectorAll('#dedup svg circle').length")
        assert points == (2 if kind == "stats tables" else 4)
    finally:
        page.close()
