# Shim for Beam's `--setup_file ./setup.py` (Dataflow and other cluster runners build an sdist of
# the project to install it on their workers); all metadata lives in pyproject.toml.
from setuptools import setup

setup()
