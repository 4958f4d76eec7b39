"""Beam stages: the PTransforms and DoFns that run on the workers, thin shells around
``curation`` (one module per step; ``outputs`` holds the tags and counters they share)."""

# Beam's speed-only patches come with the storage package, which every step's worker imports.
import pipelines.storage  # noqa: E402,F401
