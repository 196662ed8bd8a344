"""vortex's Generate and Format stages on CUDA (issue 7's GPU evidence): each executor's volume,
formatted by its CUDA kernels on the endpoint's stream, equals the CPU executor's for the same
scan and data; the engine runs a radial and a spiral scan end to end into their endpoints.

The CPU half runs everywhere (it checks the rig itself); the CUDA tests skip without a GPU."""

from __future__ import annotations

import math

import numpy as np
import pytest

import vortexgo as vg
from vortexgo import scan as vs
from vortexgo.endpoint import (SpectraPositionDeviceTensorEndpointUInt16, SpectraRadialDeviceTensorEndpointUInt16,
                               SpectraSpiralDeviceTensorEndpointUInt16)
from vortexgo.engine import Engine, EngineConfig, SpectraStackDeviceTensorEndpointUInt16
from vortexgo.format import (FormatPlanner, FormatPlannerConfig, PositionFormatExecutor, PositionFormatExecutorConfig,
                             RadialFormatExecutor, RadialFormatExecutorConfig, SpiralFormatExecutor,
                             SpiralFormatExecutorConfig, StackFormatExecutor, StackFormatExecutorConfig)
from vortexgo.io import SimulatedIO

pytestmark = pytest.mark.timeout(120)

S, RPB = 16, 64
KINDS = ["stack", "radial", "spiral", "position"]


def _segmented(c):
    c.loop = False
    c.inactive_policy = vs.inactive_policy.FixedLinear(5, 7)
    c.bypass_limits_check = True


def _scan(kind):
    """The scan each executor is made for, its planner shape, executor and endpoint."""
    if kind == "radial":
        c = vs.RadialScanConfig()
        c.samples_per_segment = 32
        c.set_half_evenly_spaced(8)
        _segmented(c)
        s = vs.RadialScan()
        s.initialize(c)
        ex = RadialFormatExecutor(RadialFormatExecutorConfig(x_extent=(-1, 1), y_extent=(-1, 1), radial_extent=(-1, 1),
                                                         angular_extent=(0, math.pi), radial_segments_per_volume=8, radial_records_per_segment=32))
        return s, (8, 32), SpectraRadialDeviceTensorEndpointUInt16(ex, (21, 23, S))
    if kind == "spiral":
        c = vs.SpiralScanConfig()
        c.rings_per_spiral = 3
        c.samples_per_second = 1000
        _segmented(c)
        s = vs.SpiralScan()
        s.initialize(c)
        segs = [m for m in s.scan_markers() if type(m).__name__ == "SegmentBoundary"]
        records = segs[0].record_count_hint
        ex = SpiralFormatExecutor(SpiralFormatExecutorConfig(x_extent=(-1, 1), y_extent=(-1, 1), radial_extent=(0, 1), rings_per_spiral=3, samples_per_spiral=records,
                                                            spiral_velocity=10))
        return s, (len(segs), records), SpectraSpiralDeviceTensorEndpointUInt16(ex, (20, 20, S))
    c = vs.RasterScanConfig()
    c.ascans_per_bscan, c.bscans_per_volume = 24, 12
    c.bidirectional_segments = True
    _segmented(c)
    s = vs.RasterScan()
    s.initialize(c)
    if kind == "stack":
        return s, (12, 24), SpectraStackDeviceTensorEndpointUInt16(StackFormatExecutor(StackFormatExecutorConfig()),
                                                                   (12, 24, S))
    pc = PositionFormatExecutorConfig()
    pc.set(pitch=(11.5, 11.5), offset=(12, 12))  # positions in [-1, 1] onto a 25 x 25 grid
    return s, (12, 24), SpectraPositionDeviceTensorEndpointUInt16(PositionFormatExecutor(pc), (25, 25, S))


def _host(view, ep):
    ep.stream.synchronize()
    if isinstance(view, np.ndarray):
        return view.copy()
    if hasattr(view, "get") and not hasattr(view, "numpy"):
        return view.get()  # CuPy
    return np.asarray(view.numpy())


def run(kind, device, tmp_path):
    """One scan through the engine on ``device`` into its executor's spectra endpoint; the
    volume, the volume callbacks and what the IO recorded."""
    scan, (segments, records), ep = _scan(kind)
    raw = (np.arange(4096 * S, dtype=np.uint64) * 7919 % 60000).astype(np.uint16).reshape(4096, S)
    np.save(tmp_path / f"raw_{device}.npy", raw)
    acq = vg.FileAcquisition(path=str(tmp_path / f"raw_{device}.npy"), loop=True, samples_per_record=S)
    pc = vg.ProcessorConfig(samples_per_record=S, ascans_per_block=RPB)
    proc = vg.CUDAProcessor(pc) if device == "cuda" else vg.CPUProcessor(pc)
    planner = FormatPlanner(FormatPlannerConfig(segments, records))
    io = SimulatedIO()
    ec = EngineConfig(records_per_block=RPB, blocks_to_allocate=4, preload_count=2)
    ec.add_acquisition(acq, [proc])
    ec.add_processor(proc, [planner])
    ec.add_formatter(planner, [ep])
    ec.add_io(io)
    volumes = []
    ep.volume_callback = lambda sample, scan_idx, volume_idx: volumes.append((scan_idx, volume_idx))
    eng = Engine(ec)
    eng.scan_queue.append(scan)
    eng.prepare()
    eng.start()
    eng.wait()
    with ep.tensor as v:
        vol = _host(v, ep)
    out = vol, volumes, io.recorded()[1]
    eng.close()
    ep.close()
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_rig_on_cpu(kind, tmp_path):
    """The rig the CUDA comparison uses, on the CPU: one volume, filled where the scan went
    (a raster of 12 lines covers a tenth and more of the position grid)."""
    vol, volumes, wave = run(kind, "cpu", tmp_path)
    assert volumes == [(0, 0)]
    assert np.count_nonzero(vol) > vol.size // (10 if kind == "position" else 4), kind
    assert len(wave) > 0


@pytest.mark.parametrize("kind", KINDS)
def test_executor_on_cuda_equals_cpu(gpu, kind, tmp_path):
    """Each executor's CUDA kernels give the CPU executor's volume: exactly for stack and
    position; radial and spiral up to 2% of pixels apart (CUDA's hypotf/atan2f and Go's libm
    round a boundary pixel's geometry apart, see gosrc/format TestGPULaunchMatchesExecutors)."""
    host, hv, hw = run(kind, "cpu", tmp_path)
    dev, dv, dw = run(kind, "cuda", tmp_path)
    assert dv == hv == [(0, 0)]
    np.testing.assert_array_equal(dw, hw)  # the same waveform drove both
    assert dev.shape == host.shape and dev.dtype == host.dtype
    differ = np.any(dev != host, axis=-1)
    if kind in ("stack", "position"):
        assert not differ.any(), f"{differ.sum()} pixels differ"
    else:
        assert differ.mean() <= 0.02, f"{differ.sum()} of {differ.size} pixels differ"


@pytest.mark.parametrize("kind", ["radial", "spiral"])
def test_engine_runs_radial_and_spiral_end_to_end_on_cuda(gpu, kind, tmp_path):
    """engine.scan_queue -> Generate (IO waveform) -> CUDA processor -> planner -> the executor's
    kernels -> the device endpoint: one volume reported, the volume filled."""
    vol, volumes, wave = run(kind, "cuda", tmp_path)
    assert volumes == [(0, 0)]
    assert np.count_nonzero(vol) > vol.size // 4
    assert np.abs(wave).max() > 0.5, "the IO received the scan's waveform"
