"""The launcher's elastic agent with real processes (gloo on CPU):

- two nodes on one machine: two `mtnlg train --nnodes 2 --nproc 1` launchers meeting at a c10d
  rendezvous on 127.0.0.1, a pipeline stage each, train as one process does (losses to 1e-5; the
  layouts' equality with one process, dp x pp x tp on one node, is test_parallel_layouts');
- one job's life: a rank SIGKILLed mid-run, the agent restarts the workers (`--max-restarts
  1`), which resume from the newest complete, verified checkpoint without any flag (a
  half-written checkpoint folder in the way is not chosen); later SIGTERM to the launcher (a
  preemption): the agent passes it to every rank, the ranks checkpoint after their current step,
  the launcher waits and nothing is left running.  Every step's loss, gradient norm and data
  position equal an uninterrupted one-process run's, each step is logged once, and the two
  ranks' last checkpoint continues in one process as that run does, with its logits.
  (One launch for both: a launch costs ~10 s of CPU on the 2-core CI machine.)
"""

import getpass
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
import torch

import spawn
from training_fixtures import small_tokenizer, write_manifest
from training.checkpoint import sealed_steps
from training.config import TrainConfig
from training.trainer import Trainer

ROOT = Path(__file__).parents[2]
SETTINGS = {"model.name": "tiny", "seq_length": 32, "global_batch_size": 4,
            "micro_batch_size": 1, "lr": 3e-3, "warmup_tokens": 0, "decay_tokens": 20 * 4 * 32,
            "dtype": "float32", "seed": 7, "tensorboard": False, "validation.batches": 0}


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    # a 320-token vocabulary: GPT-2's costs ~0.27 s of CPU more per step (small_tokenizer)
    blend = tmp_path_factory.mktemp("blend")
    return write_manifest(str(blend), repeat=5, tokenizer_path=small_tokenizer(str(blend / "tokenizer")))


def launcher(manifest: str, out: Path, *flags: str, temp: str | None = None,
             **settings) -> subprocess.Popen:
    """``mtnlg train``'s launcher in a new process (``temp``: its temp folder)."""
    sets = [f"--set={k}={v}" for k, v in {**SETTINGS, **settings}.items()]
    return subprocess.Popen([sys.executable, "-m", "training.launch", "--manifest", manifest,
                             "--output", str(out), *flags, *sets], cwd=ROOT,
                            env=spawn.clean_env(**({"TMPDIR": temp} if temp else {})),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def metrics(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()
            if '"loss"' in line]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Output:
    """A launcher's stdout + stderr, read while it runs (a thread drains the pipe)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc, self.lines = proc, []
        self.reader = threading.Thread(target=lambda: self.lines.extend(iter(proc.stdout.readline, "")),
                                       daemon=True)
        self.reader.start()

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def wait_for(self, ready, what: str, timeout: float = 150) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline and self.proc.poll() is None:
            try:
                if ready():
                    return
            except (OSError, ValueError, IndexError):  # a metrics file being rewritten or written
                pass
            time.sleep(0.05)
        raise AssertionError(f"{what}: not seen within {timeout} s\n{self.text[-3000:]}")

    def finish(self, timeout: float = 120) -> str:
        try:
            self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        self.reader.join(timeout=10)
        return self.text


@pytest.mark.slow
def test_two_nodes_on_one_machine_train_as_one_process(tmp_path, manifest):
    # one rank per node (a pipeline stage each): what crosses the nodes is the rendezvous and the
    # stage-to-stage traffic; tp and dp inside a node are the layout tests'
    layout = dict(tp=1, pp=2, dp=1, train_steps=3)
    endpoint = f"127.0.0.1:{free_port()}"
    temp = tempfile.mkdtemp(prefix="nodes-")  # short: multiprocessing puts a socket there
    nodes = [launcher(manifest, tmp_path / "two-nodes", "--nnodes", "2", "--nproc", "1",
                      "--rdzv-endpoint", endpoint, "--rdzv-id", "two-nodes-test", temp=temp,
                      **layout)
             for _ in range(2)]
    outputs = [Output(n) for n in nodes]
    logs = [o.finish(timeout=180) for o in outputs]
    assert [n.returncode for n in nodes] == [0, 0], logs[0][-3000:] + logs[1][-3000:]
    assert any("dp 1 x pp 2 x tp 1 = 2 ranks" in log for log in logs), logs[0][-3000:]
    one_rows = Trainer.from_manifest(TrainConfig.from_settings(
        {**SETTINGS, "train_steps": 3, "checkpoint.enabled": False,
         "output_dir": str(tmp_path / "one-process")}), manifest).train()
    two_rows = metrics(tmp_path / "two-nodes")
    assert [r["step"] for r in two_rows] == [r["step"] for r in one_rows] == [1, 2, 3]
    # The losses agree (measured: bit for bit); the gradient norm is a float32 sum of squares,
    # summed per stage here and per tensor in one process: measured 1.5e-7 apart, relative, with
    # this 320-token vocabulary (up to 7e-5 with GPT-2's 3.2M embedding values and tp 2).
    for a, b in zip(two_rows, one_rows):
        assert abs(a["loss"] - b["loss"]) < 1e-5, (a["step"], a["loss"], b["loss"])
        assert a["grad_norm"] == pytest.approx(b["grad_norm"], rel=2e-4), (a["step"], a["grad_norm"])
        assert a["consumed_tokens"] == b["consumed_tokens"]
    assert sealed_steps(str(tmp_path / "two-nodes" / "checkpoints")) == [3]
    # the launchers left nothing in their temp folder but torch's compile cache, kept by design
    # (torch's elastic agent used to leave a torchelastic_* folder per launch)
    left = set(os.listdir(temp))
    assert left <= {f"torchinductor_{getpass.getuser()}"}, left


def worker_pid(launcher_pid: int, local_rank: int, nproc: int = 2) -> int | None:
    """A rank of the launcher: its grandchildren (the agent's forkserver forks them), local
    rank 0 first."""
    levels = spawn.descendants(launcher_pid)
    ranks = levels[1] if len(levels) > 1 else []
    return ranks[local_rank] if len(ranks) == nproc else None


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_killed_rank_restarts_and_resumes_then_sigterm_checkpoints_and_leaves_nothing(tmp_path, manifest):
    """One job's life on a cluster: a rank dies, the agent restarts the workers, which resume
    from the newest verified checkpoint; later the job is preempted (SIGTERM to the launcher),
    the ranks checkpoint after their current step and nothing is left running.  The run
    equals an uninterrupted one-process run step for step, and its last checkpoint continues
    in one process exactly as that run does."""
    # sized for 40 steps (the sample order depends on the run length); stopped long before
    steps, every, out = 40, 3, tmp_path / "restarted"
    # a save cut short: a step folder without its checksums.json seal, newer than any real one
    half = out / "checkpoints" / "step-00000999"
    half.mkdir(parents=True)
    (half / "__0_0.distcp").write_bytes(b"\0" * 100)
    run = launcher(manifest, out, "--nproc", "2", "--max-restarts", "1",
                   **{"train_steps": steps, "checkpoint.interval": every})
    output = Output(run)

    # the checkpoint of step 3 is sealed once the step-5 line is written
    output.wait_for(lambda: (out / "metrics.jsonl").exists() and len(metrics(out)) >= every + 2,
                    "5 steps")
    killed = worker_pid(run.pid, local_rank=1)
    assert killed is not None, output.text[-3000:]
    os.kill(killed, signal.SIGKILL)
    output.wait_for(lambda: "resuming from" in output.text, "the restart")
    resumed_from = int(output.text.split("resuming from ")[1].split("step-")[1][:8])
    assert every <= resumed_from < steps and resumed_from % every == 0, output.text[-3000:]
    # the restarted ranks train two steps past the checkpoint (their metrics rows: the file,
    # cut back to the checkpoint's step when they start, written after the restart was seen)
    seen = time.time()
    output.wait_for(lambda: (out / "metrics.jsonl").stat().st_mtime > seen
                    and metrics(out)[-1]["step"] >= resumed_from + 2, "steps after the restart")
    levels = spawn.descendants(run.pid)  # the agent's forkserver, the 2 new ranks
    below = [pid for level in levels for pid in level]
    assert len(levels) >= 2 and len(levels[1]) == 2 and killed not in levels[1], levels
    run.send_signal(signal.SIGTERM)
    log = output.finish()
    assert "dp 2 x pp 1 x tp 1 = 2 ranks" in log, log[-4000:]
    assert "restart 1 after a failure" in log, log[-4000:]
    assert "SIGTERM: the workers were stopped" in log, log[-3000:]
    assert run.returncode == 128 + signal.SIGTERM, log[-3000:]
    # every rank ended by itself after its checkpoint: the agent SIGKILLed none of them
    assert "forcefully exiting" not in log, log[-3000:]
    time.sleep(1)
    assert [pid for pid in below if _alive(pid)] == [], log[-3000:]  # no rank, no forkserver left

    rows = metrics(out)
    stopped = rows[-1]["step"]
    assert resumed_from + 2 <= stopped < steps
    assert [r["step"] for r in rows] == list(range(1, stopped + 1))  # each step logged once
    sealed = sealed_steps(str(out / "checkpoints"))  # the half-written folder is none of them
    assert sealed[-1] == stopped and resumed_from in sealed and 999 not in sealed, sealed

    def trainer(name: str) -> Trainer:
        t = Trainer.from_manifest(TrainConfig.from_settings(
            {**SETTINGS, "train_steps": steps, "checkpoint.enabled": False,
             "output_dir": str(tmp_path / name)}), manifest)
        t.cfg.schedule.train_steps = stopped + 2
        return t
    full = trainer("full")
    reference = full.train()
    for a, b in zip(rows, reference):  # 2 data-parallel ranks = 1 process
        assert abs(a["loss"] - b["loss"]) < 1e-5, (a["step"], a["loss"], b["loss"])
        assert abs(a["grad_norm"] - b["grad_norm"]) < 1e-5, (a["step"], a["grad_norm"])
        assert a["consumed_tokens"] == b["consumed_tokens"]
        assert a["source_tokens"] == b["source_tokens"]
    assert reference[-1]["loss"] < reference[0]["loss"]

    # the two ranks' last checkpoint continues in one process as the uninterrupted run does
    resumed = trainer("resumed")
    resumed.load_checkpoint(str(out / "checkpoints" / f"step-{stopped:08d}"))
    rest = resumed.train()
    assert [r["step"] for r in rest] == [stopped + 1, stopped + 2]
    for a, b in zip(rest, reference[stopped:]):
        assert abs(a["loss"] - b["loss"]) < 1e-5, (a["loss"], b["loss"])
    assert resumed.loader.consumed_samples == full.loader.consumed_samples == (stopped + 2) * 4
    # ... and computes its logits (parameters are not compared one by one: Adam turns 1e-9
    # gradient noise on the key biases, whose exact gradient is 0, into full lr steps, which
    # the softmax then ignores)
    tokens = torch.randint(0, 320, (2, 32), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        diff = (resumed.model(tokens) - full.model(tokens)).abs().max().item()
    assert diff < 1e-4, diff
