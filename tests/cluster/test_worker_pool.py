"""The curate job on separate Beam workers: Beam's job service + an EXTERNAL worker pool, all
started from the installed wheel's venv with the checkout hidden, and the result compared with
the local FnApiRunner run of the same installed package: same kept document ids, same
per-source accounting, same bytes in every shard.  See docs/runners.md ("tested here")."""
from __future__ import annotations

import glob
import hashlib
import json
import shutil
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cluster_tools import free_port, stop, summary_and_progress, wait_for_port

HERE = Path(__file__).resolve().parent


def _curate(installed, sample: Path, out: Path, *beam_args: str):
    t0 = time.perf_counter()
    proc = installed.run(["mtnlg", "curate", "--config", "demo", "--input-root", str(sample),
                          "--output", str(out), *beam_args], cwd=out.parent, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    return proc, time.perf_counter() - t0


def _kept_ids(run: Path) -> list[str]:
    files = sorted(glob.glob(str(run / "stats" / "documents*.parquet"))
                   + glob.glob(str(run / "stats" / "documents" / "**" / "*.parquet"), recursive=True))
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


@pytest.fixture(scope="module")
def local_run(installed, sample, tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "run"
    proc, secs = _curate(installed, sample, out, "--direct_num_workers=2")
    return out, proc, secs


def test_local_run_prints_a_short_summary(local_run):
    run, proc, secs = local_run
    lines, progress = summary_and_progress(proc.stdout + proc.stderr)
    assert len(lines) < 30, "\n".join(lines)
    assert len(progress) <= secs / 30 + 1, "\n".join(progress)  # a non-terminal: <= 1 per 30 s
    assert any(line.split()[:1] == ["tokenize"] for line in lines)  # one line per stage
    assert lines[-1].startswith(f"wrote {run}/run.json")
    assert (run / "logs" / "curate.log").stat().st_size > 0  # Beam's INFO lines went there


def test_local_run_accounts_for_every_planted_record(local_run, sample):
    """2 worker processes (every DoFn and config object pickled): every record the sample
    planted is read once, each malformed one is a dead letter, and the counters add up."""
    run, _, _ = local_run
    info = json.loads((run / "run.json").read_text())
    truth = json.loads((sample / "ground_truth.json").read_text())
    assert info["accounting_ok"] and info["runner"] == "FnApiRunner"
    assert info["pipeline_options"]["direct_running_mode"] == "multi_processing"
    for name, s in info["sources"].items():
        assert s["read"] == s["kept"] + sum(s["removed"].values()) + s["dead_lettered"], name
    assert info["totals"]["read"] == truth["totals"]["records"]  # the truncated zst counts as one
    by_source = truth["totals"]["by_source"]
    for name in ("realnews", "cc_stories", "cc_2020_50", "cc_2021_04"):
        assert info["sources"][name]["read"] == by_source[name]["records"], name
    # Each planted malformed record is a dead letter (Pile lines may land under pile_other).
    assert info["totals"]["dead_lettered"] == truth["totals"]["malformed"]

    rows = pq.read_table(run / "stats" / "documents", columns=["id", "outcome"]).to_pylist()
    parsed = {r["id"] for r in rows if r["outcome"] != "dead_letter"}
    planted = {i for i, c in truth["primary"].items() if c != "malformed"}
    readable = {i for i in planted if not i.startswith("pile/")}
    # Documents inside the truncated zst are lost with it (one dead letter); all others are ids.
    lost = sum(1 for m in truth["malformed"] if m["kind"] == "truncated_zstd") * 50
    assert len(readable - parsed) <= lost
    assert {i for i in parsed if not i.startswith("pile_other/")} <= planted

    counters = json.loads((run / "stats" / "counters.json").read_text())["counters"]
    read = sum(c["value"] for c in counters if c["stage"] == "read" and c["outcome"] == "read")
    dead = sum(c["value"] for c in counters if c["stage"] == "read" and c["outcome"] == "dead_letter")
    assert read + dead == info["totals"]["read"]
    assert any(c["stage"] == "language" and c["reason"] == "wrong_language" for c in counters)


def test_portable_runner_on_external_worker_pool_matches_local(installed, sample, local_run,
                                                               tmp_path):
    local, _, local_secs = local_run
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
        proc, secs = _curate(installed, sample, out, "--runner", "PortableRunner",
                             "--job_endpoint", f"127.0.0.1:{job_port}",
                             "--environment_type", "EXTERNAL",
                             "--environment_config", f"127.0.0.1:{pool_port}",
                             "--direct_num_workers", "2", "--progress-every", "1")
    finally:
        stop(job)
        stop(pool)
    print(f"\nworker-pool run {secs:.1f}s, local FnApiRunner run {local_secs:.1f}s")
    pool_log = (tmp_path / "worker_pool.log").read_text()
    workers = [line for line in pool_log.splitlines() if "Starting worker with command" in line]
    assert len(workers) == 2, pool_log[-3000:]  # two SDK harness processes served the job
    # live progress from the workers' own counts (the job service has no live metrics)
    progress = [line.split(":")[0] for line in proc.stderr.splitlines() if " documents" in line]
    assert {"read", "dedup", "decontaminate", "tokenize"} <= set(progress), proc.stderr[-3000:]

    a, b = (json.loads((r / "run.json").read_text()) for r in (local, out))
    assert b["runner"] == "PortableRunner" and a["runner"] == "FnApiRunner"
    assert b["accounting_ok"] and a["accounting_ok"]
    assert b["sources"] == a["sources"]
    assert b["totals"] == a["totals"]
    assert b["tokenizer"] == a["tokenizer"]
    assert b["tokenizer"]["path"] == "pkg://data_manifests/tokenizers/gpt2"
    assert _kept_ids(out) == _kept_ids(local)
    shards = _shard_hashes(local)
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
