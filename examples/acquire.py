#!/usr/bin/env python
"""The main job: a simulated OCT acquisition through vortexgo's engine.

Simulated spectral-domain OCT spectra (uint16) are processed by the CUDA
processor (the CPU processor, at a smaller default size, when there is no GPU)
into a device endpoint and a storage endpoint. Each volume's maximum-intensity
projection (MIP) is computed in ``volume_callback`` with CuPy, chained on the
endpoint's stream (NumPy on the CPU backend), as in vortex's documentation.

    python examples/acquire.py                    # GPU if present, else CPU
    python examples/acquire.py --device cpu --volumes 4 --out /tmp/oct

``python -m vortexgo demo`` (``make demo``) runs the same acquisition from an
installed package and writes its images at 512 x 512.

Writes ``<out>/volumes.npy`` (volumes, bscans, ascans, depth; int8) and
``<out>/mip.png`` (and the central B-scan as ``<out>/bscan.png``), and prints the throughput.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import vortexgo as vg
from vortexgo.acquire import SimulatedAcquisition, SimulatedAcquisitionConfig
from vortexgo.engine import AscanStackEndpoint, Engine, EngineConfig, StackDeviceTensorEndpointInt8
from vortexgo.format import FormatPlanner, FormatPlannerConfig, SimpleSlice, StackFormatExecutor, StackFormatExecutorConfig
from vortexgo.process import CPUProcessor, CUDAProcessor, ProcessorConfig, hann_window, spectral_filter
from vortexgo.cli import default_out_dir
from vortexgo.scan import RasterScan, RasterScanConfig, inactive_policy
from vortexgo.storage import SimpleStackConfig, SimpleStackHeader, SimpleStackInt8

# (samples per spectrum, A-scans per B-scan, B-scans per volume, volumes)
GPU_DEFAULT = (1024, 512, 256, 20)
CPU_DEFAULT = (512, 128, 64, 6)


def raster_scan(ascans: int, bscans: int) -> RasterScan:
    """One volume of vortex's raster scan (the engine's scan queue plays it once per append).

    No inactive (flyback) lines: the simulated acquisition numbers its A-scans
    in raster order, so flyback samples would take A-scans meant for the next
    B-scan and shear the volume. A real scanner acquires during the flyback.
    """
    cfg = RasterScanConfig()
    cfg.ascans_per_bscan, cfg.bscans_per_volume, cfg.loop = ascans, bscans, False
    cfg.inactive_policy = inactive_policy.FixedLinear(0, 0)
    scan = RasterScan()
    scan.initialize(cfg)
    return scan


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="auto", help="auto (GPU if present), cpu, cuda or cuda:N")
    p.add_argument("--volumes", type=int, help="volumes to acquire (default: 20 on a GPU, 6 on the CPU)")
    p.add_argument("--samples", type=int, help="spectrometer pixels per A-scan (any length)")
    p.add_argument("--ascans", type=int, help="A-scans per B-scan")
    p.add_argument("--bscans", type=int, help="B-scans per volume")
    p.add_argument("--out", default=default_out_dir("acquire"), help="output folder (default: %(default)s)")
    p.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    device = vg.get_device(args.device)
    gpu = device.is_cuda
    samples, ascans, bscans, volumes = GPU_DEFAULT if gpu else CPU_DEFAULT
    samples = args.samples or samples
    ascans, bscans = args.ascans or ascans, args.bscans or bscans
    volumes = args.volumes or volumes
    if gpu:
        import cupy as xp  # the MIP runs on the GPU, chained on the endpoint's stream
    else:
        xp = np
    os.makedirs(args.out, exist_ok=True)

    # Acquisition: a simulated scanner replaying two distinct volumes.
    acquire = SimulatedAcquisition(SimulatedAcquisitionConfig(
        samples_per_record=samples, ascans_per_bscan=ascans, bscans_per_volume=bscans,
        volumes=2))  # the scan queue, not the source, ends the run

    # Processing: background subtraction, resampling to even k, Hann window x
    # dispersion compensation, inverse FFT, dB, int8 over 0..60 dB.
    records_per_block = ascans * max(1, 4096 // ascans) if gpu else ascans * 4
    pc = ProcessorConfig(
        samples_per_record=samples, ascans_per_block=records_per_block, average_window=ascans,
        resampling_samples=acquire.resampling_positions(),
        spectral_filter=spectral_filter(hann_window(samples), acquire.dispersion_compensation()),
        levels=(0.0, 60.0))
    process = CUDAProcessor(pc, device=device) if gpu else CPUProcessor(pc)

    # Generate and format, as vortex: the engine's scan queue plays a raster
    # scan (its markers say where each A-scan goes), the planner turns the
    # markers into copies, the executor keeps the unaliased half of the depth.
    scan = raster_scan(ascans, bscans)
    planner = FormatPlanner(FormatPlannerConfig(bscans, ascans))
    stack_format = StackFormatExecutor(StackFormatExecutorConfig(sample_slice=SimpleSlice(0, samples // 2)))
    shape = (bscans, ascans, samples // 2)

    endpoint = StackDeviceTensorEndpointInt8(stack_format, shape)
    storage = SimpleStackInt8()
    storage.open(SimpleStackConfig(os.path.join(args.out, "volumes.npy"), shape, header=SimpleStackHeader.NumPy))
    storage_endpoint = AscanStackEndpoint(stack_format, storage)

    # device_timings: the per-block device times printed below (on a GPU they cost 1-3.5% of the throughput)
    ec = EngineConfig(records_per_block=records_per_block, blocks_to_allocate=8, preload_count=4, device_timings=True)
    ec.add_acquisition(acquire, [process])
    ec.add_processor(process, [planner])
    ec.add_formatter(planner, [endpoint, storage_endpoint])
    engine = Engine(ec)
    for _ in range(volumes):
        engine.scan_queue.append(scan)

    mips: list = []

    def handler(sample: int, scan_idx: int, volume_idx: int) -> None:
        # Fired once the volume's formatting is dispatched (not finished):
        # chain the MIP on the endpoint's stream so it runs after it.
        with endpoint.tensor as volume:
            with endpoint.stream as stream:
                mip = xp.max(volume, axis=2)  # an en-face projection, (bscans, ascans)
                done = stream.record()
        mips.append((mip, done))
        if bar is not None:  # bar is set before the engine starts
            bar.update(1)

    endpoint.volume_callback = handler

    t0 = time.perf_counter()
    engine.prepare()  # synthesises the phantom, allocates every block
    t_prepare = time.perf_counter() - t0
    try:
        from tqdm import tqdm

        bar = tqdm(total=volumes, unit="vol", disable=args.no_progress)
    except ImportError:  # pragma: no cover
        bar = None
    t0 = time.perf_counter()
    engine.start()
    engine.wait()
    elapsed = time.perf_counter() - t0
    if bar is not None:
        bar.close()
    storage.close()

    status = engine.status()
    mip, done = mips[-1]
    done.synchronize()
    mip = mip.get() if gpu else mip
    img = (mip.astype(np.int16) + 128).astype(np.float32)  # int8 -> 0..255
    lo, hi = np.percentile(img, [1, 99.9])
    img8 = np.clip((img - lo) / max(hi - lo, 1) * 255, 0, 255).astype(np.uint8)
    png = os.path.join(args.out, "mip.png")
    from PIL import Image

    Image.fromarray(img8).save(png)
    # And the central B-scan of the last stored volume: depth down, A-scans across.
    stored = np.load(storage.config.path, mmap_mode="r")
    bscan = stored[-1, bscans // 2, ..., 0].T.astype(np.int16) + 128
    lo, hi = np.percentile(bscan, [1, 99.9])
    bscan8 = np.clip((bscan - lo) / max(hi - lo, 1) * 255, 0, 255).astype(np.uint8)
    bscan_png = os.path.join(args.out, "bscan.png")
    Image.fromarray(bscan8).save(bscan_png)

    a_scans = status.volumes * ascans * bscans
    raw_bytes = a_scans * samples * 2
    print(f"device:     {device.name} ({device.alias})")
    print(f"processor:  {process!r}")
    print(f"acquired:   {status.volumes} volumes of {bscans} x {ascans} A-scans x {samples} samples "
          f"(prepare {t_prepare:.2f} s)")
    print(f"throughput: {a_scans / elapsed / 1e6:.3f} M A-scans/s, {raw_bytes / elapsed / 1e9:.3f} GB/s raw input "
          f"({elapsed:.2f} s)")
    print(f"blocks:     {status.blocks_formatted} formatted, {status.blocks_dropped} dropped, "
          f"{status.callback_errors} callback errors")
    t = engine.timings
    print(f"per block:  process {t['process'].mean:.3f} ms, format {t['format'].mean:.3f} ms (mean)")
    print(f"wrote:      {storage.config.path} {stored.shape}, {png}, {bscan_png}")
    engine.close()
    endpoint.close()
    storage_endpoint.close()
    return 0 if status.error == "" and status.volumes == volumes else 1


if __name__ == "__main__":
    sys.exit(main())
