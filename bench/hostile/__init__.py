"""bench/RESULTS.md, "Hostile input"."""
