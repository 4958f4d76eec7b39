"""Tools that work on a curate RUN folder and run no pipeline: atomic commits and completion
markers, counters and the run report (``run.json``), ``mtnlg stage`` and ``mtnlg takedown``."""
