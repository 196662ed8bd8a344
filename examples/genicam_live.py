#!/usr/bin/env python
"""A live view of a GenICam line-scan camera through Aravis (vortexgo.genicam).

Each camera frame of ``--lines`` lines of ``--pixels`` pixels is one engine
block (one B-scan); ``--bscans`` of them make a volume, and
:class:`vortexgo.display.LiveView` shows each volume's en-face projection and
its middle B-scan. The view shows the camera's raw spectra (a NullProcessor);
put a CPUProcessor or CUDAProcessor in between, as examples/acquire.py does,
for OCT images.

    python examples/genicam_live.py                          # Aravis's simulated camera "Fake_1"
    python examples/genicam_live.py --camera 192.168.1.20 --pixels 2048 --lines 512 --format Mono12
    python examples/genicam_live.py --frames 60 --headless --out /tmp/live.png

It runs until ``--frames`` camera frames or ``--seconds`` have passed (or the
window is closed), then prints the engine's status (frames received, dropped,
incomplete). ``--headless`` draws no window: the last view is written to
``--out`` as a PNG. Needs Aravis 0.8 (``apt-get install libaravis-0.8-0
aravis-tools``; docs/hardware.md, "GenICam").
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import vortexgo as vg
from vortexgo import genicam
from vortexgo.acquire import record_raster
from vortexgo.cli import default_out_dir
from vortexgo.display import LiveView
from vortexgo.engine import Engine, EngineConfig, SpectraStackHostTensorEndpointUInt16
from vortexgo.format import FormatPlanner, FormatPlannerConfig
from vortexgo.process import NullProcessor, NullProcessorConfig


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="a live view of a GenICam camera through Aravis")
    p.add_argument("--camera", default="Fake_1", help='Aravis device id ("": the first camera; "Fake_1": the simulator)')
    p.add_argument("--pixels", type=int, default=256, help="pixels per line (samples per A-scan)")
    p.add_argument("--lines", type=int, default=64, help="lines per frame (A-scans per B-scan)")
    p.add_argument("--bscans", type=int, default=16, help="frames per volume")
    p.add_argument("--format", default="Mono8", choices=[f.name for f in genicam.PixelFormat])
    p.add_argument("--line-rate", type=float, default=6400.0, help="lines per second (0: the camera's)")
    p.add_argument("--exposure-us", type=float, default=10000.0, help="exposure in microseconds (0: the camera's)")
    p.add_argument("--frames", type=int, default=0, help="stop after this many camera frames (0: no limit)")
    p.add_argument("--seconds", type=float, default=10.0, help="stop after this long (0: no limit)")
    p.add_argument("--tolerate-dropped-frames", action="store_true")
    p.add_argument("--headless", action="store_true", help="no window: write the last view to --out")
    p.add_argument("--out", default=os.path.join(default_out_dir("genicam_live"), "genicam_live.png"),
                   help="the PNG --headless writes (default: %(default)s)")
    args = p.parse_args(argv)

    config = genicam.GenICamConfig(camera=args.camera, samples_per_record=args.pixels, records_per_block=args.lines,
                                   pixel_format=genicam.PixelFormat[args.format], line_rate=args.line_rate,
                                   exposure_time_us=args.exposure_us,
                                   tolerate_dropped_frames=args.tolerate_dropped_frames)
    acquire = genicam.GenICamAcquisition(config)
    print(f"camera: {acquire.camera.vendor} {acquire.camera.model} ({acquire.camera.id}), Aravis {genicam.aravis_version()}")

    process = NullProcessor(NullProcessorConfig(samples_per_record=args.pixels, ascans_per_block=args.lines))
    planner = FormatPlanner(FormatPlannerConfig(args.bscans, args.lines))
    endpoint = SpectraStackHostTensorEndpointUInt16()
    ec = EngineConfig(records_per_block=args.lines, blocks_to_allocate=8, preload_count=4)
    ec.add_acquisition(acquire, [process])
    ec.add_processor(process, [planner])
    ec.add_formatter(planner, [endpoint])
    engine = Engine(ec)
    # one record per line, no flyback: a looping raster runs until the engine is stopped
    engine.scan_queue.append(record_raster(args.lines, args.bscans, loop=True))

    view = LiveView(endpoint, size=256)
    engine.prepare()
    engine.start()
    start = time.monotonic()

    def finished() -> bool:
        s = engine.status()
        return (bool(s.error) or (args.frames > 0 and s.frames_received >= args.frames)
                or (args.seconds > 0 and time.monotonic() - start >= args.seconds))

    try:
        if args.headless:
            while not finished():
                time.sleep(0.05)
        else:
            import matplotlib.pyplot as plt

            fig, shown = view.figure(), -1
            while not finished() and plt.fignum_exists(fig.number):
                if view.frame is not None and view.frames_shown != shown:
                    shown = view.frames_shown
                    for ax, img in zip(fig.axes, (view.frame.mip, view.frame.bscan)):
                        if ax.images:
                            ax.images[0].set_data(img)
                        else:
                            ax.imshow(img, cmap="gray", aspect="auto")
                    fig.suptitle(f"volume {view.frame.volume_index}")
                plt.pause(0.05)
    finally:
        engine.stop()
        error = None
        try:
            engine.wait()
        except vg.VortexError as e:
            error = e
        status = engine.status()
        if view.wait_frame(5) is not None and args.headless:
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
            view.save_png(args.out)
            print(f"wrote {args.out}")
        view.close()
        engine.close()
        acquire.close()
    print(f"{status.frames_received} frames received, {status.frames_dropped} dropped, "
          f"{status.frames_incomplete} incomplete; {status.volumes} volumes, {view.frames_shown} shown")
    if error is not None:
        print(f"the run ended: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
