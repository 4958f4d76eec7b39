"""The launcher's elastic agent with real processes (gloo on CPU):

- two nodes on one machine: two `mtnlg train --nnodes 2 --nproc 1` launchers meeting at a c10d
  rendezvous on 127.0.0.1, a pipeline stage each, train as one process does (losses to 1e-5; the
  layouts' equality with one process, dp x pp x tp on one node, is test_parallel_layouts');
- a rank SIGKILLed mid-run: the agent restarts the workers (`--max-restarts 1`), which resume
  from the newest complete, verified checkpoint without any flag (a half-written checkpoint
  folder in the way is not chosen); every step's loss, gradient norm and the data position
  equal an uninterrupted one-process run's, each step is logged once, and the two ranks' last
  checkpoint loads into one process that computes that run's logits.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import spawn
from training_fixtures import write_manifest
from training.checkpoint import sealed_steps
from training.config import TrainConfig
from training.trainer import Trainer

ROOT = Path(__file__).parents[2]
SETTINGS = {"model.name": "tiny", "seq_length": 32, "global_batch_size": 4,
            "micro_batch_size": 1, "lr": 3e-3, "warmup_tokens": 0, "decay_tokens": 20 * 4 * 32,
            "dtype": "float32", "seed": 7, "tensorboard": False, "validation.batches": 0}


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    return write_manifest(str(tmp_path_factory.mktemp("blend")), repeat=5)


def launcher(manifest: str, out: Path, *flags: str, **settings) -> subprocess.Popen:
    sets = [f"--set={k}={v}" for k, v in {**SETTINGS, **settings}.items()]
    return subprocess.Popen([sys.executable, "-m", "training.launch", "--manifest", manifest,
                             "--output", str(out), *flags, *sets], cwd=ROOT,
                            env=spawn.clean_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(proc: subprocess.Popen, timeout: float = 180) -> str:
    try:
        log = proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        log = proc.communicate()[0]
        raise AssertionError(f"launcher did not finish in {timeout} s:\n{log[-4000:]}")
    assert proc.returncode == 0, log[-4000:]
    return log


def metrics(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()
            if '"loss"' in line]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_nodes_on_one_machine_train_as_one_process(tmp_path, manifest):
    # one rank per node (a pipeline stage each): what crosses the nodes is the rendezvous and the
    # stage-to-stage traffic; tp and dp inside a node are the layout tests'
    layout = dict(tp=1, pp=2, dp=1, train_steps=3)
    endpoint = f"127.0.0.1:{free_port()}"
    nodes = [launcher(manifest, tmp_path / "two-nodes", "--nnodes", "2", "--nproc", "1",
                      "--rdzv-endpoint", endpoint, "--rdzv-id", "two-nodes-test", **layout)
             for _ in range(2)]
    logs = [finish(n) for n in nodes]
    assert any("dp 1 x pp 2 x tp 1 = 2 ranks" in log for log in logs), logs[0][-3000:]
    one_rows = Trainer.from_manifest(TrainConfig.from_settings(
        {**SETTINGS, "train_steps": 3, "checkpoint.enabled": False,
         "output_dir": str(tmp_path / "one-process")}), manifest).train()
    two_rows = metrics(tmp_path / "two-nodes")
    assert [r["step"] for r in two_rows] == [r["step"] for r in one_rows] == [1, 2, 3]
    # The losses agree (measured: bit for bit); the gradient norm is a float32 sum of squares
    # over gradients (3.2M in the tied embedding), summed per stage here and per tensor in one
    # process: measured up to 7e-5 apart, relative (with tp 2).
    for a, b in zip(two_rows, one_rows):
        assert abs(a["loss"] - b["loss"]) < 1e-5, (a["step"], a["loss"], b["loss"])
        assert a["grad_norm"] == pytest.approx(b["grad_norm"], rel=2e-4), (a["step"], a["grad_norm"])
        assert a["consumed_tokens"] == b["consumed_tokens"]
    assert sealed_steps(str(tmp_path / "two-nodes" / "checkpoints")) == [3]


def worker_pid(launcher_pid: int, local_rank: int, nproc: int = 2) -> int | None:
    """A rank of the launcher: its grandchildren (the agent's forkserver forks them), local
    rank 0 first."""
    levels = spawn.descendants(launcher_pid)
    ranks = levels[1] if len(levels) > 1 else []
    return ranks[local_rank] if len(ranks) == nproc else None


@pytest.mark.slow
def test_killed_rank_restarts_and_resumes_from_the_newest_checkpoint(tmp_path, manifest):
    steps, every, out = 8, 3, tmp_path / "restarted"
    # a save cut short: a step folder without its checksums.json seal, newer than any real one
    half = out / "checkpoints" / "step-00000999"
    half.mkdir(parents=True)
    (half / "__0_0.distcp").write_bytes(b"\0" * 100)
    run = launcher(manifest, out, "--nproc", "2", "--max-restarts", "1",
                   **{"train_steps": steps, "checkpoint.interval": every})
    deadline = time.time() + 150
    while time.time() < deadline and run.poll() is None:
        if (out / "metrics.jsonl").exists() and len(metrics(out)) >= every + 2:
            break  # the checkpoint of step 3 is sealed: the step-5 line is written after it
        time.sleep(0.05)
    pid = worker_pid(run.pid, local_rank=1)
    assert run.poll() is None and pid is not None, run.communicate()[0][-3000:]
    os.kill(pid, signal.SIGKILL)
    log = finish(run)
    assert "dp 2 x pp 1 x tp 1 = 2 ranks" in log, log[-4000:]
    assert "restart 1 after a failure" in log, log[-4000:]
    resumed_from = int(log.split("resuming from ")[1].split("step-")[1][:8])
    assert every <= resumed_from < steps and resumed_from % every == 0

    full = Trainer.from_manifest(TrainConfig.from_settings(
        {**SETTINGS, "train_steps": steps, "checkpoint.enabled": False,
         "output_dir": str(tmp_path / "full")}), manifest)
    reference = full.train()
    rows = metrics(out)
    assert [r["step"] for r in rows] == list(range(1, steps + 1))  # each step logged once
    for a, b in zip(rows, reference):  # 2 data-parallel ranks = 1 process
        assert abs(a["loss"] - b["loss"]) < 1e-5, (a["step"], a["loss"], b["loss"])
        assert abs(a["grad_norm"] - b["grad_norm"]) < 1e-5, (a["step"], a["grad_norm"])
        assert a["consumed_tokens"] == b["consumed_tokens"]
        assert a["source_tokens"] == b["source_tokens"]
    assert reference[-1]["loss"] < reference[0]["loss"]
    final = out / "checkpoints" / f"step-{steps:08d}"
    assert steps in sealed_steps(str(out / "checkpoints"))
    again = Trainer.from_manifest(TrainConfig.from_settings(
        {**SETTINGS, "train_steps": steps, "output_dir": str(tmp_path / "again")}), manifest)
    again.load_checkpoint(str(final))
    assert again.loader.consumed_samples == full.loader.consumed_samples == steps * 4
    # the two ranks' model computes what the one process's does (parameters are not compared
    # one by one: Adam turns 1e-9 gradient noise on the key biases, whose exact gradient is 0,
    # into full lr steps, which the softmax then ignores)
    tokens = torch.randint(0, 50257, (2, 32), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        diff = (again.model(tokens) - full.model(tokens)).abs().max().item()
    assert diff < 1e-4, diff
