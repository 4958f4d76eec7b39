"""Installed distributions, without importing them: which one provides a module, what a
third-party submodule imports at its top, and what each install option of pyproject.toml
installs (requirement closures).  For tests/test_command_extras.py."""
from __future__ import annotations

import ast
import functools
import importlib.metadata as md
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _absolute(node: ast.ImportFrom, name: str, is_package: bool) -> str:
    if not node.level:
        return node.module
    package = name.split(".") if is_package else name.split(".")[:-1]
    base = package[:len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


# An import statement at column 0: at a module's top level, in no if, try or def (statements
# only: read off the lines, as parsing all of torch's modules a command reaches took seconds).
_TOP_IMPORT = re.compile(r"^(?:import[ \t]+([\w., \t]+?)|from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+"
                         r"(\([^)]*\)|[^\n#;]+))[ \t]*(?:#.*)?$", re.M)


@functools.cache
def unconditional_imports(path: Path, name: str, is_package: bool) -> tuple[str, ...]:
    """The imports of a module's top level that always run (not in an if, try, def)."""
    out = []
    for plain, module, names in _TOP_IMPORT.findall(path.read_text(encoding="utf-8", errors="replace")):
        if plain:
            out += [n.split()[0] for n in plain.split(",") if n.strip()]
            continue
        level = len(module) - len(module.lstrip("."))
        node = ast.ImportFrom(module=module[level:] or None, level=level, names=[])
        mod = _absolute(node, name, is_package)
        out += [mod] + [f"{mod}.{n.split()[0]}" for n in re.sub(r"#[^\n]*", "", names).strip("()").split(",")
                        if n.split() and n.split()[0] != "*"]
    return tuple(out)


# -- third-party modules: their distributions ------------------------------------------------------
@functools.cache
def _distribution(dist: str) -> md.Distribution:
    return md.distribution(dist)


@functools.cache
def _top_level() -> dict[str, list[str]]:
    return md.packages_distributions()


@functools.cache
def _dist_modules(dist: str) -> dict[str, str | None]:
    """Module name -> its file (None: an extension module), from the distribution's RECORD."""
    out: dict[str, str | None] = {}
    for f in map(str, _distribution(dist).files or ()):
        stem, _, ext = f.rpartition(".")
        if ext == "py":
            name = stem[:-len("/__init__")] if stem.endswith("/__init__") else stem
            out[name.replace("/", ".")] = f
        elif ext in ("so", "pyd"):  # a/b/c.cpython-311-x86_64-linux-gnu.so
            out.setdefault(stem.split(".", 1)[0].replace("/", "."), None)
    return out


@functools.cache
def installed_module(module: str) -> tuple[str, Path | None] | None:
    """(distribution, its file; None for an extension module) of an installed module, found in
    the distributions' file lists without importing anything; None where no file is ``module``."""
    for dist in _top_level().get(module.split(".")[0], ()):
        modules = _dist_modules(dist)
        if module in modules:
            f = modules[module]
            return dist, Path(_distribution(dist).locate_file(f)) if f else None
    return None


@functools.cache
def distribution_of(module: str) -> str | None:
    """The distribution providing ``module``: that of its longest installed prefix (``from a.b
    import c`` names ``a.b.c``, which may be a function)."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        found = installed_module(".".join(parts[:n]))
        if found:
            return found[0]
    return None


def _is_external(module: str) -> bool:
    top = module.split(".")[0]
    return top not in sys.stdlib_module_names and top != "__future__"


@functools.cache
def submodule_needs(module: str) -> frozenset[tuple[str, str]]:
    """(module, distribution) of the other distributions a third-party SUBmodule imports when
    it is imported (module level, unguarded), following its own submodules: what its
    distribution may leave to an option of its own (``torch.utils.tensorboard`` ->
    tensorboard).  A top-level module's needs are its distribution's requirements."""
    found = installed_module(module)
    if "." not in module or not found or found[1] is None:
        return frozenset()
    dist, todo, seen, needs = found[0], [module], set(), set()
    while todo:
        name = todo.pop()
        where = installed_module(name)
        if name in seen or not where or where[1] is None:
            continue
        seen.add(name)
        for dep in unconditional_imports(where[1], name, where[1].name == "__init__.py"):
            if not _is_external(dep):
                continue
            if dep.split(".")[0] == module.split(".")[0]:
                if dep.startswith(module + ".") or dep == module:
                    todo.append(dep)
            else:
                needs.add((dep, distribution_of(dep) or "?"))
    return frozenset((m, d) for m, d in needs if d != dist)


# -- what each install option installs -------------------------------------------------------------
def _requirement_closure(reqs: list[tuple[Requirement, frozenset[str]]]) -> set[str]:
    """Canonical names of the distributions ``reqs`` install, transitively (each with the
    extras asked of it)."""
    out: set[str] = set()
    todo = list(reqs)
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        req, extras = todo.pop()
        if req.marker and not any(req.marker.evaluate({"extra": e}) for e in ("", *extras)):
            continue
        name = canonicalize_name(req.name)
        key = (name, frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        out.add(name)
        if name == canonicalize_name(PYPROJECT["project"]["name"]):
            todo += [(r, frozenset()) for r in project_requirements(*req.extras)]
            continue
        try:
            requires = _requires(req.name)
        except md.PackageNotFoundError:  # [gcp]'s, which make venv leaves out: named, not followed
            continue
        todo += [(r, frozenset(req.extras)) for r in requires]
    return out


@functools.cache
def _requires(dist: str) -> tuple[Requirement, ...]:
    return tuple(Requirement(r) for r in _distribution(dist).requires or ())


def project_requirements(*options: str) -> list[Requirement]:
    """pyproject.toml's base dependencies plus those of ``options`` (as the wheel declares them)."""
    project = PYPROJECT["project"]
    reqs = list(project["dependencies"])
    for option in options:
        reqs += project["optional-dependencies"][option]
    return [Requirement(r) for r in reqs]


@functools.cache
def installs(*options: str) -> frozenset[str]:
    return frozenset(_requirement_closure([(r, frozenset()) for r in project_requirements(*options)]))


@functools.cache
def needs_of(dist: str) -> frozenset[str]:
    """What installing ``dist`` brings (itself and its requirements)."""
    return frozenset(_requirement_closure([(Requirement(dist), frozenset())]))
