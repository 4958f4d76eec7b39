"""Wall, CPU and per-process peak memory of a command's whole process tree.

    python bench/tree_meter.py OUT.json LOG CWD -- COMMAND...

The meter makes itself the tree's child subreaper (``PR_SET_CHILD_SUBREAPER``): processes that
outlive their parent (a multiprocessing forkserver and the pool workers it forks, which
``/usr/bin/time`` and the parent's RUSAGE_CHILDREN never see) are re-parented to it and reaped
by it, so RUSAGE_CHILDREN here is the CPU of every process of the tree.  The tree is also sampled
from /proc every 0.25 s (``bench.common.tree_cpu``): each process's peak RSS (VmHWM) and a
sampled CPU total as a check.  COMMAND's stdout goes to LOG.stdout, its stderr to LOG.
"""
from __future__ import annotations

import ctypes
import json
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run by path: the repository
from bench.common import tree_cpu  # noqa: E402


def meter(out_json: str, log: str, cwd: str, cmd: list[str]) -> int:
    """Run ``cmd`` as the child subreaper of its tree; write wall, CPU and per-process peaks to ``out_json``."""
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    cpu, peak, names = {}, {}, {}

    def sample() -> None:
        for pid, seconds in tree_cpu(os.getpid()).items():
            if pid == os.getpid():
                continue
            cpu[pid] = max(cpu.get(pid, 0.0), seconds)
            try:
                with open(f"/proc/{pid}/status") as f:
                    hwm = next((int(line.split()[1]) for line in f if line.startswith("VmHWM:")), 0)
                if pid not in names:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        names[pid] = _process_name(f.read().decode(errors="replace").replace("\0", " "))
            except (OSError, StopIteration):
                continue
            peak[pid] = max(peak.get(pid, 0), hwm)

    t0 = time.perf_counter()
    with open(log, "w") as err, open(log + ".stdout", "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=cwd)
        while proc.poll() is None:
            sample()
            time.sleep(0.25)  # a /proc walk costs the meter ~5% of a core at 0.1 s; its CPU is not counted
    wall = time.perf_counter() - t0
    deadline = time.time() + 60  # orphans (a forkserver) re-parented to us: reap them
    while time.time() < deadline:
        sample()
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.1)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    procs = sorted(({"pid": p, "name": names.get(p, "?"), "peak_gb": peak[p] / 1e6, "cpu": cpu.get(p, 0.0)}
                    for p in peak), key=lambda r: -r["peak_gb"])
    json.dump({"rc": proc.returncode, "wall": wall, "cpu": ru.ru_utime + ru.ru_stime,
               "cpu_sampled": sum(cpu.values()), "processes": procs},
              open(out_json, "w"))
    return proc.returncode


def _process_name(cmdline: str) -> str:
    """A short role for a process of either tree (forked children keep their parent's cmdline)."""
    for key, role in (("forkserver", "forkserver or a pool worker it forked"), ("sdk_worker", "Beam SDK worker"),
                      ("mtnlg.cli", "curate driver"), ("fineweb_side", "datatrove driver")):
        if key in cmdline:
            return role
    return os.path.basename(cmdline.split(" ", 1)[0])[:40]


if __name__ == "__main__":
    argv = sys.argv[1:]
    if len(argv) < 5 or argv[3] != "--":
        raise SystemExit(__doc__)
    raise SystemExit(meter(argv[0], argv[1], argv[2], argv[4:]))
