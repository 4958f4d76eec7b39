"""The tokenize stage: documents -> token arrays (``tokens``) -> shards (``shards``)."""
