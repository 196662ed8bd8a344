#!/usr/bin/env python
"""vortex's "Chain Operations" example, runnable: a maximum intensity
projection (MIP) computed inside ``volume_callback``, chained on the
endpoint's stream so it never waits for the GPU.

On a GPU it uses CuPy exactly as vortex's documentation does; on the CPU
backend the same handler uses NumPy (``volume`` is then a NumPy array).

    python examples/mip.py [--device cpu] [--volumes 3]
"""

from __future__ import annotations

import argparse
import sys

import numpy

import vortexgo as vg
from vortexgo.acquire import SimulatedAcquisition
from vortexgo.engine import Engine, EngineConfig, StackDeviceTensorEndpointInt8
from vortexgo.format import FormatPlanner, FormatPlannerConfig, StackFormatExecutor, StackFormatExecutorConfig
from vortexgo.process import CPUProcessor, CUDAProcessor, ProcessorConfig, hann_window, spectral_filter
from vortexgo.scan import RasterScan, RasterScanConfig


def raster_scan(ascans: int, bscans: int) -> RasterScan:
    """One volume of vortex's raster scan (the engine's scan queue plays it once per append)."""
    cfg = RasterScanConfig()
    cfg.ascans_per_bscan, cfg.bscans_per_volume, cfg.loop = ascans, bscans, False
    scan = RasterScan()
    scan.initialize(cfg)
    return scan


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="vortex's MIP example on vortexgo")
    p.add_argument("--device", default="auto")
    p.add_argument("--volumes", type=int, default=3)
    args = p.parse_args(argv)
    device = vg.get_device(args.device)
    samples, ascans, bscans = (1024, 256, 128) if device.is_cuda else (256, 64, 32)
    if device.is_cuda:
        import cupy
    else:
        cupy = None

    acquire = SimulatedAcquisition(samples_per_record=samples, ascans_per_bscan=ascans,
                                   bscans_per_volume=bscans)
    pc = ProcessorConfig(samples_per_record=samples, ascans_per_block=4 * ascans, average_window=ascans,
                         resampling_samples=acquire.resampling_positions(),
                         spectral_filter=spectral_filter(hann_window(samples), acquire.dispersion_compensation()))
    process = CUDAProcessor(pc, device=device) if device.is_cuda else CPUProcessor(pc)
    planner = FormatPlanner(FormatPlannerConfig(bscans, ascans))
    stack_format = StackFormatExecutor(StackFormatExecutorConfig())
    endpoint = StackDeviceTensorEndpointInt8(stack_format, (bscans, ascans, samples))
    ec = EngineConfig(records_per_block=4 * ascans, blocks_to_allocate=8, preload_count=4)
    ec.add_acquisition(acquire, [process])
    ec.add_processor(process, [planner])
    ec.add_formatter(planner, [endpoint])
    engine = Engine(ec)
    scan = raster_scan(ascans, bscans)
    for _ in range(args.volumes):
        engine.scan_queue.append(scan)

    mips: list = []

    # --- the example from vortex's documentation ---
    def handler(*args):
        # access and lock the buffer
        with endpoint.tensor as volume:
            # dispatch to stream
            with endpoint.stream as stream:
                # create the MIP
                if cupy is not None:
                    mip: numpy.ndarray = cupy.max(volume, axis=2).get()
                else:
                    mip = numpy.max(volume, axis=2)
                # (optional) create an event to monitor completion
                done = stream.record()
        mips.append((mip, done))
    # ---

    endpoint.volume_callback = handler
    engine.prepare()
    engine.start()
    engine.wait()
    for mip, done in mips:
        done.synchronize()
    print(f"{len(mips)} MIPs of shape {mips[-1][0].shape} on {device.alias}; "
          f"last: min {mips[-1][0].min()}, max {mips[-1][0].max()}")
    engine.close()
    endpoint.close()
    return 0 if len(mips) == args.volumes else 1


if __name__ == "__main__":
    sys.exit(main())
