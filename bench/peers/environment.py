"""The peers' own venvs, made once where a benchmark needs one: datatrove's (its pinned version and
the extras its recipes use), and the language-id model both sides load."""
from __future__ import annotations

import os
import subprocess
import sys

from bench.common import REPO

LID = os.path.join(str(REPO), "data_manifests", "models", "lid.176.ftz")
"""fastText lid.176, one file for both sides (datatrove would download its own)."""


def ensure_datatrove(venv: str) -> str:
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        print(f"creating datatrove's venv {venv} (once)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        # spacy: the Gopher filters' word tokenizer; zstandard: .zst through fsspec; the last
        # three: datatrove's WarcReader (python-magic needs the libmagic1 Debian package).
        subprocess.run([python, "-m", "pip", "install", "-q", "datatrove[processing]==0.10.1",
                        "justext==3.0.2", "lxml_html_clean", "orjson", "spacy", "zstandard", "faust-cchardet",
                        "python-magic", "warcio"], check=True)
    return python
