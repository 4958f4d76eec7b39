"""The curate job's driver side, what runs where ``mtnlg curate`` is typed: the command line
(``cli``), Beam's options (``beam_options``), the checks before any work (``preflight``,
``dedup_against``), the stages' Beam jobs and their commits (``runner``), and ``run.json``
after the last stage (``finalize``).  ``pipelines.curate.run`` calls them in that order."""
