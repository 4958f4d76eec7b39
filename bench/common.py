"""What the benchmarks share: the repository they measure, one way to measure CPU time, and code
of another commit loaded beside this tree's.

CPU time, by what a benchmark runs:
- its own work in this process: ``time.process_time()``;
- child processes it waits for (a curate job, a launcher): ``children_cpu()`` before and after
  (user + sys of every waited-for descendant);
- a process tree whose processes may outlive their parent (a forkserver and the pool workers it
  forks, never waited for by us): ``tree_cpu(root)`` sampled while it runs (``bench/tree_meter.py``
  makes itself the tree's subreaper and measures both);
- the whole machine (work spread over processes we do not own): ``busy_seconds()`` before and
  after, with nothing else running.
"""
from __future__ import annotations

import importlib.util
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
"""The repository the benchmarks measure (this checkout)."""
TICK = os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    """CPU seconds (user + sys) of this process's waited-for children so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _proc_table() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, CPU seconds user + sys) of every live process, from /proc."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        table[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK)
    return table


def tree_pids(root: int, table: dict | None = None) -> list[int]:
    """``root`` and every live descendant."""
    table = _proc_table() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.append(pid)
            todo.extend(children.get(pid, []))
    return out


def tree_cpu(root: int) -> dict[int, float]:
    """CPU seconds (user + sys) of ``root`` and every live descendant, from /proc.  (Waited-for
    children's rusage misses processes forked by a fork server, as datatrove's pool workers are.)"""
    table = _proc_table()
    return {pid: table[pid][1] for pid in tree_pids(root, table) if pid in table}


def busy_seconds() -> float:
    """Busy CPU seconds of the whole machine since boot (/proc/stat: user, nice, system, irq,
    softirq, steal); the difference over a run is its CPU cost when nothing else runs."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    ticks = sum(fields[:3]) + sum(fields[5:8])
    return ticks / TICK


def load_module_at(commit: str, path: str, name: str, renames: dict[str, str] | None = None):
    """``path`` as of ``commit``, imported as module ``name``; ``renames`` maps a module it
    imports from (``from X import``) to another already imported (an earlier copy)."""
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{commit}:{path}"], check=True,
                            capture_output=True, text=True).stdout
    for old, new in (renames or {}).items():
        source = source.replace(f"from {old} import", f"from {new} import")
    fd, tmp = tempfile.mkstemp(suffix=".py", prefix=name)
    with os.fdopen(fd, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, tmp)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    os.unlink(tmp)
    return module


def test_helpers(folder: str = "") -> None:
    """Put ``tests/<folder>`` (default: ``tests/``) on the import path: test tooling a benchmark
    shares (the dashboard tests' Chromium driver, the training tests' rank spawner, the https
    file server)."""
    path = str(REPO / "tests" / folder) if folder else str(REPO / "tests")
    if path not in sys.path:
        sys.path.insert(0, path)
