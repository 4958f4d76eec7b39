"""Write the pip constraints `make venv` installs with: requirements/lock.txt, minus what must
come from the system Python where that Python already has torch (GPU machines).

    python requirements/constraints.py requirements/lock.txt > .venv/constraints.txt

Run it with the Python the virtualenv is made from. Where that Python has torch, the venv is
made with --system-site-packages and keeps that torch (a CUDA build matching the machine's
driver), so the lock's torch (the CPU build) and every distribution the system torch requires
(its requirements, recursively: triton, the nvidia-* libraries, sympy, ...) are left out of the
constraints: pinning them would replace the system's copies, or make pip refuse to resolve.
Everything else stays locked. Without a system torch the lock is copied unchanged.
Standard library only: it runs before the venv has anything installed.
"""
from __future__ import annotations

import re
import sys
from importlib import metadata

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def system_torch_closure() -> set[str]:
    """``torch`` and the names of everything the installed torch requires, recursively
    (requirements behind an ``extra ==`` marker excluded); empty without torch."""
    try:
        metadata.distribution("torch")
    except metadata.PackageNotFoundError:
        return set()
    seen: set[str] = set()
    todo = ["torch"]
    while todo:
        name = canonical(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue
        for req in requires:
            if "extra ==" in req.replace('"', "").replace("'", ""):
                continue
            m = _NAME.match(req)
            if m:
                todo.append(m.group(0))
    return seen


def constraints(lock_lines: list[str], keep_from_system: set[str]) -> list[str]:
    """The pinned lines of the lock (``name==version``) whose name is not in
    ``keep_from_system``; comments and the ``# via`` lines are dropped."""
    out = []
    for line in lock_lines:
        m = _NAME.match(line)
        if m and "==" in line and canonical(m.group(0)) not in keep_from_system:
            out.append(line.split("#", 1)[0].strip())
    return out


def main(argv: list[str]) -> int:
    (lock,) = argv
    with open(lock, encoding="utf-8") as f:
        lines = f.read().splitlines()
    keep = system_torch_closure()
    if keep:
        print(f"# requirements/lock.txt without the system torch and what it requires: "
              f"{', '.join(sorted(keep))}")
    print("\n".join(constraints(lines, keep)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
