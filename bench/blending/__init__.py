"""bench/RESULTS.md, "Blending"."""
