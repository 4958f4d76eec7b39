"""The pii stage as a Beam transform: text redacted, original offsets on the document, counters
and the stats row's per-kind counts; every document passes."""
from __future__ import annotations

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from curation.pii import PiiConfig
from pipelines.filters.pii import PiiFn
from pipelines.plumbing.stats import stats_row
from pipeline_fixtures import doc

TEXT = "Mail ops@example.org from 198.51.100.7 today; version 1.2.3.4 is unaffected."


def test_pii_stage_redacts_and_keeps_offsets(pipeline):
    with pipeline as p:
        out = (p | beam.Create([doc("a", TEXT), doc("b", "Nothing personal here at all.")])
               | beam.ParDo(PiiFn(PiiConfig(enabled=True))))
        rows = out | beam.Map(lambda d: (d.id, d.text, [(s["kind"], TEXT[s["start"]:s["end"]]) for s in d.pii_spans]))
        assert_that(rows, equal_to([
            ("a", "Mail <EMAIL> from <IP_ADDRESS> today; version 1.2.3.4 is unaffected.",
             [("email", "ops@example.org"), ("ip_address", "198.51.100.7")]),
            ("b", "Nothing personal here at all.", [])]))
    counters = {c.key.metric.name: c.committed for c in p.result.metrics().query()["counters"]
                if c.key.metric.namespace == "curate"}
    assert counters["pii/wikipedia/email"] == 1 and counters["pii/wikipedia/documents_with_pii"] == 1


def test_stats_row_counts_kinds_and_never_holds_values():
    redacted = doc("a", "Mail <EMAIL>", pii_spans=[{"kind": "email", "start": 5, "end": 20}])
    row = stats_row(redacted)
    assert (row["pii_email"], row["pii_ip_address"], row["pii_phone_number"]) == (1, 0, 0)
    assert row["pii_spans"] == [{"kind": "email", "start": 5, "end": 20}]
    off = stats_row(doc("b", "text"))
    assert off["pii_spans"] is None and off["pii_email"] is None
