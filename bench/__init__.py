"""The benchmarks, one package per section of bench/RESULTS.md; each is run from the
repository root as ``.venv/bin/python -m bench.<section>.<name> [options]`` (its
docstring shows how).  ``common`` holds what they share (the repository, CPU meters);
``peers`` the scripts a peer's own venv runs (datatrove, the PII taggers)."""
