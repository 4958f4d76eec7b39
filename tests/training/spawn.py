"""N gloo ranks on this machine for the multi-process tests, forked from an interpreter that has
imported torch and the test's worker once.

    python tests/training/spawn.py NPROC tests/training/layout_worker.py ARGS...

Each rank gets the environment torchrun gives it (RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and runs the worker's ``main()`` with ``ARGS`` as
its command line, so the trainer initialises its process group exactly as under torchrun. What
is saved is torchrun's agent and an import of torch per rank. `mtnlg train --nproc` itself goes
through torchrun's agent, tested in test_elastic_launch.py.
Forking after `import torch` is safe here: no thread exists yet (OMP_NUM_THREADS=1, no process
group). A rank that dies (exception or signal) fails the whole run with its traceback or signal
name, exit status 1.

Tests go one step further with ``run()``: one rank server per test process (``--serve``) imports
torch, the lazily imported parts of the trainer and each worker once, and forks every job from
that unchanged state (a job leader, which forks the ranks as above). That saves the ~5 s of CPU
an interpreter takes to get there, once per multi-process test.
"""
from __future__ import annotations

import faulthandler
import gc
import importlib
import importlib.util
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading

import torch.multiprocessing as mp

from training.elastic import WORKER_PRELOAD

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# torchrun's variables: a job gets its own, never the caller's
TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                "MASTER_PORT")


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment for a multi-process job: without torchrun's variables, one
    OpenMP thread per process, Python stacks printed on a crash, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in TORCHRUN_ENV}
    env.update(OMP_NUM_THREADS="1", PYTHONFAULTHANDLER="1", **extra)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(local_rank: int, nproc: int, port: int, worker, argv: list[str]) -> None:
    os.environ.update(RANK=str(local_rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(nproc),
                      LOCAL_WORLD_SIZE=str(nproc), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    sys.argv = [worker.__file__, *argv]
    # A rank that crashes in native code (the SIGSEGV once seen inside gloo's TCP transport on a
    # loaded CI box, never reproduced since) prints every thread's Python stack before it dies.
    faulthandler.enable(all_threads=True)
    worker.main()


# What a rank of the trainer imports, lazily imported parts of torch included: the launcher's
# forkserver list, imported once here instead of once per rank (1.0-1.3 s of CPU each).
WARM = WORKER_PRELOAD

_workers: dict[str, object] = {}


def _children_by_parent() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])  # after "pid (comm) state"
            children.setdefault(ppid, []).append(int(entry))
    return children


def descendants(pid: int) -> list[list[int]]:
    """The live processes below ``pid``, level by level (children, grandchildren, ...), each
    level in pid order, from /proc. The ranks of `mtnlg train --nproc N` are the launcher's
    grandchildren (its elastic agent's forkserver forks them, local rank 0 first)."""
    children, levels = _children_by_parent(), []
    level = sorted(children.get(pid, []))
    while level:
        levels.append(level)
        level = sorted(c for p in level for c in children.get(p, []))
    return levels


def _load_worker(path: str):
    path = os.path.abspath(path)
    if path not in _workers:
        spec = importlib.util.spec_from_file_location(f"spawned_worker_{len(_workers)}", path)
        worker = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(worker)
        _workers[path] = worker
    return _workers[path]


def run_ranks(nproc: int, path: str, argv: list[str]) -> int:
    """Fork ``nproc`` ranks of the worker at ``path`` from this process; 0 when all succeed."""
    worker = _load_worker(path)
    for name in WARM:
        importlib.import_module(name)
    if threading.active_count() != 1:  # a thread would not survive the fork in the children
        print(f"spawn: {threading.active_count()} threads before the fork", file=sys.stderr)
        return 1
    try:
        mp.start_processes(_rank, args=(nproc, _free_port(), worker, argv), nprocs=nproc,
                           start_method="fork")
    except mp.ProcessExitedException as e:  # e.g. "process 3 terminated with signal SIGSEGV"
        print(f"spawn: {e}", file=sys.stderr)
        return 1
    except mp.ProcessRaisedException as e:
        print(f"spawn: a rank raised:\n{e}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve"]:
        return serve()
    return run_ranks(int(argv[0]), argv[1], argv[2:])


# --- the rank server: one per test process ----------------------------------------------------
def serve() -> int:
    """Answer one JSON request per line of stdin ({"nproc", "worker", "args", "env", "cwd",
    "log"}) with {"pid": job leader} and then {"rc": its exit status}. The server itself never
    runs a job: every job leader is forked from the same state (imports done, no thread)."""
    for name in WARM:
        importlib.import_module(name)
    # The objects every job inherits are frozen: its garbage collections skip them and leave
    # their pages shared (the Python docs' recipe for fork without exec).
    gc.collect()
    gc.freeze()
    for line in sys.stdin:
        req = json.loads(line)
        try:
            _load_worker(req["worker"])  # imported here once, shared by every later job
        except Exception:  # noqa: BLE001 - the job leader loads it again and logs why it fails
            pass
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the job leader
            code = 1
            try:
                os.setsid()  # the client can kill the job (leader and ranks) as one group
                os.environ.clear()
                os.environ.update(req["env"])
                os.chdir(req["cwd"])
                null = os.open(os.devnull, os.O_RDONLY)
                log = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                for fd, target in ((null, 0), (log, 1), (log, 2)):
                    os.dup2(fd, target)
                code = run_ranks(req["nproc"], req["worker"], req["args"])
            except BaseException:  # noqa: BLE001 - reported in the job's log, never raised here
                import traceback
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"rc": os.waitstatus_to_exitcode(status)}), flush=True)
    return 0


class _Server:
    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve"], cwd=ROOT,
                                     env=clean_env(),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.buffer = ""

    def reply(self, timeout: float) -> dict | None:
        """The next reply line, or None after ``timeout`` seconds."""
        fd = self.proc.stdout.fileno()
        while "\n" not in self.buffer:
            if not select.select([fd], [], [], timeout)[0]:
                return None
            chunk = os.read(fd, 65536).decode()
            if not chunk:
                raise RuntimeError(f"spawn: the rank server exited ({self.proc.wait()})")
            self.buffer += chunk
        line, self.buffer = self.buffer.split("\n", 1)
        return json.loads(line)


_server: _Server | None = None
# The xdist group of every test module that calls run() (its `pytestmark`): one rank server per
# test process, so those modules share one worker and one server (its start: ~7.5 s of CPU).
RANK_SERVER_GROUP = "rank_server"


def run(nproc: int, worker, *args: str, timeout: float = 300, cwd: str = ROOT,
        env: dict[str, str] | None = None, ready=None) -> tuple[int, str]:
    """Run ``nproc`` ranks of ``worker`` (a file with ``main()``) forked by this process's rank
    server; returns (exit status, the job's stdout and stderr). A job still running after
    ``timeout`` seconds is killed (status -9): seconds counted from its start, or with ``ready``
    (a check that holds once the job reached a point, e.g. its ranks are up) from the moment
    ``ready()`` first holds, however long the machine took to get there."""
    global _server
    if _server is None or _server.proc.poll() is not None:
        _server = _Server()
    job_env = clean_env(**(env or {}))
    with tempfile.NamedTemporaryFile("r", suffix=".log") as log:
        request = {"nproc": nproc, "worker": os.path.abspath(str(worker)),
                   "args": [str(a) for a in args], "env": job_env, "cwd": str(cwd),
                   "log": log.name}
        _server.proc.stdin.write(json.dumps(request) + "\n")
        _server.proc.stdin.flush()
        started = _server.reply(timeout=120)  # the server's first job waits for its imports
        if started is None:
            raise RuntimeError("spawn: the rank server started no job in 120 s")
        pid = started["pid"]
        done, waited = None, 0.0
        while ready is not None and done is None and not ready():
            done = _server.reply(timeout=0.05)  # the job may end before it is ready
            waited += 0.05
            if waited > 600:  # only a job that hangs before it is ready gets here
                os.killpg(pid, signal.SIGKILL)
                raise RuntimeError("spawn: the job was never ready")
        if done is None:
            done = _server.reply(timeout)
        if done is None:
            os.killpg(pid, signal.SIGKILL)
            done = _server.reply(timeout=60)
        return done["rc"], log.read()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
