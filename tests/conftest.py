"""How the suite is spread over xdist workers (`make test`: -n 2 --dist loadgroup).

Tests that share a fixture wider than one test (a module's 8-rank training run, a session's
installed wheel, a curated RUN) must run on ONE worker, or each worker builds the fixture once
more. Each set of tests connected through such fixtures (defined in this test tree; pytest's
own, e.g. tmp_path_factory, do not count) becomes one xdist group, so a new module-scoped
fixture is shared without anyone remembering a marker. Other tests are spread one by one, slow
ones (``@pytest.mark.slow``) first.
"""
from __future__ import annotations

import gc
import ipaddress
import os
import shutil
import socket
import tempfile

import pytest

# `make test` runs two xdist workers on two cores: a core each.  Thread pools sized to the
# machine (torch's intra-op OpenMP pool, OpenBLAS) put twice the threads on the cores, and
# OpenMP threads spin while they wait: the trainer tests took 3x the CPU with them under load.
# Set before any test module imports torch or numpy; inherited by every subprocess.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

_SHARED_SCOPES = ("module", "package", "session")


def _shared_fixtures(item: pytest.Item) -> list[str]:
    """Keys of the fixtures this test uses whose scope is wider than a function and that the
    test tree defines (non-empty baseid: a conftest folder or a test module)."""
    info = getattr(item, "_fixtureinfo", None)  # pytest keeps the resolved fixtures here
    if info is None:
        return [item.nodeid.split("::")[0]]  # fall back to one group per module
    keys = []
    for name in item.fixturenames:
        defs = info.name2fixturedefs.get(name)
        if defs and defs[-1].scope in _SHARED_SCOPES and defs[-1].baseid:
            keys.append(f"{defs[-1].baseid}::{name}")
    return keys


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the markers set here
def pytest_collection_modifyitems(config, items):
    if not config.pluginmanager.hasplugin("xdist"):
        return
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        while parent.setdefault(key, key) != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    keys, explicit = {}, {}
    for item in items:
        item_keys = _shared_fixtures(item)
        named = [m.args[0] if m.args else m.kwargs.get("name", "default")
                 for m in item.iter_markers("xdist_group")]
        explicit[item.nodeid] = named
        item_keys += [f"group::{name}" for name in named]  # an explicit group joins too
        keys[item.nodeid] = item_keys
        for key in item_keys[1:]:
            parent[find(key)] = find(item_keys[0])
    # A component holding explicitly grouped tests (tests/cluster) keeps that group's name.
    names: dict[str, set[str]] = {}
    for item in items:
        if keys[item.nodeid]:
            names.setdefault(find(keys[item.nodeid][0]), set()).update(explicit[item.nodeid])
    for item in items:
        if keys[item.nodeid] and not explicit[item.nodeid]:
            root = find(keys[item.nodeid][0])
            for name in sorted(names[root]) or [root]:
                item.add_marker(pytest.mark.xdist_group(name))
    # The scheduler hands out groups first (largest first), then single tests in this order:
    # slow ones (multi-process, end to end) first, so that the quick ones fill the end of the
    # run instead of one worker finishing a long test alone.  Grouped tests keep their places.
    if config.getvalue("dist") == "loadgroup":
        items.sort(key=lambda item: not (item.get_closest_marker("slow") or keys[item.nodeid]))


# pytest 9.2 keeps a node's id in ``_id``; pytest-xdist (3.8 and before) writes a test's group to
# ``item._nodeid``, which 9.2 no longer reads, so ``--dist loadgroup`` splits every group.
_LOADGROUP_BROKEN = ((9, 2), (3, 8))


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".")[:2] if p.isdigit())


def _session_temp_dir(config) -> None:
    """Everything the suite's processes put in the system temp folder (Beam's pipeline temp
    folders, torchrun's log folders, multiprocessing's sockets, mkdtemp) goes into one folder
    per run, removed when the run ends: a run left ~30 entries in /tmp, and a machine that runs
    the suite hundreds of times (CI) filled its disk with them.  pytest's own ``tmp_path``
    folders stay where pytest keeps them (its last 3 runs, for looking at a failure)."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller's folder, inherited
        return
    root = tempfile.gettempdir()
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", root)  # where tmp_path's folders go
    folder = tempfile.mkdtemp(prefix="mtnlg-tests-", dir=root)
    os.chmod(folder, 0o1777)  # as /tmp is: a process run as another user uses it too
    config._mtnlg_temp = folder
    os.environ["TMPDIR"] = folder  # inherited by the xdist workers and every subprocess
    tempfile.tempdir = None  # this process asks again


def pytest_unconfigure(config):
    folder = getattr(config, "_mtnlg_temp", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


# No network at run time: a test may reach this machine (moto, job services, gloo, Chromium's
# DevTools) and nothing else.  Beam's DirectRunner, for one, tries to download its Prism binary
# and falls back quietly when that fails, so attempts are recorded and fail the test that made
# them (``_no_network``) even where the caller swallowed the error.  This process only.
_NETWORK_ATTEMPTS: list[str] = []
_LOCAL_NAMES = {None, "", "localhost", socket.gethostname()}


def _is_local(host) -> bool:
    if isinstance(host, bytes):
        host = host.decode()
    if host in _LOCAL_NAMES:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def _refuse_remote() -> None:
    real_getaddrinfo, real_connect = socket.getaddrinfo, socket.socket.connect

    def getaddrinfo(host, *args, **kwargs):
        if not _is_local(host):
            _NETWORK_ATTEMPTS.append(str(host))
            raise socket.gaierror(f"{host}: the test suite runs without network (tests/conftest.py)")
        return real_getaddrinfo(host, *args, **kwargs)

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address[0]):
            _NETWORK_ATTEMPTS.append(str(address[0]))
            raise ConnectionRefusedError(f"{address[0]}: the test suite runs without network")
        return real_connect(self, address)

    socket.getaddrinfo, socket.socket.connect = getaddrinfo, connect


@pytest.fixture(autouse=True)
def _no_network():
    yield
    if _NETWORK_ATTEMPTS:
        hosts = sorted(set(_NETWORK_ATTEMPTS))
        _NETWORK_ATTEMPTS.clear()
        pytest.fail(f"the test tried to reach {', '.join(hosts)}; tests run without network")


def pytest_configure(config):
    _session_temp_dir(config)
    _refuse_remote()
    if config.getvalue("dist") != "loadgroup" or not config.pluginmanager.hasplugin("xdist"):
        return
    import xdist

    if (_version(pytest.__version__) >= _LOADGROUP_BROKEN[0]
            and _version(xdist.__version__) <= _LOADGROUP_BROKEN[1]):
        raise pytest.UsageError(
            f"--dist loadgroup does not group tests with pytest {pytest.__version__} and pytest-xdist "
            f"{xdist.__version__} (every module fixture would be built once per worker): install the "
            "locked versions (make venv; pyproject.toml pins pytest < 9.2)")


@pytest.hookimpl(tryfirst=True)  # before xdist sends this worker's collection to the scheduler
def pytest_collection_finish(session):
    _fewer_full_collections()
    _check_loadgroup(session)


def _fewer_full_collections() -> None:
    """After collection every test module (torch, Beam, pandas) is imported: millions of
    long-lived objects that each full garbage collection walked again.  In a run of
    tests/pipelines + tests/curation (-n 2) the collector took 21.3 s of the workers' 256 s of
    CPU, 15.4 s of it in 49 full collections; with these objects frozen and the young
    generation collected less often, 8.9 s of 243 s (10 full collections), while the larger
    worker's peak RSS grew from 0.9 to 1.3 GB.  Only this process; reference counting frees
    everything acyclic as before."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 50, 50)


def _check_loadgroup(session) -> None:
    """On an xdist worker with ``--dist loadgroup``, every grouped test's id must carry its
    group (``id@group``): that suffix is all the scheduler groups by.  Fail the run where it is
    lost (a pytest/xdist pair not covered by the version check above)."""
    if not getattr(session.config.option, "loadgroup", False):
        return
    lost = [item.nodeid for item in session.items
            if item.get_closest_marker("xdist_group") and "@" not in item.nodeid]
    if lost:
        raise pytest.UsageError(
            f"--dist loadgroup: {len(lost)} grouped test(s) lost their group suffix (e.g. {lost[0]})")
