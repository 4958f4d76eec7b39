"""Commands whose dependencies come with an install option (``pip install 'mtnlg-data[train]'``):
a base install (a curation worker: Beam, no torch) answers them with one line naming the option,
not an ImportError traceback."""
from __future__ import annotations

import importlib.util


def pip_install(extra: str) -> str:
    """The command that adds install option ``extra`` to an installed package."""
    return f"pip install 'mtnlg-data[{extra}]'"


def missing_extra(module: str, extra: str) -> str | None:
    """The message for a command that needs ``module`` (installed by the ``extra`` option) where
    it is not installed; None where it is. Looks the module up without importing it."""
    if importlib.util.find_spec(module) is not None:
        return None
    return (f"this command needs {module}, which this install lacks: install the [{extra}] "
            f"option ({pip_install(extra)})")
