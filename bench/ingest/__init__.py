"""bench/RESULTS.md, "Ingest (read, normalize, language id, heuristics)"."""
