# Two commands on a fresh machine (Python 3.11 + package registries):
#   make demo   creates .venv/ and runs `mtnlg demo` on the embedded sample corpus
#   make test   creates .venv/ and runs the test suite
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_DIR ?= demo_run
PYTEST_ARGS ?=

.PHONY: demo test venv clean

venv: $(STAMP)

# Everything: the base (curation worker) set plus [train] (torch), [aws] (s3://), [hf] and [dev].
# torch first, pinned: on a CPU machine a bare `torch` requirement would pull a multi-GB CUDA
# build; 2.13.0 resolves to the CPU wheel here. Where the system Python already has torch
# (GPU machines), the venv sees it through --system-site-packages and keeps it.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || { if $(PYTHON) -c "import torch" 2>/dev/null; then \
	  $(PYTHON) -m venv --system-site-packages $(VENV); else $(PYTHON) -m venv $(VENV); fi; }
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "torch==2.13.0"
	$(BIN)/python -m pip install -q -e ".[train,aws,hf,dev,eval]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/mtnlg demo --workdir $(DEMO_DIR)

test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) $(DEMO_DIR)
