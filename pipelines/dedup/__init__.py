"""The dedup stage: exact and fuzzy dedup over the parts, file-backed (``stage``)."""
