"""bench/RESULTS.md, "Quality classifier"."""
