"""vortex's DAQmxIO against the virtual NI-DAQmx card (instruments/virtual, `make virtual`):
vortex's names, defaults and validation; an engine run whose waveforms the card recorded
equal the Generate stage's; and, each in its own interpreter, the host falling behind the
card (underflow), the library missing and bad channel names."""

import datetime
from pathlib import Path

import numpy as np
import pytest

from vortexgo import daqmx
from vortexgo.io import DAQmxConfig, DAQmxConfigClock, DAQmxIO

from _subproc import run

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def libnidaqmx(virtual_instrument: Path) -> str:
    """build/virtual/libnidaqmx.so (conftest.py's virtual_instrument builds it)."""
    path = virtual_instrument / "libnidaqmx.so"
    assert path.exists()
    return str(path)


def test_defaults_are_vortexs():
    c = DAQmxConfig()
    assert (c.name, c.samples_per_second, c.samples_per_block, c.blocks_to_buffer) == ("unknown", 100_000, 100, 1)
    assert c.readwrite_timeout == datetime.timedelta(seconds=1)
    assert (c.clock.source, c.clock.edge, c.clock.divisor) == ("pfi0", daqmx.Edge.Rising, 1)
    assert c.persistent_task and c.stop_on_error and list(c.channels) == []
    ch = daqmx.AnalogVoltageOutput("Dev1/ao0", 15 / 10, 1, 0)
    assert (ch.port_name, ch.logical_units_per_physical_unit, ch.stream, ch.channel) == ("Dev1/ao0", 1.5, 1, 0)
    assert (ch.limits.min, ch.limits.max) == (-10, 10)
    assert daqmx.AnalogVoltageInput("Dev1/ai0").terminal == daqmx.Terminal.Referenced
    d = daqmx.DigitalOutput("Dev1/port0", 5)
    assert (d.line_name, d.stream, d.channel, d.max_bits) == ("Dev1/port0", 5, 0, 32)
    assert int(daqmx.Rising) == 10280 and int(daqmx.Continuous) == 10123 and int(daqmx.Differential) == 10106
    c.channels.append(ch)
    c2 = c.copy()
    c2.channels[0].port_name = "Dev1/ao1"
    assert c.channels[0].port_name == "Dev1/ao0", "copy() is deep"
    assert isinstance(c.clock, DAQmxConfigClock)
    with pytest.raises(TypeError, match="channels"):
        c.channels.append("Dev1/ao0")
    with pytest.raises(AttributeError, match="port_nam"):
        ch.port_nam = "x"


@pytest.mark.parametrize("edit, message", [
    (lambda c: setattr(c, "blocks_to_buffer", 0), "must buffer at least 1 block: 0"),
    (lambda c: setattr(c.clock, "divisor", 0), "minimum clock divisor is 1: 0"),
    (lambda c: setattr(c.clock, "divisor", 3), r"samples per block \(100\) must be evenly divisible by clock divisor \(3\): 1 != 0"),
    (lambda c: c.channels.append(daqmx.AnalogVoltageOutput("Dev1/ao0:1")),
     "analog inputs/outputs must map to a single DAQmx channel: Dev1/ao0:1"),
    (lambda c: c.channels.append(daqmx.AnalogVoltageInput("Dev1/ai0,Dev1/ai1")),
     "analog inputs/outputs must map to a single DAQmx channel: Dev1/ai0,Dev1/ai1"),
])
def test_validate_with_vortexs_messages(edit, message):
    c = DAQmxConfig()
    edit(c)
    with pytest.raises(ValueError, match=message):
        c.validate()
    with pytest.raises(ValueError, match=message):
        DAQmxIO().initialize(c)


# One engine run on the CPU: a raster scan of the simulated acquisition, the galvo waveform
# to the virtual card's ao0/ao1 and the strobes to its port0, a SimulatedIO beside them
# recording what the Generate stage produced. argv: rate (DAQmx samples/s), output dir.
_ENGINE = """
import json, sys, numpy as np
import vortexgo as vg
from vortexgo import scan as vs, daqmx
from vortexgo.engine import Engine, EngineConfig, NullEndpoint
from vortexgo.format import FormatPlanner, FormatPlannerConfig
from vortexgo.io import DAQmxConfig, DAQmxIO, SimulatedIO
from vortexgo.compat import Block
rate, S, A, B, RPB, PRELOAD = int(sys.argv[1]), 16, 32, 8, 32, 4
acq = vg.SimulatedAcquisition(samples_per_record=S, ascans_per_bscan=A, bscans_per_volume=B, total_volumes=2)
proc = vg.CPUProcessor(samples_per_record=S, ascans_per_block=RPB)
planner = FormatPlanner(FormatPlannerConfig(B, A))
ec = EngineConfig(records_per_block=RPB, blocks_to_allocate=8, preload_count=PRELOAD)
ec.add_acquisition(acq, [proc])
ec.add_processor(proc, [planner])
ec.add_formatter(planner, [NullEndpoint()])
c = DAQmxConfig()
c.samples_per_block, c.samples_per_second, c.blocks_to_buffer = RPB, rate, PRELOAD
sc = c.copy()
c.name = "output"
c.channels.append(daqmx.AnalogVoltageOutput("Dev1/ao0", 1.0, Block.StreamIndex.GalvoTarget, 0))
c.channels.append(daqmx.AnalogVoltageOutput("Dev1/ao1", 1.0, Block.StreamIndex.GalvoTarget, 1))
out = DAQmxIO()
out.initialize(c)
sc.name = "strobe"
sc.channels.append(daqmx.DigitalOutput("Dev1/port0", Block.StreamIndex.Strobes))
strobe = DAQmxIO()
strobe.initialize(sc)
sim = SimulatedIO()
for io in (out, strobe, sim):
    ec.add_io(io)
eng = Engine(ec)
rs = vs.RasterScan()
rc = vs.RasterScanConfig()
rc.ascans_per_bscan, rc.bscans_per_volume = A, B
rc.bypass_limits_check = True
rc.inactive_policy = vs.inactive_policy.FixedLinear(5, 7)
rs.initialize(rc)
eng.scan_queue.append(rs)
eng.prepare()
eng.start()
try:
    eng.wait()
finally:
    eng.stop()
    first, target = sim.recorded()
    _, strobes = sim.recorded_strobes()
    np.save(sys.argv[2] + "/target.npy", target)
    np.save(sys.argv[2] + "/strobes.npy", strobes)
    print(json.dumps({"first": first, "samples": sim.samples, "running": out.running}))
"""


def _engine(libnidaqmx, tmp_path, rate, rc=0):
    env = {"VORTEXGO_NIDAQMX_LIBRARY": libnidaqmx, "VGV_TRIGGER": "free", "VGV_DAQMX_RECORD": str(tmp_path)}
    script = f"import sys; sys.argv = ['x', {str(rate)!r}, {str(tmp_path)!r}]\n" + _ENGINE
    return run(script, env=env, rc=rc, timeout=100)


def test_engine_writes_the_generated_waveform(libnidaqmx, tmp_path):
    # 5 kHz: a block every 6.4 ms and four buffered, 26 ms of slack for the engine's threads (at
    # 20 kHz a GPU host's 8 test workers starved them past the 6.4 ms then buffered twice: the
    # card's underflow stopped the run, as test_underflow_stops_the_engine wants it to).
    o = _engine(libnidaqmx, tmp_path, 5_000)
    target = np.load(tmp_path / "target.npy")
    strobes = np.load(tmp_path / "strobes.npy")
    assert len(target) > 0 and np.abs(target).max() > 0.1, "the raster scan moves the galvos"
    written = np.fromfile(tmp_path / "output.ao", np.float64).reshape(-1, 2)
    words = np.fromfile(tmp_path / "strobe.do", np.uint32)
    # the card generated exactly what the Generate stage produced, block by block
    np.testing.assert_array_equal(written, target)
    np.testing.assert_array_equal(words, strobes)
    assert '"running": false' in o.stdout


def test_underflow_stops_the_engine(libnidaqmx, tmp_path):
    """A card clocked far faster than the host writes: NI's underflow stops the engine loudly,
    with vortex's message."""
    o = _engine(libnidaqmx, tmp_path, 4_000_000, rc=1)
    assert "analog write failed: (-200290) buffer underflow" in o.stderr or \
        "digital write failed: (-200290) buffer underflow" in o.stderr, o.stderr


def test_missing_library_named(tmp_path):
    o = run("""
        from vortexgo import daqmx
        from vortexgo.io import DAQmxConfig, DAQmxIO
        c = DAQmxConfig()
        c.channels.append(daqmx.AnalogVoltageOutput("Dev1/ao0"))
        c.validate()  # no library needed
        try:
            DAQmxIO().initialize(c)
        except Exception as e:
            print(type(e).__name__, e)
        else:
            raise SystemExit("initialize without the library succeeded")
    """, env={"VORTEXGO_NIDAQMX_LIBRARY": str(tmp_path / "libnidaqmx.so")})
    assert "libnidaqmx.so" in o.stdout and "VORTEXGO_NIDAQMX_LIBRARY" in o.stdout, o.stdout
    assert str(tmp_path) in o.stdout


@pytest.mark.parametrize("channel, message", [
    ('daqmx.AnalogVoltageOutput("Dev1/ao9")', r"analog voltage output channel creation failed: \(-200170\)"),
    ('daqmx.AnalogVoltageOutput("Dev3/ao0")', r"analog voltage output channel creation failed: \(-200220\)"),
    ('daqmx.DigitalOutput("Dev1/port7")', r"digital output channel creation failed: \(-200170\)"),
])
def test_bad_channel_refused(libnidaqmx, channel, message):
    o = run(f"""
        from vortexgo import daqmx
        from vortexgo.io import DAQmxConfig, DAQmxIO
        c = DAQmxConfig()
        c.channels.append({channel})
        try:
            DAQmxIO().initialize(c)
        except RuntimeError as e:
            print(e)
        else:
            raise SystemExit("a bad channel was accepted")
    """, env={"VORTEXGO_NIDAQMX_LIBRARY": libnidaqmx})
    import re
    assert re.search(message, o.stdout), o.stdout


def test_bad_clock_refused(libnidaqmx):
    o = run("""
        from vortexgo import daqmx
        from vortexgo.io import DAQmxConfig, DAQmxIO
        c = DAQmxConfig()
        c.clock.source = "pfi42"
        c.channels.append(daqmx.AnalogVoltageOutput("Dev1/ao0"))
        try:
            DAQmxIO().initialize(c)
        except RuntimeError as e:
            print(e)
        else:
            raise SystemExit("a bad clock was accepted")
    """, env={"VORTEXGO_NIDAQMX_LIBRARY": libnidaqmx})
    assert "clock mode 10123 from pfi42 at 100000 samples/second and 100 samples/channel failed: (-89120)" in o.stdout
