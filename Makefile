# Two commands on a fresh machine (Python 3.11 + package registries):
#   make demo   creates .venv/ and runs `mtnlg demo` on the embedded sample corpus
#   make test   creates .venv/ and runs the test suite
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_DIR ?= demo_run
PYTEST_ARGS ?=
# The locked, tested versions of everything `make venv` installs (make lock writes it).
LOCK := requirements/lock.txt
EXTRAS := train,aws,hf,dev,eval
PIP_VERSION := 26.3
UV_VERSION := 0.13.9
# pip-compile's own virtualenv, and its arguments (e.g. PIP_COMPILE_ARGS="--upgrade-package X").
LOCK_VENV := .venv-lock
PIP_COMPILE_ARGS ?=

.PHONY: demo test venv lock clean

venv: $(STAMP)

# What `make demo` and `make test` run writes the bytecode of each module it imports once, into
# .venv/pycache rather than next to any source, even where PYTHONDONTWRITEBYTECODE is set (as on
# these VMs): otherwise every process, Beam worker and training rank compiles torch and Beam
# again (an import of both costs several times as much without bytecode).
PYCACHE := PYTHONPYCACHEPREFIX=$(abspath $(VENV))/pycache PYTHONDONTWRITEBYTECODE=
# Compiled when the venv is made: without it, the suite's first processes all compiled the same
# modules at once. Two interpreters, one per core, compile the torch side and the Beam side at
# once (faster than one doing both); a module both import is written twice, each time whole
# (Python replaces a .pyc atomically).
# The torch side is what the launcher's forkserver preloads for every rank (one list:
# training.elastic.WORKER_PRELOAD).
WARM_TORCH := import importlib, torch.distributed.checkpoint, training.elastic as e; \
  [importlib.import_module(m) for m in e.WORKER_PRELOAD]
WARM_BEAM := mtnlg.cli, pipelines.curate, apache_beam.runners.portability.fn_api_runner, pytest, \
  xdist, hypothesis

# Everything: the base (curation worker) set plus [train] (torch), [aws] (s3://), [hf], [dev]
# and [eval], each at the version requirements/lock.txt pins (pip constraints), installed by uv
# (pinned below) from the sources pip is configured with (requirements/uv_sources.py): several
# times faster than pip (README, "The two commands"). Bytecode: uv would compile every module of
# the venv, and a run imports a fraction of them; the modules every command imports
# are compiled once by importing them (WARM_TORCH, WARM_BEAM, into PYCACHE), the rest on first use.
# The venv is made without pip and uv is installed into it by the system Python's pip, where
# there is one (faster than a venv with pip, upgraded: uv's wheel has no dependencies and three
# small Python files, so pip neither resolves nor compiles); pip itself
# (tests and the cluster helpers use it) is installed by uv with the rest. Without a system
# pip, the venv gets pip from ensurepip and installs uv with it.
# The lock pins torch's CPU build (2.13.0+cpu, on this machine's disk): a CPU machine never gets
# a CUDA build. Where the system Python already has torch (GPU machines), the venv sees it
# through --system-site-packages and keeps it, with what it requires
# (requirements/constraints.py); uv ignores system site-packages, so pip installs that venv.
$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || { if $(PYTHON) -c "import torch" 2>/dev/null; then \
	  $(PYTHON) -m venv --system-site-packages $(VENV); else $(PYTHON) -m venv --without-pip $(VENV); fi; }
	test -x $(BIN)/uv || $(PYTHON) -m pip install -q --disable-pip-version-check \
	    --no-warn-script-location --no-deps --no-compile --prefix $(VENV) "uv==$(UV_VERSION)" 2>/dev/null || { \
	  $(BIN)/python -m pip --version >/dev/null 2>&1 || $(BIN)/python -m ensurepip >/dev/null; \
	  $(BIN)/python -m pip install -q "uv==$(UV_VERSION)"; }
	$(PYTHON) requirements/constraints.py $(LOCK) > $(VENV)/constraints.txt
	if grep -q "^include-system-site-packages = true" $(VENV)/pyvenv.cfg; then \
	  $(BIN)/python -m pip install -q "pip==$(PIP_VERSION)" && \
	  $(BIN)/python -m pip install -q -c $(VENV)/constraints.txt -e ".[$(EXTRAS)]"; else \
	  pip_python=$(BIN)/python; $$pip_python -m pip --version >/dev/null 2>&1 || pip_python=$(PYTHON); \
	  $(BIN)/uv pip install -q --python $(BIN)/python -c $(VENV)/constraints.txt \
	    $$($$pip_python requirements/uv_sources.py) "pip==$(PIP_VERSION)" -e ".[$(EXTRAS)]"; fi
	$(PYCACHE) $(BIN)/python -c "$(WARM_TORCH)" & torch=$$!; \
	  $(PYCACHE) $(BIN)/python -c "import $(WARM_BEAM)" && wait $$torch
	touch $(STAMP)

# Re-resolve requirements/lock.txt from pyproject.toml (+ requirements/lock.in) after a
# dependency changed; pins already in the lock are kept where they still fit. Run it on a CPU
# machine (torch must resolve to the +cpu build), then `make test`, and commit the lock.
lock:
	test -x $(LOCK_VENV)/bin/pip-compile || { $(PYTHON) -m venv $(LOCK_VENV) && \
	  $(LOCK_VENV)/bin/python -m pip install -q "pip==$(PIP_VERSION)" "pip-tools==7.6.2"; }
	CUSTOM_COMPILE_COMMAND="make lock" $(LOCK_VENV)/bin/pip-compile -q --strip-extras \
	  --no-emit-index-url --no-emit-find-links --unsafe-package mtnlg-data \
	  --unsafe-package setuptools --unsafe-package pip --extra $(EXTRAS) $(PIP_COMPILE_ARGS) \
	  -o $(LOCK) pyproject.toml requirements/lock.in
	grep -q '^torch==.*+cpu$$' $(LOCK) || { echo "make lock: torch did not resolve to a CPU" \
	  "build (run it where pip finds torch 2.13.0+cpu)" >&2; exit 1; }

demo: $(STAMP)
	$(PYCACHE) $(BIN)/mtnlg demo --workdir $(DEMO_DIR)

test: $(STAMP)
	$(PYCACHE) $(BIN)/python -m pytest -q -n 2 --dist loadgroup --durations=20 $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) $(LOCK_VENV) $(DEMO_DIR)
