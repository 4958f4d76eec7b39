"""bench/RESULTS.md, "Dashboard"."""
