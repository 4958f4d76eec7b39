"""Typed config sections: a dataclass built from parsed YAML, every value checked against its
field's annotation, every error a ``ConfigError`` naming the setting by its dotted path.

``build_section(cls, mapping, "dedup.fuzzy")``:

1. rejects keys that are not settings of ``cls`` (``dedup.fuzzy.nperm: unknown setting; did
   you mean 'num_perm'?``; a key that belongs to a sub-section says which one);
2. checks each value against the field's annotation, recursively: ``bool`` takes only
   ``true``/``false``; ``int`` no booleans, and a float only when it is whole (``1e9``);
   ``float`` also integers (stored as float) but never NaN or infinity; ``str`` only strings
   (``"1e-3"`` in quotes is not a number); ``list[...]``/``tuple[...]`` a list (never a bare
   string); ``X | None`` also ``null``; ``Literal[...]`` its values; ``dict[K, V]`` a mapping
   (integer keys may be quoted); a nested dataclass a mapping built the same way;
3. constructs the dataclass, whose ``__post_init__`` checks the values: a ``ValueError`` whose
   message starts with one of its field names (``"lr: must be > 0"``) becomes
   ``ConfigError("optimizer.lr: must be > 0")``; any other message is prefixed with the
   section's path.

Sections are built bottom-up, so a parent's ``__post_init__`` sees valid children.
"""
from __future__ import annotations

import dataclasses
import difflib
import math
import re
import types
import typing
from typing import Any, Literal, Union

from infra.config.errors import ConfigError, join_path, show

_INT_KEY_RE = re.compile(r"-?\d+\Z")
_FIELD_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)[:.\[/]")
_EXACT_FLOAT_INT = 2 ** 53  # above this a float no longer holds every integer exactly
_SET_BY_LOADER = "infra.config.set_by_loader"


def loader_field(default: Any = None, **kwargs) -> Any:
    """A dataclass field the loader fills in (e.g. the config file's own path; ``kwargs`` as
    for ``dataclasses.field``); a config file that sets it is refused like any unknown key."""
    if "default_factory" in kwargs:
        return dataclasses.field(metadata={_SET_BY_LOADER: True}, **kwargs)
    return dataclasses.field(default=default, metadata={_SET_BY_LOADER: True}, **kwargs)


def settable_fields(cls) -> dict[str, dataclasses.Field]:
    """The fields of dataclass ``cls`` a config file may set."""
    return {f.name: f for f in dataclasses.fields(cls)
            if f.init and not f.metadata.get(_SET_BY_LOADER)}


def describe(annotation: Any) -> str:
    """A reader's name for a type annotation, as used in error messages."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is Any or annotation is object:
        return "any value"
    if annotation in _NAMES:
        return _NAMES[annotation]
    if origin in (Union, types.UnionType):
        return " or ".join(describe(a) for a in args)
    if origin is Literal:
        return "one of " + ", ".join(map(repr, args))
    if origin is tuple and len(args) > 1 and args[-1] is not Ellipsis and len(set(args)) == 1:
        return f"a list of {len(args)} {_plural(args[0])}"
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple):
        return f"a list of {_plural(args[0] if args else Any)}"
    if origin is dict or annotation is dict:
        key, val = args if args else (Any, Any)
        return f"a mapping of {_plural(key)} to {_plural(val)}"
    if dataclasses.is_dataclass(annotation):
        return f"a mapping of {annotation.__name__} settings"
    return getattr(annotation, "__name__", str(annotation))


_NAMES = {type(None): "null", bool: "true or false", int: "an integer", float: "a number",
          str: "a string"}
_PLURALS = {str: "strings", int: "integers", float: "numbers", bool: "booleans"}


def _plural(annotation: Any) -> str:
    if annotation in _PLURALS:
        return _PLURALS[annotation]
    if annotation is Any or annotation is object:
        return "values"
    if dataclasses.is_dataclass(annotation):
        return f"mappings of {annotation.__name__} settings"
    return f"({describe(annotation)})"


def _accepts(annotation: Any, test) -> bool:
    if typing.get_origin(annotation) in (Union, types.UnionType):
        return any(_accepts(a, test) for a in typing.get_args(annotation))
    return test(annotation)


def _is_variadic_list(annotation: Any) -> bool:
    """A list of any length (where a bare string is likely meant as a one-item list)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    fixed = origin is tuple and len(args) > 1 and args[-1] is not Ellipsis
    return origin in (list, tuple, set, frozenset) and not fixed


def _mismatch(path: str, annotation: Any, value: Any) -> ConfigError:
    hint = ""
    if isinstance(value, str) and _accepts(annotation, _is_variadic_list):
        hint = f" (write [{value!r}] for a one-item list)"
    elif isinstance(value, str) and _accepts(annotation, lambda a: a is bool):
        hint = " (only true and false are booleans; 'no' or 'false' in quotes is a string)"
    elif isinstance(value, str) and _accepts(annotation, lambda a: a in (int, float)) \
            and _is_number(value):
        hint = " (a number in quotes is a string: remove the quotes)"
    return ConfigError(f"{path}: expected {describe(annotation)}, got {type(value).__name__} "
                       f"{show(value)}{hint}")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _scalar(value: Any, annotation: Any, path: str) -> Any:
    """A scalar value of the annotated type: a bool is never a number, an int is a float, a
    whole float is an int; NaN and infinity are refused."""
    if annotation is type(None) and value is None or annotation is str and isinstance(value, str):
        return value
    if annotation is bool and isinstance(value, bool):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or annotation not in (int, float):
        raise _mismatch(path, annotation, value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{path}: must be a finite number, got {value!r}")
    if annotation is float:
        return float(value)
    if isinstance(value, int):
        return value
    if value.is_integer() and abs(value) <= _EXACT_FLOAT_INT:
        return int(value)  # 1e9 and 2.0 are whole numbers; YAML reads them as floats
    raise _mismatch(path, annotation, value)


def check_value(value: Any, annotation: Any, path: str) -> Any:
    """``value`` checked against ``annotation`` and converted where lossless (nested
    dataclasses built, lists of a tuple field made tuples); ``ConfigError`` naming ``path``
    if it does not fit."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is Any or annotation is object:
        return value
    if origin in (Union, types.UnionType):
        errors = []
        for option in args:
            try:
                return check_value(value, option, path)
            except ConfigError as e:
                errors.append(e)
        # A nested error (a bad key inside the mapping) says more than "expected X or null".
        nested = [e for e in errors if not str(e).startswith(f"{path}: expected")]
        raise nested[0] if nested else _mismatch(path, annotation, value)
    if annotation in _NAMES:
        return _scalar(value, annotation, path)
    if origin is Literal:
        if value in args and type(value) in {type(a) for a in args}:
            return value
        raise _mismatch(path, annotation, value)
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple):
        if not isinstance(value, list):
            raise _mismatch(path, annotation, value)
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            args = args[:1]
        if origin is tuple and len(args) > 1:
            if len(value) != len(args):
                raise _mismatch(path, annotation, value)
            items = [check_value(v, a, f"{path}[{i}]") for i, (v, a) in enumerate(zip(value, args))]
        else:
            inner = args[0] if args else Any
            items = [check_value(v, inner, f"{path}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple or annotation is tuple else items
    if origin is dict or annotation is dict:
        if not isinstance(value, dict):
            raise _mismatch(path, annotation, value)
        key_t, val_t = args if args else (Any, Any)
        out = {}
        for k, v in value.items():
            if key_t is int and isinstance(k, str) and _INT_KEY_RE.match(k):
                key = int(k)  # YAML quotes mapping keys easily: "2": 0.2 means 2
            else:
                key = check_value(k, key_t, f"{path} key {k!r}")
            out[key] = check_value(v, val_t, f"{path}.{k}")
        return out
    if dataclasses.is_dataclass(annotation):
        return build_section(annotation, value, path)
    if isinstance(annotation, type) and not isinstance(value, annotation):
        raise _mismatch(path, annotation, value)
    return value


def section_of(annotation: Any):
    """The dataclass a field holds (``X`` or ``X | None``), or None."""
    if dataclasses.is_dataclass(annotation):
        return annotation
    if typing.get_origin(annotation) in (Union, types.UnionType):
        found = [a for a in typing.get_args(annotation) if dataclasses.is_dataclass(a)]
        return found[0] if len(found) == 1 else None
    return None


def reject_unknown(data: dict, cls, where: str, also: typing.Iterable[str] = ()) -> None:
    """``ConfigError`` for the first key of ``data`` that is not a setting of dataclass ``cls``
    (nor in ``also``): it names the key, the closest setting or the sub-section the key
    belongs to, and the known settings."""
    known = sorted(set(settable_fields(cls)) | set(also))
    for key in data:
        if key in known:
            continue
        hints = typing.get_type_hints(cls)
        owners = [name for name in settable_fields(cls)
                  if (sub := section_of(hints[name])) and key in settable_fields(sub)]
        if len(owners) == 1:
            hint = f"; it is a setting of '{join_path(where, owners[0])}' (write it there)"
        else:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"{join_path(where, str(key))}: unknown setting{hint} "
                          f"(known: {', '.join(known)})")


def check_overrides(cls, data: Any, where: str) -> dict[str, Any]:
    """A mapping of some settings of dataclass ``cls`` (overrides of its defaults, kept as a
    mapping), each checked as ``build_section`` checks it; the checked mapping."""
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise _mismatch(where, dict[str, Any], data)
    reject_unknown(data, cls, where)
    hints = typing.get_type_hints(cls)
    return {k: check_value(v, hints[k], join_path(where, k)) for k, v in data.items()}


def _located(where: str, message: str, cls) -> str:
    """A section's own error message with the section's path in front."""
    if not where:
        return message
    m = _FIELD_RE.match(message)
    if m and m.group(1) in {f.name for f in dataclasses.fields(cls)}:
        return f"{where}.{message}"
    return f"{where}: {message}"


def build_section(cls, data: Any, where: str = "", prebuilt: dict[str, Any] | None = None):
    """Build, type-check and validate dataclass ``cls`` from mapping ``data`` (``None``: all
    defaults).  ``prebuilt`` supplies fields already built by the caller (not type-checked),
    such as loader fields."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where or 'config'}: expected a mapping of settings, got "
                          f"{type(data).__name__} {show(data)}")
    reject_unknown(data, cls, where)
    hints = typing.get_type_hints(cls)
    kwargs = {name: check_value(value, hints[name], join_path(where, name))
              for name, value in data.items()}
    kwargs.update(prebuilt or {})
    for name, f in settable_fields(cls).items():
        if name in kwargs:
            continue
        sub = section_of(hints[name])
        if sub is not None and f.default_factory is sub:
            # A section left out is built from its defaults here, so its checks name its path.
            kwargs[name] = build_section(f.default_factory, {}, join_path(where, name))
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ConfigError(f"{join_path(where, name)}: required setting is missing")
    try:
        return cls(**kwargs)
    except ValueError as e:  # the section's own checks (__post_init__)
        raise ConfigError(_located(where, str(e), cls)) from None
