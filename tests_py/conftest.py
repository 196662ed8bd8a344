"""Shared fixtures: every test that is not GPU-specific runs on the CPU
backend (CI has no GPU) and, where a GPU exists, on CUDA too."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

# The tests' caches (the private copy of h5py's HDF5 library, python/vortexgo/storage.py) go under
# build/, not into the user's ~/.cache: `make test` leaves nothing outside the checkout (issue 31).
os.environ.setdefault("XDG_CACHE_HOME", str(Path(__file__).resolve().parent.parent / "build" / "test-cache"))

import pytest

import vortexgo as vg

# The Ctrl-C tests (interrupt_main here, SIGINT to the children they spawn) need SIGINT to
# reach Python. A test run started in the background of a shell without job control
# (`cmd &` in a script, nohup) inherits SIGINT ignored, and children inherit SIG_IGN across
# exec, where Python then leaves it ignored: every Ctrl-C case would hang until its timeout.
# A handler (unlike SIG_IGN) is reset to the default by exec, so the children start as from
# a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

HAS_CUDA = vg.is_cuda_available()
try:  # CuPy is optional; GPU interop tests need it
    import cupy  # noqa: F401

    HAS_CUPY = HAS_CUDA
except Exception:
    HAS_CUPY = False

DEVICES = ["cpu"] + (["cuda:0"] if HAS_CUDA else [])


# --- make py-test-invariants: Go's leak report at exit must be empty ---
# Against an extension built with -tags invariants (setup.py, VORTEXGO_GO_TAGS),
# every stream, event, buffer, graph and tensor lock the tests made must be
# closed (by the test or by collection) when the run ends.


def _invariants_build() -> bool:
    from vortexgo._core import api

    return bool(api.InvariantsEnabled())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _invariants_build():
        return
    import gc

    from vortexgo._core import api

    from vortexgo._lifetime import close_process_caches

    close_process_caches()  # the default streams and readback pools: the process's, not a test's
    for _ in range(3):  # finalizers release what collection frees, which can free more
        gc.collect()
    report = api.InvariantLeaks()
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if report:
        if reporter is not None:
            reporter.write_sep("=", "Go invariants: leaks at exit", red=True)
            reporter.write_line(report)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif reporter is not None:
        reporter.write_line("Go invariants: no stream, event, buffer, graph or tensor lock left open")


@pytest.fixture(scope="session")
def virtual_instrument() -> Path:
    """build/virtual: the virtual OCT instrument's libraries (instruments/virtual), built by
    ``make virtual``; skipped without gcc or make, failed when the build fails."""
    for tool in ("gcc", "make"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not found: the virtual instrument (instruments/virtual) is built with gcc")
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run(["make", "-s", "virtual"], cwd=root, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return root / "build" / "virtual"


needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason=f"no CUDA device: {vg.cuda_unavailable_reason()}")
needs_cupy = pytest.mark.skipif(not HAS_CUPY, reason="needs CUDA and CuPy")


@pytest.fixture(params=DEVICES)
def device(request) -> vg.Device:
    """Each available backend in turn."""
    return vg.get_device(request.param)


@pytest.fixture
def cpu() -> vg.Device:
    return vg.get_device("cpu")


@pytest.fixture
def gpu() -> vg.Device:
    if not HAS_CUDA:
        pytest.skip(f"no CUDA device: {vg.cuda_unavailable_reason()}")
    return vg.get_device("cuda:0")


@pytest.fixture
def cp():
    if not HAS_CUPY:
        pytest.skip("needs CUDA and CuPy")
    import cupy

    return cupy


@pytest.fixture(scope="session")
def fake_cuda_driver(tmp_path_factory) -> str:
    """Path of gosrc/cuda/testdata/fakecuda.c built as a shared library: a
    stand-in libcuda (host memory, the driver's context and capture rules)
    that a subprocess loads with VORTEXGO_CUDA_DRIVER, so the real shim, C
    extension and Go core run without a GPU."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the fake driver")
    src = Path(__file__).resolve().parent.parent / "gosrc" / "cuda" / "testdata" / "fakecuda.c"
    if not src.exists():
        pytest.skip(f"{src} not here (tests run outside the source tree)")
    lib = tmp_path_factory.mktemp("fakecuda") / "libfakecuda.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return str(lib)
