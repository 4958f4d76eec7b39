"""Beam stages: the PTransforms and DoFns that run on the workers, thin shells around
``curation`` (one module per step; ``outputs`` holds the tags and counters they share)."""
