"""bench/RESULTS.md, "Run folder operations"."""
