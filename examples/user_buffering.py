#!/usr/bin/env python
"""vortex's "User-Managed Buffering" example, runnable: every volume is copied
into the user's own buffers with ``cupy.copy`` on the endpoint's stream
(chained after the engine's formatting), and once the acquisition is done the
volumes are saved with :func:`numpy.save` and with
``SimpleStackInt8.write_volume``.

On the CPU backend the copy is ``numpy.copy`` (the volume is a NumPy array).

    python examples/user_buffering.py [--device cpu] [--volumes 4] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy

import vortexgo as vg
from vortexgo.acquire import SimulatedAcquisition
from vortexgo.cli import default_out_dir
from vortexgo.engine import Engine, EngineConfig, StackDeviceTensorEndpointInt8
from vortexgo.format import FormatPlanner, FormatPlannerConfig, StackFormatExecutor, StackFormatExecutorConfig
from vortexgo.process import CPUProcessor, CUDAProcessor, ProcessorConfig
from vortexgo.scan import RasterScan, RasterScanConfig
from vortexgo.storage import SimpleStackConfig, SimpleStackInt8


def raster_scan(ascans: int, bscans: int) -> RasterScan:
    """One volume of vortex's raster scan (the engine's scan queue plays it once per append)."""
    cfg = RasterScanConfig()
    cfg.ascans_per_bscan, cfg.bscans_per_volume, cfg.loop = ascans, bscans, False
    scan = RasterScan()
    scan.initialize(cfg)
    return scan


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="vortex's user-managed buffering example on vortexgo")
    p.add_argument("--device", default="auto")
    p.add_argument("--volumes", type=int, default=4)
    p.add_argument("--out", default=default_out_dir("user_buffering"), help="output folder (default: %(default)s)")
    args = p.parse_args(argv)
    device = vg.get_device(args.device)
    samples, ascans, bscans = (1024, 256, 128) if device.is_cuda else (256, 64, 32)
    if device.is_cuda:
        import cupy
    else:
        cupy = numpy  # numpy.copy stands in for cupy.copy on the CPU backend
    os.makedirs(args.out, exist_ok=True)

    acquire = SimulatedAcquisition(samples_per_record=samples, ascans_per_bscan=ascans,
                                   bscans_per_volume=bscans)
    pc = ProcessorConfig(samples_per_record=samples, ascans_per_block=4 * ascans, average_window=ascans,
                         resampling_samples=acquire.resampling_positions())
    process = CUDAProcessor(pc, device=device) if device.is_cuda else CPUProcessor(pc)
    planner = FormatPlanner(FormatPlannerConfig(bscans, ascans))
    stack_format = StackFormatExecutor(StackFormatExecutorConfig())

    # 1. Configure a StackDeviceTensorEndpointInt8 for the engine.
    my_endpoint = StackDeviceTensorEndpointInt8(stack_format, (bscans, ascans, samples))
    my_buffers = []

    # 2. A volume_callback handler that copies the data to your own buffer.
    def handler(sample, scan_idx, volume_idx):
        with my_endpoint.tensor as volume:
            with my_endpoint.stream:
                my_buffers.append(cupy.copy(volume))

    my_endpoint.volume_callback = handler

    # 3. Perform the acquisition.
    ec = EngineConfig(records_per_block=4 * ascans, blocks_to_allocate=8, preload_count=4)
    ec.add_acquisition(acquire, [process])
    ec.add_processor(process, [planner])
    ec.add_formatter(planner, [my_endpoint])
    engine = Engine(ec)
    scan = raster_scan(ascans, bscans)
    for _ in range(args.volumes):
        engine.scan_queue.append(scan)
    engine.prepare()
    engine.start()
    engine.wait()

    # 4. Inspect my_buffers and decide what to keep. The copies were queued on the
    #    endpoint's stream: wait for it before using them on the host.
    my_endpoint.stream.synchronize()
    host = [b.get() if hasattr(b, "get") else b for b in my_buffers]
    numpy.save(os.path.join(args.out, "buffered.npy"), numpy.stack(host))
    storage = SimpleStackInt8()
    storage.open(SimpleStackConfig(os.path.join(args.out, "buffered_stack.npy"), (bscans, ascans, samples)))
    for b in my_buffers:
        storage.write_volume(b)
        storage.advance_volume()  # as in vortex: write_volume fills the current volume only
    storage.close()
    saved = numpy.load(os.path.join(args.out, "buffered_stack.npy"))[..., 0]  # drop the channels axis
    print(f"buffered {len(my_buffers)} volumes on {device.alias}; saved {saved.shape} "
          f"(numpy.save and SimpleStackInt8.write_volume)")
    ok = len(my_buffers) == args.volumes and numpy.array_equal(saved, numpy.stack(host))
    engine.close()
    my_endpoint.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
