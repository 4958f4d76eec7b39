"""The dashboard's site-boilerplate panel reads stats/site_boilerplate.parquet (per source and host)."""
from __future__ import annotations

import json
import re

import pyarrow as pa
import pyarrow.parquet as pq

from mtnlg.dashboard import build_dashboard
from pipelines.filters.site_boilerplate import ALL_HOSTS, SCHEMA, TABLE


def _section(page: str) -> str:
    start = page.index('id="site_boilerplate"')
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page[start:start + 4000]))


def test_panel_shows_characters_removed_per_source_and_host(tmp_path, fake_run):
    run_json = fake_run / "run.json"
    meta = json.loads(run_json.read_text())
    meta["config"]["site_boilerplate"] = {"enabled": True, "host_documents": 3, "corpus_documents": 0}
    run_json.write_text(json.dumps(meta))
    rows = [("cc_2020_50", ALL_HOSTS, 40, 12, 30, 1234), ("cc_2020_50", "gazette.example", 9, 9, 27, 1100),
            ("cc_2020_50", "quiet.example", 5, 0, 0, 0), ("realnews", ALL_HOSTS, 3, 0, 0, 0)]
    pq.write_table(pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], SCHEMA),
                   fake_run / "stats" / TABLE)
    text = _section(build_dashboard([fake_run], tmp_path / "d.html").read_text(encoding="utf-8"))
    assert "more than 3 documents of one host" in text
    assert "cc_2020_50 all hosts 40 12 30 1,234" in text
    assert "cc_2020_50 gazette.example 9 9 27 1,100" in text
    assert "quiet.example" not in text  # hosts with nothing removed are not listed
    assert "realnews all hosts 3 0 0 0" in text


def test_panel_says_when_the_stage_was_off_or_the_table_is_missing(tmp_path, fake_run):
    meta = json.loads((fake_run / "run.json").read_text())
    del meta["config"]["site_boilerplate"]
    (fake_run / "run.json").write_text(json.dumps(meta))
    (fake_run / "stats" / TABLE).unlink()
    text = _section(build_dashboard([fake_run], tmp_path / "d.html").read_text(encoding="utf-8"))
    assert "Site-boilerplate counts (stats/site_boilerplate.parquet)" in text  # a run before the stage
    meta = json.loads((fake_run / "run.json").read_text())
    meta["config"]["site_boilerplate"] = {"enabled": False}
    (fake_run / "run.json").write_text(json.dumps(meta))
    text = _section(build_dashboard([fake_run], tmp_path / "e.html").read_text(encoding="utf-8"))
    assert "site-boilerplate stage was off" in text
