"""The record-based dedup transforms (being moved: see pipelines/dedup/)."""
