"""bench/RESULTS.md, "Decontamination"."""
