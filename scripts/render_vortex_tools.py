"""vortex-oct-tools (PyPI ``vortex-oct-tools``) drawing what vortexgo acquires.

Runs a small simulated acquisition on vortexgo's engine under vortex's names
(:mod:`vortexgo.compat`) and renders, as PNG files:

- ``vortex_tools.ui.display`` widgets (RasterEnFaceWidget, CrossSectionImageWidget,
  RadialEnFaceWidget) fed live by vortexgo endpoints, on Qt's offscreen platform with the
  widgets' ``numpy`` (default) or ``matplotlib`` backend (``VORTEX_TOOLS_UI_BACKEND``);
- ``vortex_tools.scan`` waveform plots of vortexgo's raster and radial scans (Agg);

and reads the engine's binary marker log with ``vortex_tools.markers`` and its profiler log
(``Engine.profiler_log``, vortex's ``VORTEX_PROFILER_LOG``) with ``vortex_tools.profiler``
(statistics and the timeline plot). Prints one JSON
line describing what it drew (tests_py/test_vortex_tools.py checks it).

    python scripts/render_vortex_tools.py                    # PNGs into docs/img/
    python scripts/render_vortex_tools.py --out /tmp/x --backend matplotlib

Needs PyQt5 (or another Qt binding qtpy finds), qtpy, vortex-oct-tools, matplotlib
(``pip install 'vortexgo[test]'``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(ROOT / "docs" / "img"), help="folder for the PNGs (default: %(default)s)")
    p.add_argument("--backend", default="numpy", choices=["numpy", "matplotlib"],
                   help="vortex_tools.ui's widget backend (VORTEX_TOOLS_UI_BACKEND)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    p.add_argument("--samples", type=int, default=256)
    p.add_argument("--ascans", type=int, default=128)
    p.add_argument("--bscans", type=int, default=64)
    p.add_argument("--volumes", type=int, default=2)
    p.add_argument("--prefix", default="vortex-tools", help="file name prefix")
    return p.parse_args(argv)


def main(argv=None) -> int:
    a = parse_args(argv)
    # Before Qt or vortex_tools load: headless Qt, the widget backend, Agg for pyplot.
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ["VORTEX_TOOLS_UI_BACKEND"] = a.backend
    import matplotlib

    matplotlib.use("Agg")
    try:  # an installed (or PYTHONPATH's) vortexgo first; else the checkout's
        import vortexgo  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(ROOT / "python"))

    import numpy as np

    import vortexgo
    import vortexgo.compat

    vortexgo.compat.install()
    from qtpy.QtWidgets import QApplication

    from vortex import Range
    from vortex.acquire import SimulatedAcquisition, SimulatedAcquisitionConfig
    from vortex.engine import (Engine, EngineConfig, MarkerLogStorage, RadialDeviceTensorEndpointInt8,
                               StackDeviceTensorEndpointInt8)
    from vortex.format import (FormatPlanner, FormatPlannerConfig, RadialFormatExecutor, RadialFormatExecutorConfig,
                               SimpleSlice, StackFormatExecutor, StackFormatExecutorConfig)
    from vortex.marker import Flags
    from vortex.process import CPUProcessor, CUDAProcessor, ProcessorConfig, hann_window, spectral_filter
    from vortex.scan import RadialScan, RadialScanConfig, RasterScan, RasterScanConfig, inactive_policy
    from vortex.storage import MarkerLog, MarkerLogConfig

    from vortex_tools import markers as vt_markers
    from vortex_tools.scan import active_intervals_binary, plot_annotated_waveforms_space, plot_annotated_waveforms_time
    from vortex_tools.ui import display as vt_display
    from vortex_tools.ui.display import CrossSectionImageWidget, RadialEnFaceWidget, RasterEnFaceWidget

    if not hasattr(vt_display.cupy, "ndarray"):
        # vortex-oct-tools 0.4.1's stand-in for a missing CuPy only annotates ``ndarray``, so
        # its widgets' isinstance(volume, cupy.ndarray) raises without CuPy: give it a class.
        vt_display.cupy.ndarray = type("ndarray", (), {})

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    S, A, B = a.samples, a.ascans, a.bscans
    written: list[str] = []
    report: dict = {"backend": a.backend, "widgets": {}, "plots": [], "markers": {}}

    def save_fig(fig, name: str) -> None:
        p = out / f"{a.prefix}-{name}.png"
        fig.savefig(p, dpi=80)
        written.append(p.name)

    # --- vortex_tools.scan: the scans' waveforms and markers -----------------------------
    from matplotlib import pyplot

    raster_cfg = RasterScanConfig()
    raster_cfg.ascans_per_bscan, raster_cfg.bscans_per_volume = 20, 6
    raster_cfg.loop = True
    raster_cfg.samples_per_second = 10_000  # few samples per B-scan: a galvo slow enough for its limits
    raster_plot = RasterScan()
    raster_plot.initialize(raster_cfg)
    radial_cfg = RadialScanConfig()
    radial_cfg.ascans_per_bscan, radial_cfg.bscans_per_volume = 20, 6
    radial_cfg.set_half_evenly_spaced(6)
    radial_cfg.loop = True
    radial_cfg.samples_per_second = 10_000
    radial_plot = RadialScan()
    radial_plot.initialize(radial_cfg)
    for name, scan in (("raster", raster_plot), ("radial", radial_plot)):
        buf, marks = scan.scan_buffer(), scan.scan_markers()
        fig, axes = plot_annotated_waveforms_time(scan.config.sampling_interval, buf, marks)
        fig.suptitle(f"vortexgo {name} scan (vortex_tools.scan)")
        save_fig(fig, f"scan-{name}-time")
        spans = sum(len(ax.patches) for ax in axes)
        fig, ax = plot_annotated_waveforms_space(buf, marks)
        ax.set_title(f"vortexgo {name} scan")
        save_fig(fig, f"scan-{name}-space")
        report["plots"].append({"scan": name, "samples": int(len(buf)), "lines": len(axes[0].lines), "spans": spans})
        pyplot.close("all")

    # --- an engine feeding vortex_tools.ui.display widgets ------------------------------
    app = QApplication.instance() or QApplication([])
    device = vortexgo.get_device(None if a.device == "auto" else a.device)
    acquire = SimulatedAcquisition(SimulatedAcquisitionConfig(samples_per_record=S, ascans_per_bscan=A,
                                                              bscans_per_volume=B, volumes=2))
    pc = ProcessorConfig(samples_per_record=S, ascans_per_block=A * 4, average_window=A,
                         resampling_samples=acquire.resampling_positions(),
                         spectral_filter=spectral_filter(hann_window(S), acquire.dispersion_compensation()),
                         levels=None)  # vortex: the dB values cast to int8
    process = (CUDAProcessor(pc, device=device) if device.is_cuda else CPUProcessor(pc))

    def raster(flags: int) -> RasterScan:
        c = RasterScanConfig()
        c.ascans_per_bscan, c.bscans_per_volume, c.loop, c.flags = A, B, False, Flags(flags)
        c.bscan_extent = c.volume_extent = Range(-2, 2)
        c.inactive_policy = inactive_policy.FixedLinear(0, 0)  # A-scans line up with the phantom's
        s = RasterScan()
        s.initialize(c)
        return s

    def radial() -> RadialScan:
        c = RadialScanConfig()
        c.ascans_per_bscan, c.bscans_per_volume, c.loop, c.flags = A, B, False, Flags(0x2)
        c.bscan_extent = Range(-2, 2)
        c.set_half_evenly_spaced(B)
        c.inactive_policy = inactive_policy.FixedLinear(0, 0)
        s = RadialScan()
        s.initialize(c)
        return s

    keep = S // 2
    stack_fmt = FormatPlanner(FormatPlannerConfig(B, A, mask=Flags(0x1)))
    radial_fmt = FormatPlanner(FormatPlannerConfig(B, A, mask=Flags(0x2)))
    stack_ep = StackDeviceTensorEndpointInt8(StackFormatExecutor(StackFormatExecutorConfig(sample_slice=SimpleSlice(keep))),
                                             (B, A, keep))
    rfec = RadialFormatExecutorConfig(sample_slice=SimpleSlice(keep), radial_segments_per_volume=B,
                                      radial_records_per_segment=A)
    rfec.x_extent = rfec.y_extent = rfec.radial_extent = (-2.0, 2.0)
    rfec.angular_extent = (0.0, math.pi)  # B radial B-scans half-evenly spaced over [0, pi) (vortex's default is unset)
    radial_ep = RadialDeviceTensorEndpointInt8(RadialFormatExecutor(rfec), (A, A, keep))
    log = MarkerLog()
    log_path = out / f"{a.prefix}-markers.bin"
    log.open(MarkerLogConfig(path=str(log_path), binary=True))
    marker_ep = MarkerLogStorage(log)

    ec = EngineConfig(records_per_block=A * 4, blocks_to_allocate=8, preload_count=4)
    ec.add_acquisition(acquire, [process])
    ec.add_processor(process, [stack_fmt, radial_fmt])
    ec.add_formatter(stack_fmt, [stack_ep, marker_ep])
    ec.add_formatter(radial_fmt, [radial_ep])
    engine = Engine(ec, device=device)
    prof_path = out / f"{a.prefix}-profile.bin"
    engine.profiler_log = str(prof_path)  # vortex's VORTEX_PROFILER_LOG, per engine
    for _ in range(a.volumes):
        engine.scan_queue.append(raster(0x1))
    engine.scan_queue.append(radial())
    engine.prepare()

    # The widgets' default range [0, 40] suits a B-scan; a maximum projection sits higher.
    enface = [38, 54]
    try:
        widgets = {
            "raster-enface": RasterEnFaceWidget(stack_ep, range=enface),
            "cross-section": CrossSectionImageWidget(stack_ep),
            "radial-enface": RadialEnFaceWidget(radial_ep, range=enface),
        }
    except AttributeError as exc:
        # vortex-oct-tools 0.4.1's display widgets on its matplotlib backend: EndpointImageWidget
        # asks the backend for Scaling, which MatplotlibImageWidget lacks. Draw the same views
        # with the backend's own widget, fed from the endpoints after the run.
        report["display_error"] = f"{type(exc).__name__}: {exc}"
        widgets = {}
    notified: dict = {k: 0 for k in widgets}

    def feed(keys):
        def cb(bscans):
            for k in keys:
                if k not in widgets:
                    continue
                notified[k] += len(bscans)
                widgets[k].notify_segments(bscans)  # vortex's demos call it from the engine's thread too
        return cb

    stack_ep.aggregate_segment_callback = feed(["raster-enface", "cross-section"])
    radial_ep.aggregate_segment_callback = feed(["radial-enface"])
    for w in widgets.values():
        w.resize(480, 400)
        w.show()
    engine.start()
    while not engine.wait_for(0.01):
        for w in widgets.values():
            w.update()
        app.processEvents()
    engine.wait()
    for w in widgets.values():
        w.update()
        w.repaint()
    app.processEvents()
    for name, w in widgets.items():
        p = out / f"{a.prefix}-{a.backend}-{name}.png"
        w.grab().save(str(p))
        written.append(p.name)
        data = w.data
        report["widgets"][name] = {"notified": notified[name],
                                   "shape": list(data.shape) if data is not None else None,
                                   "max": float(np.max(data)) if data is not None else None,
                                   "std": float(np.std(data)) if data is not None else None}
    if not widgets:
        from vortex_tools.ui.backend.mpl import MatplotlibImageWidget

        with stack_ep.tensor as vol:
            views = {"raster-enface": (np.asarray(vol).max(axis=2), enface),
                     "cross-section": (np.asarray(vol)[B // 2].T.copy(), [0, 40])}
        with radial_ep.tensor as vol:
            views["radial-enface"] = (np.asarray(vol).max(axis=2), enface)
        for name, (data, rng) in views.items():
            w = MatplotlibImageWidget(data=data, range=rng)
            w.resize(480, 400)
            w.show()
            w.invalidate()
            app.processEvents()
            w.repaint()
            app.processEvents()
            widgets[name] = w
            p = out / f"{a.prefix}-{a.backend}-{name}.png"
            w.grab().save(str(p))
            written.append(p.name)
            report["widgets"][name] = {"notified": None, "shape": list(data.shape), "max": float(data.max()),
                                       "std": float(data.std())}
    for w in widgets.values():
        w.close()
    engine.close()
    log.close()

    # --- vortex_tools.markers: the engine's binary marker log ---------------------------
    recs = vt_markers.load_binary(str(log_path))
    kinds = sorted({bytes(t).decode() for t in recs["type"]})
    report["markers"] = {"records": int(len(recs)), "types": kinds,
                         "active_intervals": len(active_intervals_binary(recs, last_sample=int(recs["sample"][-1])))}
    log_path.unlink()

    # --- vortex_tools.profiler: the engine's profiler log -------------------------------
    import contextlib
    import io

    from vortex_tools import profiler as vt_profiler

    events = vt_profiler.format_events(vt_profiler.load_binary(str(prof_path)))
    report["profiler"] = {"events": int(len(events)), "codes": sorted({c.name for c in events.code})}
    stats = io.StringIO()
    try:
        with contextlib.redirect_stdout(stats):
            vt_profiler.print_statistics(events)
        fig = vt_profiler.plot_timeline(events)
        fig = fig[0] if isinstance(fig, tuple) else (fig or pyplot.gcf())
        save_fig(fig, "profiler-timeline")
        report["profiler"]["stages"] = [line.split("  ")[0].strip()
                                        for line in stats.getvalue().splitlines()[2:] if line.strip()]
    except Exception as exc:  # noqa: BLE001 - reported: tests_py/test_vortex_tools.py says what it means
        report["profiler"]["error"] = f"{type(exc).__name__}: {exc}"
    pyplot.close("all")
    prof_path.unlink()
    report["files"] = written
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
