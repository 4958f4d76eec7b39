"""Print the `uv pip install` options that give uv the package sources pip is configured with.

    uv pip install ... $(python requirements/uv_sources.py)

`make venv` installs with uv (one resolve, parallel downloads, no bytecode compiled up front: a
fresh venv in under a minute where pip took about four), but uv reads no pip configuration. On
machines whose pip is configured with extra sources (a wheel folder holding torch's CPU build,
a mirror index) those sources must reach uv too, or the lock's ``torch==...+cpu`` cannot be
found. This reads them with pip's own command (``pip config list``: configuration files and
``PIP_*`` variables) and prints ``--index-url``, ``--extra-index-url`` and ``--find-links`` for
each, plus ``--index-strategy unsafe-best-match`` where there is more than one index: pip takes
the best version across all indexes, while uv by default stops at the first index that has a
package at all. Run it with a Python that has pip (the venv's; `make venv` uses the system
Python's while the venv has none yet: the same configuration files). Standard library only.
"""
from __future__ import annotations

import re
import shlex
import subprocess
import sys

_LINE = re.compile(r"^(?P<scope>[^.]*)\.(?P<key>[a-z-]+)='(?P<value>.*)'$")
# pip's keys -> uv's options; the sections pip applies to `pip install`
_OPTIONS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url",
            "find-links": "--find-links"}
_SCOPES = (":env:", "global", "install")


def pip_sources(config_list: str) -> dict[str, list[str]]:
    """{pip key: values} from ``pip config list`` output: as in pip, a ``PIP_*`` variable wins
    over the files, and the ``[install]`` section over ``[global]``."""
    found: dict[str, dict[str, list[str]]] = {}
    for line in config_list.splitlines():
        m = _LINE.match(line.strip())
        if m and m["key"] in _OPTIONS and m["scope"] in _SCOPES:
            found.setdefault(m["key"], {})[m["scope"]] = m["value"].split()
    order = ("global", "install", ":env:")  # pip: files (global, then command section), then env
    return {key: next(scopes[s] for s in reversed(order) if s in scopes)
            for key, scopes in found.items()}


def uv_options(sources: dict[str, list[str]]) -> list[str]:
    args: list[str] = []
    for key, option in _OPTIONS.items():
        for value in sources.get(key, []):
            args += [option, value]
    if sources.get("extra-index-url"):
        args += ["--index-strategy", "unsafe-best-match"]
    return args


def main() -> int:
    listing = subprocess.run([sys.executable, "-m", "pip", "config", "list"], check=True,
                             capture_output=True, text=True).stdout
    print(" ".join(shlex.quote(a) for a in uv_options(pip_sources(listing))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
