"""The re-threshold panel in a real Chromium: moving a control changes the figures at once, the
page's arithmetic equals curation.threshold_grid.evaluate on the same cells, and the exported
fragment is a config `mtnlg curate` accepts."""
from __future__ import annotations

import json
import random

import pyarrow.parquet as pq
import yaml

from curation.threshold_grid import current_settings, evaluate
from pipelines.plumbing.stats import read_grid
from test_browser import assert_clean, open_dashboard

ROW = """(src => [...document.querySelector('#rethreshold tr[data-source="' + src + '"]').children]
                 .map(td => td.textContent))"""


def test_moving_a_control_changes_the_figures(browser, tmp_path, fake_run):
    spec, _ = read_grid(pq.read_table(fake_run / "stats" / "filter_grid.parquet"))
    page = open_dashboard(browser, tmp_path, [fake_run])
    try:
        assert_clean(page)
        assert page.evaluate("document.querySelectorAll('#rethreshold input[type=range]').length") == len(spec.controls)
        assert page.evaluate("document.querySelectorAll('#rethreshold .rt-hist svg rect').length") > 0
        before = page.evaluate(f"{ROW}('TOTAL')")
        assert before[1] == before[2] and before[3] == "+0"  # the run's own thresholds: nothing moves
        yaml_before = page.evaluate("document.querySelector('#rethreshold pre.rt-yaml').textContent")
        # Raise min_words to its largest candidate, as a user dragging the slider would.
        page.evaluate("""(() => { const r = document.querySelector('#rethreshold input[data-control="heuristics.min_words"]');
                         r.value = r.max; r.dispatchEvent(new Event('input')); })()""")
        after = page.evaluate(f"{ROW}('TOTAL')")
        assert int(after[2].replace(",", "")) < int(before[2].replace(",", "")), (before, after)
        assert after[3].startswith("-")
        per_source = page.evaluate(f"{ROW}('Books3')")
        assert "heuristics/too_few_words" in per_source[7]
        fragment = page.evaluate("document.querySelector('#rethreshold pre.rt-yaml').textContent")
        assert fragment != yaml_before and yaml.safe_load(fragment)["heuristics"]["min_words"] == 300
        # Loosening the quality threshold to 0 keeps more than the run did.
        page.evaluate("""(() => { const c = document.querySelector('#rethreshold input[data-control-on="quality.threshold"]');
                         c.checked = true; c.dispatchEvent(new Event('change'));
                         const r = document.querySelector('#rethreshold input[data-control="quality.threshold"]');
                         r.value = '0'; r.dispatchEvent(new Event('input'));
                         const m = document.querySelector('#rethreshold input[data-control="heuristics.min_words"]');
                         m.value = String([...JSON.parse(document.getElementById('dashboard-data').textContent)
                           .runs[0].grid.spec.controls].find(c => c.id === 'heuristics.min_words').values.indexOf(50));
                         m.dispatchEvent(new Event('input')); })()""")
        looser = page.evaluate(f"{ROW}('TOTAL')")
        assert int(looser[2].replace(",", "")) >= int(before[2].replace(",", ""))
        assert "quality:" in page.evaluate("document.querySelector('#rethreshold pre.rt-yaml').textContent")
        assert_clean(page)
    finally:
        page.close()


def test_page_counts_equal_the_python_reference(browser, tmp_path, fake_run):
    spec, rows = read_grid(pq.read_table(fake_run / "stats" / "filter_grid.parquet"))
    page = open_dashboard(browser, tmp_path, [fake_run])
    try:
        rng = random.Random(3)
        for _ in range(12):
            settings = current_settings(spec)
            for c in rng.sample(spec.controls, 4):
                settings[c.id] = rng.choice(list(c.values) + ([None] if c.section == "heuristics" else []))
            if rng.random() < 0.5:
                settings["quality.threshold"] = rng.choice(spec.controls[-1].values)
            page_result = page.evaluate(f"window.__rethreshold[0].evaluate({json.dumps(settings)})")
            assert page_result == evaluate(spec, rows, settings), settings
            fragment = yaml.safe_load(page.evaluate(f"window.__rethreshold[0].fragment({json.dumps(settings)})"))
            from curation.threshold_grid import config_fragment
            assert fragment == yaml.safe_load(config_fragment(spec, settings))
    finally:
        page.close()
