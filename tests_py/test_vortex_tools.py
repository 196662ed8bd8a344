"""vortex-oct-tools (PyPI ``vortex-oct-tools``, vortex's companion package) on vortexgo:
its scan plots, display widgets and marker reader fed by vortexgo's scans, a running
engine's endpoints and its marker log (scripts/render_vortex_tools.py draws them)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import _subproc

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "render_vortex_tools.py"

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(importlib.util.find_spec("vortex_tools") is None,
                       reason="vortex-oct-tools is not installed (pip install 'vortexgo[test]')"),
]


def _qt() -> bool:
    if importlib.util.find_spec("qtpy") is None:
        return False
    r = subprocess.run([sys.executable, "-c", "from qtpy.QtWidgets import QApplication; QApplication([])"],
                       env=dict(os.environ, QT_QPA_PLATFORM="offscreen"), capture_output=True, timeout=60)
    return r.returncode == 0


needs_qt = pytest.mark.skipif(not _qt(), reason="no Qt binding for qtpy (PyQt5: pip install 'vortexgo[test]')")


def _render(tmp_path: Path, backend: str) -> tuple[dict, Path]:
    out = tmp_path / backend
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen",
               PYTHONPATH=os.pathsep.join(p for p in (_subproc.PYTHON_DIR, os.environ.get("PYTHONPATH", ""), str(ROOT / "python")) if p))
    r = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out), "--backend", backend, "--device", "cpu"],
                       capture_output=True, text=True, env=env, timeout=280)
    assert r.returncode == 0, r.stderr[-4000:]
    assert "Traceback" not in r.stderr, r.stderr[-4000:]  # a callback that raised is logged, not fatal
    return json.loads(r.stdout.strip().splitlines()[-1]), out


def _png_has_structure(p: Path) -> None:
    from PIL import Image

    a = np.asarray(Image.open(p).convert("L"), dtype=np.float64)
    assert a.shape[0] > 100 and a.shape[1] > 100, p
    assert a.std() > 10, f"{p.name} is (nearly) uniform"


def _check(report: dict, out: Path, backend: str) -> None:
    for name, w in report["widgets"].items():
        assert w["shape"] and w["std"] > 1.0, (name, w)
        assert w["max"] > 40, (name, w)  # the phantom's layers, in dB
        _png_has_structure(out / f"vortex-tools-{backend}-{name}.png")
    assert report["widgets"]["raster-enface"]["shape"] == [64, 128]
    assert report["widgets"]["radial-enface"]["shape"] == [128, 128]
    for p in report["plots"]:
        assert p["lines"] >= 3 and p["spans"] >= 6, p  # position/velocity/acceleration, active intervals shaded
    for f in report["files"]:
        assert (out / f).stat().st_size > 1000
    m = report["markers"]
    assert m["records"] > 0 and {"S", "V", "A"} <= set(m["types"]), m


@needs_qt
def test_display_widgets_numpy_backend_fed_by_a_running_engine(tmp_path):
    report, out = _render(tmp_path, "numpy")
    assert "display_error" not in report, report
    _check(report, out, "numpy")
    for name, w in report["widgets"].items():
        assert w["notified"] > 0, f"{name} got no segments from the endpoint's aggregate_segment_callback"
    for f in ("scan-raster-time", "scan-raster-space", "scan-radial-time", "scan-radial-space"):
        _png_has_structure(out / f"vortex-tools-{f}.png")


@needs_qt
def test_matplotlib_backend_draws_vortexgo_volumes(tmp_path):
    report, out = _render(tmp_path, "matplotlib")
    if "display_error" in report:
        # vortex-oct-tools 0.4.1: EndpointImageWidget asks MatplotlibImageWidget for Scaling, which
        # it lacks (on vortex too); the script draws the views with MatplotlibImageWidget itself.
        assert "Scaling" in report["display_error"], report["display_error"]
    _check(report, out, "matplotlib")


@pytest.fixture
def vortex_names():
    """vortex's names for this process (vortex_tools imports vortex.marker), removed afterwards."""
    import vortexgo.compat as compat

    if compat._real_vortex() is not None:
        pytest.skip("a real vortex is importable: vortex_tools would use it")
    compat.install()
    try:
        yield
    finally:
        for m in [m for m in sys.modules if m == "vortex_tools" or m.startswith("vortex_tools.")]:
            del sys.modules[m]
        compat.uninstall()


def test_scan_helpers_read_vortexgo_markers(vortex_names):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    from vortex.scan import RasterScan, RasterScanConfig
    from vortex_tools.scan import active_intervals, partition_segments_by_activity, plot_annotated_waveforms_time

    c = RasterScanConfig()
    c.ascans_per_bscan, c.bscans_per_volume, c.samples_per_second, c.bidirectional_segments = 20, 5, 10_000, True
    s = RasterScan()
    s.initialize(c)
    buf, marks = s.scan_buffer(), s.scan_markers()
    iv = active_intervals(marks, last_sample=len(buf) - 1)
    assert len(iv) == 5 and all(b - a + 1 == 20 for a, b, _ in iv), iv
    assert [r for _, _, r in iv] == [False, True, False, True, False], "bidirectional: every other B-scan reversed"
    active, inactive = partition_segments_by_activity(marks, buf)
    assert sum(len(x) for x in active) == 100 and len(active) == 5
    fig, axes = plot_annotated_waveforms_time(c.sampling_interval, buf, marks)
    assert len(axes[0].patches) == 5
    pyplot.close(fig)


def _profiled_run(tmp_path) -> Path:
    """A short CPU run writing vortex's profiler log (Engine.profiler_log)."""
    from vortexgo.engine import StackDeviceTensorEndpointInt8

    from test_engine import make_rig, new_engine

    path = tmp_path / "profile.bin"
    eng = new_engine(make_rig([StackDeviceTensorEndpointInt8()], volumes=2))
    eng.profiler_log = str(path)
    eng.prepare()
    eng.start()
    eng.wait()
    eng.close()
    return path


def test_profiler_log_loads_in_vortex_tools(tmp_path):
    from vortex_tools import profiler as vt

    raw = vt.load_binary(str(_profiled_run(tmp_path)))
    events = vt.format_events(raw)
    codes = {c.name for c in events.code}
    assert {"ENGINE_LAUNCH", "ENGINE_RUN", "ENGINE_START", "ENGINE_STOP", "ENGINE_EXIT", "JOB_CREATE",
            "JOB_ACQUIRE_JOIN", "JOB_FORMAT_JOIN", "JOB_RECYCLE", "TASK_FORMAT_END"} <= codes, codes
    created = events[events.code == vt.ProfileCode.JOB_CREATE].job.values
    recycled = events[events.code == vt.ProfileCode.JOB_RECYCLE].job.values
    assert sorted(created) == sorted(recycled) and len(created) > 2, "every job created is recycled"


def test_profiler_statistics_and_timeline(tmp_path):
    import contextlib
    import io

    import matplotlib

    matplotlib.use("Agg")
    from vortex_tools import profiler as vt

    events = vt.format_events(vt.load_binary(str(_profiled_run(tmp_path))))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        vt.print_statistics(events)
    text = out.getvalue()
    assert "acquire wait" in text and "process task" in text, text
    from matplotlib import pyplot as plt
    fig = vt.plot_timeline(events)  # vortex-oct-tools 0.4.1 draws on the current figure, returns None
    fig = plt.gcf() if fig is None else (fig[0] if isinstance(fig, tuple) else fig)
    fig.savefig(tmp_path / "timeline.png")
    assert (tmp_path / "timeline.png").stat().st_size > 10_000
