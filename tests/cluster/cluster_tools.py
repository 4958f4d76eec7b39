"""Helpers of the cluster-shaped tests (fixtures in conftest.py).

Cluster-shaped tests: the project as its users run it, an INSTALLED package, no checkout.

One session builds the sdist (as Beam's ``--setup_file`` does: ``python setup.py sdist``) and
the wheel, installs the wheel into two fresh virtualenvs in a temporary folder: with the base
dependencies + ``[aws]`` (Beam's S3 filesystem: a curation worker), and with exactly the options
README.md's "Installing the package" section installs before its ``mtnlg demo`` line (``[train]``:
the demo, issue 45), and runs every command from one of them with a clean environment (no
PYTHONPATH, cwd outside the checkout) inside a mount namespace where the checkout is an empty
folder (``unshare -m`` + a bind mount): a worker that needed a file of the source tree, or a
command that needed a module its install option does not bring, would fail here.

Dependencies are installed at the locked versions by uv, as `make venv` installs them, from
uv's cache (a few seconds).  Every service (moto, Beam's job service and
worker pool) listens on 127.0.0.1 and is stopped by its PID.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXTRAS = "aws"  # a curation worker that reads s3://; no torch
BUCKET = "corpus"  # the moto server's bucket
S3_KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1"}  # what boto3 reads from the environment


def demo_config(quality_model: str, bucket: str | None = None) -> str:
    """The demo source config with the quality filter on (``quality_model``); with ``bucket``,
    every file it names (inputs, language model, tokenizer) is under ``s3://bucket/``."""
    text = (REPO / "data_manifests" / "sources" / "demo.yaml").read_text()
    text = text.replace("  enabled: false ", "  enabled: true ")
    text = text.replace("  model_path: null ", f"  model_path: {quality_model} ")
    if bucket:
        text = text.replace("name: demo\n", f"name: demo-s3\ninput_root: s3://{bucket}/raw\n")
        text = text.replace("language:\n  allowed: [en]",
                            f"language:\n  model_path: s3://{bucket}/models/lid.176.ftz\n  allowed: [en]")
        text = text.replace("path: pkg://data_manifests/tokenizers/gpt2", f"path: s3://{bucket}/tokenizers/gpt2")
    assert f"model_path: {quality_model} " in text and text.count("s3://") == (4 if bucket else 0), text
    return text


_PROGRESS = re.compile(r"\w+: [\d,]+ (of [\d,]+ )?documents")


def summary_and_progress(output: str) -> tuple[list[str], list[str]]:
    """A curate command's terminal output split into its summary lines and its live-progress
    lines ("dedup: 380 of 760 documents, ..."; at most one per 30 s when the output is no
    terminal, plus one per stage that ran between two of them; on stderr, so they may follow
    the summary)."""
    lines = output.splitlines()
    progress = [line for line in lines if _PROGRESS.match(line.strip())]
    return [line for line in lines if not _PROGRESS.match(line.strip())], progress


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, what: str, timeout: float = 90) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode}")
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        time.sleep(0.3)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {timeout}s")


def stop(proc: subprocess.Popen) -> None:
    """Stop a service started by a test, and its children (its own process group), by PID."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)


@contextlib.contextmanager
def moto_s3(log: Path, bucket: str):
    """A moto S3 server (a separate process on 127.0.0.1, its output in ``log``) holding an empty
    ``bucket``: yields (endpoint URL, boto3 client); stopped by PID."""
    import boto3

    port = free_port()
    proc = subprocess.Popen([str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1",
                             "-p", str(port)], stdout=open(log, "w"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        wait_for_port(port, proc, "moto_server")
        endpoint = f"http://127.0.0.1:{port}"
        client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                              aws_secret_access_key="testing", region_name="us-east-1")
        client.create_bucket(Bucket=bucket)
        yield endpoint, client
    finally:
        stop(proc)


@dataclass
class Installed:
    """A virtualenv holding the installed wheel, and how to run commands from it."""

    venv: Path
    wheel: Path
    sdist: Path
    hide: Path  # an empty folder bind-mounted over the checkout
    home: Path
    pycache: Path  # its bytecode (seed_bytecode)

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    def env(self, **extra: str) -> dict[str, str]:
        env = {"PATH": f"{self.bin}:/usr/local/bin:/usr/bin:/bin", "HOME": str(self.home),
               "LANG": "C.UTF-8", "MTNLG_STAGING_DIR": str(self.home / "staging"),
               "PYTHONPYCACHEPREFIX": str(self.pycache),
               "TMPDIR": tempfile.gettempdir()}  # the suite's own (tests/conftest.py)
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # tests/conftest.py
            if var in os.environ:
                env[var] = os.environ[var]
        env.update(extra)
        return env

    def command(self, argv: list[str]) -> list[str]:
        """``argv`` inside a new mount namespace in which the checkout is an empty folder."""
        script = 'mount --bind "$0" "$1" && shift && exec "$@"'
        return ["unshare", "-m", "--propagation", "private", "sh", "-c", script,
                str(self.hide), str(REPO), *argv]

    def run(self, argv: list[str], cwd: Path, timeout: float = 600, **env: str):
        proc = subprocess.run(self.command(argv), cwd=cwd, env=self.env(**env), timeout=timeout,
                              capture_output=True, text=True)
        return proc

    def popen(self, argv: list[str], cwd: Path, log: Path, **env: str) -> subprocess.Popen:
        out = open(log, "w")
        return subprocess.Popen(self.command(argv), cwd=cwd, env=self.env(**env), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def _build_dist(out: Path) -> tuple[Path, Path]:
    """sdist exactly as Beam's stager builds it for --setup_file, and the wheel."""
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(REPO, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
            ".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", "demo_run", ".pytest_cache"))
        for argv in ([sys.executable, "setup.py", "-q", "sdist", "--dist-dir", str(out)],
                     [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                      "--no-build-isolation", "-w", str(out), "."]):
            proc = subprocess.run(argv, cwd=tmp, capture_output=True, text=True)
            if proc.returncode:
                raise RuntimeError(f"{' '.join(argv[1:])} failed ({proc.returncode}):\n"
                                   f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return next(out.glob("*.tar.gz")), next(out.glob("*.whl"))


LOCK = REPO / "requirements" / "lock.txt"  # the tested versions, as `make venv` installs them


def readme_demo_options() -> str:
    """The install options of the README's install line for the demo: the last ``pip install``
    with the lock before ``mtnlg demo`` in its "Installing the package" section (``train``)."""
    section = (REPO / "README.md").read_text().split("## Installing the package", 1)[1]
    before_demo = section.split("\nmtnlg demo", 1)[0]
    lines = [line for line in before_demo.splitlines()
             if line.startswith("pip install") and f"-c {LOCK.relative_to(REPO)}" in line]
    assert lines, "README.md: no `pip install -c requirements/lock.txt` line before `mtnlg demo`"
    found = re.search(r"\.whl\[([\w,]+)\]", lines[-1])
    assert found, lines[-1]
    return found.group(1)


def make_venv(venv: Path, wheel: Path, extras: str) -> None:
    """A fresh virtualenv at ``venv`` (with pip, for `pip list`) holding the wheel with
    [``extras``] at the locked versions, made by the uv `make venv` installed beside this
    Python, from the sources pip is configured with (uv's cache holds what `make venv` fetched:
    the same locked versions install without downloads)."""
    uv = Path(sys.executable).with_name("uv")
    if not uv.exists():
        raise RuntimeError(f"{uv} is missing: `make venv` installs uv (the Makefile's UV_VERSION)")
    sources = subprocess.run([sys.executable, str(REPO / "requirements" / "uv_sources.py")],
                             check=True, capture_output=True, text=True).stdout.split()
    for argv in (["venv", "--seed", "--python", sys.executable, str(venv)],
                 ["pip", "install", "--python", str(venv / "bin" / "python"), "-c", str(LOCK),
                  f"{wheel}[{extras}]"]):
        subprocess.run([str(uv), *argv, "-q", *sources], check=True, capture_output=True,
                       timeout=900)


def seed_bytecode(venv: Path, pycache: Path) -> None:
    """Bytecode for the venv's dependencies at ``pycache`` (its PYTHONPYCACHEPREFIX), linked
    from the checkout venv's (the Makefile's .venv/pycache): uv installs both venvs' files as
    hard links of its cache, so a dependency's source has the same mtime and size in both and
    the compiled file is valid for both (Python checks exactly those two, and recompiles
    where they differ).  Without it the installed demo compiled torch and Beam first: 34 s of
    CPU where it takes 21 s with bytecode (2-core VM).  The wheel's own modules compile as a
    user's would; no file of the checkout is read by the venv's processes."""
    ours = Path(sysconfig.get_paths()["purelib"])
    source = Path(sys.pycache_prefix or "/nonexistent") / ours.relative_to(ours.anchor)
    theirs = next((venv / "lib").glob("python3*/site-packages"))
    target = pycache / theirs.relative_to(theirs.anchor)
    if source.is_dir():  # no .venv/pycache (PYTHONPYCACHEPREFIX unset): they compile
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-al", str(source), str(target)], check=True)
