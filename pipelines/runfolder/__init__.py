"""Tools that work on a curate RUN folder and run no pipeline: atomic commits and completion
markers, counters and the run report (``run.json``), the driver's progress line, the id index of
an older run, and ``mtnlg takedown``."""
