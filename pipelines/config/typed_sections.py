"""Typed config sections from parsed YAML: every value checked against its dataclass field's
annotation, every unknown key an error naming it, then the section's own ``validate()``.

A config section is a dataclass.  ``build_section(cls, mapping, "dedup.fuzzy")``:

1. rejects keys that are not init fields of ``cls`` (``dedup.fuzzy.nperm: unknown setting``);
2. checks each value against the field's annotation, recursively: ``bool`` takes only
   ``true``/``false`` (YAML ``"no"`` is a string, not false), ``int`` no booleans, ``float``
   also integers, ``list[str]`` a list (never a bare string), ``X | None`` also ``null``,
   ``Literal[...]`` its values, a nested dataclass a mapping built the same way;
3. constructs the dataclass (its ``__post_init__`` errors become ``ConfigError("<path>: ...")``);
4. calls its ``validate()`` if it has one: a ``ValueError("<field>: <message>")`` there becomes
   ``ConfigError("<path>.<field>: <message>")``.

Sections are built bottom-up, so a parent's ``validate()`` sees valid children.  The checks run
before anything else happens, so a bad setting never costs a pipeline start.
"""
from __future__ import annotations

import dataclasses
import difflib
import re
import types
import typing
from typing import Any, Literal, Union

_INT_KEY_RE = re.compile(r"-?\d+\Z")


class ConfigError(ValueError):
    """A setting of the config is missing or invalid; the message names it."""


def _path(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def describe(annotation: Any) -> str:
    """A reader's name for a type annotation, as used in error messages."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is Any or annotation is object:
        return "any value"
    if annotation is type(None):
        return "null"
    if annotation is bool:
        return "true or false"
    if annotation is int:
        return "an integer"
    if annotation is float:
        return "a number"
    if annotation is str:
        return "a string"
    if origin in (Union, types.UnionType):
        return " or ".join(describe(a) for a in args)
    if origin is Literal:
        return "one of " + ", ".join(map(repr, args))
    if origin in (list, tuple, set, frozenset):
        return f"a list of {_plural(args[0] if args else Any)}"
    if origin is dict:
        key, val = args if args else (Any, Any)
        return f"a mapping of {_plural(key)} to {_plural(val)}"
    if dataclasses.is_dataclass(annotation):
        return f"a mapping of {annotation.__name__} settings"
    return getattr(annotation, "__name__", str(annotation))


_PLURALS = {str: "strings", int: "integers", float: "numbers", bool: "booleans"}


def _plural(annotation: Any) -> str:
    if annotation in _PLURALS:
        return _PLURALS[annotation]
    if annotation is Any or annotation is object:
        return "values"
    if dataclasses.is_dataclass(annotation):
        return f"mappings of {annotation.__name__} settings"
    return f"({describe(annotation)})"


def _wants_string_list(annotation: Any) -> bool:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (Union, types.UnionType):
        return any(_wants_string_list(a) for a in args)
    return origin in (list, tuple, set, frozenset) and (not args or args[0] in (str, Any))


def _mismatch(path: str, annotation: Any, value: Any) -> ConfigError:
    hint = ""
    if isinstance(value, str) and _wants_string_list(annotation):
        hint = f" (write [{value!r}] for a one-item list)"
    if isinstance(value, str) and annotation is bool:
        hint = " (YAML strings such as 'no' or 'false' in quotes are not booleans)"
    return ConfigError(f"{path}: expected {describe(annotation)}, got {type(value).__name__} "
                       f"{_show(value)}{hint}")


# YAML scalars each annotation accepts: a bool is not an int here, an int is a float.
_SCALARS = {
    type(None): lambda v: v is None,
    bool: lambda v: isinstance(v, bool),
    int: lambda v: isinstance(v, int) and not isinstance(v, bool),
    float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    str: lambda v: isinstance(v, str),
}


def check_value(value: Any, annotation: Any, path: str) -> Any:
    """``value`` checked against ``annotation`` (nested dataclasses built); ``ConfigError``
    naming ``path`` if it does not fit."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is Any or annotation is object:
        return value
    if origin in (Union, types.UnionType):
        errors = []
        for option in args:  # None first would hide the better message of the real type
            try:
                return check_value(value, option, path)
            except ConfigError as e:
                errors.append(e)
        nested = [e for e in errors if not str(e).startswith(f"{path}: expected")]
        raise nested[0] if nested else _mismatch(path, annotation, value)
    if annotation in _SCALARS:
        if _SCALARS[annotation](value):
            return value
        raise _mismatch(path, annotation, value)
    if origin is Literal:
        if value in args and type(value) in {type(a) for a in args}:
            return value
        raise _mismatch(path, annotation, value)
    if origin in (list, tuple, set, frozenset):
        if not isinstance(value, list):
            raise _mismatch(path, annotation, value)
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            args = args[:1]
        inner = args[0] if args else Any
        return [check_value(v, inner, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict or annotation is dict:
        if not isinstance(value, dict):
            raise _mismatch(path, annotation, value)
        key_t, val_t = args if args else (Any, Any)
        out = {}
        for k, v in value.items():
            if key_t is int and isinstance(k, str) and _INT_KEY_RE.match(k):
                pass  # YAML quotes mapping keys easily: "2": 0.2 means 2
            else:
                check_value(k, key_t, f"{path} key {k!r}")
            out[k] = check_value(v, val_t, f"{path}.{k}")
        return out
    if dataclasses.is_dataclass(annotation):
        return build_section(annotation, value, path)
    if isinstance(annotation, type) and not isinstance(value, annotation):
        raise _mismatch(path, annotation, value)
    return value


def settable_fields(cls) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls) if f.init}


def reject_unknown(data: dict, known: typing.Iterable[str], where: str) -> None:
    """``ConfigError`` for the first key of ``data`` not in ``known``, with close matches."""
    known = sorted(known)
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"{_path(where, str(key))}: unknown setting{hint} "
                              f"(known: {', '.join(known)})")


def run_validate(obj: Any, where: str) -> None:
    """Call the section's ``validate()`` (where it has one) and name the setting."""
    check = getattr(obj, "validate", None)
    if not callable(check):
        return
    try:
        check()
    except ConfigError:
        raise
    except ValueError as e:
        raise ConfigError(_path(where, str(e))) from None


def build_section(cls, data: Any, where: str, prebuilt: dict[str, Any] | None = None):
    """Build, type-check and validate dataclass ``cls`` from mapping ``data`` (``None``: all
    defaults).  ``prebuilt`` supplies fields already built by the caller (not type-checked)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where or 'config'}: expected a mapping of settings, got "
                          f"{type(data).__name__} {_show(data)}")
    fields = settable_fields(cls)
    reject_unknown(data, fields, where)
    hints = typing.get_type_hints(cls)
    kwargs = {name: check_value(value, hints[name], _path(where, name))
              for name, value in data.items()}
    kwargs.update(prebuilt or {})
    try:
        obj = cls(**kwargs)
    except TypeError as e:  # a required setting is missing
        missing = [n for n, f in fields.items() if n not in kwargs
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if missing:
            raise ConfigError(f"{_path(where, missing[0])}: required setting is missing") from None
        raise ConfigError(f"{where or 'config'}: {e}") from None
    except ValueError as e:  # __post_init__ checks of sections without validate()
        msg = str(e)
        raise ConfigError(msg if where and msg.startswith(where + ".") else f"{where or 'config'}: {msg}") from None
    run_validate(obj, where)
    return obj
