"""The one error type of every configuration: curate source configs, blend specs, training
configs and quality-classifier training configs all raise ``ConfigError``."""
from __future__ import annotations


class ConfigError(ValueError):
    """A setting is missing or invalid; the message starts with its dotted path
    (``optimizer.lr: ...``, ``inputs[2].paths: ...``) or with the flag that named the file."""


def join_path(where: str, name: str) -> str:
    """``"dedup"`` + ``"fuzzy"`` -> ``"dedup.fuzzy"``; a top-level name stays bare."""
    return f"{where}.{name}" if where else name


def show(value) -> str:
    """A value as an error message quotes it (repr, at most 60 characters)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
