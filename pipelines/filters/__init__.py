"""The per-document steps of the read stage after reading: normalize, PII, language id,
site boilerplate, heuristics, quality; each a DoFn, run back to back by ``chain.ChainFn``."""
