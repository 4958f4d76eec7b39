"""The import graph of the project's console commands, with the condition each import runs
under, and what an install option lacks for a command (tests/test_command_extras.py says what is
checked, and why)."""
from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name

from installed_dists import (PYPROJECT, ROOT, _absolute, _is_external, distribution_of, installed_module,
                             installs, submodule_needs)

PACKAGES = tuple(p.rstrip("*") for p in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"])
OPTIONAL = "optional"  # an import inside try/except ImportError


# -- the project's import graph --------------------------------------------------------------------
def _caught(handler: ast.ExceptHandler) -> set[str]:
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return {t.id for t in types if isinstance(t, ast.Name)}


def _gate(stmt: ast.stmt) -> tuple[str, str] | None:
    """(MODULE, OPTION) of ``if [missing :=] missing_extra("MODULE", "OPTION"): ... return/raise``."""
    if not (isinstance(stmt, ast.If) and isinstance(stmt.body[-1], (ast.Return, ast.Raise))):
        return None
    for node in ast.walk(stmt.test):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "missing_extra"
                and all(isinstance(a, ast.Constant) for a in node.args[:2])):
            return node.args[0].value, node.args[1].value
    return None


@dataclass
class Imports:
    """One module's imports: (module name, condition) where condition is a frozenset of the
    ``missing_extra`` gates ``(module, option)`` they run behind, or OPTIONAL."""

    names: list[tuple[str, object]] = field(default_factory=list)
    strings: list[tuple[str, object]] = field(default_factory=list)  # counted if modules
    gates: list[tuple[str, str]] = field(default_factory=list)  # (module, option) of each gate


ALWAYS = frozenset()


def combine(outer, inner):
    """The condition of code under ``inner`` reached under ``outer``."""
    return OPTIONAL if OPTIONAL in (outer, inner) else outer | inner


_DOTTED = re.compile(r"[A-Za-z_]\w*(\.\w+)+")
"""A string that may name a module (``torchrun -m training.worker``, a preload list): counted
where a module of that name exists."""


def parse_imports(path: Path, name: str, is_package: bool) -> Imports:
    """A module's imports, each with the condition it runs under.  A function's imports run
    under the conditions of the places in the module that call (or pass) it; a function nothing
    in the module names is an entry point (called from elsewhere: no condition)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    funcs = {f.name: f for f in tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    out = Imports()
    local: dict[str, list] = {f: [] for f in [None, *funcs]}  # function -> (kind, value, cond)

    def block(owner, stmts: list[ast.stmt], cond) -> None:
        for stmt in stmts:
            visit(owner, stmt, cond)
            gate = _gate(stmt)
            if gate is not None:
                out.gates.append(gate)
                cond = combine(cond, frozenset([gate]))  # what follows runs where it passed

    def visit(owner, node: ast.AST, cond) -> None:
        if isinstance(node, ast.Import):
            local[owner] += [("name", a.name, cond) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = _absolute(node, name, is_package)
            local[owner] += [("name", m, cond) for m in [mod] + [f"{mod}.{a.name}" for a in node.names]]
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            block(owner, node.orelse, cond)
        elif isinstance(node, ast.Try):
            # where ImportError is caught, both the body's imports and the fallback's are optional
            guarded = any(_caught(h) & {"ImportError", "ModuleNotFoundError"} for h in node.handlers)
            inner = OPTIONAL if guarded else cond
            block(owner, node.body, inner)
            for handler in node.handlers:
                block(owner, handler.body, inner)
            block(owner, node.orelse, cond)
            block(owner, node.finalbody, cond)
        elif isinstance(node, ast.expr):  # no statements inside: its names and strings
            for n in ast.walk(node):
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and _DOTTED.fullmatch(n.value):
                    local[owner].append(("string", n.value, cond))
                elif isinstance(n, ast.Name) and n.id in funcs and n.id != owner:
                    local[owner].append(("call", n.id, cond))
        else:
            for value in ast.iter_fields(node):
                value = value[1]
                if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                    block(owner, value, cond)
                elif isinstance(value, list):
                    for child in value:
                        if isinstance(child, ast.AST):
                            visit(owner, child, cond)
                elif isinstance(value, ast.AST):
                    visit(owner, value, cond)

    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            block(stmt.name, stmt.body, ALWAYS)
            for part in (*stmt.decorator_list, stmt.args):  # run when the module is imported
                visit(None, part, ALWAYS)
        else:
            block(None, [stmt], ALWAYS)
    # the conditions each function runs under, from its callers' (to a fixed point)
    callers = {f: [(owner, c) for owner, items in local.items() for kind, v, c in items
                   if kind == "call" and v == f] for f in funcs}
    runs = {f: {ALWAYS} for f in [None, *funcs] if f is None or not callers[f]}
    changed = True
    while changed:
        changed = False
        for f, sites in callers.items():
            conds = {combine(rc, c) for owner, c in sites for rc in runs.get(owner, ())}
            if not conds <= runs.get(f, set()):
                runs[f] = runs.get(f, set()) | conds
                changed = True
    for f, items in local.items():
        for rc in runs.get(f, ()):
            out.names += [(v, combine(rc, c)) for kind, v, c in items if kind == "name"]
            out.strings += [(v, combine(rc, c)) for kind, v, c in items if kind == "string"]
    return out


@functools.cache
def project_file(root: Path, name: str) -> Path | None:
    path = root.joinpath(*name.split("."))
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


# -- a command's reach -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Reached:
    module: str  # a third-party module the command can import
    dist: str | None  # its distribution (None: not installed here at all)
    via: str  # the project module (or third-party submodule) importing it
    cond: frozenset | str  # the gates' modules it runs behind, or OPTIONAL


@functools.cache
def _parsed(root: Path, name: str) -> Imports:
    path = project_file(root, name)
    return parse_imports(path, name, path.name == "__init__.py")


def command_reach(start: str, root: Path = ROOT, packages: tuple[str, ...] = PACKAGES):
    """The project modules ``start`` can import, the third-party modules they can import, and
    the ``missing_extra`` gates on the way ``(module, option, where)``."""
    todo, seen, modules = [(start, ALWAYS)], set(), set()
    reached: list[Reached] = []
    gates: set[tuple[str, str, str]] = set()
    while todo:
        name, cond = todo.pop()
        if (name, cond) in seen:
            continue
        seen.add((name, cond))
        modules.add(name)
        parsed = _parsed(root, name)
        gates |= {(m, option, name) for m, option in parsed.gates}
        for dep, c, is_string in ([(d, c, False) for d, c in parsed.names]
                                  + [(d, c, True) for d, c in parsed.strings]):
            cond2 = combine(cond, c)
            if dep.split(".")[0] in packages:
                parts = dep.split(".")
                todo += [(".".join(parts[:n]), cond2) for n in range(1, len(parts) + 1)
                         if project_file(root, ".".join(parts[:n]))]
            elif _is_external(dep) and (not is_string or installed_module(dep)):
                reached.append(Reached(dep, distribution_of(dep), name, cond2))
                reached += [Reached(m, None if d == "?" else d, f"{dep} (imported by {name})", cond2)
                            for m, d in submodule_needs(dep)]
    return modules, reached, gates


def problems(start: str, option: str | None, root: Path = ROOT,
             packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """What an install with ``option`` (None: the base) lacks for ``start``, one line per
    distribution and importing module."""
    options = (option,) if option else ()
    have = installs(*options)
    anywhere = installs(*PYPROJECT["project"]["optional-dependencies"])
    install = f"[{option}]" if option else "the base install"
    out: dict[tuple[str, str], str] = {}
    _, reached, gates = command_reach(start, root, packages)
    for r in reached:
        dist = canonicalize_name(r.dist) if r.dist else None
        key = (dist or r.module.split(".")[0], r.via)
        if r.cond == OPTIONAL:
            if dist and dist not in anywhere:
                out[key] = f"{r.module} ({r.dist}; {r.via} handles its absence) is in no install option"
            continue
        allowed = have
        for module, gate_option in r.cond:
            # A gate this install passes lets the code run with this install alone; one it
            # stops sends the user to its option, which the code may then rely on.
            if canonicalize_name(distribution_of(module) or module) not in have:
                allowed = allowed | installs(*options, gate_option)
        if dist not in allowed:
            out[key] = (f"{r.module} ({r.dist or 'installed nowhere'}), imported by {r.via}, is "
                        f"not installed by {install}")
    for module, gate_option, where in gates:
        dist = distribution_of(module)
        if not dist or canonicalize_name(dist) not in installs(gate_option):
            out[("missing_extra " + module, where)] = (
                f"{where}: missing_extra({module!r}, {gate_option!r}) names an option that does "
                f"not install {module}")
    return sorted(out.values())
