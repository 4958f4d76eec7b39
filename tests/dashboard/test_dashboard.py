"""The dashboard page: self-contained, escaped, faithful to the stats, and comparing two runs."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq

from curation.document import STAGES
from mtnlg.dashboard import build_dashboard, main
from mtnlg.dashboard.aggregates import TOTAL
from mtnlg.dashboard.loader import load_run

DATA_RE = re.compile(r'<script type="application/json" id="dashboard-data">(.*?)</script>', re.S)


def embedded(page: str) -> dict:
    blocks = DATA_RE.findall(page)
    assert len(blocks) == 1
    return json.loads(blocks[0])


def render(tmp_path: Path, *runs: Path, manifest: Path | None = None) -> str:
    out = build_dashboard(list(runs), tmp_path / "out" / "dashboard.html", manifest)
    return out.read_text(encoding="utf-8")


def test_page_is_self_contained(tmp_path, fake_run):
    page = render(tmp_path, fake_run)
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    assert not re.search(r"url\(\s*['\"]?(https?:)?//|@import", page, re.I)
    assert "<link" not in page.lower()
    # Exactly two script elements: the JSON data and the inline chart code, neither with src.
    assert len(re.findall(r"<script\b", page)) == 2
    assert all("src=" not in tag for tag in re.findall(r"<script\b[^>]*>", page))


def test_planted_markup_appears_only_escaped(tmp_path, fake_run, fake):
    page = render(tmp_path, fake_run)
    for raw in ("<script>window.__pwned", "<img src=x", "onerror=\"", "<marquee", "<!-- and"):
        assert raw not in page
    assert "&lt;script&gt;window.__pwned=1;alert(1)&lt;/script&gt;" in page  # samples, options, tasks
    assert "&lt;img src=x onerror=&quot;window.__pwned=2;alert(2)&quot;&gt;" in page
    assert "Expecting value &lt;marquee&gt;x&lt;/marquee&gt;" in page  # dead-letter error column
    # The data block ends at its own closing tag: nothing planted terminates it early.
    data = embedded(page)
    texts = [d["text"] for d in data["runs"][0]["removed_samples"]["heuristics"]]
    assert fake.PLANTED in texts
    assert data["runs"][0]["meta"]["pipeline_options"]["note"] == fake.PLANTED
    # Every </script> in the page closes one of the page's own two scripts.
    assert page.count("</script>") == 2


def test_embedded_json_is_the_aggregates(tmp_path, fake_run):
    page = render(tmp_path, fake_run)
    data = embedded(page)
    assert data["stages"] == list(STAGES)
    assert data["runs"][0]["funnel"] == load_run(fake_run)["funnel"]
    assert data["runs"][0]["reasons"] == load_run(fake_run)["reasons"]
    assert set(data["charts"]) >= {"funnel", "reasons", "tokens", "quality", "length_chars", "languages"}
    # Light page: aggregates only, no per-document rows.
    assert len(page) < 200_000


def test_funnel_equals_counts_and_run_json(fake_run, fake):
    run = load_run(fake_run)
    counts = pq.read_table(fake_run / "stats" / "counts.parquet").to_pylist()
    meta = json.loads((fake_run / "run.json").read_text())
    for src in fake.SOURCES:
        rows = run["funnel"][src]
        assert [r["stage"] for r in rows] == list(STAGES)
        mine = [c for c in counts if c["source"] == src]
        assert rows[0]["in"] == sum(c["documents"] for c in mine) == meta["sources"][src]["read"]
        assert rows[-1]["out"] == meta["sources"][src]["kept"]
        for r in rows:
            assert r["removed"] == sum(c["documents"] for c in mine
                                       if c["outcome"] == "removed" and c["stage"] == r["stage"])
            assert r["out"] == r["in"] - r["removed"] - r["dead_lettered"]
        assert sum(r["dead_lettered"] for r in rows) == meta["sources"][src]["dead_lettered"]
    assert run["funnel"][TOTAL][-1]["out"] == meta["totals"]["kept"]
    assert sum(x["documents"] for x in run["reasons"]) == meta["totals"]["removed"]


def test_histograms_count_every_kept_and_removed_document(fake_run):
    run = load_run(fake_run)
    docs = pq.read_table(fake_run / "stats" / "documents").to_pylist()
    for key, col in (("length_chars", "chars"), ("length_words", "words"), ("quality", "quality_score")):
        for outcome in ("kept", "removed"):
            expected = sum(1 for d in docs if d["outcome"] == outcome and d[col] is not None)
            assert sum(run[key]["series"][TOTAL][outcome]) == expected, (key, outcome)
    langs = run["languages"][TOTAL]
    assert langs["(not identified)"] == sum(1 for d in docs if d["lang"] is None)
    assert sum(langs.values()) == len(docs)


def test_two_runs_side_by_side_with_deltas(tmp_path, fake_run, fake_run_b):
    page = render(tmp_path, fake_run, fake_run_b)
    data = embedded(page)
    assert [r["label"] for r in data["runs"]] == ["run-a", "run-b"]
    assert "run-a" in page and "run-b" in page
    read_a = data["runs"][0]["funnel"][TOTAL][0]["in"]
    read_b = data["runs"][1]["funnel"][TOTAL][0]["in"]
    assert (read_a, read_b) == (300, 360)
    assert "Δ value" in page and "+60" in page  # totals.read delta in the health table
    # Every chart has one series per run (histograms: kept and removed per run).
    assert [s["name"] for s in data["charts"]["reasons"]["series"]] == ["run-a", "run-b"]
    stages = [c.split("/")[0] for c in data["charts"]["reasons"]["categories"]]
    assert stages == sorted(stages, key=STAGES.index)  # pipeline order across both runs
    quality = data["charts"]["quality"]["options"][TOTAL]["series"]
    assert [s["name"] for s in quality] == ["run-a: kept", "run-a: removed", "run-b: kept", "run-b: removed"]


def test_same_folder_names_get_distinct_labels(tmp_path, fake):
    a, b = fake.make_run(tmp_path / "x", "run"), fake.make_run(tmp_path / "y", "run", seed=3)
    data = embedded(render(tmp_path, a, b))
    assert [r["label"] for r in data["runs"]] == ["run #1", "run #2"]


def test_manifest_shows_target_weights(tmp_path, fake_run):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"format_version": 1, "sources": {
        "Books3": {"weight": 0.25, "available_tokens": 1000, "epochs": 1.5},
        "Wikipedia": {"weight": 0.75, "available_tokens": 3000, "epochs": 3.0},
        "RealNews": {"weight": 0.0, "available_tokens": 0, "epochs": 0}}}))
    data = embedded(render(tmp_path, fake_run, manifest=manifest))
    share = data["charts"]["share"]
    assert share["series"][0]["name"] == "target weight"
    weights = dict(zip(share["categories"], share["series"][0]["values"]))
    assert weights["Books3"] == 25.0 and weights["Wikipedia"] == 75.0 and weights["RealNews"] == 0.0
    realized = dict(zip(share["categories"], share["series"][1]["values"]))
    assert abs(sum(realized.values()) - 100) < 0.01


def test_missing_parts_show_notes_not_crashes(tmp_path, fake):
    run = fake.make_run(tmp_path, "bare", with_quality=False)
    for sub in ("removed", "dead_letter", "documents", "dedup"):
        for p in sorted((run / sub).rglob("*"), reverse=True):
            p.unlink() if p.is_file() else p.rmdir()
        (run / sub).rmdir()
    for name in ("histograms", "languages"):
        (run / "stats" / f"{name}.parquet").unlink()
    page = render(tmp_path, run)
    for panel in ("Quality-score histograms", "Language distribution", "Characters per document",
                  "Duplicate groups", "Removed documents", "Kept documents"):
        assert f"{panel}" in page and "not available in this run" in page
    data = embedded(page)
    assert data["runs"][0]["funnel"] is not None  # counts.parquet still drives the funnel
    assert data["charts"]["quality"] is None


def test_empty_run_directory_renders(tmp_path):
    (tmp_path / "empty").mkdir()
    data = embedded(render(tmp_path, tmp_path / "empty"))
    assert data["runs"][0]["funnel"] is None
    assert any("run.json is missing" in n for n in data["runs"][0]["notes"])


def test_damaged_files_become_notes(tmp_path, fake_run):
    (fake_run / "dead_letter" / "part-00001.jsonl.gz").write_bytes(b"not gzip")
    (fake_run / "stats" / "counts.parquet").write_bytes(b"not parquet")
    run = load_run(fake_run)
    assert run["counts_from"] == "run.json (coarse)"  # fell back, same numbers
    assert run["funnel"][TOTAL][-1]["out"] == json.loads((fake_run / "run.json").read_text())["totals"]["kept"]
    assert any("part-00001.jsonl.gz" in n for n in run["notes"])
    assert any("counts.parquet" in n for n in run["notes"])


def test_cli_writes_file_and_prints_path(tmp_path, fake_run, capsys):
    out = tmp_path / "d.html"
    assert main([str(fake_run), "--output", str(out)]) == 0
    assert str(out.resolve()) in capsys.readouterr().out
    first = out.read_bytes()
    assert main([str(fake_run), "--output", str(out)]) == 0
    assert out.read_bytes() == first  # idempotent: no timestamps in the page


def test_cli_rejects_bad_arguments(tmp_path, fake_run, capsys):
    assert main([str(tmp_path / "nope"), "--output", str(tmp_path / "d.html")]) == 2
    assert main([str(fake_run)] * 3 + ["--output", str(tmp_path / "d.html")]) == 2
    assert not (tmp_path / "d.html").exists()
