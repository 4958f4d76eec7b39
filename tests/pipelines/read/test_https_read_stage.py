"""Inputs over https:// and http:// from a hostile server on 127.0.0.1 (tests/http_server.py: a
share of requests answered 503 or 429, a share of bodies cut mid-way), named by path listings
or by URL: the read stage gives the same records as the same files on local disk, ids stay
the same whatever the listing's selector, and a file the server stops serving mid-way is
dead-lettered with its status after the records read before the failure."""
from __future__ import annotations

import glob
import hashlib
import json
import os
from pathlib import Path

import apache_beam as beam
import pytest

from http_server import Faults, FileServer
from sample_listings import CRAWLS, write_listings
from mtnlg.sample_data.generate import write_sample_corpus
from pipeline_fixtures import local_pipeline
from pipelines.config.job import config_from_dict
from infra.storage import http_filesystem
from pipelines.plumbing.outputs import DEAD_LETTER, REMOVED
from pipelines.read.plan import PlanWork
from pipelines.read.readers import READ, ReadWorkFn



@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    """The sample corpus, with one path listing per crawl as Common Crawl publishes them."""
    root = tmp_path_factory.mktemp("https") / "raw"
    write_sample_corpus(str(root))
    write_listings(root)
    return root


@pytest.fixture(scope="module")
def server(sample, tmp_path_factory):
    faults = Faults(slow_down=0.15, too_many=0.05, cut=0.2, seed=54)
    with FileServer(sample, faults, tls=True, certs=tmp_path_factory.mktemp("certs")) as srv:
        yield srv
    http_filesystem.configure(None)  # the next module's requests: default settings


def config(root: str, listing: bool, http: dict | None = None, select: dict | None = None,
           realnews: bool = True):
    if listing:
        inputs = [{"reader": "warc", "source": s, "listing": f"common_crawl/{c}.paths.gz",
                   **({"select": select} if select else {})} for s, c in CRAWLS.items()]
    else:
        inputs = [{"reader": "warc", "source": s, "paths": [f"common_crawl/{c}/*.warc.gz"]}
                  for s, c in CRAWLS.items()]
    if realnews:
        names = ["realnews/realnews-00000.jsonl", "realnews/realnews-00001.jsonl"]
        inputs.append({"reader": "realnews", "source": "realnews", "paths": names})
    data = {"input_root": root, "inputs": inputs, "decontamination": {"enabled": False}}
    if http:
        data["http"] = http
    return config_from_dict(data)


def read_stage(cfg, out: Path) -> dict:
    """The read stage's records: documents (id, text sha1), removals (id, reason), dead letters
    (location, error), and the records counted per source.  WARC ranges of 16 records (a sample
    file holds ~100), so range readers seek into the files."""
    p = local_pipeline(test=False)
    res = (p | PlanWork(cfg.inputs, records_per_range=16)
           | beam.ParDo(ReadWorkFn(cfg.inputs, cfg.input_root)).with_outputs(
               REMOVED, DEAD_LETTER, READ, main="docs"))
    rows = {
        "docs": res.docs | "D" >> beam.Map(lambda d: [d.id, hashlib.sha1(d.text.encode()).hexdigest()]),
        "removed": res[REMOVED] | "R" >> beam.Map(lambda r: [r.doc.id, r.reason]),
        "dead": res[DEAD_LETTER] | "L" >> beam.Map(lambda d: [d.location, d.error]),
        "read": res[READ] | "N" >> beam.CombinePerKey(sum) | "NL" >> beam.Map(list),
    }
    for name, pc in rows.items():
        _ = pc | f"J{name}" >> beam.Map(json.dumps) | f"W{name}" >> beam.io.WriteToText(str(out / name))
    p.run().wait_until_finish()
    return {name: sorted(tuple(json.loads(line)) for f in glob.glob(str(out / f"{name}*"))
                         for line in open(f)) for name in rows}


@pytest.fixture(scope="module")
def local_records(sample, tmp_path_factory) -> dict:
    return read_stage(config(str(sample), listing=False), tmp_path_factory.mktemp("local"))


def _relative(records: dict, root: str) -> dict:
    """Dead-letter locations hold the file's full path: relative to ``root`` for comparing."""
    return {**records, "dead": sorted((loc.replace(root.rstrip("/") + "/", ""), err)
                                      for loc, err in records["dead"])}


def test_listing_over_https_through_a_throttling_server_equals_local_disk(
        sample, server, local_records, tmp_path):
    before = dict(server.stats.answered)
    http = {"ca_bundle": str(server.ca_path), "backoff_initial": 0, "backoff_max": 0, "retries": 10}
    got = read_stage(config(server.url, listing=True, http=http), tmp_path)
    assert local_records["docs"] and local_records["dead"]  # the sample plants bad records
    assert _relative(got, server.url) == _relative(local_records, str(sample))
    answered = {k: v - before.get(k, 0) for k, v in server.stats.answered.items()}
    # the server did misbehave, in every way, during this run
    assert answered.get(503, 0) and answered.get(429, 0) and answered.get("cut", 0), answered


def test_ids_do_not_depend_on_the_selector(server, local_records, tmp_path):
    http = {"ca_bundle": str(server.ca_path), "backoff_initial": 0, "backoff_max": 0, "retries": 10}
    cfg = config(server.url, listing=True, http=http, select={"every": 2, "offset": 1},
                 realnews=False)
    got = read_stage(cfg, tmp_path)
    files = {spec.source: [f for f in _listing_lines(spec)][1::2] for spec in cfg.inputs}
    wanted = {s: {f"{s}/{line}" for line in lines} for s, lines in files.items()}
    expect = [d for d in local_records["docs"]
              if d[0].split("#")[0] in wanted.get(d[0].split("/")[0], ())]
    assert got["docs"] == expect and expect


def _listing_lines(spec) -> list[str]:
    from pipelines.config.listings import load_listing

    return load_listing(spec.listing, None).lines


def test_a_file_the_server_stops_serving_is_dead_lettered_after_its_good_records(
        sample, local_records, tmp_path):
    fail_from = 100_000  # every request for a byte from here on: 503, however often retried
    with FileServer(sample, Faults(fail_from=fail_from)) as srv:  # plain http://
        got = read_stage(config(srv.url, listing=True, http={"backoff_initial": 0, "backoff_max": 0,
                                                            "retries": 2}, realnews=False), tmp_path)
    dead = got["dead"]
    for location, error in dead:
        assert "after_record_" in location and "HTTP 503" in error and "after 3 tries" in error, error
    # every record before the failure is there, as read from local disk, and nothing after it
    local = [d for d in local_records["docs"] + local_records["removed"]
             if not d[0].startswith("realnews")]
    emitted = got["docs"] + got["removed"]
    assert set(emitted) <= set(local) and emitted
    failed = {}  # file -> {first record of a failed range: records it emitted before failing}
    for location, _ in dead:
        name, after = location.split(srv.url + "/", 1)[1].split(":after_record_")
        name, first = name.split("#")
        failed.setdefault(name, {})[int(first)] = int(after)
    assert len(failed) == 4  # every WARC file failed (all are longer than fail_from)
    for name, ranges in failed.items():
        def number(d):
            return int(d[0].rsplit("#", 1)[1])
        mine = sorted(number(d) for d in emitted if d[0].split("/", 1)[1].startswith(name + "#"))
        stop = min(ranges) + ranges[min(ranges)]  # the first record not read
        assert mine == sorted(number(d) for d in local if d[0].split("/", 1)[1].startswith(name + "#")
                              and number(d) < stop)
        starts = sorted(ranges)
        for a, b in zip(starts, starts[1:] + [10**9]):
            assert ranges[a] == len([k for k in mine if a <= k < b])
    # accounting: every record the readers produced is a document, a removal or a dead letter
    assert sum(n for _, n in got["read"]) == len(got["docs"]) + len(got["removed"]) + len(dead)


def test_a_remote_file_is_read_once_to_plan_and_once_in_ranges(sample, local_records, tmp_path):
    """Planning scans each WARC file once, and each range's reader fetches its own bytes, not
    its neighbours' (its stream ends where the range ends): every byte sent twice."""

    warcs = [p for c in CRAWLS.values() for p in glob.glob(str(sample / "common_crawl" / c / "*.warc.gz"))]
    listings = [sample / "common_crawl" / f"{c}.paths.gz" for c in CRAWLS.values()]
    size = sum(os.path.getsize(p) for p in warcs)
    with FileServer(sample, Faults()) as srv:
        got = read_stage(config(srv.url, listing=True, realnews=False), tmp_path)
        sent = srv.stats.bytes_sent - sum(os.path.getsize(p) for p in listings)
    assert got["docs"] == [d for d in local_records["docs"] if not d[0].startswith("realnews")]
    assert 2 * size <= sent <= 2 * size * 1.01, (sent, size)  # the rest: answers without a file
