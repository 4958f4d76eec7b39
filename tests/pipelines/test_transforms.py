"""One TestPipeline per transform of the curate job (in-process FnApiRunner)."""
import os

import apache_beam as beam
import pandas as pd
import pytest
from apache_beam.testing.util import assert_that, equal_to

from curation.decontamination import DecontaminationConfig
from curation.dedup_records import node_id
from curation.document import Removal
from curation.language import LanguageConfig
from dedup_reference_components import ConnectedComponents
from pipelines.dedup.groups import NotConvergedError
from pipelines.config.job import FuzzyDedupConfig, InputSpec
from curation.pieces import split_pieces
from pipelines.decontaminate import Decontaminate
from dedup_reference import ExactDedup
from pipelines.filters.heuristics import HeuristicsFn
from pipelines.filters.language import LanguageFn
from pipelines.filters.normalize import NormalizeFn
from dedup_reference import FuzzyDedup
from pipelines.plumbing.stats import stats_row
from pipelines.tokenize.tokens import Tokenize
from pipeline_fixtures import GPT2, doc, english, filtered, local_pipeline, read_inputs, write_corpus


def ids(pcoll, label):
    return pcoll | label >> beam.Map(lambda d: d.id)


def removals(pcoll, label):
    return pcoll | label >> beam.Map(lambda r: (r.doc.id, r.stage, r.reason))


def test_reading_routes_documents_removals_and_dead_letters(pipeline, tmp_path):
    root = str(tmp_path)
    write_corpus(root)
    spec = InputSpec(reader="pile", paths=[os.path.join(root, "pile", "*.jsonl.zst")])
    with pipeline as p:
        out = read_inputs(p, [spec])
        assert_that(ids(out["docs"], "D"), equal_to([
            "wikipedia/00.jsonl.zst:0", "books3/00.jsonl.zst:1", "openwebtext2/00.jsonl.zst:2",
            "pile_cc/00.jsonl.zst:4", "wikipedia/00.jsonl.zst:6"]), label="docs")
        assert_that(removals(out["removed"], "R"), equal_to([
            ("pile_other/00.jsonl.zst:5", "read", "pile_subset_not_in_blend")]), label="removed")
        assert_that(out["dead_letter"] | beam.Map(lambda d: d.location.rsplit("/", 1)[-1]),
                    equal_to(["00.jsonl.zst:3"]), label="dead")


def test_normalize_language_and_heuristics(pipeline):
    good = english(1)
    german = "Der Fluss fließt durch die kleine Stadt und die Menschen lesen Bücher. " * 10
    docs = [doc("a", "  " + good + "\u200b "), doc("b", german), doc("c", "too short to keep")]
    with pipeline as p:
        normalized = p | beam.Create(docs) | beam.ParDo(NormalizeFn())
        lang = filtered(normalized, LanguageFn(LanguageConfig()), "Lang")
        heur = filtered(lang["kept"], HeuristicsFn({}), "Heur")
        assert_that(removals(lang["removed"], "LR"), equal_to([("b", "language", "wrong_language")]),
                    label="lang")
        assert_that(removals(heur["removed"], "HR"), equal_to([("c", "heuristics", "too_few_words")]),
                    label="heur")
        assert_that(heur["kept"] | beam.Map(lambda d: (d.id, d.lang, d.text == good.strip())),
                    equal_to([("a", "en", True)]), label="kept")


def test_exact_dedup_keeps_the_highest_priority_source(pipeline):
    from dedup_reference import DedupRecords

    text = english(2)
    docs = [doc("cc/1", text, "cc_2020_50"), doc("wiki/1", text.upper(), "wikipedia"),
            doc("rn/1", text, "realnews"), doc("other", english(3))]
    with pipeline as p:
        out = p | beam.Create(docs) | DedupRecords() | ExactDedup()
        assert_that(out["kept"] | beam.Map(lambda m: node_id(m[0])), equal_to(["wiki/1", "other"]), label="kept")
        assert_that(out["decisions"] | beam.Map(lambda d: (d.id, d.stage, d.reason, d.detail["kept"])),
                    equal_to([("cc/1", "exact_dedup", "duplicate", "wiki/1"),
                              ("rn/1", "exact_dedup", "duplicate", "wiki/1")]), label="decisions")
        assert_that(out["groups"] | beam.Map(lambda g: (g["id"], g["kept"])),
                    equal_to([("wiki/1", True), ("cc/1", False), ("rn/1", False)]), label="groups")


def test_connected_components_finds_stars_around_the_smallest_node(pipeline):
    # a chain 1-2-3-4-5 (needs several rounds), a separate pair 7-8 and a triangle 10-11-12
    edges = [(2, 1), (2, 3), (4, 3), (5, 4), (8, 7), (10, 11), (11, 12), (12, 10)]
    with pipeline as p:
        labels = p | beam.Create(edges) | ConnectedComponents(rounds=4)
        assert_that(labels, equal_to([(2, 1), (3, 1), (4, 1), (5, 1), (8, 7), (11, 10), (12, 10)]))


def test_connected_components_fails_loudly_when_not_converged():
    chain = [(i, i + 1) for i in range(64)]
    with pytest.raises(Exception, match="max_rounds"):
        with local_pipeline() as p:
            _ = p | beam.Create(chain) | ConnectedComponents(rounds=1)
    assert issubclass(NotConvergedError, RuntimeError)


def test_fuzzy_dedup_removes_near_duplicates_keeping_priority(pipeline):
    from dedup_reference import DedupRecords

    base = english(4)
    near = base.replace("library", "museum", 1)
    docs = [doc("owt/1", near, "openwebtext2"), doc("wiki/1", base, "wikipedia"),
            doc("cc/1", english(5), "cc_2020_50"), doc("tiny", "short", "wikipedia")]
    cfg = FuzzyDedupConfig(num_perm=64, bands=16, rows=4, threshold=0.7, max_rounds=2)
    with pipeline as p:
        out = p | beam.Create(docs) | DedupRecords(cfg) | FuzzyDedup(cfg)
        assert_that(out["decisions"] | beam.Map(lambda d: (d.id, d.stage, d.reason, d.detail["kept"])),
                    equal_to([("owt/1", "fuzzy_dedup", "near_duplicate", "wiki/1")]), label="decisions")
        assert_that(out["groups"] | beam.Map(lambda r: (r["id"], r["kept"], round(r["similarity"], 6))),
                    equal_to([("wiki/1", True, 0.981982), ("owt/1", False, 0.981982)]), label="rows")
        assert_that(out["inputs"], equal_to([(("fuzzy", d.source), 1) for d in docs]), label="inputs")


def _dedup_stage(tmp_path, docs, exact: bool, fuzzy: FuzzyDedupConfig) -> tuple[list, list]:
    """The dedup stage curate ships (``pipelines.build``: records from the parts, exact then
    fuzzy decisions, applied in the parts) on ``docs``: (kept ids, (id, stage, kept) removed)."""
    import glob

    from pipelines.config.job import CurateConfig, DecontaminationStage, DedupConfig, InputSpec
    from pipelines.build import Stage, StageEnv
    from pipelines.plumbing.parts import WriteParts, part_urls, read_part

    cfg = CurateConfig(inputs=[InputSpec("realnews", ["parts, not read"], "realnews")],  # (stage input: parts)
                       dedup=DedupConfig(exact=exact, fuzzy=fuzzy),
                       decontamination=DecontaminationStage(enabled=False))
    read_dir, out_dir = str(tmp_path / "read"), str(tmp_path / "dedup")
    with local_pipeline(test=False) as p:
        urls = part_urls(p | beam.Create(docs) | WriteParts(read_dir, "read", rows=2))
        _ = urls | Stage("dedup", StageEnv(cfg, out_dir, vocab_size=50257))
    kept = [d.id for f in glob.glob(os.path.join(out_dir, "_w", "stages", "dedup", "*.parquet"))
            for d in read_part(f)]
    removed = [(r["id"], r["stage"], r["detail"]["kept"])
               for f in glob.glob(os.path.join(out_dir, "_w", "removed", "*", "*.jsonl.gz"))
               for r in pd.read_json(f, lines=True).to_dict("records")]
    return sorted(kept), sorted(removed)


def test_dedup_stage_applies_exact_then_fuzzy_decisions(tmp_path):
    base, text = english(4), english(2)
    docs = [doc("owt/1", base.replace("library", "museum", 1), "openwebtext2"), doc("wiki/1", base, "wikipedia"),
            doc("cc/2", text, "cc_2020_50"), doc("wiki/2", text.upper(), "wikipedia"), doc("tiny", "short")]
    kept, removed = _dedup_stage(tmp_path / "both", docs, True, FuzzyDedupConfig(threshold=0.7))
    assert kept == ["tiny", "wiki/1", "wiki/2"]
    assert removed == [("cc/2", "exact_dedup", "wiki/2"), ("owt/1", "fuzzy_dedup", "wiki/1")]
    kept, removed = _dedup_stage(tmp_path / "fuzzy", docs, False, FuzzyDedupConfig())
    assert [(i, s) for i, s, _ in removed] == [("cc/2", "fuzzy_dedup"), ("owt/1", "fuzzy_dedup")]


def test_decontaminate_splits_out_task_ngrams(pipeline, tmp_path):
    task = ("the quick brown fox jumps over the lazy dog near the riverbank while the farmer "
            "watches the sunset quietly")
    (tmp_path / "lambada.jsonl").write_text('{"text": "%s"}\n' % task)
    text = english(6, 300)
    contaminated = text[:1000] + " " + task + " " + text[1000:]
    docs = [doc("clean", english(7)), doc("dirty", contaminated), doc("all", task)]
    rule = DecontaminationConfig()
    with pipeline as p:
        out = p | beam.Create(docs) | Decontaminate([str(tmp_path / "*.jsonl")], rule)
        assert_that(out["kept"] | beam.Map(lambda d: (d.id, len(split_pieces(d)), task in d.text)),
                    equal_to([("clean", 1, False), ("dirty", 2, False)]), label="kept")
        assert_that(removals(out["removed"], "R"),
                    equal_to([("all", "decontamination", "contaminated")]), label="removed")


def test_tokenize_appends_eod_and_removes_short_documents(pipeline):
    docs = [doc("long", english(8)), doc("short", "Just a few words here.")]
    with pipeline as p:
        out = p | beam.Create(docs) | Tokenize(GPT2, min_tokens=128, batch_size=2)
        assert_that(out["kept"] | beam.Map(lambda dt: (dt[0].id, int(dt[1][-1]), dt[0].tokens == dt[1].size)),
                    equal_to([("long", 50256, True)]), label="kept")
        assert_that(removals(out["removed"], "R"), equal_to([("short", "tokenize", "too_few_tokens")]),
                    label="removed")


def test_stats_rows_cover_every_outcome():
    import numpy as np
    from curation.document import DeadLetter
    from pipelines.plumbing.stats import ROW_SCHEMA

    kept = (doc("k", "a b c", tokens=4), np.arange(4))
    rem = Removal(doc("r", "x y"), "heuristics", "too_few_words")
    dead = DeadLetter("books3", "f.zst:3", "JSONDecodeError: bad")
    rows = [stats_row(x) for x in (kept, rem, dead)]
    assert [(r["id"], r["outcome"], r["stage"], r["reason"], r["words"]) for r in rows] == [
        ("k", "kept", "tokenize", None, 3), ("r", "removed", "heuristics", "too_few_words", 2),
        ("f.zst:3", "dead_letter", "read", "JSONDecodeError", 0)]
    assert all(list(r) == ROW_SCHEMA.names for r in rows)  # one builder, one schema


def test_filters_pass_skipped_sources_through_unchecked(pipeline):
    code = "def f(x):\n    return {k: v for k, v in x.items() if v}\n" * 20
    docs = [doc("g", code, source="github"), doc("w", code)]
    with pipeline as p:
        out = filtered(p | beam.Create(docs), HeuristicsFn({}, skip_sources=["github"]))
        assert_that(out["kept"] | beam.Map(lambda d: d.id), equal_to(["g"]), label="kept")
        assert_that(out["removed"] | beam.Map(lambda r: (r.doc.id, r.stage)),
                    equal_to([("w", "heuristics")]), label="removed")
