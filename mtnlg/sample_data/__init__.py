"""The embedded sample corpus: every raw source of the MT-NLG blend, in its real format, with
planted problems and a ground truth to score the curation pipeline against.

``write_sample_corpus(out_dir, docs=800, seed=0)`` (CLI: ``python -m mtnlg.sample_data OUT``)
writes ``pile/*.jsonl.zst``, ``common_crawl/CC-2020-50|CC-2021-04/*.warc.gz``,
``realnews/*.jsonl``, ``cc_stories/*.txt``, ``eval_tasks/<task>.jsonl`` and
``ground_truth.json``.  The layout, the document ids and the ground-truth schema are
documented in this package's README.md.
"""
from .generate import DEFAULT_DOCS, write_sample_corpus
from .sources import PILE_SUBSETS, SOURCE_SLUGS, UNUSED_PILE_SUBSET, slug_for

__all__ = ["DEFAULT_DOCS", "PILE_SUBSETS", "SOURCE_SLUGS", "UNUSED_PILE_SUBSET", "main", "slug_for",
           "write_sample_corpus"]


def main(argv: list[str] | None = None) -> int:
    from .__main__ import main as _main

    return _main(argv)
