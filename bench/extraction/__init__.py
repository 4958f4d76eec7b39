"""bench/RESULTS.md, "Extraction (HTML)"."""
