"""Start this node's ranks with torch's elastic agent (``torch.distributed.launcher.api``, the
library behind ``torchrun``), from inside ``mtnlg train``.

    # one node, 2 ranks (a c10d rendezvous on a free local port, as `torchrun --standalone`)
    node = NodeLaunch(nproc_per_node=2)
    # node i of 2, every node running the same command (c10d rendezvous hosted by the first
    # agent that binds HOST:PORT; the others join it)
    node = NodeLaunch(nproc_per_node=8, nnodes=2, rdzv_endpoint="HOST:29500", rdzv_id="job-7")
    # each rank: training.launch.run_worker(argv), i.e. `mtnlg train ARGV`
    exit_code = run_node(node, ["--manifest", "M", ...], run_worker)

What the agent does for us, instead of a hand-written relaunch:
- rendezvous: the agents agree on the node ranks and the world size; every worker gets RANK,
  LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT (the agents' store) and TORCHELASTIC_RESTART_COUNT;
- restarts: when a worker exits with an error or a signal (SIGKILL, a crashed rank), the agent
  stops this node's other workers (SIGTERM), rendezvouses again and starts a new set, up to
  ``max_restarts`` times; the other nodes' agents see the new round and restart theirs. The
  workers resume from the run's newest verified checkpoint (``Trainer.resume``), their process
  group under a store prefix of the new round's own (``training.worker``);
- signals: SIGTERM/SIGINT/SIGHUP/SIGQUIT to this process are passed to every worker of the node;
  the agent waits ``shutdown_timeout_s`` for them (the ranks checkpoint after the current step)
  before it SIGKILLs what is left, so nothing outlives the launcher.

The workers are forked from a multiprocessing forkserver that imported torch and the trainer
once (``WORKER_PRELOAD``), not started as fresh interpreters that each import them: a node's
ranks, and every restarted set, skip those imports (bench/RESULTS.md, "Start-up: ranks forked
from a forkserver vs fresh interpreters"; more where the packages live on a shared filesystem and
every rank of every node reads them at once). The forkserver holds no
thread, CUDA context or process group, so forking from it is as safe as a fresh interpreter;
it exits with the launcher. A rank's command line is the forkserver's
(``multiprocessing.forkserver``); its parent is the forkserver, a child of the launcher.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import tempfile
import uuid
from dataclasses import dataclass

log = logging.getLogger(__name__)

# Imported by the forkserver before it forks any rank: everything a rank imports to train,
# including what torch imports lazily on first use (dynamo: the first call of a function torch
# wraps with `_disable_dynamo`, e.g. the model's init on the meta device; the parallel APIs:
# parallelize; tensorboard: the metrics logger). Otherwise every rank, and every rank again
# after a restart, imports them itself (dynamo the largest part).
WORKER_PRELOAD = ("training.launch", "training.trainer", "training.checkpoint", "torch._dynamo",
                  "torch.distributed.pipelining", "torch.distributed.fsdp",
                  "torch.distributed._composable.replicate_with_fsdp",
                  "torch.distributed.checkpoint._fsspec_filesystem", "torch.utils.tensorboard")


@dataclass
class NodeLaunch:
    """How this node joins the job (torchrun's flags of the same names)."""

    nproc_per_node: int
    """Worker processes on this node (one per GPU on a GPU node)."""
    nnodes: int = 1
    """Nodes in the job; every node runs the same command."""
    rdzv_endpoint: str | None = None
    """HOST:PORT of the c10d rendezvous, the same on every node; None with one node: a free port
    on 127.0.0.1 (torchrun --standalone)."""
    rdzv_id: str | None = None
    """Job id shared by the nodes' agents (e.g. the scheduler's job id); None with one node: a
    fresh uuid. Required with several nodes."""
    max_restarts: int = 0
    """Worker-group restarts after a failure before the job gives up."""
    shutdown_timeout_s: int = 30
    """Seconds the agent waits for the workers after a SIGTERM (time to checkpoint) before
    SIGKILL."""
    local_addr: str | None = None
    """Address other nodes reach this node at (torchrun --local-addr); None: its hostname."""

    def __post_init__(self):
        if self.nproc_per_node < 1:
            raise ValueError(f"--nproc: must be >= 1 (got {self.nproc_per_node})")
        if self.nnodes < 1:
            raise ValueError(f"--nnodes: must be >= 1 (got {self.nnodes})")
        if self.max_restarts < 0:
            raise ValueError(f"max_restarts: must be >= 0 (got {self.max_restarts})")
        if self.shutdown_timeout_s < 0:
            raise ValueError(f"shutdown_timeout_s: must be >= 0 (got {self.shutdown_timeout_s})")
        if self.nnodes > 1 and not self.rdzv_endpoint:
            raise ValueError("--rdzv-endpoint: required with --nnodes > 1 (HOST:PORT of the "
                             "rendezvous, the same on every node)")
        if self.nnodes > 1 and not self.rdzv_id:
            raise ValueError("--rdzv-id: required with --nnodes > 1 (a job id shared by the "
                             "nodes, e.g. $SLURM_JOB_ID)")
        if self.rdzv_endpoint:
            host, sep, port = self.rdzv_endpoint.rpartition(":")
            if not sep or not host or not port.isdigit():
                raise ValueError(f"--rdzv-endpoint: expected HOST:PORT (got "
                                 f"{self.rdzv_endpoint!r})")

    def launch_config(self, log_dir: str | None = None):
        """torch's launch configuration; ``log_dir``: where the agent keeps its per-attempt
        folders (the workers' error files), by default a new folder in the temp dir."""
        import dataclasses

        from torch.distributed.elastic.multiprocessing.api import DefaultLogsSpecs
        from torch.distributed.launcher.api import LaunchConfig

        extra = {}
        if "shutdown_timeout" in {f.name for f in dataclasses.fields(LaunchConfig)}:
            extra["shutdown_timeout"] = self.shutdown_timeout_s
        elif self.shutdown_timeout_s != 30:  # torch before the option: fixed at 30 s
            log.warning("this torch's elastic agent waits a fixed 30 s after SIGTERM; "
                        "launch.shutdown_timeout_s %d is not applied", self.shutdown_timeout_s)
        return LaunchConfig(
            min_nodes=self.nnodes, max_nodes=self.nnodes, nproc_per_node=self.nproc_per_node,
            rdzv_backend="c10d", rdzv_endpoint=self.rdzv_endpoint or "localhost:0",
            run_id=self.rdzv_id or str(uuid.uuid4()), max_restarts=self.max_restarts,
            monitor_interval=0.1, start_method="forkserver", local_addr=self.local_addr,
            logs_specs=DefaultLogsSpecs(log_dir=log_dir), **extra)


def run_node(node: NodeLaunch, worker_argv: list[str], worker, env: dict[str, str] | None = None,
             preload: tuple[str, ...] = WORKER_PRELOAD, what: str = "training") -> int:
    """Run ``worker(WORKER_ARGV)`` (`mtnlg train`'s: ``training.launch.run_worker``) as this
    node's workers under the elastic agent and return the launcher's exit status: 0 when every
    worker succeeded, 1 when the workers failed after ``max_restarts`` restarts, 128 + N when
    signal N stopped the job (the workers got it first). ``env`` is added to the environment
    the workers inherit; ``preload``: the modules the forkserver imports before it forks a
    worker (``worker`` must be a module-level function of one of them); ``what`` names the job
    in the log (`mtnlg eval --nproc` runs its ranks here too)."""
    import multiprocessing.util

    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import elastic_launch

    os.environ.update(env or {})
    # The agent's store is shared across rendezvous rounds (torch's default, as under a
    # cluster's torchrun): the workers' process group keys it by the round itself
    # (training.worker.round_store), so no variable is needed here or from the user.
    multiprocessing.set_forkserver_preload(list(preload))
    # The agent's per-attempt folders live as long as the launch: torch's default, a new
    # torchelastic_* folder in the temp dir, stayed there after every launch. A file it cannot
    # remove does not turn a finished launch into an error.
    logs = tempfile.TemporaryDirectory(prefix="mtnlg-elastic-", ignore_cleanup_errors=True)
    # A worker that raised leaves its traceback in a pytorch-errorfile-*.pickle that torch's
    # multiprocessing names with `tempfile` in this process and never removes (one per failed
    # rank and restart): made inside the launch's folder. multiprocessing's own temp folder (the
    # forkserver's socket, kept for this process's life) is made in the real temp dir first.
    multiprocessing.util.get_temp_dir()
    with logs as log_dir, _tempdir(log_dir):
        config = node.launch_config(log_dir)
        log.info("elastic agent: %d node(s) x %d worker(s), rendezvous c10d %s (id %s), max "
                 "restarts %d", node.nnodes, node.nproc_per_node, config.rdzv_endpoint,
                 config.run_id, node.max_restarts)
        try:
            elastic_launch(config, worker)(list(worker_argv))
        except ChildFailedError as e:
            rank, first = min(e.failures.items()) if e.failures else (None, None)
            why = (f"rank {rank} (local rank {first.local_rank}) exited with "
                   f"{_describe_exit(first.exitcode)}") if first else "workers failed"
            log.error("%s failed after %d restart(s): %s", what, node.max_restarts, why)
            return 1
        except SignalException as e:
            log.warning("%s: the workers were stopped%s", e.sigval.name,
                        " (they checkpoint after the current step)" if what == "training" else "")
            return 128 + int(e.sigval)
    return 0


@contextlib.contextmanager
def _tempdir(path: str):
    """``tempfile``'s folder for this process is ``path`` inside the block."""
    previous, tempfile.tempdir = tempfile.tempdir, path
    try:
        yield
    finally:
        tempfile.tempdir = previous


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"status {code}"

