"""Files that ship inside the installed package, found without a source checkout.

Shipped data lives in two resource packages that install with the wheel (and the sdist that
``--setup_file`` builds for Beam workers): ``data_manifests`` (source configs, blend specs,
quality configs, the lid.176 language model, the GPT-2 tokenizer, eval-task samples) and
``training`` (``training/configs/*.yaml``).  They are read with ``importlib.resources``.

A shipped file is referenced in configs and run records as ``pkg://<package>/<path>``, e.g.
``pkg://data_manifests/tokenizers/gpt2``.  The reference, not a path, travels from the driver
to the workers, and each process resolves it against its own installation (``local_path``):
a worker never opens a path that only exists on the driver.

Shipped configs are addressable by name: ``mtnlg curate --config demo`` is
``data_manifests/sources/demo.yaml``; ``config_path`` does that lookup for every kind.
"""
from __future__ import annotations

import os
from importlib import resources

SCHEME = "pkg://"

#: Shipped config kinds -> (resource package, folder inside it).
CONFIG_DIRS: dict[str, tuple[str, str]] = {
    "sources": ("data_manifests", "sources"),    # mtnlg curate --config NAME
    "blends": ("data_manifests", "blends"),      # mtnlg blend --spec NAME
    "quality": ("data_manifests", "quality"),    # mtnlg quality train --config NAME
    "train": ("training", "configs"),            # mtnlg train --config NAME
}

GPT2_TOKENIZER = SCHEME + "data_manifests/tokenizers/gpt2"
LANGUAGE_MODEL = SCHEME + "data_manifests/models/lid.176.ftz"
EVAL_TASK_SAMPLES = SCHEME + "data_manifests/eval_tasks/sample"


class ResourceError(FileNotFoundError):
    """A ``pkg://`` reference or a shipped config name that the installation does not hold."""


def ref(package: str, *parts: str) -> str:
    """``pkg://package/part/...``."""
    return SCHEME + "/".join((package, *parts))


def is_package_ref(path: object) -> bool:
    return isinstance(path, str) and path.startswith(SCHEME)


def _split(reference: str) -> tuple[str, str]:
    rest = reference[len(SCHEME):].strip("/")
    package, _, inner = rest.partition("/")
    if not package or ".." in inner.split("/"):
        raise ResourceError(f"{reference!r}: expected pkg://<package>/<path inside it>")
    return package, inner


def local_path(path: str) -> str:
    """The filesystem path of a ``pkg://`` reference in this process's installation; any other
    path or URL is returned unchanged.  Raises ``ResourceError`` when the file is not shipped."""
    if not is_package_ref(path):
        return path
    package, inner = _split(path)
    try:
        root = resources.files(package)
    except ModuleNotFoundError:
        raise ResourceError(f"{path!r}: package {package!r} is not installed") from None
    target = root.joinpath(*[p for p in inner.split("/") if p]) if inner else root
    # pip installs wheels as plain files, so a resource is a real path (no zipimport support).
    fs_path = os.fspath(target) if isinstance(target, os.PathLike) else str(target)
    if not os.path.exists(fs_path):
        raise ResourceError(f"{path!r}: not shipped with this installation ({fs_path} is missing)")
    return fs_path


def exists(path: str) -> bool:
    try:
        local_path(path)
    except ResourceError:
        return False
    return True


def shipped_configs(kind: str) -> list[str]:
    """Names of the configs of ``kind`` that ship with the package (``demo``, ``mtnlg``, ...)."""
    package, folder = CONFIG_DIRS[kind]
    try:
        entries = resources.files(package).joinpath(folder).iterdir()
    except (ModuleNotFoundError, FileNotFoundError):
        return []
    return sorted(e.name[:-5] for e in entries if e.name.endswith(".yaml"))


def config_ref(kind: str, name: str) -> str:
    package, folder = CONFIG_DIRS[kind]
    return ref(package, folder, name if name.endswith(".yaml") else name + ".yaml")


def config_path(kind: str, value: str, flag: str = "--config") -> str:
    """Resolve a config argument: an existing file or a URL is used as given; otherwise a bare
    name (``demo``, ``demo.yaml``) or a ``pkg://`` reference is looked up among the shipped
    configs of ``kind``.  ``ResourceError`` names the flag and lists what ships."""
    if "://" in value and not is_package_ref(value):
        return value
    if os.path.isfile(value):
        return value
    if is_package_ref(value):
        return local_path(value)
    if os.sep not in value and "/" not in value:
        reference = config_ref(kind, value)
        if exists(reference):
            return local_path(reference)
    shipped = ", ".join(shipped_configs(kind)) or "none"
    raise ResourceError(f"{flag}: {value!r} is neither an existing file nor a shipped config "
                        f"(shipped {kind} configs: {shipped})")
