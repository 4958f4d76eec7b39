"""The curation dashboard: one self-contained HTML page for a run, or a comparison of two.

``main(argv)`` is the ``mtnlg dashboard`` entry point; ``build_dashboard`` is the library call.
The dashboard only reads a run's outputs (docs/run-layout.md); it never writes into a run.
"""
from .cli import build_dashboard, main

__all__ = ["build_dashboard", "main"]
