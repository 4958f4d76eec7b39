"""`mtnlg curate` end to end with its Common Crawl inputs named by path listings and read over
https:// from a throttling, connection-cutting server on 127.0.0.1 (tests/http_server.py), on
the default local runner with two worker PROCESSES (each imports the filesystem and applies
the config's http settings, the CA bundle included, itself): the kept ids, the accounting and
every shard's bytes equal a run over the same files on local disk."""
from __future__ import annotations

import json

import pytest
import yaml

from http_server import Faults, FileServer
from sample_listings import kept_ids, source_config, tree_hashes, write_listings
from mtnlg.sample_data.generate import write_sample_corpus
from pipelines import curate
from infra.storage import http_filesystem

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("https_curate")
    raw = tmp / "raw"
    write_sample_corpus(str(raw))
    write_listings(raw)
    tasks = str(raw / "eval_tasks" / "*.jsonl")
    local_cfg = tmp / "local.yaml"
    local_cfg.write_text(yaml.safe_dump(source_config(str(raw), tasks, listing=False)))
    assert curate.run(["--config", str(local_cfg), "--output", str(tmp / "local"),
                       "--direct_running_mode=in_memory", "--direct_num_workers=1"]) == 0
    faults = Faults(slow_down=0.1, too_many=0.05, cut=0.15, seed=7)
    with FileServer(raw, faults, tls=True, certs=tmp / "certs") as srv:
        http = {"ca_bundle": str(srv.ca_path), "backoff_initial": 0.01, "backoff_max": 0.05,
                "retries": 10, "max_connections_per_host": 2}
        https_cfg = tmp / "https.yaml"
        https_cfg.write_text(yaml.safe_dump(source_config(srv.url, tasks, listing=True, http=http)))
        rc = curate.run(["--config", str(https_cfg), "--output", str(tmp / "https"),
                         "--direct_num_workers=2"])  # the default mode: worker processes
        answered = dict(srv.stats.answered)
    http_filesystem.configure(None)
    assert rc == 0
    return tmp / "local", tmp / "https", answered


def test_curate_over_https_equals_the_local_run(runs):
    local, remote, answered = runs
    assert answered.get(503) and answered.get(429) and answered.get("cut"), answered
    a, b = (json.loads((r / "run.json").read_text()) for r in (local, remote))
    assert b["runner"] == "FnApiRunner" and b["accounting_ok"] and a["accounting_ok"]
    assert b["sources"] == a["sources"] and b["totals"] == a["totals"]
    assert kept_ids(remote) == kept_ids(local) and kept_ids(local)
    assert tree_hashes(remote / "shards") == tree_hashes(local / "shards")
    assert b["config"]["http"]["max_connections_per_host"] == 2
    assert all("http" not in spec for spec in b["config"]["inputs"])  # once, at the top
    listing = b["config"]["inputs"][0]
    assert listing["listing"].endswith("CC-2020-50.paths.gz") and listing["listing_sha256"]
