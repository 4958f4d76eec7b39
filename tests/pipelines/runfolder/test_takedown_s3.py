"""`mtnlg takedown` on an s3:// RUN (a moto S3 server on 127.0.0.1, Beam's S3 file system):
only the affected shard objects change, the others keep their bytes, accounting holds."""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from pipeline_fixtures import write_config, write_corpus

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "cluster"))
from cluster_tools import moto_s3  # noqa: E402  (the cluster tests' S3 server)

boto3 = pytest.importorskip("boto3")
pytestmark = pytest.mark.slow
BUCKET = "runs"
FAST = ["--direct_running_mode=in_memory", "--direct_num_workers=1"]


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    with moto_s3(tmp_path_factory.mktemp("moto") / "moto.log", BUCKET) as server:
        yield server


def _objects(client, prefix: str) -> dict[str, str]:
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix + "/"):
        for o in page.get("Contents", []):
            body = client.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read()
            out[o["Key"][len(prefix) + 1:]] = hashlib.sha256(body).hexdigest()
    return out


def test_takedown_of_an_s3_run(s3, tmp_path, monkeypatch, capsys):
    from pipelines import curate
    from pipelines.runfolder import takedown

    endpoint, client = s3
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(k, v)
    write_corpus(str(tmp_path / "raw"))
    cfg = write_config(str(tmp_path / "cfg.yaml"), str(tmp_path / "raw"),
                       shards={"max_tokens_per_shard": 150})
    run = tmp_path / "run"
    assert curate.run(["--config", cfg, "--output", str(run)] + FAST) == 0
    for path in sorted(run.rglob("*")):
        if path.is_file():
            client.upload_file(str(path), BUCKET, f"run/{path.relative_to(run).as_posix()}")
    shards = pd.read_parquet(run / "stats" / "shards.parquet")
    assert len(shards) > 2
    sh = shards.sort_values("prefix").iloc[0]
    victim = pd.read_parquet(run / "documents" / sh["source"] / f"part-{sh['shard']:05d}.parquet")["id"][0]
    request = tmp_path / "ids.txt"
    request.write_text(victim + "\n")

    before = _objects(client, "run")
    url = f"s3://{BUCKET}/run"
    assert takedown.main(["--run", url, "--ids", str(request), "--s3_endpoint_url", endpoint]) == 0
    after = _objects(client, "run")
    changed = {k for k in before if after.get(k) != before[k]}
    assert {k for k in changed if k.startswith("shards/")} == {sh["prefix"] + ".bin", sh["prefix"] + ".idx"}
    assert f"documents/{sh['source']}/part-{sh['shard']:05d}.parquet" in changed
    assert not [k for k in after if ".takedown-" in k or k.endswith("takedown.commit.json")]
    info = json.loads(client.get_object(Bucket=BUCKET, Key="run/run.json")["Body"].read())
    s = info["sources"][sh["source"]]
    assert s["removed"]["takedown/takedown"] == 1 and info["accounting_ok"]
    assert s["read"] == s["kept"] + sum(s["removed"].values()) + s["dead_lettered"]
    assert info["takedowns"][0]["shards_rewritten"] == [sh["prefix"]]
    capsys.readouterr()


WORKER_WITHOUT_OPTIONS = """
import sys
from apache_beam.io.filesystems import FileSystems
assert FileSystems._pipeline_options is None  # as an EXTERNAL worker pool starts a harness
import infra.storage  # what the project's DoFns import in a worker
url = sys.argv[1]
with FileSystems.create(url) as f:
    f.write(b"written by a worker without pipeline options")
print(FileSystems.exists(url), FileSystems.open(url).read().decode())
"""


def test_a_worker_started_without_pipeline_options_reaches_s3_from_its_environment(s3, tmp_path):
    """A worker pool's harness gets no pipeline options from Beam, and Beam's S3 filesystem
    refused every file ("Must provide one of client or options"); with the project's modules
    loaded it takes the endpoint and credentials from the environment (docs/runners.md)."""
    import os
    import subprocess

    endpoint, client = s3
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ENDPOINT_URL_S3=endpoint, AWS_ACCESS_KEY_ID="testing",
               AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    proc = subprocess.run([sys.executable, "-c", WORKER_WITHOUT_OPTIONS,
                           f"s3://{BUCKET}/worker/probe.txt"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "True written by a worker without pipeline options"
    body = client.get_object(Bucket=BUCKET, Key="worker/probe.txt")["Body"].read()
    assert body == b"written by a worker without pipeline options"


def test_default_filesystem_options_keep_the_jobs_own():
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import PipelineOptions

    from infra.compat import beam as compat

    saved = FileSystems._pipeline_options
    try:
        job = PipelineOptions(["--s3_endpoint_url", "http://127.0.0.1:1"])
        FileSystems.set_options(job)
        assert compat.default_filesystem_options() is False
        assert FileSystems._pipeline_options is job
        FileSystems._pipeline_options = None
        assert compat.default_filesystem_options() is True
        assert FileSystems._pipeline_options is not None
    finally:
        FileSystems._pipeline_options = saved
