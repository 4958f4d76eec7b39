"""The per-document filter steps (in-process FnApiRunner): normalize, language, heuristics, skipped
sources, and the chain that runs them back to back."""

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from curation.document import Document
from curation.language import LanguageConfig
from pipeline_fixtures import doc, english, filtered
from pipelines.filters.base import FilterDoFn
from pipelines.filters.chain import ChainFn
from pipelines.filters.heuristics import HeuristicsFn
from pipelines.filters.language import LanguageFn
from pipelines.filters.normalize import NormalizeFn
from pipelines.plumbing.outputs import REMOVED


def removals(pcoll, label):
    return pcoll | label >> beam.Map(lambda r: (r.doc.id, r.stage, r.reason))


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


def test_filters_pass_skipped_sources_through_unchecked(pipeline):
    code = "def f(x):\n    return {k: v for k, v in x.items() if v}\n" * 20
    docs = [doc("g", code, source="github"), doc("w", code)]
    with pipeline as p:
        out = filtered(p | beam.Create(docs), HeuristicsFn({}, skip_sources=["github"]))
        assert_that(out["kept"] | beam.Map(lambda d: d.id), equal_to(["g"]), label="kept")
        assert_that(out["removed"] | beam.Map(lambda r: (r.doc.id, r.stage)),
                    equal_to([("w", "heuristics")]), label="removed")


class _DropOdd(FilterDoFn):
    stage = "heuristics"

    def check(self, d):
        from curation.document import FilterResult

        return d, FilterResult.drop("odd") if int(d.id) % 2 else FilterResult.kept()


class _Split(beam.DoFn):
    def process(self, d):
        yield d
        yield Document(d.id + "0", d.source, d.text)


def test_chain_runs_dofns_back_to_back_and_merges_their_tagged_outputs(pipeline):
    docs = [doc(str(i), "x") for i in (1, 2, 3)]
    with pipeline as p:
        out = (p | beam.Create(docs)
               | beam.ParDo(ChainFn([_Split(), _DropOdd()])).with_outputs(REMOVED, main="kept"))
        assert_that(out.kept | beam.Map(lambda d: d.id), equal_to(["10", "2", "20", "30"]), label="kept")
        assert_that(out[REMOVED] | beam.Map(lambda r: (r.doc.id, r.reason)),
                    equal_to([("1", "odd"), ("3", "odd")]), label="removed")
