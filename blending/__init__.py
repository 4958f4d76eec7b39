"""Blending: Megatron-compatible token shards, the blend spec and manifest, blended sampling.

- ``blending.indexed_dataset``: ``IndexedDatasetWriter`` / ``IndexedDataset`` (.bin/.idx pairs)
- ``blending.spec``: ``load_blend_spec`` → ``BlendSpec`` (YAML in data_manifests/blends)
- ``blending.manifest``: ``build_manifest`` / ``load_manifest`` / ``verify_tokenizer``
- ``blending.sampling``: ``BlendedDataset`` (Megatron's greedy blend over GPT samples)
- ``blending.cli``: ``mtnlg blend``

Nothing is imported here so ``import blending.spec`` stays cheap.
"""
