"""The curate job on separate Beam workers: Beam's job service + an EXTERNAL worker pool, all
started from the installed wheel's venv with the checkout hidden, and the result compared with
the local FnApiRunner run of the same installed package and config (the session's S3 run,
conftest.py ``s3_run``; here the inputs and models are local files of the same bytes): same
kept document ids, same per-source accounting, same bytes in every shard.  See
docs/runners.md ("tested here")."""
from __future__ import annotations

import glob
import hashlib
import json
import shutil
import time
from pathlib import Path

import pyarrow.parquet as pq

from cluster_tools import demo_config, free_port, stop, wait_for_port

HERE = Path(__file__).resolve().parent


def _kept_ids(run: Path) -> list[str]:
    files = sorted(glob.glob(str(run / "stats" / "documents" / "**" / "*.parquet"), recursive=True))
    assert files, f"no per-document stats under {run}/stats"
    ids = []
    for f in files:
        t = pq.read_table(f, columns=["id", "outcome"]).to_pylist()
        ids += [r["id"] for r in t if r["outcome"] == "kept"]
    return sorted(ids)


def _shard_hashes(run: Path) -> dict[str, str]:
    out = {}
    for path in sorted((run / "shards").rglob("*")):
        if path.is_file():
            out[str(path.relative_to(run))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def test_portable_runner_on_external_worker_pool_matches_local(installed, sample, quality_model,
                                                               s3_run, tmp_path):
    cfg = tmp_path / "demo-quality.yaml"
    cfg.write_text(demo_config(str(quality_model)))
    # The launcher is copied out of the (hidden) checkout; it is Beam's local_job_service_main
    # plus the worker count (tests/cluster/job_service.py says why).
    launcher = tmp_path / "job_service.py"
    shutil.copy(HERE / "job_service.py", launcher)
    job_port, pool_port = free_port(), free_port()
    job = installed.popen(["python", str(launcher), "--port", str(job_port)], cwd=tmp_path,
                          log=tmp_path / "job_service.log")
    pool = installed.popen(["python", "-m", "apache_beam.runners.worker.worker_pool_main",
                            "--service_port", str(pool_port)], cwd=tmp_path,
                           log=tmp_path / "worker_pool.log")
    try:
        wait_for_port(job_port, job, "job service")
        wait_for_port(pool_port, pool, "worker pool")
        out = tmp_path / "run"
        t0 = time.perf_counter()
        proc = installed.run(["mtnlg", "curate", "--config", str(cfg), "--input-root", str(sample),
                              "--output", str(out), "--runner", "PortableRunner",
                              "--job_endpoint", f"127.0.0.1:{job_port}",
                              "--environment_type", "EXTERNAL",
                              "--environment_config", f"127.0.0.1:{pool_port}",
                              "--direct_num_workers", "2", "--progress-every", "1"],
                             cwd=tmp_path, timeout=900)
        secs = time.perf_counter() - t0
        assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    finally:
        stop(job)
        stop(pool)
    print(f"\nworker-pool run {secs:.1f}s, local FnApiRunner run (on S3) {s3_run.seconds:.1f}s")
    pool_log = (tmp_path / "worker_pool.log").read_text()
    workers = [line for line in pool_log.splitlines() if "Starting worker with command" in line]
    assert len(workers) == 2, pool_log[-3000:]  # two SDK harness processes served the job
    # live progress from the workers' own counts (the job service has no live metrics)
    progress = [line.split(":")[0] for line in proc.stderr.splitlines() if " documents" in line]
    assert {"read", "dedup", "decontaminate", "tokenize"} <= set(progress), proc.stderr[-3000:]

    a, b = s3_run.info, json.loads((out / "run.json").read_text())
    assert b["runner"] == "PortableRunner" and a["runner"] == "FnApiRunner"
    assert b["accounting_ok"] and a["accounting_ok"]
    assert b["sources"] == a["sources"]
    assert b["totals"] == a["totals"]
    assert b["tokenizer"]["path"] == "pkg://data_manifests/tokenizers/gpt2"
    assert {**b["tokenizer"], "path": None} == {**a["tokenizer"], "path": None}  # the same files
    assert b["quality_model"]["sha256"] == a["quality_model"]["sha256"]
    assert _kept_ids(out) == _kept_ids(s3_run.local)
    shards = _shard_hashes(s3_run.local)
    assert shards and _shard_hashes(out) == shards


def test_mistyped_option_fails_before_any_work(installed, sample, tmp_path):
    out = tmp_path / "run"
    proc = installed.run(["mtnlg", "curate", "--config", "demo", "--input-root", str(sample),
                          "--output", str(out), "--direct_num_worker", "2"], cwd=tmp_path)
    assert proc.returncode == 2
    assert "--direct_num_worker: unknown option" in proc.stderr
    assert "did you mean --direct_num_workers" in proc.stderr
    assert not out.exists()


def test_base_install_has_no_torch_and_ships_its_data(installed):
    import subprocess
    import tarfile
    import zipfile

    listing = subprocess.run([str(installed.bin / "python"), "-m", "pip", "list"],
                             capture_output=True, text=True, check=True).stdout
    names = {line.split()[0].lower() for line in listing.splitlines()[2:] if line.strip()}
    print("\n" + listing)
    assert "mtnlg-data" in names and "apache-beam" in names and "boto3" in names
    assert not names & {"torch", "datasets", "transformers", "safetensors"}
    assert not any(n.startswith("nvidia-") for n in names)
    need = {"data_manifests/models/lid.176.ftz", "data_manifests/tokenizers/gpt2/tokenizer.json",
            "data_manifests/sources/demo.yaml", "data_manifests/blends/mtnlg-530b.yaml",
            "data_manifests/quality/demo.yaml", "data_manifests/eval_tasks/sample/lambada.jsonl",
            "training/configs/demo.yaml"}
    assert need <= set(zipfile.ZipFile(installed.wheel).namelist())
    with tarfile.open(installed.sdist) as t:  # what a Beam worker installs for --setup_file
        members = {m.split("/", 1)[1] for m in t.getnames() if "/" in m}
        pkg_info = t.extractfile(next(m for m in t.getnames() if m.endswith("/PKG-INFO"))).read()
    assert need <= members
    base = [line for line in pkg_info.decode().splitlines()
            if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert base and not any("torch" in line or "datasets" in line for line in base)
    assert not any(p.startswith("mtnlg/dashboard/chromium") for p in members)


def test_base_install_answers_torch_commands_with_the_option_to_install(installed, tmp_path):
    # a curation worker's install has no torch: `mtnlg train` and `mtnlg eval` say which install
    # option they need in one line (their --help works without it), never an ImportError
    for argv, extra in ((["train", "--manifest", "m.json"], "train"),
                        (["eval", "--checkpoint", "ck", "--tasks", "lambada", "--output", "o.json"], "eval")):
        proc = installed.run(["mtnlg", *argv], cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert proc.stderr.strip().splitlines() == [
            f"mtnlg {argv[0]}: error: this command needs torch, which this install lacks: install "
            f"the [{extra}] option (pip install 'mtnlg-data[{extra}]')"], proc.stderr[-2000:]
        assert installed.run(["mtnlg", argv[0], "--help"], cwd=tmp_path).returncode == 0
