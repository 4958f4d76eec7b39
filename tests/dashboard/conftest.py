"""A fake RUN directory laid out per docs/run-layout.md, small enough to build in milliseconds."""
from __future__ import annotations

import functools
import gzip
import json
import random
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

# Markup planted in document text, reasons, options and task names. If any of it ever ran in the
# browser, the sentinel global would be set and a dialog would open (tests/dashboard/test_browser.py).
PLANTED = ("<script>window.__pwned=1;alert(1)</script> and <img src=x onerror=\"window.__pwned=2;alert(2)\"> "
           "then </script><!-- and a comment opener")
SOURCES = ("Books3", "CC-2020-50", "Wikipedia")
# (stage, reason) picked for removed documents; dead letters are outcome dead_letter at read.
REMOVALS = (("language", "not_english"), ("heuristics", "too_few_words"), ("quality", "low_quality"),
            ("exact_dedup", "duplicate"), ("fuzzy_dedup", "near_duplicate"),
            ("decontamination", "eval_overlap"))


def _write_jsonl_gz(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec) + "\n")


_SCORE_NAMES = None


@functools.lru_cache(maxsize=None)
def _scores(stream: str, words: int) -> dict:
    """Heuristic scores of a generated text with ``words`` words (some documents repetitive),
    drawn from the random stream ``stream``. Cached: most dashboard tests build the same runs
    (a run's 300 texts took ~0.3 s to generate and score)."""
    global _SCORE_NAMES
    from curation.heuristics import SCORE_COLUMNS, score_document

    _SCORE_NAMES = SCORE_COLUMNS
    rng = random.Random(stream)
    vocab = ["the", "river", "of", "valley", "and", "town", "with", "market", "stone", "bridge", "old",
             "people", "trade", "built", "new", "ideas", "to", "that", "have", "be"]
    n = min(words, 400)
    if rng.random() < 0.2:
        line = " ".join(rng.choice(vocab) for _ in range(8))
        text = "\n".join([line] * max(1, n // 8))
    else:
        text = " ".join(rng.choice(vocab) for _ in range(n))
    return score_document(text)


def make_run(root: Path, name: str = "run", seed: int = 0, n_per_source: int = 100,
             with_quality: bool = True, with_extras: bool = True) -> Path:
    """Write run.json, stats/ (documents/ and the aggregates), removed/, dead_letter/, documents/
    and dedup/.

    ``with_extras`` adds the optional stats of docs/stats-schema.md: stats/contamination.parquet
    and run.json ``stage_seconds`` (dedup statistics are computed from dedup/).
    """
    rng = random.Random(seed)
    run = root / name
    rows, removed, dead = [], [], []
    for src in SOURCES:
        for i in range(n_per_source):
            doc_id = f"{src}/part-0.jsonl/{i}"
            words = rng.randint(1, 3000)
            row = {"id": doc_id, "source": src, "outcome": "kept", "stage": "tokenize", "reason": None,
                   "chars": words * 6, "words": words, "lang": rng.choice(["en", "en", "en", "de", "fr"]),
                   "lang_score": 0.9, "quality_score": rng.random() if with_quality else None,
                   "tokens": words + 1}
            # Heuristic scores of a text of that many words, most of it prose, some of it repeated.
            row.update(_scores(f"{seed}/{doc_id}", words))  # own stream: rng unchanged
            roll = rng.random()
            if roll < 0.05:
                row.update(outcome="dead_letter", stage="read", reason="unparseable", chars=0, words=0,
                           lang=None, lang_score=None, quality_score=None, tokens=None,
                           **dict.fromkeys(_SCORE_NAMES))
                dead.append({"source": src, "location": f"raw/{src}.jsonl:{i}",
                             "error": "JSONDecodeError: Expecting value <marquee>x</marquee>", "raw": "{oops " + PLANTED})
            elif roll < 0.45:
                stage, reason = REMOVALS[rng.randrange(len(REMOVALS))]
                row.update(outcome="removed", stage=stage, reason=reason, tokens=None)
                if stage == "language":
                    row.update(quality_score=None, **dict.fromkeys(_SCORE_NAMES))
                if stage == "heuristics":
                    row.update(quality_score=None)
                removed.append({"id": doc_id, "source": src, "stage": stage, "reason": reason,
                                "detail": {"score": 0.1}, "text": f"removed text {i}"})
            rows.append(row)
    # The planted document: markup in the text, a reason and a source field.
    removed.insert(0, {"id": "Books3/evil/0", "source": "Books3", "stage": "heuristics",
                       "reason": "too_few_words", "detail": {"note": PLANTED}, "text": PLANTED})

    # As the pipeline writes them: per-document rows sharded under stats/documents/, and the
    # aggregates (counted by the pipeline's own functions) that the dashboard reads.
    from curation.stats import aggregate_rows

    schema = pa.schema([("id", pa.string()), ("source", pa.string()), ("outcome", pa.string()),
                        ("stage", pa.string()), ("reason", pa.string()), ("chars", pa.int64()),
                        ("words", pa.int64()), ("lang", pa.string()), ("lang_score", pa.float64()),
                        ("quality_score", pa.float64()), ("tokens", pa.int64())])
    (run / "stats" / "documents").mkdir(parents=True)
    half = len(rows) // 2
    for k, part in enumerate((rows[:half], rows[half:])):
        pq.write_table(pa.Table.from_pylist(part, schema=schema),
                       run / "stats" / "documents" / f"read-{k}.parquet")
    for i, row in enumerate(rows):  # personal data replaced in a few documents
        row["pii_spans"] = ([{"kind": ("email", "phone_number", "ip_address")[i % 3], "start": 5, "end": 20}]
                            if i % 7 == 0 and row["outcome"] != "dead_letter" else [])
    from curation.heuristics import HeuristicsConfig
    from curation.language import LanguageConfig
    from curation.quality import QualityConfig
    from curation.threshold_grid import GridSpec
    from pipelines.plumbing.stats import grid_table_bytes

    spec = GridSpec.from_config(LanguageConfig(), HeuristicsConfig(),
                                QualityConfig(enabled=True, model_path="m.bin", rule="threshold",
                                              sources=list(SOURCES)), {})
    tables = aggregate_rows(rows, spec)
    for name, file_name in (("counts", "counts"), ("histograms", "histograms"), ("languages", "languages"),
                            ("pii", "pii")):
        pq.write_table(pa.Table.from_pylist(tables[name]), run / "stats" / f"{file_name}.parquet")
    (run / "stats" / "filter_grid.parquet").write_bytes(grid_table_bytes(tables["grid"], spec))

    for stage in {r["stage"] for r in removed}:
        _write_jsonl_gz(run / "removed" / stage / "part-00000.jsonl.gz",
                        [r for r in removed if r["stage"] == stage])
    _write_jsonl_gz(run / "dead_letter" / "part-00000.jsonl.gz", dead)
    for src in SOURCES:
        kept = [r for r in rows if r["source"] == src and r["outcome"] == "kept"][:5]
        docs = [{"id": r["id"], "source": src, "text": f"kept text of {r['id']}", "url": None, "meta": "{}",
                 "lang": r["lang"], "lang_score": 0.9, "quality_score": r["quality_score"],
                 "tokens": r["tokens"]} for r in kept]
        (run / "documents" / src).mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(docs), run / "documents" / src / "part-00000.parquet")
    (run / "dedup").mkdir()
    pq.write_table(pa.Table.from_pylist(
        [{"cluster_id": c, "id": f"d{c}-{k}", "source": SOURCES[k % 3], "kept": k == 0}
         for c in range(4) for k in range(c + 2)]), run / "dedup" / "fuzzy.parquet")

    per_source = {}
    for src in SOURCES:
        mine = [r for r in rows if r["source"] == src]
        rem = Counter(f"{r['stage']}/{r['reason']}" for r in mine if r["outcome"] == "removed")
        per_source[src] = {
            "read": len(mine), "kept": sum(r["outcome"] == "kept" for r in mine),
            "dead_lettered": sum(r["outcome"] == "dead_letter" for r in mine), "removed": dict(rem),
            "tokens": sum(r["tokens"] or 0 for r in mine if r["outcome"] == "kept"),
            "shards": [f"shards/{src}/{src}_00000"]}
    totals = {k: sum(v[k] for v in per_source.values()) for k in ("read", "kept", "dead_lettered", "tokens")}
    totals["removed"] = sum(sum(v["removed"].values()) for v in per_source.values())
    meta = {"format_version": 1, "config": {"quality": {"threshold": 0.5}, "pii": {"enabled": True}},
            "config_path": "cfg.yaml",
            "runner": "FnApiRunner", "pipeline_options": {"direct_num_workers": 2, "note": PLANTED},
            "started_at": "2024-01-01T00:00:00Z", "finished_at": "2024-01-01T00:00:12Z",
            "wall_seconds": 12.5, "tokenizer": {"path": "tok.json", "vocab_size": 50257, "eod_id": 50256},
            "sources": per_source, "totals": totals, "accounting_ok": True}
    if with_extras:
        meta["stage_seconds"] = {stage: round(1.5 + i * rng.random(), 2) for i, stage in enumerate(
            ("read", "language", "heuristics", "exact_dedup", "fuzzy_dedup", "decontamination", "tokenize"))}
        pq.write_table(pa.Table.from_pylist(
            [{"task": task, "source": src, "action": action, "documents": rng.randint(1, 9)}
             for task in ("lambada", "piqa", PLANTED) for src in SOURCES[:2] for action in ("removed", "split")]),
            run / "stats" / "contamination.parquet")
        meta["config"]["site_boilerplate"] = {"enabled": True, "host_documents": 3, "corpus_documents": 0}
        pq.write_table(pa.Table.from_pylist(
            [{"source": src, "host": host, "documents": 10, "documents_changed": changed,
              "lines_removed": 3 * changed, "chars_removed": 40 * changed}
             for src in SOURCES[:2] for host, changed in (("*", 6), (f"{src}.example", 4), ("b.example", 2))]),
            run / "stats" / "site_boilerplate.parquet")
    (run / "run.json").write_text(json.dumps(meta, indent=2))
    return run


@pytest.fixture
def fake_run(tmp_path: Path) -> Path:
    return make_run(tmp_path, "run-a", seed=1)


@pytest.fixture
def fake_run_b(tmp_path: Path) -> Path:
    return make_run(tmp_path, "run-b", seed=2, n_per_source=120)


@pytest.fixture
def fake():
    """The builder and the planted values, for tests (a fixture, so no test imports conftest)."""
    from types import SimpleNamespace
    return SimpleNamespace(make_run=make_run, PLANTED=PLANTED, SOURCES=SOURCES)


def _ensure_chromium() -> str | None:
    """Chromium's path; installs Debian's ``chromium`` package where missing and we are root with apt."""
    import os
    import shutil
    import subprocess

    from chromium_driver import find_chromium

    found = find_chromium()
    if found or os.environ.get("MTNLG_NO_APT") or os.geteuid() != 0 or not shutil.which("apt-get"):
        return found
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
        if subprocess.run(cmd, env=env, capture_output=True, timeout=900).returncode != 0:
            return None
    return find_chromium()


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the whole session (a launch costs about half a second)."""
    from chromium_driver import BrowserError, Chromium

    path = _ensure_chromium()
    if path is None:
        pytest.skip("Chromium is not installed and could not be installed (needs root and apt-get: "
                    "`apt-get install chromium`); the browser tests did not run")
    try:
        chrome = Chromium(path)
    except BrowserError as err:
        pytest.skip(f"Chromium at {path} could not be started: {err}")
    yield chrome
    chrome.quit()
