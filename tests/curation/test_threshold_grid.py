"""The filter-score grid re-thresholds exactly: for any candidate thresholds, the counts from
the aggregated cells equal keep_language / curation.heuristics.decide / the quality threshold
applied to every stored row."""
from __future__ import annotations

import random

import pytest
import yaml

from curation.heuristics import HeuristicsConfig, decide, score_document
from curation.language import LanguageConfig, keep_language
from curation.quality import QualityConfig
from curation.stats import aggregate_rows
from curation.threshold_grid import (GridSpec, config_fragment, current_settings, evaluate,
                                     first_failure, parse_cell)
from mtnlg.sample_data.plan import make_plan

SKIP = {"language": ["github"], "heuristics": ["github", "arxiv"]}
QUALITY_SOURCES = ["cc_2020_50", "pile_cc"]


def _configs(settings: dict, spec: GridSpec):
    """The project's own configs for dashboard settings."""
    heur: dict = {}
    for c in spec.controls:
        if c.section != "heuristics":
            continue
        v = settings[c.id]
        if c.setting == "drop_lorem_ipsum":
            heur[c.setting] = v is not None
        elif c.n is not None:
            heur.setdefault(c.setting, {})
            if v is not None:
                heur[c.setting][c.n] = v
        else:
            heur[c.setting] = int(v) if v is not None and c.setting in ("min_words", "max_words", "min_stop_words") else v
    return LanguageConfig(allowed=["en"], min_score=settings["language.min_score"]), HeuristicsConfig(**heur)


def reference(rows: list[dict], spec: GridSpec, settings: dict) -> dict:
    """Per source: documents kept, removed by first rule, unscored, removed later, from the
    stored rows with the project's decision functions."""
    lang_cfg, heur_cfg = _configs(settings, spec)
    q = settings["quality.threshold"]
    out: dict = {}
    for row in rows:
        if row["outcome"] == "dead_letter" or row["stage"] == "read":
            continue
        src = row["source"]
        o = out.setdefault(src, {"documents": 0, "pass_filters": 0, "removed": {}, "unscored": 0,
                                 "removed_later": 0})
        why = None
        if src not in SKIP["language"]:
            r = keep_language(row["lang"], row["lang_score"], lang_cfg)
            why = None if r.keep else f"language/{r.reason}"
        if why is None and src not in SKIP["heuristics"]:
            if row["heur_words"] is None:
                why = "unscored"
            else:
                r = decide(row, heur_cfg)
                why = None if r.keep else f"heuristics/{r.reason}"
        if why is None and src in QUALITY_SOURCES:
            if row["quality_score"] is None:
                why = "unscored"
            elif q == "as_run":
                why = "quality/low_quality" if (row["outcome"], row["stage"]) == ("removed", "quality") else None
            elif row["quality_score"] < q:
                why = "quality/low_quality"
        if why == "unscored":
            o["unscored"] += 1
        elif why is not None:
            o["removed"][why] = o["removed"].get(why, 0) + 1
        else:
            o["pass_filters"] += 1
            if row["outcome"] == "kept" or row["stage"] in ("language", "heuristics", "quality"):
                o["documents"] += 1
            else:
                o["removed_later"] += 1
    return out


def stored_rows(seed: int = 0) -> tuple[list[dict], GridSpec]:
    """Stats rows as a run with the default thresholds writes them: real texts of the sample
    corpus (clean, spam, too short, non-English) scored by the heuristics, random language and
    quality scores, each row's outcome decided in pipeline order."""
    rng = random.Random(seed)
    lang, heur = LanguageConfig(), HeuristicsConfig()
    quality = QualityConfig(enabled=True, model_path="m.bin", sources=QUALITY_SOURCES, rule="pareto")
    spec = GridSpec.from_config(lang, heur, quality, SKIP)
    sources = ["wikipedia", "cc_2020_50", "pile_cc", "github", "arxiv"]
    rows = []
    for i, d in enumerate(make_plan(300, seed).docs):
        src = sources[i % len(sources)]
        row = {"id": f"{src}/{i}", "source": src, "outcome": "kept", "stage": "tokenize", "reason": None,
               "chars": len(d.text), "tokens": None, "lang": None, "lang_score": None, "quality_score": None,
               **dict.fromkeys(score_document("").keys())}
        if rng.random() < 0.03:
            rows.append({**row, "outcome": "removed", "stage": "read", "reason": "empty_after_extraction"})
            continue

        def remove(stage, reason):
            row.update(outcome="removed", stage=stage, reason=reason)

        if src not in SKIP["language"]:
            row["lang"] = "en" if d.category != "non_english" else rng.choice(["de", "fr"])
            row["lang_score"] = rng.choice([rng.random(), 0.65, 0.9, 1.0])
            r = keep_language(row["lang"], row["lang_score"], lang)
            if not r.keep:
                remove("language", r.reason)
                rows.append(row)
                continue
        if src not in SKIP["heuristics"]:
            row.update(score_document(d.text))
            r = decide(row, heur)
            if not r.keep:
                remove("heuristics", r.reason)
                rows.append(row)
                continue
        if src in QUALITY_SOURCES:
            row["quality_score"] = rng.random()
            if rng.random() > row["quality_score"]:  # a stochastic rule, as pareto
                remove("quality", "low_quality")
                rows.append(row)
                continue
        if rng.random() < 0.1:
            remove(rng.choice(["exact_dedup", "fuzzy_dedup", "tokenize"]), "later")
        else:
            row["tokens"] = len(d.text) // 4 + 1
        rows.append(row)
    return rows, spec


@pytest.fixture(scope="module")
def run_rows():
    return stored_rows()


def test_current_thresholds_reproduce_the_run(run_rows):
    rows, spec = run_rows
    cells = aggregate_rows(rows, spec)["grid"]
    got = evaluate(spec, cells, current_settings(spec))
    ref = reference(rows, spec, current_settings(spec))
    assert {s: {k: v for k, v in o.items() if k in ref[s]} for s, o in got.items()} == ref
    for src, o in got.items():  # nothing unscored, tokens are the kept documents' own
        assert o["unscored"] == 0 and o["tokens_estimated"] == 0
        kept = [r for r in rows if r["source"] == src and r["outcome"] == "kept"]
        assert o["documents"] == len(kept) and o["tokens"] == sum(r["tokens"] for r in kept)
    assert len(cells) < len(rows)  # the aggregate is smaller than the rows it stands for


def test_any_candidate_thresholds_count_like_decide_on_the_rows(run_rows):
    rows, spec = run_rows
    cells = aggregate_rows(rows, spec)["grid"]
    rng = random.Random(7)
    moved = 0
    for trial in range(60):
        settings = current_settings(spec)
        for c in rng.sample(spec.controls, rng.randint(1, 6)):
            options = list(c.values) + ([None] if c.section == "heuristics" else [])
            settings[c.id] = rng.choice(options)
        if rng.random() < 0.5:
            settings["quality.threshold"] = rng.choice(spec.controls[-1].values)
        got = evaluate(spec, cells, settings)
        ref = reference(rows, spec, settings)
        assert {s: {k: v for k, v in o.items() if k in ref[s]} for s, o in got.items()} == ref, settings
        moved += got != evaluate(spec, cells, current_settings(spec))
    assert moved > 30  # the draws did change the outcome


def test_cells_decide_like_each_row(run_rows):
    rows, spec = run_rows
    settings = current_settings(spec)
    for row in rows:
        if row["outcome"] == "dead_letter" or row["stage"] == "read":
            continue
        why = first_failure(spec, row["source"], spec.cell(row), settings)
        expected = None if row["outcome"] == "kept" or row["stage"] not in ("language", "heuristics", "quality") \
            else f"{row['stage']}/{row['reason']}"
        assert why == expected, row["id"]
    assert parse_cell("1,,3") == [1, None, 3]


def test_fragment_is_a_config_curate_accepts(run_rows, tmp_path):
    from pipelines.config.job import config_from_dict

    _, spec = run_rows
    settings = current_settings(spec)
    settings.update({"heuristics.min_words": 100.0, "heuristics.max_top_ngram_char_ratio[3]": None,
                     "heuristics.drop_lorem_ipsum": None, "language.min_score": 0.5,
                     "quality.threshold": 0.35})
    fragment = yaml.safe_load(config_fragment(spec, settings))
    assert fragment["heuristics"]["min_words"] == 100
    assert fragment["heuristics"]["max_top_ngram_char_ratio"] == {2: 0.2, 4: 0.16}
    assert fragment["quality"] == {"rule": "threshold", "threshold": 0.35}
    cfg = config_from_dict({"inputs": [{"reader": "realnews", "source": "realnews", "paths": ["x"]}],
                            "quality": {"enabled": True, "model_path": "m.bin"} | fragment["quality"],
                            "language": fragment["language"], "heuristics": fragment["heuristics"],
                            "decontamination": {"enabled": False}},
                           base_dir=str(tmp_path), check_paths=False)
    heur = HeuristicsConfig(**cfg.heuristics)
    assert heur.min_words == 100 and heur.drop_lorem_ipsum is False and 3 not in heur.max_top_ngram_char_ratio
    assert cfg.language.min_score == 0.5 and cfg.quality.threshold == 0.35
