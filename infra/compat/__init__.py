"""Third-party internals, one module per library (``beam``, ``torch``): each checks the
installed version and the names it relies on, and raises ``CompatError`` when they are not what
it was written for, instead of patching a renamed attribute or a method nobody calls any more.

Nothing here imports a third-party library at module level: ``infra`` is the leaf package every
layer may import, also where Beam or torch is not installed.
"""
from __future__ import annotations

import hashlib
import importlib
import inspect
import re
import textwrap


class CompatError(RuntimeError):
    """An installed library is outside the versions a compat module was verified for, or no
    longer has the internals it uses."""


def minor_version(version: str) -> tuple[int, int]:
    """``"2.77.0"`` / ``"2.13.0+cpu"`` / ``"2.14.0rc1"`` -> ``(2, 77)`` / ``(2, 13)`` / ``(2, 14)``."""
    m = re.match(r"(\d+)\.(\d+)", version)
    if not m:
        raise CompatError(f"cannot read a version number from {version!r}")
    return int(m.group(1)), int(m.group(2))


def require_version(library: str, version: str, verified: tuple[tuple[int, int], tuple[int, int]],
                    what: str) -> None:
    """Raise ``CompatError`` unless ``version``'s major.minor is in the inclusive ``verified``
    range; ``what`` says which use of the library's internals was verified."""
    low, high = verified
    if not low <= minor_version(version) <= high:
        raise CompatError(
            f"{library} {version} is outside the versions {what} was verified for "
            f"({low[0]}.{low[1]} to {high[0]}.{high[1]}.x). Install the locked versions "
            f"(`make venv`, requirements/lock.txt) or re-verify infra/compat/ against "
            f"{library} {version} and widen the range there and in pyproject.toml.")


def require(condition: bool, library: str, message: str) -> None:
    """Raise ``CompatError`` naming ``library`` unless ``condition`` holds."""
    if not condition:
        raise CompatError(f"{library}: {message}; infra/compat/ must be re-verified for this "
                          f"version")


def source_digest(obj) -> str:
    """sha256 of an object's dedented source: a patch of a library function is verified against
    the code it was written for, so an upstream edit with the same name is caught."""
    return hashlib.sha256(textwrap.dedent(inspect.getsource(obj)).encode()).hexdigest()


def dotted_object(dotted: str):
    """``"justext.core.ParagraphMaker.handle_data"`` -> that object (module, then attributes)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(f"no module in {dotted!r}")


def require_sources(library: str, version: str, verified: tuple[tuple[int, int], tuple[int, int]],
                    sources: dict[str, str], what: str) -> None:
    """``require_version``, then raise ``CompatError`` naming every dotted name in ``sources``
    whose code is not the sha256 recorded for it."""
    require_version(library, version, verified, what)
    changed = [name for name, digest in sources.items() if source_digest(dotted_object(name)) != digest]
    require(not changed, f"{library} {version}", f"changed {', '.join(changed)} ({what})")
