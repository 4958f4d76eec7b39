"""The heuristics stage stores every score, and stats/documents/ alone re-thresholds a run."""
from __future__ import annotations

import glob

import apache_beam as beam
import pyarrow.parquet as pq

from curation.document import DeadLetter
from curation.heuristics import SCORE_COLUMNS, HeuristicsConfig, apply_heuristics, decide
from pipelines.filters.heuristics import HeuristicsFn
from pipelines.plumbing.stats import ROW_SCHEMA, StageOutcomes
from pipeline_fixtures import doc, english, filtered

TEXTS = {
    "clean": english(1),
    "clean_short": english(2, words=70),
    "spam": english(3) + " " + " ".join(["buy now"] * 60),
    "repeated_lines": english(4) + "\n" + "\n".join(["click here to subscribe today"] * 20),
    "hashtags": english(5) + " " + " ".join(f"#tag{i}" for i in range(40)),
    "code_like": english(6) + " {a} {b} {c} {d} {e}",
    "tiny": "far too short",
}
OTHER_CONFIGS = [
    HeuristicsConfig(min_words=100, max_curly_bracket_ratio=0.01),
    HeuristicsConfig(max_top_ngram_char_ratio={2: 0.5}, max_duplicate_lines_ratio=None,
                     max_duplicate_lines_char_ratio=None, max_symbol_word_ratio=0.5),
    HeuristicsConfig(min_words=None, min_stop_words=30),
]


def test_stats_rows_carry_every_score_and_rethreshold_like_a_rerun(pipeline, tmp_path):
    run = str(tmp_path)
    with pipeline as p:
        out = filtered(p | beam.Create([doc(i, t) for i, t in TEXTS.items()]), HeuristicsFn({}))
        dead = p | "Dead" >> beam.Create([DeadLetter("wikipedia", "f.jsonl:9", "JSONDecodeError: x")])
        _ = ({"kept": out["kept"] | beam.Map(lambda d: (d, None)), "removed": out["removed"],
              "dead_letter": dead} | StageOutcomes(run, "tokenize"))
    assert ROW_SCHEMA.names[-len(SCORE_COLUMNS):] == list(SCORE_COLUMNS)
    # The stage's row files (uncommitted: under the writer folder until the run commits them).
    table = pq.ParquetDataset(glob.glob(f"{run}/_w/stats/documents/tokenize-*.parquet")).read()
    for c in SCORE_COLUMNS:
        assert str(table.schema.field(c).type) == "double"
    rows = {r["id"]: r for r in table.to_pylist()}
    assert rows["f.jsonl:9"]["heur_words"] is None  # not scored: a dead letter
    default = HeuristicsConfig()
    for id_, text in TEXTS.items():
        row = rows[id_]
        verdict = decide(row, default)
        assert (verdict.keep, verdict.reason) == (row["outcome"] == "kept", row["reason"]), id_
        for cfg in OTHER_CONFIGS:  # re-threshold from the stats row alone == rerun the rules
            assert decide(row, cfg) == apply_heuristics(text, cfg), (id_, cfg)
    assert {r["reason"] for r in rows.values()} >= {None, "too_few_words", "top_2gram_chars", "duplicate_lines"}
