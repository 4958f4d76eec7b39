"""bench/RESULTS.md, "Tokenization and shards"."""
