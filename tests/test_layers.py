"""The layer order of the packages (pyproject.toml [tool.importlinter]), checked on every run.

mtnlg (entry points, dashboard) > pipelines | training > curation | blending > infra; inside
pipelines: curate > driver > build > runfolder > read | filters | dedup | decontaminate | tokenize
(independent of each other) > plumbing > config > storage > stages (the declared list).  A lower
layer that imports a higher one (even inside a function) fails here with the import chain.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_import_contracts_hold():
    # In a subprocess: import-linter builds the import graph of the packages found on sys.path
    # from the checkout, and prints each broken contract with its import chain.
    proc = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command;"
                           "lint_imports_command()", "--no-cache"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "broken" in proc.stdout and "0 broken" in proc.stdout


def test_the_plain_model_never_imports_torch_distributed():
    # import-linter cannot forbid a sub-package of an external package, so this one is read off
    # the model file's own imports (STYLE: a plain model, a separate parallelize step).
    tree = ast.parse(open(os.path.join(ROOT, "training", "model.py"), encoding="utf-8").read())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert names and not [n for n in names if n.startswith("torch.distributed")]
