"""requirements/uv_sources.py: pip's configured package sources as uv options (`make venv`)."""
import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
_spec = importlib.util.spec_from_file_location("uv_sources", ROOT / "requirements" / "uv_sources.py")
uv_sources = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(uv_sources)

LISTING = """global.cert='/etc/ssl/certs/ca-certificates.crt'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/opt/wheels'
install.index-url='https://mirror.example/simple'
:env:.find-links='/srv/wheels /opt/more'
:env:.default-timeout='180'
"""


def test_environment_beats_files_and_install_beats_global():
    sources = uv_sources.pip_sources(LISTING)
    assert sources == {"extra-index-url": ["file:///opt/pypi/simple", "file:///opt/pypi-more/simple"],
                       "find-links": ["/srv/wheels", "/opt/more"],
                       "index-url": ["https://mirror.example/simple"]}
    assert uv_sources.uv_options(sources) == [
        "--index-url", "https://mirror.example/simple",
        "--extra-index-url", "file:///opt/pypi/simple", "--extra-index-url", "file:///opt/pypi-more/simple",
        "--find-links", "/srv/wheels", "--find-links", "/opt/more",
        "--index-strategy", "unsafe-best-match"]


def test_no_configuration_gives_no_options():
    assert uv_sources.uv_options(uv_sources.pip_sources("")) == []
    # one index only: uv's default strategy is pip's
    assert uv_sources.uv_options({"find-links": ["/w"]}) == ["--find-links", "/w"]


def test_reads_this_pip_and_its_environment(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "PIP_CONFIG_FILE": "/dev/null", "PIP_FIND_LINKS": str(tmp_path)}
    out = subprocess.run([sys.executable, str(ROOT / "requirements" / "uv_sources.py")], env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["--find-links", str(tmp_path)]
