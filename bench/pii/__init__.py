"""bench/RESULTS.md, "PII"."""
