"""N gloo ranks on this machine for the multi-process training tests, forked from ONE interpreter
that has imported torch and the test's worker once.

    python tests/training/spawn.py NPROC tests/training/layout_worker.py ARGS...

Each rank gets the environment torchrun gives it (RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and runs the worker's ``main()`` with ``ARGS`` as
its command line, so the trainer initialises its process group exactly as under torchrun. What
is saved is torchrun's agent and an import of torch per rank (about 3 s of CPU each here: most
of an 8-rank layout test). `mtnlg train --nproc` itself goes through torchrun, tested in
test_train_distributed.py and test_launcher_signals.py. Forking after `import torch` is safe
here: no thread exists yet (OMP_NUM_THREADS=1, no process group). A rank that dies (exception
or signal) fails the whole run with its traceback or signal name, exit status 1.
"""
from __future__ import annotations

import faulthandler
import importlib.util
import os
import socket
import sys
import threading

import torch.multiprocessing as mp


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


# What a rank of the trainer imports lazily on its first step (torch.optim's step imports
# dynamo, and with it parts of inductor; logging imports tensorboard; the layouts import
# pipelining and FSDP): imported once here instead of once per rank (~0.5 s of CPU each).
WARM = ("torch._dynamo", "torch.utils.tensorboard", "torch.distributed.pipelining",
        "torch.distributed.fsdp")


def main(argv: list[str]) -> int:
    nproc, path, rest = int(argv[0]), argv[1], argv[2:]
    spec = importlib.util.spec_from_file_location("spawned_worker", path)
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    for name in WARM:
        importlib.import_module(name)
    if threading.active_count() != 1:  # a thread would not survive the fork in the children
        print(f"spawn: {threading.active_count()} threads before the fork", file=sys.stderr)
        return 1
    try:
        mp.start_processes(_rank, args=(nproc, _free_port(), worker, rest), nprocs=nproc,
                           start_method="fork")
    except mp.ProcessExitedException as e:  # e.g. "process 3 terminated with signal SIGSEGV"
        print(f"spawn: {e}", file=sys.stderr)
        return 1
    except mp.ProcessRaisedException as e:
        print(f"spawn: a rank raised:\n{e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
