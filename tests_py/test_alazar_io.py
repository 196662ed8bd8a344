"""vortex's AlazarIO (the galvo DAC of an AlazarTech digitizer) against the virtual board
(instruments/virtual, `make virtual`): vortex's names, defaults and validation; engine runs,
stopped and started again, whose DAC samples (the virtual DAC's record) are the Generate
stage's waveform in DAC codes; and, each in its own interpreter, the library missing and
vortex's names through vortexgo.compat. The closed loop with AlazarAcquisition on the same
board is tests_py/test_closed_loop.py."""

import numpy as np
import pytest

from vortexgo import alazar
from vortexgo.io import AlazarIO, AlazarIOConfig
from vortexgo.scan import Range

from _subproc import run

pytestmark = pytest.mark.timeout(120)


def test_defaults_are_vortexs():
    c = AlazarIOConfig()
    assert (c.samples_per_block, c.blocks_to_buffer, c.divisor, c.stop_on_error) == (100, 1, 1, True)
    assert (c.device.system_index, c.device.board_index) == (1, 1)
    assert len(c.analog_output_channels) == 2
    ch = c.analog_output_channels[0]
    assert (ch.logical_units_per_physical_unit, ch.stream, ch.channel, ch.park) == (1.0, 0, 0, 0)
    assert (ch.limits.min, ch.limits.max) == (-5, 5)
    ch = alazar.AnalogChannel(15 / 10, 1, 1, park=2)
    assert (ch.logical_units_per_physical_unit, ch.stream, ch.channel, ch.park) == (1.5, 1, 1, 2)
    ch.limits = Range(-2, 2)
    c.analog_output_channels = [ch, alazar.AnalogChannel()]
    c2 = c.copy()
    c2.analog_output_channels[0].park = -1
    assert c.analog_output_channels[0].park == 2, "copy() is deep"
    assert c2.analog_output_channels[0].limits.max == 2
    c.validate()
    with pytest.raises(TypeError, match="2 AnalogChannel"):
        c.analog_output_channels = [ch]
    with pytest.raises(TypeError, match="2 AnalogChannel"):
        c.analog_output_channels = [ch, "y"]
    with pytest.raises(ValueError, match="non-zero"):
        alazar.AnalogChannel(0)
    with pytest.raises(AttributeError, match="blocks_to_buffer"):
        c.blocks_to_bufer = 2
    with pytest.raises(ValueError, match="not initialized"):
        AlazarIO().start()
    assert not AlazarIO().running


@pytest.mark.parametrize("edit, message", [
    (lambda c: setattr(c, "blocks_to_buffer", 0), "must buffer at least 1 block: 0"),
    (lambda c: setattr(c, "divisor", 0), "minimum divisor is 1: 0"),
    (lambda c: setattr(c, "samples_per_block", 0), "samples per block must be positive: 0"),
    (lambda c: setattr(c.analog_output_channels[1], "limits", Range(1, -1)),
     r"analog output channel 1: limits \[1, -1\], expected min <= max"),
])
def test_validate_with_vortexs_messages(edit, message):
    c = AlazarIOConfig()
    edit(c)
    with pytest.raises(ValueError, match=message):
        c.validate()


# Engine runs on the CPU: a raster scan of the simulated acquisition, its galvo waveform
# played by the virtual board's DAC, a SimulatedIO beside it recording what the Generate
# stage produced. Two runs of one engine (stop, start again), then an engine whose IO's
# channels read the wrong stream. argv: output dir.
_ENGINE = """
import json, os, sys, numpy as np
import vortexgo as vg
from vortexgo import scan as vs, alazar
from vortexgo.engine import Engine, EngineConfig, NullEndpoint
from vortexgo.format import FormatPlanner, FormatPlannerConfig
from vortexgo.io import AlazarIO, AlazarIOConfig, SimulatedIO
from vortexgo.compat import Block
out_dir = sys.argv[1]
S, A, B, RPB, PRELOAD = 16, 32, 8, 32, 4

def engine(ios):
    acq = vg.SimulatedAcquisition(samples_per_record=S, ascans_per_bscan=A, bscans_per_volume=B, total_volumes=1)
    proc = vg.CPUProcessor(samples_per_record=S, ascans_per_block=RPB)
    planner = FormatPlanner(FormatPlannerConfig(B, A))
    ec = EngineConfig(records_per_block=RPB, blocks_to_allocate=8, preload_count=PRELOAD)
    ec.add_acquisition(acq, [proc]); ec.add_processor(proc, [planner]); ec.add_formatter(planner, [NullEndpoint()])
    for io in ios:
        ec.add_io(io)
    return Engine(ec)

def scan():
    rs = vs.RasterScan(); rc = vs.RasterScanConfig()
    rc.ascans_per_bscan, rc.bscans_per_volume = A, B
    rc.bscan_extent = rc.volume_extent = vs.Range(-6, 6)  # 4 V at 15/10: some samples beyond the limits
    rc.bypass_limits_check = True
    rc.inactive_policy = vs.inactive_policy.FixedLinear(5, 7)
    rs.initialize(rc)
    return rs

c = AlazarIOConfig()
c.samples_per_block, c.blocks_to_buffer = RPB, PRELOAD
c.analog_output_channels = [alazar.AnalogChannel(1.5, Block.StreamIndex.GalvoTarget, ch, park=[3, -30][ch])
                            for ch in (0, 1)]
c.analog_output_channels[0].limits = vs.Range(-3, 3)
dac = AlazarIO(); dac.initialize(c)
meta = {"slot": dac.slot, "ring": dac.ring_samples,
        "park": np.fromfile(os.path.join(out_dir, "dac1.park"), np.uint16).tolist()}  # the board's, now
for run in range(2):  # the same AlazarIO in a second engine (a SimulatedIO records one run)
    sim = SimulatedIO(record_samples=1 << 16)
    eng = engine([dac, sim])
    eng.scan_queue.append(scan())
    eng.prepare()
    eng.start()
    try:
        eng.wait()
    finally:
        eng.stop()
    first, target = sim.recorded()
    np.save(os.path.join(out_dir, f"target{run}.npy"), target)
    meta[f"first{run}"] = first
    meta[f"running{run}"] = dac.running
    s = eng.status()
    assert s.error == "", s
    del eng  # releases the IOs for the next engine

# vortex's default channels read stream 0 (Counter): the engine's prepare refuses them
d2 = AlazarIO(); d2.initialize(AlazarIOConfig())
e2 = engine([d2])
try:
    e2.prepare()
except Exception as e:
    meta["refused"] = f"{type(e).__name__}: {e}"
print(json.dumps(meta))
"""


def _dac(volts: np.ndarray, lo: float = -5, hi: float = 5) -> np.ndarray:
    """What the DAC plays for ``volts``: clipped, the code truncated, back in volts."""
    lsb = 5.0 / 32767
    return (np.trunc(np.clip(volts, lo, hi) / lsb + 32768) - 32768) * lsb


def test_engine_plays_the_generated_waveform_across_a_restart(virtual_instrument, tmp_path):
    env = {"VORTEXGO_INSTRUMENTS": "virtual", "VORTEXGO_VIRTUAL_DIR": str(virtual_instrument),
           "VGV_DAC_RECORD": str(tmp_path)}
    o = run(f"import sys; sys.argv = ['x', {str(tmp_path)!r}]\n" + _ENGINE, env=env, timeout=100)
    import json
    meta = json.loads(o.stdout.strip().splitlines()[-1])
    assert (meta["slot"], meta["ring"]) == (1, 5 * 32), "the first slot holding (blocks_to_buffer + 1) blocks"
    assert not meta["running0"] and not meta["running1"], "stopped with the engine"
    assert meta["refused"].startswith("ValueError: ") and meta["refused"].endswith(
        "AlazarIO: analog output channel 0 reads stream Counter, expected GalvoTarget (1)"), meta["refused"]
    played = np.fromfile(tmp_path / "dac1.bin", np.float64).reshape(-1, 2)
    t0, t1 = np.load(tmp_path / "target0.npy"), np.load(tmp_path / "target1.npy")
    assert np.abs(t0).max() > 5, "the scan reaches beyond the limits"
    # the DAC played each run's samples, the second from the ring's start again
    want = np.concatenate([np.stack([_dac(r[:, 0] / 1.5, -3, 3), _dac(r[:, 1] / 1.5)], axis=1) for r in (t0, t1)])
    assert played.shape == want.shape
    np.testing.assert_allclose(played, want, rtol=0, atol=1e-12)
    assert meta["park"] == [45874, 1], "park: 3/1.5 = 2 V and -30/1.5 clipped to -5 V, as codes"


def test_initialize_refuses_a_ring_no_slot_holds(virtual_instrument):
    o = run("""
        from vortexgo.io import AlazarIO, AlazarIOConfig
        c = AlazarIOConfig()
        c.samples_per_block, c.blocks_to_buffer = 600_000, 1
        try:
            AlazarIO().initialize(c)
        except Exception as e:
            print(type(e).__name__, e)
    """, env={"VORTEXGO_INSTRUMENTS": "virtual", "VORTEXGO_VIRTUAL_DIR": str(virtual_instrument)})
    assert "could not find DAC slot with capacity for 1200000 samples" in o.stdout, o.stdout


def test_missing_library_named(tmp_path):
    o = run("""
        from vortexgo.io import AlazarIO, AlazarIOConfig
        c = AlazarIOConfig()
        c.validate()  # no library needed
        try:
            AlazarIO().initialize(c)
        except Exception as e:
            print(type(e).__name__, e)
        else:
            raise SystemExit("initialize without the library succeeded")
    """, env={"VORTEXGO_ATSAPI_LIBRARY": str(tmp_path / "libATSApi.so")})
    assert "libATSApi.so" in o.stdout and "VORTEXGO_ATSAPI_LIBRARY" in o.stdout, o.stdout
    assert str(tmp_path) in o.stdout


def test_vortex_names():
    o = run("""
        import vortexgo.compat
        vortexgo.compat.install(shadow=True)
        import vortex.io
        from vortex.io import AlazarIO, AlazarIOConfig
        from vortex.io.alazar import AnalogChannel
        import vortexgo.io, vortexgo.alazar
        assert AlazarIO is vortexgo.io.AlazarIO and AlazarIOConfig is vortexgo.io.AlazarIOConfig
        assert AnalogChannel is vortexgo.alazar.AnalogChannel is vortex.io.alazar.AnalogChannel
        c = AlazarIOConfig()
        c.analog_output_channels = [AnalogChannel(15 / 10, 1, 0), AnalogChannel(15 / 10, 1, 1)]
        print("ok")
    """)
    assert "ok" in o.stdout, o.output()
