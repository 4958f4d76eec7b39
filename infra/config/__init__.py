"""One configuration mechanism for every config of the project (docs/config.md).

A config is a tree of dataclasses (sections) with a docstring under every field and its checks
in ``__post_init__``; a file is read by one strict YAML loader (``yaml_file``), overridden from
the command line by dotted settings (``settings``) and built section by section with every
value type-checked (``sections``).  Every failure is one ``ConfigError`` whose message starts
with the setting's dotted path::

    cfg = load(TrainConfig, "training/configs/demo.yaml", {"optimizer.lr": 1e-3})
"""
from __future__ import annotations

from typing import Any, TypeVar

from infra.config.errors import ConfigError
from infra.config.sections import (build_section, check_overrides, check_value, loader_field,
                                   reject_unknown, settable_fields)
from infra.config.settings import apply_settings, parse_overrides, resolve_setting
from infra.config.yaml_file import parse_yaml, read_config_file

T = TypeVar("T")

__all__ = ["ConfigError", "apply_settings", "build_section", "check_overrides", "check_value",
           "load", "loader_field", "parse_overrides", "parse_yaml", "read_config_file",
           "reject_unknown", "resolve_setting", "settable_fields"]


def load(cls: type[T], path: str | None, settings: dict[str, Any] | None = None,
         setting: str = "--config", prebuilt: dict[str, Any] | None = None) -> T:
    """Dataclass ``cls`` from YAML file ``path`` (None: defaults only) with ``settings``
    (``{"optimizer.lr": 1e-3}``) applied over it; ``setting`` is the flag that named the file,
    ``prebuilt`` the fields the caller fills in (``loader_field`` s)."""
    data = read_config_file(path, setting) if path else {}
    return build_section(cls, apply_settings(cls, data, settings or {}), "", prebuilt)
