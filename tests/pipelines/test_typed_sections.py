"""The typed section builder behind every config: types from the field annotations, unknown
keys by name, each section's own ``validate()`` with the setting's full path (contract 5)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

from pipelines.config.typed_sections import ConfigError, build_section, check_value


@dataclass
class Inner:
    ratio: float = 0.5
    mode: Literal["a", "b"] = "a"

    def validate(self) -> None:
        if not 0 <= self.ratio <= 1:
            raise ValueError(f"ratio: must be in [0, 1], got {self.ratio}")


@dataclass
class Outer:
    name: str
    flag: bool = True
    count: int = 1
    limit: int | None = None
    tags: list[str] = field(default_factory=list)
    table: dict[str, list[int]] = field(default_factory=dict)
    by_n: dict[int, float] = field(default_factory=dict)
    anything: Any = None
    inner: Inner = field(default_factory=Inner)


def test_valid_mapping_builds_nested_sections():
    out = build_section(Outer, {"name": "x", "flag": False, "limit": None, "tags": ["a"],
                                "table": {"k": [1, 2]}, "by_n": {2: 0.1, "3": 1},
                                "inner": {"ratio": 1, "mode": "b"}}, "top")
    assert out.inner == Inner(1, "b") and out.tags == ["a"] and out.by_n == {2: 0.1, "3": 1}


@pytest.mark.parametrize("data, message", [
    ({"name": "x", "flag": "no"}, r"top\.flag: expected true or false, got str 'no'"),
    ({"name": "x", "flag": 1}, r"top\.flag: expected true or false, got int 1"),
    ({"name": "x", "count": True}, r"top\.count: expected an integer, got bool True"),
    ({"name": "x", "count": 2.0}, r"top\.count: expected an integer, got float"),
    ({"name": "x", "limit": "3"}, r"top\.limit: expected an integer or null, got str"),
    ({"name": "x", "tags": "a"}, r"top\.tags: expected a list of strings, got str 'a' \(write \['a'\]"),
    ({"name": "x", "tags": ["a", 2]}, r"top\.tags\[1\]: expected a string, got int 2"),
    ({"name": "x", "table": {"k": [1, "2"]}}, r"top\.table\.k\[1\]: expected an integer"),
    ({"name": "x", "by_n": {"two": 0.1}}, r"top\.by_n key 'two': expected an integer"),
    ({"name": "x", "inner": {"ratio": "0.5"}}, r"top\.inner\.ratio: expected a number"),
    ({"name": "x", "inner": {"mode": "c"}}, r"top\.inner\.mode: expected one of 'a', 'b'"),
    ({"name": "x", "inner": {"ratio": 2}}, r"top\.inner\.ratio: must be in \[0, 1\], got 2"),
    ({"name": "x", "inner": {"ration": 2}}, r"top\.inner\.ration: unknown setting; did you mean 'ratio'"),
    ({"name": "x", "inner": [1]}, r"top\.inner: expected a mapping"),
    ({"flag": True}, r"top\.name: required setting is missing"),
    ("x", r"top: expected a mapping of settings, got str"),
])
def test_errors_name_the_setting(data, message):
    with pytest.raises(ConfigError, match=message):
        build_section(Outer, data, "top")


def test_post_init_errors_are_named_by_section():
    @dataclass
    class Checked:
        x: int = 0

        def __post_init__(self):
            if self.x < 0:
                raise ValueError("Checked.x must be >= 0")

    with pytest.raises(ConfigError, match=r"sec: Checked\.x must be >= 0"):
        build_section(Checked, {"x": -1}, "sec")


def test_check_value_is_exact_about_bool_and_numbers():
    assert check_value(1, float, "f") == 1
    assert check_value(None, int | None, "n") is None
    with pytest.raises(ConfigError):
        check_value(True, float, "f")
    with pytest.raises(ConfigError):
        check_value(float("nan"), int, "i")
