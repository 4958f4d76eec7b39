"""bench/RESULTS.md, "Dedup (exact and fuzzy)"."""
