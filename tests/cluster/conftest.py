"""Fixtures of the cluster-shaped tests: the installed package (see cluster_tools.py), the sample
corpus it writes, a moto S3 server, one curate run of the sample on Beam's job service with
an EXTERNAL worker pool, every input on S3 and its RUN written there (test_s3.py: its
accounting, staging, blending, training; test_worker_pool.py: the workers), and one `mtnlg
demo` of the package installed as the README says (test_demo.py: every step; test_worker_pool.py:
the same bytes as the worker pool's run)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from cluster_tools import (BUCKET, EXTRAS, S3_KEYS, Installed, _build_dist, demo_config, free_port,
                           make_venv, moto_s3, readme_demo_options, seed_bytecode, stop,
                           wait_for_port)

HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before tests/conftest.py's grouping, which keeps this name
def pytest_collection_modifyitems(items):
    # One xdist worker runs them all, so the session's wheel, venvs and demo are built once
    # (make test uses --dist loadgroup).
    for item in items:
        if "tests/cluster/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.xdist_group("cluster"))


@pytest.fixture(scope="session")
def installed(tmp_path_factory) -> Installed:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.fail("the cluster tests hide the checkout with `unshare -m` and need root")
    root = tmp_path_factory.mktemp("installed")
    sdist, wheel = _build_dist(root / "dist")
    venv = root / "venv"
    make_venv(venv, wheel, EXTRAS)
    seed_bytecode(venv, root / "pycache")
    (root / "hide").mkdir()
    (root / "home").mkdir()
    return Installed(venv=venv, wheel=wheel, sdist=sdist, hide=root / "hide", home=root / "home",
                     pycache=root / "pycache")


@pytest.fixture(scope="session")
def installed_demo(installed, tmp_path_factory) -> Installed:
    """The same wheel in a venv of its own with exactly the install options the README names
    for the demo (its `pip install -c requirements/lock.txt '...whl[train]'` line)."""
    root = tmp_path_factory.mktemp("installed_demo")
    make_venv(root / "venv", installed.wheel, readme_demo_options())
    seed_bytecode(root / "venv", root / "pycache")
    (root / "home").mkdir()
    return Installed(venv=root / "venv", wheel=installed.wheel, sdist=installed.sdist,
                     hide=installed.hide, home=root / "home", pycache=root / "pycache")


@dataclass
class DemoRun:
    """One `mtnlg demo` of the embedded sample by the package installed as the README says,
    from a folder outside the checkout (test_demo.py checks it end to end; test_worker_pool.py
    compares the EXTERNAL worker pool's run, inputs on S3, with its curated RUN)."""

    work: Path  # --workdir: sample/, quality/model.bin, run/, manifest.json, train/, ...
    returncode: int
    stdout: str
    stderr: str
    steps: int


# The loss has fallen after 4 steps (measured 10.99 -> 10.58; lr warms up over steps 1-3).
DEMO_STEPS = 4


@pytest.fixture(scope="session")
def demo(installed_demo, tmp_path_factory) -> DemoRun:
    folder = tmp_path_factory.mktemp("demo")
    # One Beam worker: curate runs in memory (16 s of CPU where 2 worker processes take 27 s,
    # bench/job/local_running_mode.py); worker processes are test_curate's and the worker
    # pool's. One training process: `mtnlg train` then runs in the demo's own process (no
    # elastic agent, no forkserver: ~10 s of CPU less); the launcher's ranks are
    # test_elastic_launch's, and `make demo` itself trains with the default 2.
    proc = installed_demo.run(["mtnlg", "demo", "--workdir", "demo", "--steps", str(DEMO_STEPS),
                               "--workers", "1", "--nproc", "1", "--progress-every", "1"],
                              cwd=folder, timeout=1200)
    return DemoRun(folder / "demo", proc.returncode, proc.stdout, proc.stderr, DEMO_STEPS)


@pytest.fixture(scope="session")
def sample(installed, tmp_path_factory) -> Path:
    """The embedded sample corpus, written by the installed package."""
    out = tmp_path_factory.mktemp("sample") / "raw"
    proc = installed.run(["mtnlg", "sample-data", str(out)], cwd=out.parent)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="session")
def quality_model(installed, sample, tmp_path_factory) -> Path:
    """The demo's quality classifier, trained by the installed package on the sample."""
    out = tmp_path_factory.mktemp("quality")
    proc = installed.run(["mtnlg", "quality", "train", "--config", "demo", "--input-root", str(sample),
                          "--output", str(out / "model")], cwd=out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out / "model" / "model.bin"


@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    """A moto S3 server on 127.0.0.1 with an empty bucket: (endpoint URL, boto3 client)."""
    pytest.importorskip("boto3")
    with moto_s3(tmp_path_factory.mktemp("moto") / "moto.log", BUCKET) as server:
        yield server


@dataclass
class S3Run:
    """``mtnlg curate`` of the sample with the demo config (quality filter on), every input on
    s3:// and the RUN written there, submitted to Beam's job service and run by two SDK workers
    of an EXTERNAL worker pool: every process from the installed wheel's venv, the checkout
    hidden."""

    url: str  # s3://corpus/runs/r1
    info: dict  # its run.json
    output: str  # the command's stdout + stderr
    stderr: str
    seconds: float
    local: Path  # a download of its shards/ and stats/ (for comparisons)
    pool_log: str  # the worker pool's output


def _upload(client, folder: Path, prefix: str) -> None:
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            client.upload_file(str(path), BUCKET, f"{prefix}/{path.relative_to(folder).as_posix()}")


def _download(client, prefix: str, to: Path) -> None:
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        for obj in page.get("Contents", []):
            path = to / obj["Key"][len(prefix):]
            path.parent.mkdir(parents=True, exist_ok=True)
            client.download_file(BUCKET, obj["Key"], str(path))


@pytest.fixture(scope="session")
def s3_run(installed, sample, quality_model, s3, tmp_path_factory) -> S3Run:
    endpoint, client = s3
    tmp = tmp_path_factory.mktemp("s3run")
    # Inputs and models go to the bucket, from the installed package's own files; the job
    # names no local path (its config is read by the driver only).
    find = [str(installed.bin / "python"), "-c",
            "import sys; from infra.resources import local_path; print(local_path(sys.argv[1]))"]
    tok = Path(subprocess.check_output(find + ["pkg://data_manifests/tokenizers/gpt2"], text=True).strip())
    lid = Path(subprocess.check_output(find + ["pkg://data_manifests/models/lid.176.ftz"], text=True).strip())
    _upload(client, sample, "raw")
    _upload(client, tok, "tokenizers/gpt2")
    client.upload_file(str(lid), BUCKET, "models/lid.176.ftz")
    client.upload_file(str(quality_model), BUCKET, "models/quality.bin")
    cfg = tmp / "s3.yaml"
    cfg.write_text(demo_config(f"s3://{BUCKET}/models/quality.bin", bucket=BUCKET))
    # The launcher is copied out of the (hidden) checkout; it is Beam's local_job_service_main
    # plus the worker count (tests/cluster/job_service.py says why). A pool's SDK harnesses get
    # no pipeline options for their file systems: they reach S3 through the variables of their
    # environment, as docs/runners.md ("S3 settings") tells a cluster's operator to set them.
    launcher = tmp / "job_service.py"
    shutil.copy(HERE / "job_service.py", launcher)
    job_port, pool_port = free_port(), free_port()
    worker_env = {**S3_KEYS, "AWS_ENDPOINT_URL_S3": endpoint}
    job = installed.popen(["python", str(launcher), "--port", str(job_port)], cwd=tmp,
                          log=tmp / "job_service.log", **worker_env)
    pool = installed.popen(["python", "-m", "apache_beam.runners.worker.worker_pool_main",
                            "--service_port", str(pool_port)], cwd=tmp,
                           log=tmp / "worker_pool.log", **worker_env)
    run = f"s3://{BUCKET}/runs/r1"
    try:
        wait_for_port(job_port, job, "job service")
        wait_for_port(pool_port, pool, "worker pool")
        t0 = time.perf_counter()
        proc = installed.run(["mtnlg", "curate", "--config", str(cfg), "--output", run,
                              "--runner", "PortableRunner", "--job_endpoint", f"127.0.0.1:{job_port}",
                              "--environment_type", "EXTERNAL",
                              "--environment_config", f"127.0.0.1:{pool_port}",
                              "--direct_num_workers", "2", "--s3_endpoint_url", endpoint],
                             cwd=tmp, timeout=1200, **S3_KEYS)
        seconds = time.perf_counter() - t0
    finally:
        stop(job)
        stop(pool)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    assert not list(tmp.glob("runs")) and not (tmp / "r1").exists()  # nothing written locally
    info = json.loads(client.get_object(Bucket=BUCKET, Key="runs/r1/run.json")["Body"].read())
    for part in ("shards", "stats"):
        _download(client, f"runs/r1/{part}/", tmp / "download" / part)
    return S3Run(run, info, proc.stdout + proc.stderr, proc.stderr, seconds, tmp / "download",
                 (tmp / "worker_pool.log").read_text())
