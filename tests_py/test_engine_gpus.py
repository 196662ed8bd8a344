"""Processors on two GPUs in one engine (vortex's ``cycle([a, b])`` across devices): blocks
alternate between the GPUs, the second GPU's outputs come back by peer copy into the block on
the engine's GPU, and the formatted volumes equal those of the same engine on one GPU.
Needs two CUDA devices (the nvidia-h200-x2 machine); skipped otherwise. The one-device logic
(rotation, formatter sharing) is tested on the CPU in test_engine_graph.py."""

from __future__ import annotations

import numpy as np
import pytest

import vortexgo as vg
from vortexgo._device import cuda_device_count
from vortexgo.engine import AscanStackEndpoint, Engine, EngineConfig, StackDeviceTensorEndpointFloat32, cycle
from vortexgo.storage import SimpleStackConfig, SimpleStackInt8

from _scans import planner, queue_volumes
from test_engine import A, B, RPB, S

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.skipif(cuda_device_count() < 2, reason="needs two CUDA devices")]


def _run(devices, graph, average_window=0):
    acq = vg.SimulatedAcquisition(samples_per_record=S, ascans_per_bscan=A, bscans_per_volume=B, volumes=2,
                                  total_volumes=0)
    pc = vg.ProcessorConfig(samples_per_record=S, ascans_per_block=RPB, average_window=average_window,
                            resampling_samples=acq.resampling_positions())
    procs = [vg.CUDAProcessor(pc, device=d) for d in devices]
    fmt = planner(A, B)
    ep = StackDeviceTensorEndpointFloat32()
    ec = EngineConfig(records_per_block=RPB, blocks_to_allocate=8, preload_count=4)
    ec.add_acquisition(acq, [graph(procs)])
    for p in procs:
        ec.add_processor(p, [fmt])
    ec.add_formatter(fmt, [ep])
    eng = Engine(ec)
    queue_volumes(eng, A, B, 3)
    eng.prepare()
    eng.start()
    eng.wait()
    eng.stop()
    s = eng.status()
    with ep.tensor as v:
        vol = v.get() if hasattr(v, "get") else np.asarray(v)
    eng.close()
    return vol, s


def test_cycle_across_two_gpus_equals_one_gpu():
    one, s1 = _run(["cuda:0"], lambda ps: ps[0])
    two, s2 = _run(["cuda:0", "cuda:1"], cycle)
    assert s2.error == "" and s2.volumes == 3 and s2.blocks_dropped == 0
    assert s2.blocks_formatted == s1.blocks_formatted
    np.testing.assert_array_equal(two, one)
    assert np.abs(two).sum() > 0


def test_engine_on_the_second_gpu():
    # The engine (and its endpoints) on cuda:1, the processor on cuda:0.
    one, _ = _run(["cuda:0"], lambda ps: ps[0])
    acq_dev_swapped, s = _run(["cuda:1", "cuda:0"], cycle)
    assert s.error == ""
    np.testing.assert_array_equal(acq_dev_swapped, one)


@pytest.mark.parametrize("env", [
    {},  # the engine's choice: the device ring, a lane for the second GPU
    {"VORTEXGO_DEVICE_BLOCKS": "0"},  # the pool as allocated
    {"VORTEXGO_SLOT_PATH": "stages"},  # the process loop hands the lanes their blocks
    {"VORTEXGO_SLOT_PATH": "inline"},  # the acquire loop submits every block: no lanes
    {"VORTEXGO_REMOTE_LANES": "slot"},  # a lane per slot of the second GPU, the order by tickets
], ids=["default", "ring-off", "stages", "inline", "lane-per-slot"])
def test_cycle_across_two_gpus_keeps_each_processors_order(monkeypatch, env):
    # With a rolling average each processor's history depends on the order of its blocks: the
    # second GPU's blocks, submitted from its own lane, must reach its processor in block
    # order. The same cycle with both processors on one GPU is the reference.
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    window = 2 * RPB
    one, s1 = _run(["cuda:0", "cuda:0"], cycle, average_window=window)
    two, s2 = _run(["cuda:0", "cuda:1"], cycle, average_window=window)
    assert s2.error == "" and s2.volumes == 3 and s2.blocks_dropped == 0
    assert s2.blocks_formatted == s1.blocks_formatted
    np.testing.assert_allclose(two, one, rtol=1e-5, atol=1e-3)
    assert np.abs(two).sum() > 0


def _run_file(tmp_path, devices, graph, name: str, vols: int) -> np.ndarray:
    """``vols`` volumes of the spectra in tmp_path/raw.npy, filled by the engine into its pinned
    blocks (FileAcquisition, pin=False), processed over ``devices`` and stored (SimpleStack,
    read back by numpy)."""
    acq = vg.FileAcquisition(path=str(tmp_path / "raw.npy"), samples_per_record=S, loop=False, pin=False)
    procs = [vg.CUDAProcessor(samples_per_record=S, ascans_per_block=RPB, device=d) for d in devices]
    st = SimpleStackInt8()
    st.open(SimpleStackConfig(str(tmp_path / f"{name}.npy"), (B, A, S)))
    store = AscanStackEndpoint(st)
    fmt = planner(A, B)
    ec = EngineConfig(records_per_block=RPB, blocks_to_allocate=4, preload_count=2)
    ec.add_acquisition(acq, [graph(procs)])
    for p in procs:
        ec.add_processor(p, [fmt])
    ec.add_formatter(fmt, [store])
    with Engine(ec) as eng:
        queue_volumes(eng, A, B, vols)
        eng.prepare()
        eng.start()
        eng.wait()
        s = eng.status()
        assert s.error == "" and s.volumes == vols and s.blocks_dropped == 0, s
        assert s.blocks_allocated == 32, "the device ring, remote processor or not"
    st.close()
    store.close()
    for p in procs:
        p.close()
    return np.load(tmp_path / f"{name}.npy")


def test_cycle_across_two_gpus_from_blocks_the_engine_fills(tmp_path):
    # The acquisition fills the engine's 4 pinned blocks, each again as soon as every upload that
    # reads it is done: the second GPU's upload, queued after the first's, included (session 50's
    # engine gave a block's pinned memory back before queueing the second GPU's upload, so the
    # file reader could overwrite spectra the second GPU was still copying). Every volume of both
    # runs must be equal.
    vols = 8
    raw = np.random.default_rng(3).integers(0, 4000, (vols * B, A, S), dtype=np.uint16)
    np.save(tmp_path / "raw.npy", raw)
    one = _run_file(tmp_path, ["cuda:0"], lambda ps: ps[0], "one", vols)
    two = _run_file(tmp_path, ["cuda:0", "cuda:1"], cycle, "two", vols)
    assert one.shape == two.shape == (vols, B, A, S, 1)
    np.testing.assert_array_equal(two, one)
    assert np.abs(one.astype(np.int32)).sum() > 0
