"""The one config loader (infra.config): types from the field annotations, unknown keys by
name, each section's own ``__post_init__`` checks with the setting's full path, strict YAML,
command-line overrides."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

from infra.config import (ConfigError, apply_settings, build_section, check_value, load,
                          loader_field, parse_overrides, parse_yaml, read_config_file,
                          resolve_setting)


@dataclass
class Inner:
    ratio: float = 0.5
    mode: Literal["a", "b"] = "a"

    def __post_init__(self) -> None:
        if not 0 <= self.ratio <= 1:
            raise ValueError(f"ratio: must be in [0, 1], got {self.ratio}")


@dataclass
class Outer:
    name: str
    flag: bool = True
    count: int = 1
    limit: int | None = None
    tags: list[str] = field(default_factory=list)
    pair: tuple[float, float] | None = None
    table: dict[str, list[int]] = field(default_factory=dict)
    by_n: dict[int, float] = field(default_factory=dict)
    anything: Any = None
    inner: Inner = field(default_factory=Inner)
    origin: str | None = loader_field()


def test_valid_mapping_builds_nested_sections():
    out = build_section(Outer, {"name": "x", "flag": False, "limit": None, "tags": ["a"],
                                "pair": [1, 2.5], "table": {"k": [1, 2]}, "by_n": {2: 0.1, "3": 1},
                                "count": 2.0, "inner": {"ratio": 1, "mode": "b"}}, "top",
                        prebuilt={"origin": "file.yaml"})
    assert out.inner == Inner(1.0, "b") and isinstance(out.inner.ratio, float)
    assert out.tags == ["a"] and out.pair == (1.0, 2.5) and out.by_n == {2: 0.1, 3: 1.0}
    assert out.count == 2 and isinstance(out.count, int) and out.origin == "file.yaml"


@pytest.mark.parametrize("data, message", [
    ({"name": "x", "flag": "no"}, r"top\.flag: expected true or false, got str 'no' \(only true"),
    ({"name": "x", "flag": 1}, r"top\.flag: expected true or false, got int 1"),
    ({"name": "x", "count": True}, r"top\.count: expected an integer, got bool True"),
    ({"name": "x", "count": 2.5}, r"top\.count: expected an integer, got float 2.5"),
    ({"name": "x", "count": 1e300}, r"top\.count: expected an integer, got float"),
    ({"name": "x", "limit": "3"}, r"top\.limit: expected an integer or null, got str '3' \(a number"),
    ({"name": "x", "tags": "a"}, r"top\.tags: expected a list of strings, got str 'a' \(write \['a'\]"),
    ({"name": "x", "tags": ["a", 2]}, r"top\.tags\[1\]: expected a string, got int 2"),
    ({"name": "x", "pair": [1]}, r"top\.pair: expected a list of 2 numbers or null, got list \[1\]"),
    ({"name": "x", "table": {"k": [1, "2"]}}, r"top\.table\.k\[1\]: expected an integer"),
    ({"name": "x", "by_n": {"two": 0.1}}, r"top\.by_n key 'two': expected an integer"),
    ({"name": "x", "by_n": {2: float("inf")}}, r"top\.by_n\.2: must be a finite number, got inf"),
    ({"name": "x", "inner": {"ratio": "0.5"}}, r"top\.inner\.ratio: expected a number, got str"),
    ({"name": "x", "inner": {"ratio": float("nan")}}, r"top\.inner\.ratio: must be a finite number"),
    ({"name": "x", "inner": {"mode": "c"}}, r"top\.inner\.mode: expected one of 'a', 'b'"),
    ({"name": "x", "inner": {"ratio": 2}}, r"top\.inner\.ratio: must be in \[0, 1\], got 2"),
    ({"name": "x", "inner": {"ration": 2}}, r"top\.inner\.ration: unknown setting; did you mean 'ratio'"),
    ({"name": "x", "mode": "a"}, r"top\.mode: unknown setting; it is a setting of 'top\.inner'"),
    ({"name": "x", "origin": "y"}, r"top\.origin: unknown setting"),
    ({"name": "x", "inner": [1]}, r"top\.inner: expected a mapping"),
    ({"flag": True}, r"top\.name: required setting is missing"),
    ("x", r"top: expected a mapping of settings, got str"),
])
def test_errors_name_the_setting(data, message):
    with pytest.raises(ConfigError, match=message):
        build_section(Outer, data, "top")


def test_post_init_messages_get_the_section_path():
    @dataclass
    class Checked:
        x: int = 0

        def __post_init__(self):
            if self.x < 0:
                raise ValueError("x: must be >= 0")
            if self.x > 9:
                raise ValueError("too large as a whole")

    with pytest.raises(ConfigError, match=r"^sec\.x: must be >= 0$"):
        build_section(Checked, {"x": -1}, "sec")
    with pytest.raises(ConfigError, match=r"^sec: too large as a whole$"):
        build_section(Checked, {"x": 10}, "sec")


@dataclass
class Needs:
    steps: int | None = None

    def __post_init__(self):
        if self.steps is None:
            raise ValueError("steps: required")


@dataclass
class Top:
    run: Needs = field(default_factory=Needs)


def test_a_section_left_out_is_checked_under_its_path():
    with pytest.raises(ConfigError, match=r"^run\.steps: required"):
        build_section(Top, {})


def test_check_value_is_exact_about_bool_and_numbers():
    assert check_value(1, float, "f") == 1.0
    assert check_value(None, int | None, "n") is None
    with pytest.raises(ConfigError):
        check_value(True, float, "f")
    with pytest.raises(ConfigError):
        check_value(float("nan"), int, "i")


def test_yaml_reads_numbers_and_booleans_as_yaml_1_2():
    assert parse_yaml("a: 1e-3\nb: 270e9\nc: no\nd: 1_000\ne: 012\nf: 1:30\ng: 2020-01-01\n"
                      "h: True\ni: ~\n") == {
        "a": 0.001, "b": 270e9, "c": "no", "d": 1000, "e": 12, "f": "1:30", "g": "2020-01-01",
        "h": True, "i": None}


def test_duplicate_keys_are_named_by_their_path(tmp_path):
    with pytest.raises(ConfigError, match=r"^s\[1\]\.a: duplicate key in x \(line 3\)"):
        parse_yaml("s:\n  - {a: 1}\n  - {a: 1, a: 2}\n", "x")
    anchored = "base: &b {k: 1}\nuse: *b\nother: *b\n"  # aliases are not duplicates
    assert parse_yaml(anchored)["other"] == {"k": 1}


@pytest.mark.parametrize("content, message", [
    (None, r"^--spec: '.*' does not exist"),
    (b"a: caf\xe9\n", r"^--spec: '.*' is not UTF-8 text"),
    (b"a: [1\n", r"^--spec: '.*' is not valid YAML"),
    (b"- 1\n", r"^--spec: '.*' must hold a YAML mapping of settings, got list"),
    (b"", r"^--spec: '.*c\.yaml' is empty: the file is empty;"),
    (b"\n  \n", r"^--spec: '.*c\.yaml' is empty: the file is empty;"),
    (b"# only a comment\n", r"^--spec: '.*c\.yaml' is empty: the file is without settings"),
])
def test_unreadable_files_name_the_flag(tmp_path, content, message):
    path = tmp_path / "c.yaml"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ConfigError, match=message):
        read_config_file(str(path), "--spec")


def test_overrides_resolve_dotted_and_unique_bare_names(tmp_path):
    assert resolve_setting(Outer, "inner.ratio") == ("inner", "ratio")
    assert resolve_setting(Outer, "ratio") == ("inner", "ratio")
    assert resolve_setting(Outer, "table.k") == ("table", "k")
    with pytest.raises(ConfigError, match=r"^inner\.ration: unknown setting; did you mean 'ratio'"):
        resolve_setting(Outer, "inner.ration")
    with pytest.raises(ConfigError, match=r"^rato: unknown setting; did you mean 'ratio'"):
        resolve_setting(Outer, "rato")
    settings = parse_overrides(["ratio=1e-1", "name=x", "tags=[a, b]"])
    assert settings == {"ratio": 0.1, "name": "x", "tags": ["a", "b"]}
    base = {"inner": {"mode": "b"}}
    data = apply_settings(Outer, base, settings)
    assert data["inner"] == {"mode": "b", "ratio": 0.1} and base == {"inner": {"mode": "b"}}
    path = tmp_path / "c.yaml"
    path.write_text("name: y\ninner: {ratio: 0.2}\n")
    assert load(Outer, str(path), {"ratio": 0.3}).inner.ratio == 0.3
    with pytest.raises(ConfigError, match=r"SECTION\.FIELD=VALUE"):
        parse_overrides(["ratio"])
