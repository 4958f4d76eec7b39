"""bench/RESULTS.md, "Whole curate job"."""
