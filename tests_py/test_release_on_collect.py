"""What a user drops is released: an engine and its endpoints rebuilt cell after cell in a
notebook, never closed, give their streams and memory back when collected (found by
``make py-test-invariants``: endpoints dropped without close() kept their stream and volume)."""

from __future__ import annotations

import gc

import vortexgo as vg
from vortexgo.engine import Engine, EngineConfig, StackDeviceTensorEndpointInt8
from vortexgo.process import hann_window, spectral_filter

from _scans import planner, queue_volumes

S, A, B, RPB = 64, 8, 4, 32


def _run_and_drop(device: str) -> None:
    ep = StackDeviceTensorEndpointInt8()
    acq = vg.SimulatedAcquisition(samples_per_record=S, ascans_per_bscan=A, bscans_per_volume=B, volumes=1,
                                  total_volumes=0)
    pc = vg.ProcessorConfig(samples_per_record=S, ascans_per_block=RPB, average_window=0,
                            resampling_samples=acq.resampling_positions(),
                            spectral_filter=spectral_filter(hann_window(S), acq.dispersion_compensation()))
    proc = vg.CUDAProcessor(pc) if device.startswith("cuda") else vg.CPUProcessor(pc)
    ec = EngineConfig(records_per_block=RPB, blocks_to_allocate=4, preload_count=2, blocks_to_acquire=8)
    ec.add_acquisition(acq, [proc])
    fmt = planner(A, B)
    ec.add_processor(proc, [fmt])
    ec.add_formatter(fmt, [ep])
    eng = Engine(ec)
    queue_volumes(eng, A, B, 0)
    eng.prepare()
    eng.start()
    eng.wait()
    with ep.tensor as volume:
        assert volume.shape[:2] == (B, A)
    # Nothing is closed: the objects are dropped, as a notebook cell re-run drops them.


def test_dropped_engines_and_endpoints_release_their_memory(device):
    _run_and_drop(device.alias)  # first use: caches, kernels
    gc.collect()
    before = vg.memory_usage()
    for _ in range(3):
        _run_and_drop(device.alias)
        gc.collect()
    after = vg.memory_usage()
    for kind in ("device", "pinned"):
        b, a = getattr(before, kind), getattr(after, kind)
        assert a.current == b.current and a.active == b.active, (kind, b, a)
