"""The curate job on separate Beam workers: Beam's job service + an EXTERNAL worker pool, all
started from the installed wheel's venv with the checkout hidden, every input on S3 (the
session's run, conftest.py ``s3_run``), compared with the in-process FnApiRunner run of `mtnlg
demo` (the same sample, config and quality model bytes; conftest.py ``demo``: the wheel
installed with the README's demo options): same kept document ids, same per-source
accounting, same bytes in every shard.  See docs/runners.md ("tested here")."""
from __future__ import annotations

import glob
import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq

from blending.stamps import STAMP_SUFFIX


def _kept_ids(run: Path) -> list[str]:
    files = sorted(glob.glob(str(run / "stats" / "documents" / "**" / "*.parquet"), recursive=True))
    assert files, f"no per-document stats under {run}/stats"
    ids = []
    for f in files:
        t = pq.read_table(f, columns=["id", "outcome"]).to_pylist()
        ids += [r["id"] for r in t if r["outcome"] == "kept"]
    return sorted(ids)


def _tree_hashes(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root``, by relative path; not the verification stamps the
    demo's blend step wrote beside its shards (blending/stamps.py)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.name.endswith(STAMP_SUFFIX)}


def test_portable_runner_on_external_worker_pool_matches_in_process_run(sample, s3_run, demo):
    assert demo.returncode == 0, demo.stderr[-4000:]
    # the same inputs: both installs wrote the same sample and trained the same model
    assert _tree_hashes(sample) == _tree_hashes(demo.work / "sample")
    local = demo.work / "run"
    print(f"\nworker-pool run on S3 {s3_run.seconds:.1f}s")
    workers = [line for line in s3_run.pool_log.splitlines() if "Starting worker with command" in line]
    assert len(workers) == 2, s3_run.pool_log[-3000:]  # two SDK harness processes served the job
    # live progress from the workers' own counts (the job service has no live metrics)
    progress = [line.split(":")[0] for line in s3_run.stderr.splitlines() if " documents" in line]
    assert {"read", "dedup", "decontaminate", "tokenize"} <= set(progress), s3_run.stderr[-3000:]

    a, b = json.loads((local / "run.json").read_text()), s3_run.info
    assert b["runner"] == "PortableRunner" and a["runner"] == "FnApiRunner"
    assert b["accounting_ok"] and a["accounting_ok"]
    assert b["sources"] == a["sources"]
    assert b["totals"] == a["totals"]
    assert a["tokenizer"]["path"] == "pkg://data_manifests/tokenizers/gpt2"
    assert {**b["tokenizer"], "path": None} == {**a["tokenizer"], "path": None}  # the same files
    assert b["quality_model"]["sha256"] == a["quality_model"]["sha256"]
    assert _kept_ids(s3_run.local) == _kept_ids(local)
    shards = _tree_hashes(local / "shards")
    assert shards and _tree_hashes(s3_run.local / "shards") == shards


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
    # explain runs on it; only a training config (its model sizes the sample stream) needs torch
    proc = installed.run(["mtnlg", "explain", "--run", str(tmp_path), "an-id", "--manifest", "m.json",
                          "--train-config", "demo"], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        "mtnlg explain: error: --train-config: this command needs torch, which this install lacks: "
        "install the [train] option (pip install 'mtnlg-data[train]'); or give --seq-length and "
        "--samples"], proc.stderr[-2000:]
