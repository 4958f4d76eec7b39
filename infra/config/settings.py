"""Command-line overrides of a config: ``--set SECTION.FIELD=VALUE``.

``parse_overrides(["optimizer.lr=1e-3", "model.overrides={n_layers: 4}"])`` reads each value as
YAML (the strict loader's rules: ``1e-3`` is a number, ``"1e-3"`` a string); ``apply_settings``
puts them into the parsed config mapping at the path ``resolve_setting`` finds in the config's
dataclass tree, so ``build_section`` then checks them exactly as if the file had said so.  A
bare ``FIELD`` names the one setting of that name anywhere in the tree (``lr`` is
``optimizer.lr``); a name several sections share is refused with the choices.
"""
from __future__ import annotations

import difflib
import typing
from typing import Any

import yaml

from infra.config.errors import ConfigError, show
from infra.config.sections import section_of, settable_fields
from infra.config.yaml_file import parse_yaml


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``["optimizer.lr=1e-3"]`` -> ``{"optimizer.lr": 0.001}``; values are YAML."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"override {item!r} must look like SECTION.FIELD=VALUE")
        try:
            out[key] = parse_yaml(value, f"the override of {key}")
        except yaml.YAMLError:
            raise ConfigError(f"{key}: value {value!r} is not valid YAML") from None
    return out


def _leaves(cls, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    hints = typing.get_type_hints(cls)
    out = []
    for name in settable_fields(cls):
        sub = section_of(hints[name])
        out += _leaves(sub, prefix + (name,)) if sub else [prefix + (name,)]
    return out


def resolve_setting(cls, key: str) -> tuple[str, ...]:
    """The path of setting ``key`` in dataclass ``cls``'s tree: ``"optimizer.lr"`` or the
    unique bare ``"lr"`` -> ``("optimizer", "lr")``; ``ConfigError`` for an unknown or an
    ambiguous name.  Past a mapping field the rest of a dotted key are its keys
    (``model.overrides.n_layers``)."""
    if "." not in key and key not in settable_fields(cls):
        owners = [p for p in _leaves(cls) if p[-1] == key]
        if len(owners) == 1:
            return owners[0]
        if owners:
            raise ConfigError(f"{key}: ambiguous; write one of "
                              f"{', '.join('.'.join(p) for p in owners)}")
        names = sorted({p[-1] for p in _leaves(cls)} | set(settable_fields(cls)))
        close = difflib.get_close_matches(key, names, n=1)
        raise ConfigError(f"{key}: unknown setting" + (f"; did you mean {close[0]!r}?" if close
                                                       else "; write SECTION.FIELD"))
    parts = key.split(".")
    current = cls
    for i, part in enumerate(parts):
        fields = settable_fields(current)
        if part not in fields:
            where = ".".join(parts[:i])
            close = difflib.get_close_matches(part, list(fields), n=1)
            raise ConfigError(f"{key}: unknown setting" + (f"; did you mean {close[0]!r}?" if close
                                                           else "")
                              + f" ({where or 'the config'} has {', '.join(fields)})")
        annotation = typing.get_type_hints(current)[part]
        sub = section_of(annotation)
        if sub is None:
            rest = parts[i + 1:]
            if rest and not (annotation is dict or typing.get_origin(annotation) is dict):
                raise ConfigError(f"{key}: {'.'.join(parts[:i + 1])} is a single setting, "
                                  "not a section")
            return tuple(parts)
        current = sub
    return tuple(parts)


def apply_settings(cls, data: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """A copy of config mapping ``data`` with each ``{key: value}`` of ``settings`` set at the
    path ``resolve_setting(cls, key)`` names."""
    out = _copy_mappings(data)
    for key, value in settings.items():
        path = resolve_setting(cls, key)
        node = out
        for depth, part in enumerate(path[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"{'.'.join(path[:depth + 1])}: expected a mapping of settings, "
                                  f"got {type(child).__name__} {show(child)}")
            node = child
        node[path[-1]] = value
    return out


def _copy_mappings(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _copy_mappings(v) for k, v in data.items()}
    return data

