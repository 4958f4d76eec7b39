"""Beam stages: the PTransforms and DoFns that run on the workers, thin shells around
``curation`` (one module per step; ``outputs`` holds the tags and counters they share)."""

from infra.compat import beam_speed

# The driver that builds a job and every Beam worker that runs these steps (it imports this
# package to unpickle them) get Beam's speed-only patches, once per process; a Beam they were
# not written for gets one warning and its own speed.
beam_speed.enable()
