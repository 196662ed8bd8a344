"""PositionFormatExecutor through the engine: the galvo positions travel with each
block to the device (the engine copies them only when such an executor is wired)."""

import numpy as np
import pytest

import vortexgo as vg
from vortexgo.endpoint import PositionDeviceTensorEndpointFloat32
from vortexgo.engine import Engine, EngineConfig
from vortexgo.format import FormatPlanner, FormatPlannerConfig, PositionFormatExecutor, PositionFormatExecutorConfig

from test_engine_generate import A, B, RPB, S, raster

pytestmark = pytest.mark.timeout(60)
GRID = 16


def _rig(tmp_path, ep, cuda):
    raw = (np.arange(1024 * S, dtype=np.uint16) % 60000).reshape(1024, S)
    np.save(tmp_path / "raw.npy", raw)
    acq = vg.FileAcquisition(path=str(tmp_path / "raw.npy"), samples_per_record=S)
    proc = (vg.CUDAProcessor if cuda else vg.CPUProcessor)(samples_per_record=S, ascans_per_block=RPB)
    planner = FormatPlanner(FormatPlannerConfig(B, A))
    ec = EngineConfig(records_per_block=RPB, blocks_to_allocate=4, preload_count=2)
    ec.add_acquisition(acq, [proc])
    ec.add_processor(proc, [planner])
    ec.add_formatter(planner, [ep])
    return ec


def _positioned_volume(tmp_path, cuda):
    cfg = PositionFormatExecutorConfig()
    half = (GRID - 1) / 2
    cfg.set(pitch=(half, half), offset=(half, half))  # scan positions [-1, 1] onto the grid
    ex = PositionFormatExecutor(cfg)
    ep = PositionDeviceTensorEndpointFloat32(ex, (GRID, GRID, S))
    eng = Engine(_rig(tmp_path, ep, cuda))
    eng.scan_queue.append(raster())
    eng.prepare()
    eng.start()
    eng.wait()
    with ep.tensor as v:
        vol = v.get() if hasattr(v, "get") else np.asarray(v)
        vol = np.array(vol)
    eng.close()
    ep.close()
    return vol


def _check(vol):
    filled = np.argwhere(np.abs(vol).sum(axis=2) > 0)
    # A raster of A x B A-scans over [-1, 1]^2: they land on many cells, spread
    # over both axes. Without positions on the device every A-scan would land on
    # one cell (the transform of (0, 0)).
    assert len(filled) >= A * B // 2
    assert np.ptp(filled[:, 0]) >= GRID // 2 and np.ptp(filled[:, 1]) >= GRID // 2


def test_position_executor_places_ascans_by_the_scan_positions(tmp_path):
    _check(_positioned_volume(tmp_path, False))


@pytest.mark.skipif(not vg.is_cuda_available(), reason="needs a CUDA device")
def test_position_executor_places_ascans_by_the_scan_positions_on_cuda(tmp_path):
    _check(_positioned_volume(tmp_path, True))
