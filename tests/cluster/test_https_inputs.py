"""http(s):// inputs on separate Beam workers: Beam's job service + an EXTERNAL worker pool of
two SDK harnesses, started from the installed wheel's venv with the checkout hidden
(conftest.py), reading the sample's Common Crawl files through path listings and its RealNews
files by URL from a throttling, connection-cutting https server on 127.0.0.1
(tests/http_server.py).  A pool's harnesses start without the job's options and import nothing
but what the DoFns they unpickle import: the https filesystem and the config's http settings
(its CA bundle) must reach them that way.  The result equals the installed package's in-process
run over the same files on local disk: kept ids, accounting, shard bytes."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from cluster_tools import free_port, stop, wait_for_port
from http_server import Faults, FileServer
from sample_listings import kept_ids, source_config, tree_hashes, write_listings

HERE = Path(__file__).resolve().parent


def _config(root: str, tasks: str, listing: bool, http: dict | None = None) -> str:
    return yaml.safe_dump(source_config(root, tasks, listing, http, name="https-pool"))


def test_https_listings_on_an_external_worker_pool_equal_the_local_run(installed, sample, tmp_path):
    raw = tmp_path / "raw"
    for part in ("common_crawl", "realnews", "eval_tasks"):
        shutil.copytree(sample / part, raw / part)
    write_listings(raw)
    tasks = str(raw / "eval_tasks" / "*.jsonl")
    (tmp_path / "local.yaml").write_text(_config(str(raw), tasks, listing=False))
    proc = installed.run(["mtnlg", "curate", "--config", str(tmp_path / "local.yaml"), "--output",
                          str(tmp_path / "local"), "--direct_num_workers", "1"], cwd=tmp_path,
                         timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]

    launcher = tmp_path / "job_service.py"
    shutil.copy(HERE / "job_service.py", launcher)
    job_port, pool_port = free_port(), free_port()
    faults = Faults(slow_down=0.1, too_many=0.05, cut=0.15, seed=3)
    with FileServer(raw, faults, tls=True, certs=tmp_path / "certs") as srv:
        http = {"ca_bundle": str(srv.ca_path), "backoff_initial": 0.01, "backoff_max": 0.05,
                "retries": 10}
        (tmp_path / "https.yaml").write_text(_config(srv.url, tasks, listing=True, http=http))
        job = installed.popen(["python", str(launcher), "--port", str(job_port)], cwd=tmp_path,
                              log=tmp_path / "job_service.log")
        pool = installed.popen(["python", "-m", "apache_beam.runners.worker.worker_pool_main",
                                "--service_port", str(pool_port)], cwd=tmp_path,
                               log=tmp_path / "worker_pool.log")
        try:
            wait_for_port(job_port, job, "job service")
            wait_for_port(pool_port, pool, "worker pool")
            proc = installed.run(["mtnlg", "curate", "--config", str(tmp_path / "https.yaml"),
                                  "--output", str(tmp_path / "https"), "--runner", "PortableRunner",
                                  "--job_endpoint", f"127.0.0.1:{job_port}",
                                  "--environment_type", "EXTERNAL",
                                  "--environment_config", f"127.0.0.1:{pool_port}",
                                  "--direct_num_workers", "2"], cwd=tmp_path, timeout=1200)
        finally:
            stop(job)
            stop(pool)
        answered = dict(srv.stats.answered)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    pool_log = (tmp_path / "worker_pool.log").read_text()
    assert pool_log.count("Starting worker with command") == 2, pool_log[-3000:]
    assert answered.get(503) and answered.get("cut"), answered  # the server did misbehave

    local, remote = tmp_path / "local", tmp_path / "https"
    a, b = (json.loads((r / "run.json").read_text()) for r in (local, remote))
    assert b["runner"] == "PortableRunner" and a["accounting_ok"] and b["accounting_ok"]
    assert b["sources"] == a["sources"] and b["totals"] == a["totals"]
    assert kept_ids(remote) == kept_ids(local) and kept_ids(local)
    assert tree_hashes(remote / "shards") == tree_hashes(local / "shards")
