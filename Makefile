# vortexgo: build, test, demo, GPU build-carry-run recipe and benchmarks.
#
#   make demo       the main job: simulated OCT acquisition (GPU if present, else CPU)
#   make test       every test: go vet, go test -race, pytest (GPU tests skip without a GPU)
#   make py-test-invariants  pytest against an extension built with Go's invariants: no leak at exit
#   make docs       the documentation site (guides + API reference) into build/docs/html (warnings are errors)
#   make wheel      manylinux_2_17 wheels for CPython 3.10-3.14 into dist/, checked by auditwheel
#   make wheel-test install each wheel in a fresh venv without Go and run the CPU test subset
#   make gpu-build  build for the lent GPU machine into gpu-build/ (carry it, then run
#                   `bash gpu-build/run_gpu_tests.sh` there; `make bench` and `make soak` there too)
#   make gpu-build-base BASE=<rev>   another revision's extension into gpu-build/base-python,
#                   for A/B runs of two builds there (bench/host_cost.py --variant ...:PYTHONPATH=...)
#   make gpu-qt, make gpu-aravis   offscreen Qt and Aravis (+ its GigE Vision simulator) packed
#                   for the GPU machine, which lacks both; carried beside gpu-build/
#
# Everything is set up from scratch: Go tools pinned in go.mod, Python packages from PyPI
# into .venv. Python 3.12 is preferred (the GPU machine runs 3.12).

SHELL := /bin/bash
PY312 := $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3))
PYTHON ?= $(if $(PY312),$(PY312),python3)
VENV := .venv
VPY := $(VENV)/bin/python
# What building the extension and running the demo need (gopy's pybindgen, the demo's PNGs and
# progress bar): `make build` and `make demo` install only these.
BASEDEPS := numpy pybindgen setuptools wheel tqdm pillow
# The [test] and [docs] extras of pyproject.toml: `make test`, `make docs` and the GPU build add
# them. nbclient, nbformat and ipykernel run examples/acquire.ipynb headless
# (tests_py/test_notebook.py); vortex-oct-tools, qtpy, PyQt5 and rainbow-logging-handler run
# vortex's companion package and demos (tests_py/test_vortex_tools.py, test_vortex_demos.py) on Qt's
# offscreen platform; dask, distributed and zarr run vortexgo.distributed (tests_py/test_distributed.py);
# imageio is what vortex's own offline suite imports (tests_py/test_vortex_offline.py); myst-parser
# reads the Markdown guides into the documentation site; jupyterlab and selenium drive the LiveView
# in a real browser (tests_py/test_liveview_browser.py).
PYDEPS := pytest pytest-timeout hypothesis matplotlib ipywidgets scipy \
	pynrrd nibabel h5py nbclient nbformat ipykernel sphinx myst-parser vortex-oct-tools qtpy PyQt5 rainbow-logging-handler \
	dask distributed "zarr>=3" imageio jupyterlab selenium
# A venv made before a list grew gets the new packages: a stamp's name changes with its list.
BASE_STAMP := $(VENV)/.basedeps-$(shell echo '$(BASEDEPS)' | cksum | cut -d' ' -f1)
DEPS_STAMP := $(VENV)/.pydeps-$(shell echo '$(PYDEPS)' | cksum | cut -d' ' -f1)
NATIVE := python/vortexgo/_native
GOFILES := $(shell find gosrc kernels -name '*.go' -o -name '*.ptx' 2>/dev/null)
CFILES := $(wildcard gosrc/cuda/*.c gosrc/cuda/*.h gosrc/driver/*/*.c gosrc/driver/*/*.h) gosrc/engine/eventring.h gosrc/engine/eventlayout.h python/vortexgo/_fastcall.c
GPU_PY ?= $(PYTHON)

# gpu-qt.tar.xz: the offscreen Qt the GPU machine lacks (scripts/gpu_qt.sh), carried in a call of its own.
.PHONY: gpu-build-base bench-host gpu-dask test-deps vortex-oracle gpu-qt gpu-aravis virtual all build test go-test py-test py-test-invariants demo docs ptx gpu-build bench soak clean lint wheel wheel-test

all: build

$(VPY):
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip

$(BASE_STAMP): | $(VPY)
	$(VPY) -m pip install -q $(BASEDEPS)
	touch $@

$(DEPS_STAMP): | $(BASE_STAMP)
	$(VPY) -m pip install -q $(PYDEPS)
	touch $@

# Everything the tests, the docs and the GPU build need, on top of the build.
test-deps: build $(DEPS_STAMP)

$(NATIVE)/.stamp: $(GOFILES) $(CFILES) setup.py go.mod | $(BASE_STAMP)
	$(VPY) setup.py native $(NATIVE)
	touch $@

build: $(VPY) $(BASE_STAMP) $(NATIVE)/.stamp

# --- The virtual OCT instrument (instruments/virtual/README.md): fake vendor
# libraries with the vendors' symbol names over one shared model, C only (the
# extension's Go runtime must be the only one in a process). Point the loaders
# at them: VORTEXGO_ATSAPI_LIBRARY=$(CURDIR)/build/virtual/libATSApi.so.
VDIR := build/virtual
VSRC := instruments/virtual
VCFLAGS := -O2 -fPIC -std=gnu11 -Wall -Wextra -Wno-unused-parameter -ffp-contract=off -fvisibility=default
VLIBS := $(VDIR)/libvgvirtual.so $(VDIR)/libATSApi.so

virtual: $(VLIBS)

$(VDIR)/libvgvirtual.so: $(VSRC)/vgvirtual.c $(VSRC)/vgvirtual.h
	@mkdir -p $(VDIR)
	gcc $(VCFLAGS) -shared -Wl,-soname,libvgvirtual.so -o $@ $< -lm -lpthread

# Each vendor library finds the model beside it ($$ORIGIN).
$(VDIR)/libATSApi.so: $(VSRC)/atsapi.c $(VSRC)/vgvirtual.h $(VDIR)/libvgvirtual.so
	gcc $(VCFLAGS) -shared -Wl,-soname,libATSApi.so -Wl,-rpath,'$$ORIGIN' -o $@ $< -L$(VDIR) -lvgvirtual -lm -lpthread

go-test:
	go vet ./... && go vet -tags gpu ./...
	go test -race -count=1 ./...

py-test: test-deps vortex-oracle
	PYTHONPATH=python $(VPY) -m pytest -q tests_py

# Real vortex 0.5.1 (../shared/vortex-build's wheel) in a Python 3.12 venv under build/vortex-oracle:
# the oracle of the differential tests and of vortex's offline suite (scripts/vortex_oracle.sh;
# says why and does nothing where that build or Python 3.12 is missing).
vortex-oracle:
	bash scripts/vortex_oracle.sh

test: go-test py-test

# The Python tests against an extension built with Go's test-only invariants
# (-tags invariants, gosrc/internal/invariants), in a copy of the package under
# build/invariants: the run fails when Go's leak report at exit is not empty
# (tests_py/conftest.py). INV_TESTS narrows the tests.
INV_DIR := build/invariants/python
INV_TESTS ?= tests_py --ignore=tests_py/robustness
py-test-invariants: test-deps
	rm -rf $(INV_DIR) && mkdir -p $(INV_DIR)
	cp -r python/vortexgo $(INV_DIR)/ && rm -rf $(INV_DIR)/vortexgo/_native
	VORTEXGO_GO_TAGS=invariants $(VPY) setup.py native $(INV_DIR)/vortexgo/_native
	VORTEXGO_ALLOW_MISUSE=1 PYTHONPATH=$(INV_DIR) $(VPY) -m pytest -q -p no:cacheprovider $(INV_TESTS)

# Writes to the user's data folder (printed); DEMO_ARGS="--device cpu --out DIR" to change.
demo: build
	PYTHONPATH=python $(VPY) -m vortexgo demo $(DEMO_ARGS)

# The documentation site (docs/conf.py): the Markdown guides in docs/ (MyST) and the API
# reference from the docstrings (autodoc + napoleon, docs/api/). Every warning, an unresolved
# cross-reference or a broken link between pages included, is an error. Open
# build/docs/html/index.html; tests_py/test_docs_site.py checks the pages in headless Chromium.
docs: test-deps
	rm -rf build/docs
	$(VPY) -m sphinx -W --keep-going -n -q -b html docs build/docs/html
	@echo "documentation site: build/docs/html/index.html"

ptx:
	bash kernels/build_ptx.sh

# --- Wheels (docs/install.md): the release workflow runs these same scripts ---
# WHEEL_PYTHONS="path/to/python3.12 ..." narrows the build to some interpreters (default:
# pyenv's 3.10-3.13 and a 3.14, Debian's if pyenv has none); ZIG_GLIBC=host links with the
# host's compiler instead of zig against glibc 2.28 (manylinux_2_17 wheels).
wheel:
	bash scripts/build_wheels.sh $(WHEEL_PYTHONS)

wheel-test:
	bash scripts/test_wheels.sh

# --- GPU machine (no Go, no network there): build here, carry gpu-build/, run there ---
gpu-qt: test-deps
	bash scripts/gpu_qt.sh $(VENV)/lib/python3.12/site-packages gpu-qt.tar.xz

# gpu-dask.tar.xz: dask, distributed, zarr and dask-cuda for the GPU machine (scripts/gpu_dask.sh).
gpu-dask: | $(BASE_STAMP)
	PY=$(VPY) bash scripts/gpu_dask.sh gpu-dask.tar.xz

# gpu-aravis.tar.xz: Aravis and its GigE Vision simulator for the GPU machine (scripts/gpu_aravis.sh).
gpu-aravis:
	bash scripts/gpu_aravis.sh gpu-aravis.tar.xz

gpu-build:
	rm -rf gpu-build && mkdir -p gpu-build/bin gpu-build/python
	$(GPU_PY) -m pip install -q pybindgen setuptools
	$(GPU_PY) setup.py native gpu-build/python/vortexgo/_native
	tar -C python --exclude=_native --exclude=__pycache__ -cf - vortexgo | tar -C gpu-build/python -xf -
	# Only packages with GPU tests (their CPU tests already ran here); stripped
	# and gzipped so the carried folder stays far below the 64 MiB limit.
	# Built with the invariant checks (gosrc/internal/invariants) on, as CI's
	# -race runs are: misuse inside our own code panics there instead of
	# passing silently.
	for d in $$(grep -rl --include='*_test.go' '^//go:build gpu' gosrc kernels | xargs -n1 dirname | sort -u); do \
	  name=$$(echo $$d | sed 's|^gosrc/||; s|/|_|g'); \
	  go test -c -tags gpu,invariants -ldflags='-s -w' -o gpu-build/bin/$$name.test ./$$d || exit 1; \
	done
	gzip -9 gpu-build/bin/*.test
	cp scripts/run_gpu_tests.sh scripts/run_bench.sh gpu-build/
	# The host's own scheduling gaps, which make bench reports beside the callback latency.
	mkdir -p gpu-build/tools && gcc -O2 -static -pthread -o gpu-build/tools/hiccup bench/hiccup.c
	CGO_ENABLED=0 go build -o gpu-build/tools/pingprobe ./bench/pingprobe
	# The pure-Python test dependencies the GPU machine lacks (it has no network):
	# vortex's demos and vortex-oct-tools run there at full size with them
	# (run_gpu_tests.sh puts the folder on PYTHONPATH; the Qt demos need `make gpu-qt` carried too).
	$(VPY) -m pip install -q --no-deps --target gpu-build/extra-site vortex-oct-tools rainbow-logging-handler colorama qtpy \
	  pytest-xdist execnet imageio
	# vortex's demo scripts, which tests_py/test_vortex_demos.py runs unchanged (read, never copied into the repo).
	if [ -d ../shared/vortex-reference/demo ]; then mkdir -p gpu-build/vortex-reference && \
	  cp -r ../shared/vortex-reference/demo gpu-build/vortex-reference/; fi
	# vortex's offline test suite, which tests_py/test_vortex_offline.py runs on vortexgo and on vortex.
	if [ -d ../shared/vortex-reference/test/offline ]; then mkdir -p gpu-build/vortex-reference/test && \
	  cp -r ../shared/vortex-reference/test/offline gpu-build/vortex-reference/test/; fi
	# vortex 0.5.1's build (when this checkout sits beside it): bench/bench_peers.py
	# runs vortex itself next to vortexgo on the GPU machine.
	if [ -f ../shared/vortex-build/setup.sh ]; then mkdir -p gpu-build/vortex-build && \
	  cp ../shared/vortex-build/setup.sh ../shared/vortex-build/*.whl gpu-build/vortex-build/; fi
	@du -sh gpu-build

# gpu-build/base-python: the extension of revision BASE (default HEAD~1), for A/B runs of two
# builds in one GPU call (scripts/gpu_build_base.sh says how); after `make gpu-build`, which
# starts gpu-build/ afresh.
BASE ?= HEAD~1
gpu-build-base:
	bash scripts/gpu_build_base.sh '$(BASE)' $(GPU_PY)

bench:
	bash scripts/run_bench.sh

# Any machine, no GPU: the engine's host cost per block and its CUDA driver calls per
# block, with the CUDA path run against the fake driver (bench/host_cost.py).
bench-host: build
	PYTHONPATH=python $(VPY) bench/host_cost.py --out build/bench-host

# On the GPU machine: 1,000 volumes, checks memory/goroutines/threads flat and the file exact.
soak:
	PYTHONPATH=$${PYTHONPATH:-gpu-build/python} python3 scripts/soak.py --out $${OUT:-bench-out}/soak.json

lint:
	gofmt -l gosrc kernels | (! grep .)

clean:
	rm -rf build gpu-build $(NATIVE) $(VENV)

# The virtual instrument's fake NI-DAQmx card (make virtual): its rules live beside its source.
include instruments/virtual/daqmx.mk
include instruments/virtual/teledyne.mk
# The virtual NI frame grabber and line-scan camera (make virtual).
include instruments/virtual/imaq.mk
