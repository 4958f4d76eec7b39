"""Blending: Megatron-compatible token shards, the blend spec and manifest, blended sampling.

- ``blending.indexed_dataset``: ``IndexedDatasetWriter`` / ``IndexedDataset`` (.bin/.idx pairs)
- ``blending.spec``: ``load_blend_spec`` → ``BlendSpec`` (YAML in data_manifests/blends)
- ``blending.build``: ``build_manifest`` (RUN discovery, epochs) -> ``blending.manifest``
- ``blending.manifest``: ``Manifest``, ``load_manifest`` / ``verify_tokenizer``
- ``blending.sampling``: ``BlendedDataset`` (Megatron's greedy blend over GPT samples)
- ``blending.blend_index``: the greedy blend index, exact and vectorized (parallel in time)
- ``blending.sample_index``: one source's document/sample/shuffle indices from lengths alone
- ``blending.index_cache``: indices cached on disk by input hash, memory-mapped on reuse
- ``blending.mixture_space`` / ``mixture_fit`` / ``search`` / ``search_outputs``: the pure parts
  of ``mtnlg blend search`` (feasible mixtures, the fitted model, proxy results, specs written)
- ``mtnlg.commands.blend``: ``mtnlg blend`` (``search``: ``mtnlg.commands.blend_search``)

Nothing is imported here so ``import blending.spec`` stays cheap.
"""
