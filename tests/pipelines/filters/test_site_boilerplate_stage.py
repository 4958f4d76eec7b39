"""The site-boilerplate stage on a planted site (TestPipeline, in-process FnApiRunner)."""
from __future__ import annotations

import os

import apache_beam as beam
import pyarrow.parquet as pq
from apache_beam.metrics.metric import MetricsFilter

from curation.site_boilerplate import SiteBoilerplateConfig
from pipelines.filters.site_boilerplate import SiteBoilerplate
from tests.pipelines.pipeline_fixtures import doc, local_pipeline

NAV = "Home | News | Sport | Weather | About us"
FOOTER = "© 2024 Harbour Gazette. All rights reserved."
SHARE = "Share this article"


TOPICS = ("bridge", "ferry", "school", "market", "lighthouse")


def story(i: int) -> str:
    # Words, not numbers, tell the pages apart: digits normalise alike ("day 1" = "day 2").
    return f"The council met about the {TOPICS[i]} again.\nOnly the {TOPICS[i]} page says this."


def page(i: int) -> str:
    return f"{NAV}\n\n{story(i)}\n\n{SHARE}\n{FOOTER}"


def test_site_boilerplate_removes_lines_shared_by_a_hosts_pages(tmp_path):
    docs = [doc(f"cc/a#{i}", page(i), source="cc_2020_50", url=f"https://www.gazette.example/{i}")
            for i in range(5)]
    docs.append(doc("cc/a#5", f"{NAV}\n{SHARE}\n\n{FOOTER}", source="cc_2020_50",
                    url="https://gazette.example/empty"))  # nothing but the site's chrome
    docs += [doc(f"cc/b#{i}", f"{NAV}\nOther site {TOPICS[i]} says hello.\n{FOOTER}", source="cc_2020_50",
                 url=f"https://other.example/{i}") for i in range(2)]  # 2 pages: below the threshold
    docs.append(doc("wiki/1", f"{NAV}\nA book without a URL.\n{FOOTER}"))  # no host: not judged
    cfg = SiteBoilerplateConfig(enabled=True, host_documents=3)
    p = local_pipeline(test=False)
    created = p | beam.Create(docs)
    out = created | SiteBoilerplate(cfg, str(tmp_path), separate_kept=True)  # as the read stage runs it
    flat = created | "Flat" >> SiteBoilerplate(cfg, str(tmp_path / "flat"))  # one "kept" collection
    kept_path, removed_path = tmp_path / "kept.txt", tmp_path / "removed.txt"
    judged, unjudged = out["kept_parts"]
    _ = ((judged, unjudged) | "Both" >> beam.Flatten()
         | "K" >> beam.Map(lambda d: (d.id, d.text, d.boilerplate_chars)) | "KL" >> _Collect(kept_path))
    _ = unjudged | "U" >> beam.Map(lambda d: d.id) | "UL" >> _Collect(tmp_path / "unjudged.txt")
    _ = (flat["kept"] | "F" >> beam.Map(lambda d: (d.id, d.text, d.boilerplate_chars))
         | "FL" >> _Collect(tmp_path / "flat.txt"))
    _ = (out["removed"] | "R" >> beam.Map(lambda r: (r.doc.id, r.stage, r.reason))
         | "RL" >> _Collect(removed_path))
    result = p.run()
    result.wait_until_finish()

    kept = {i: (t, c) for i, t, c in _read(kept_path)}
    for i in range(5):
        text, chars = kept[f"cc/a#{i}"]
        assert text == story(i)
        assert chars == len(page(i)) - len(text)
    assert kept["cc/b#0"] == (f"{NAV}\nOther site bridge says hello.\n{FOOTER}", 0)  # unchanged
    assert kept["wiki/1"][1] is None and NAV in kept["wiki/1"][0]
    assert _read(removed_path) == [("cc/a#5", "site_boilerplate", "empty_after_boilerplate")]
    assert _read(tmp_path / "unjudged.txt") == ["wiki/1"]
    assert sorted(_read(tmp_path / "flat.txt")) == sorted(_read(kept_path))

    counters = {c.key.metric.name: c.committed for c in
                result.metrics().query(MetricsFilter().with_namespace("curate"))["counters"]}
    assert counters["site_boilerplate/cc_2020_50/kept"] == 7  # either application (a dict by name)
    assert counters["site_boilerplate/cc_2020_50/removed/empty_after_boilerplate"] == 1
    assert counters["site_boilerplate/wikipedia/skipped"] == 1
    assert counters["site_boilerplate/cc_2020_50/lines_removed"] == 5 * 3 + 3
    rows = pq.read_table(os.path.join(tmp_path, "stats", "site_boilerplate.parquet")).to_pylist()
    table = {r["host"]: r for r in rows}
    assert (table["gazette.example"]["documents"], table["gazette.example"]["documents_changed"],
            table["gazette.example"]["lines_removed"]) == (6, 6, 18)
    assert "other.example" not in table  # nothing removed there: only in the totals
    assert table["*"]["documents"] == 8
    assert table["*"]["chars_removed"] == counters["site_boilerplate/cc_2020_50/chars_removed"]


def test_copies_of_a_page_on_one_host_count_once(tmp_path):
    """A page a host serves five times (tracking parameters, a print version whose date differs)
    is one document for the counts: its article survives in every copy; the site's navigation,
    on four distinct pages, is still removed.  (Counting by document, every line of such a
    page was condemned and every copy emptied.)"""
    article = "The harbour bridge reopens on Monday after repairs.\nTraffic returns in the evening."
    copies = [doc(f"cc/c#{k}", f"{NAV}\nPosted 2024-05-0{k + 1}\n{article}", source="cc_2020_50",
                  url=f"https://copies.example/bridge?utm={k}") for k in range(5)]
    others = [doc(f"cc/o#{i}", f"{NAV}\n{story(i)}", source="cc_2020_50",
                  url=f"https://copies.example/{i}") for i in range(3)]
    p = local_pipeline(test=False)
    out = p | beam.Create(copies + others) | SiteBoilerplate(
        SiteBoilerplateConfig(enabled=True, host_documents=3), str(tmp_path))
    _ = out["kept"] | beam.Map(lambda d: (d.id, d.text)) | _Collect(tmp_path / "kept.txt")
    _ = out["removed"] | "R" >> beam.Map(lambda r: r.doc.id) | "RL" >> _Collect(tmp_path / "removed.txt")
    p.run().wait_until_finish()

    kept = dict(_read(tmp_path / "kept.txt"))
    assert _read(tmp_path / "removed.txt") == []
    for k in range(5):
        assert kept[f"cc/c#{k}"] == f"Posted 2024-05-0{k + 1}\n{article}"  # NAV only went
    for i in range(3):
        assert kept[f"cc/o#{i}"] == story(i)


def test_corpus_wide_rule_across_hosts_and_spills_of_a_few_documents(tmp_path):
    """``corpus_documents``: a line on pages of five hosts (one page each: no host rule fires)
    goes from all of them; a line on two hosts' pages stays.  Spills of two documents each and
    three partitions: the counts meet across files and partitions."""
    docs = [doc(f"cc/s#{i}", f"Subscribe to our newsletter!\n{story(i)}" + ("\nSee you there." if i < 2 else ""),
                source="cc_2020_50", url=f"https://site{i}.example/a") for i in range(5)]
    cfg = SiteBoilerplateConfig(enabled=True, host_documents=3, corpus_documents=4, partitions=3)
    p = local_pipeline(test=False)
    out = p | beam.Create(docs) | SiteBoilerplate(cfg, str(tmp_path), docs_per_spill=2)
    _ = out["kept"] | beam.Map(lambda d: (d.id, d.text)) | _Collect(tmp_path / "kept.txt")
    p.run().wait_until_finish()
    spills = os.listdir(tmp_path / "_tmp" / "site_boilerplate")
    assert len([f for f in spills if f.startswith("docs-")]) >= 3  # 5 documents, 2 per spill
    kept = dict(_read(tmp_path / "kept.txt"))
    assert kept == {f"cc/s#{i}": story(i) + ("\nSee you there." if i < 2 else "") for i in range(5)}
    rows = pq.read_table(os.path.join(tmp_path, "stats", "site_boilerplate.parquet")).to_pylist()
    assert {r["host"]: (r["documents"], r["lines_removed"]) for r in rows} == {
        **{f"site{i}.example": (1, 1) for i in range(5)}, "*": (5, 5)}


class _Collect(beam.PTransform):
    """Elements -> one file of reprs (the test reads them back after the run)."""

    def __init__(self, path, label=None):
        super().__init__(label)
        self.path = str(path)

    def expand(self, pcoll):
        from pipelines.plumbing.sinks import Gather

        path = self.path
        return pcoll | Gather() | beam.Map(lambda xs: open(path, "w").write(repr(sorted(xs, key=repr))))


def _read(path):
    import ast

    return ast.literal_eval(open(path).read())
