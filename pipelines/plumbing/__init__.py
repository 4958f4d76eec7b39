"""What every stage of the curate job shares below it: the tags and counters of outcomes
(``outputs``), worker time (``timing``), live progress (``progress``), row writers (``sinks``),
document parts (``parts``), spill files (``spill``), per-document stats (``stats``) and the id
index (``id_index``)."""

# Beam's speed-only patches come with the storage package, which every step's worker imports.
import infra.storage  # noqa: E402,F401
