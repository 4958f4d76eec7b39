"""The read stage's input: globs -> work items (``plan``) -> records (``readers``)."""
