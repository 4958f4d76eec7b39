"""Object storage for real: a moto S3 server on 127.0.0.1; curate (installed wheel, checkout
hidden) reads the raw corpus, the language model, the quality model, the tokenizer and the
eval-task files from ``s3://`` and writes its RUN there through Beam's S3 filesystem.  Then the
documented path to training: ``mtnlg stage`` (checksums verified), ``mtnlg blend``, ``mtnlg
train``.  Nothing local is read: the local copy of the corpus is deleted before curate runs."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cluster_tools import moto_s3, summary_and_progress

boto3 = pytest.importorskip("boto3")
BUCKET = "corpus"
KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    with moto_s3(tmp_path_factory.mktemp("moto") / "moto.log", BUCKET) as server:
        yield server


def _upload(client, folder: Path, prefix: str) -> int:
    n = 0
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            client.upload_file(str(path), BUCKET, f"{prefix}/{path.relative_to(folder).as_posix()}")
            n += 1
    return n


def _config(path: Path) -> Path:
    """The demo source config, every file it names on s3://."""
    text = (Path(__file__).resolve().parents[2] / "data_manifests" / "sources" / "demo.yaml").read_text()
    text = text.replace("name: demo\n", f"name: demo-s3\ninput_root: s3://{BUCKET}/raw\n")
    text = text.replace("language:\n  allowed: [en]",
                        f"language:\n  model_path: s3://{BUCKET}/models/lid.176.ftz\n  allowed: [en]")
    text = text.replace("  enabled: false ", "  enabled: true ")
    text = text.replace("  model_path: null ", f"  model_path: s3://{BUCKET}/models/quality.bin ")
    text = text.replace("path: pkg://data_manifests/tokenizers/gpt2", f"path: s3://{BUCKET}/tokenizers/gpt2")
    assert text.count("s3://") == 4, text
    path.write_text(text)
    return path


def test_curate_on_s3_then_stage_blend_train(installed, sample, s3, tmp_path):
    endpoint, client = s3
    s3_opts = ["--s3_endpoint_url", endpoint]  # credentials come from the environment
    # Inputs and models go to the bucket, from the installed package's own files (a copy of
    # the sample corpus it wrote for the session).
    raw = tmp_path / "raw"
    shutil.copytree(sample, raw)
    quality = tmp_path / "quality"
    proc = installed.run(["mtnlg", "quality", "train", "--config", "demo", "--input-root", str(raw),
                          "--output", str(quality)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    find = [str(installed.bin / "python"), "-c",
            "import sys; from infra.resources import local_path; print(local_path(sys.argv[1]))"]
    tok = Path(subprocess.check_output(find + ["pkg://data_manifests/tokenizers/gpt2"], text=True).strip())
    lid = Path(subprocess.check_output(find + ["pkg://data_manifests/models/lid.176.ftz"], text=True).strip())
    _upload(client, raw, "raw")
    _upload(client, tok, "tokenizers/gpt2")
    client.upload_file(str(lid), BUCKET, "models/lid.176.ftz")
    client.upload_file(str(quality / "model.bin"), BUCKET, "models/quality.bin")
    shutil.rmtree(raw)  # from here on the corpus exists only in the bucket
    cfg = _config(tmp_path / "s3.yaml")

    run = f"s3://{BUCKET}/runs/r1"
    t0 = time.perf_counter()
    proc = installed.run(["mtnlg", "curate", "--config", str(cfg), "--output", run,
                          "--direct_num_workers=2", *s3_opts], cwd=tmp_path, timeout=1200, **KEYS)
    curate_secs = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    # A short summary (one line per stage, a table per source), plus live progress: at most one
    # line per 30 s of the run when the output is no terminal (pipelines/runfolder/progress.py).
    lines, progress = summary_and_progress(proc.stdout + proc.stderr)
    assert len(lines) < 30, "\n".join(lines)
    assert len(progress) <= curate_secs / 30 + 1, "\n".join(progress)
    info = json.loads(client.get_object(Bucket=BUCKET, Key="runs/r1/run.json")["Body"].read())
    assert info["accounting_ok"]
    for name, s in info["sources"].items():
        assert s["read"] == s["kept"] + sum(s["removed"].values()) + s["dead_lettered"], name
    assert info["totals"]["kept"] > 0 and info["totals"]["read"] > 700
    assert info["tokenizer"]["path"] == f"s3://{BUCKET}/tokenizers/gpt2"
    assert info["quality_model"]["path"] == f"s3://{BUCKET}/models/quality.bin"
    assert any(k.startswith("runs/r1/logs/") for k in _keys(client, "runs/r1/logs/"))
    assert not list(tmp_path.glob("runs")) and not (tmp_path / "r1").exists()

    # The documented path to training: stage (checksums verified), blend, train.
    staged = tmp_path / "staged"
    t0 = time.perf_counter()
    proc = installed.run(["mtnlg", "stage", run, str(staged), *s3_opts], cwd=tmp_path, **KEYS)
    stage_secs = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr[-3000:]
    local = json.loads((staged / "run.json").read_text())
    assert local["tokenizer"]["path"] == "tokenizer" and local["sources"] == info["sources"]
    manifest = tmp_path / "manifest.json"
    proc = installed.run(["mtnlg", "blend", "--spec", "demo", "--run", str(staged),
                          "--output", str(manifest)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Training needs torch ([train]); the base venv has none, so the test's own env trains.
    train = subprocess.run([sys.executable, "-m", "mtnlg.cli", "train", "--manifest", str(manifest),
                            "--config", "demo", "--steps", "2", "--nproc", "1",
                            "--output", str(tmp_path / "train")],
                           cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert train.returncode == 0, train.stdout[-2000:] + train.stderr[-3000:]
    assert "matches the manifest" in train.stdout + train.stderr  # the tokenizer was verified
    print(f"\ncurate on s3 {curate_secs:.1f}s, stage {stage_secs:.1f}s")

    # A shard rewritten in the bucket is caught on the way down.
    key = next(k for k in _keys(client, "runs/r1/shards/") if k.endswith(".bin"))
    body = bytearray(client.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    body[0] ^= 0xFF
    client.put_object(Bucket=BUCKET, Key=key, Body=bytes(body))
    proc = installed.run(["mtnlg", "stage", run, str(tmp_path / "staged2"), *s3_opts],
                         cwd=tmp_path, **KEYS)
    assert proc.returncode == 1 and key.split("runs/r1/", 1)[1] in proc.stderr
    assert not (tmp_path / "staged2" / "run.json").exists()


def _keys(client, prefix: str) -> list[str]:
    out = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return [o["Key"] for o in out]
