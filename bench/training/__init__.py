"""bench/RESULTS.md, "Training"."""
