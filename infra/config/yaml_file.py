"""Reading a config file: strict YAML, numbers and booleans as YAML 1.2 reads them.

PyYAML implements YAML 1.1, whose plain-scalar rules surprise in config files: ``1e-3`` (no
dot) is the *string* "1e-3", ``no``/``off``/``y`` are booleans (``allowed: [en, no]`` would
lose Norwegian), ``1:30`` is the integer 90, ``012`` is octal 10, and a key given twice keeps
the last value silently.  ``StrictLoader`` resolves plain scalars by the YAML 1.2 core schema
instead (the rules of JSON): ``null``/``~``, ``true``/``false``, decimal integers (``_``
allowed as a digit separator: ``270_000_000_000``; a leading 0 is not octal), decimal floats
with an optional exponent (``1e-3``, ``270e9``), ``.inf``, ``.nan``; everything else is a
string.  A key given twice in one mapping is an error naming its dotted path and both lines,
before any value is built.
"""
from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from infra.config.errors import ConfigError, join_path


class StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` with the YAML 1.2 core schema's implicit types (no timestamps, no
    merge keys, no sexagesimal or octal numbers, no yes/no/on/off booleans)."""

    yaml_implicit_resolvers: dict = {}  # start empty instead of copying YAML 1.1's resolvers


for _tag, _pattern, _first in (
        ("null", r"~|null|Null|NULL|", ["~", "n", "N", ""]),
        ("bool", r"true|True|TRUE|false|False|FALSE", list("tTfF")),
        ("int", r"[-+]?[0-9][0-9_]*", list("-+0123456789")),
        ("float", r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                  r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)", list("-+.0123456789"))):
    StrictLoader.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}",
                                       re.compile(rf"^(?:{_pattern})$"), _first)


def _decimal_int(loader: StrictLoader, node: ScalarNode) -> int:
    """YAML 1.1's constructor would read a leading 0 as octal (``012`` is 10)."""
    return int(loader.construct_scalar(node).replace("_", ""))


StrictLoader.add_constructor("tag:yaml.org,2002:int", _decimal_int)


def parse_yaml(text: str, origin: str = "<text>") -> Any:
    """The value of YAML ``text``; ``yaml.YAMLError`` if it does not parse, ``ConfigError`` for a
    key given twice (``origin`` names the text in that message)."""
    loader = StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _refuse_duplicate_keys(node, "", origin, set())
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _refuse_duplicate_keys(node, where: str, origin: str, seen_nodes: set[int]) -> None:
    if id(node) in seen_nodes:  # an alias of a node already checked (or a recursive one)
        return
    seen_nodes.add(id(node))
    if isinstance(node, MappingNode):
        lines: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, ScalarNode) else None
            if key is not None:
                line = key_node.start_mark.line + 1
                if key in lines:
                    at = f"line {line}" if lines[key] == line else f"lines {lines[key]} and {line}"
                    raise ConfigError(f"{join_path(where, key)}: duplicate key in {origin} ({at}); "
                                      "YAML would keep only the last value: remove one")
                lines[key] = line
            _refuse_duplicate_keys(value_node, join_path(where, str(key)), origin, seen_nodes)
    elif isinstance(node, SequenceNode):
        for i, item in enumerate(node.value):
            _refuse_duplicate_keys(item, f"{where}[{i}]", origin, seen_nodes)


def read_config_file(path: str, setting: str = "--config") -> dict[str, Any]:
    """The mapping a YAML config file holds.  Every failure is a ``ConfigError`` that starts
    with ``setting`` (the flag that named the file) or, for a key given twice, with the key's
    dotted path.  A file with no settings at all (empty, blank or only comments) is refused as
    empty: it is a truncated or wrong file far more often than a wish for every default, and
    read as ``{}`` it failed later on the first required setting, naming neither the file nor
    the cause; ``{}`` in the file asks for the defaults explicitly."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise ConfigError(f"{setting}: {path!r} does not exist") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{setting}: {path!r} is not UTF-8 text: {e}") from None
    except OSError as e:
        raise ConfigError(f"{setting}: {path!r} cannot be read: {e.strerror or e}") from None
    try:
        data = parse_yaml(text, repr(path))
    except yaml.YAMLError as e:
        raise ConfigError(f"{setting}: {path!r} is not valid YAML: {e}") from None
    if data is None:
        what = "empty" if not text.strip() else "without settings (only comments or blank lines)"
        raise ConfigError(f"{setting}: {path!r} is empty: the file is {what}; write the settings "
                          "in it (or `{}` to take every default)")
    if not isinstance(data, dict):
        raise ConfigError(f"{setting}: {path!r} must hold a YAML mapping of settings, got "
                          f"{type(data).__name__}")
    return data
