"""The names tests_py/test_driver_coverage.py found missing, behaving as vortex's against the
virtual instrument (instruments/virtual): vortex.io.daqmx.DAQmx (one NI-DAQmx task, call by
call), AlazarAcquisition.running and its read-only config, the board information
alazar.enumerate() reports, AlazarFFTConfig.buffer_bytes_per_record and the DAQmx channels'
no-argument construction. Each case that loads a vendor library runs in its own interpreter
(tests_py/_subproc.py): the virtual libraries read their settings when they load."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from _subproc import run
from vortexgo import alazar, daqmx

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def libs(virtual_instrument: Path) -> dict:
    """The environment pointing both drivers at the virtual instrument."""
    return {"VORTEXGO_ATSAPI_LIBRARY": str(virtual_instrument / "libATSApi.so"),
            "VORTEXGO_NIDAQMX_LIBRARY": str(virtual_instrument / "libnidaqmx.so"), "VGV_TRIGGER": "free"}


def test_daqmx_task_call_by_call(libs, tmp_path):
    """A task made, configured, written, started, stopped and cleared by hand writes what it
    was given (the virtual card records it) and reports its state as vortex's daqmx_t."""
    o = run("""
        import datetime, json, numpy as np
        import vortexgo.compat; vortexgo.compat.install()
        from vortex.io.daqmx import DAQmx, SampleMode, Edge, Terminal
        t = DAQmx("galvo")
        states = [[t.name, t.valid, t.running]]
        t.create_analog_voltage_output("Dev1/ao0", -5, 5)
        t.create_analog_voltage_output(port_name="Dev1/ao1", min=-5, max=5)
        t.configure_sample_clock("pfi0", SampleMode.Continuous, 100000, 200, divisor=1, edge=Edge.Rising)
        t.set_output_buffer_size(400)
        t.set_regeneration(False)
        w = np.stack([np.linspace(-1, 1, 200), np.linspace(2, 0, 200)], axis=1)
        t.write_analog(200, w, datetime.timedelta(seconds=1))
        t.start_task(); t.start_task()  # a no-op when it runs
        states.append([t.name, t.valid, t.running])
        t.write_analog(200, w[::-1].copy(), 1.0)
        t.stop_task(); t.stop_task()
        states.append([t.name, t.valid, t.running])
        t.clear_task(); t.clear_task()
        states.append([t.name, t.valid, t.running])
        d = DAQmx("strobes")
        d.create_digital_output("Dev1/port0")
        d.configure_sample_clock("pfi0", SampleMode.Continuous, 100000, 64)
        d.write_digital(64, np.arange(64, dtype=np.uint32), 1.0)
        d.clear_task()
        i = DAQmx("input")
        i.create_analog_voltage_input("Dev1/ai0", -10, 10, terminal=Terminal.Differential)
        i.set_input_buffer_size(1000)
        print(json.dumps(states))
    """, env={**libs, "VGV_DAQMX_RECORD": str(tmp_path)})
    states = json.loads(o.stdout.strip().splitlines()[-1])
    assert states == [["galvo", True, False], ["galvo", True, True], ["galvo", True, False], ["", False, False]]
    ao = np.fromfile(tmp_path / "galvo.ao", np.float64).reshape(-1, 2)
    w = np.stack([np.linspace(-1, 1, 200), np.linspace(2, 0, 200)], axis=1)
    np.testing.assert_array_equal(ao, np.concatenate([w, w[::-1]]))
    np.testing.assert_array_equal(np.fromfile(tmp_path / "strobes.do", np.uint32), np.arange(64))


@pytest.mark.parametrize("call, message", [
    ('t.create_analog_voltage_output("Dev1/ao9", -5, 5)', "analog voltage output channel creation failed: (-200170)"),
    ('t.create_digital_output("Dev1/port7")', "digital output channel creation failed: (-200170)"),
    ('t.create_analog_voltage_output("Dev1/ao0", -5, 5); '
     't.configure_sample_clock("pfi42", SampleMode.Continuous, 100000, 100)',
     "clock mode 10123 from pfi42 at 100000 samples/second and 100 samples/channel failed: (-89120)"),
    ('t.create_analog_voltage_output("Dev1/ao0", -5, 5); t.write_analog(10, np.zeros((10, 1), np.uint32), 1.0)',
     "buffer of uint32, expected float64"),
    ('t.create_analog_voltage_output("Dev1/ao0", -5, 5); t.write_analog(10, np.zeros((5, 1)), 1.0)',
     "buffer of 5 samples, expected at least 10"),
])
def test_daqmx_task_refuses_with_vortexs_messages(libs, call, message):
    o = run(f"""
        import numpy as np
        from vortexgo.daqmx import DAQmx, SampleMode
        t = DAQmx("bad")
        try:
            {call}
        except (RuntimeError, TypeError, ValueError) as e:
            print(e)
        else:
            raise SystemExit("accepted")
    """, env=libs)
    assert message in o.stdout, o.stdout


def test_daqmx_task_without_the_library_names_it(tmp_path):
    o = run("""
        from vortexgo.daqmx import DAQmx
        try:
            DAQmx("t")
        except RuntimeError as e:
            print(e)
    """, env={"VORTEXGO_NIDAQMX_LIBRARY": str(tmp_path / "libnidaqmx.so")})
    assert "VORTEXGO_NIDAQMX_LIBRARY" in o.stdout and "libnidaqmx.so" in o.stdout


def test_daqmx_task_is_not_copied():
    import copy

    with pytest.raises(TypeError, match="DAQmx"):
        copy.copy(daqmx.DAQmx.__new__(daqmx.DAQmx))


def test_enumerate_and_board_info_from_the_driver(libs):
    """enumerate() lists the one virtual ATS9360, opened; its info is what the library reports."""
    o = run("""
        import json
        import vortexgo.compat; vortexgo.compat.install()
        from vortex.acquire import alazar
        boards = alazar.enumerate()
        b = boards[0]
        i = b.info
        print(json.dumps({"n": len(boards), "valid": b.valid, "handle": b.handle != 0, "model": i.type.model,
                          "channels": [c.name for c in i.supported_channels], "max": i.max_sampling_rate,
                          "bits": i.bits_per_sample, "fft": i.dsp[0].type, "rate": i.dsp[0].max_trigger_rate_per_fft_length(1024),
                          "aligned": [i.nearest_aligned_samples_per_record(1000), i.smallest_aligned_samples_per_record(1000)],
                          "divisor": i.sample_alignment_divisor, "copy": i.copy() == i and i.copy() is not i}))
        unopened = alazar.Board()
        print(unopened.valid, unopened.handle)
    """, env=libs)
    lines = o.stdout.strip().splitlines()
    r = json.loads(lines[-2])
    assert r["n"] == 1 and r["valid"] and r["handle"] and r["model"] == "ATS9360"
    assert r["channels"] == ["A", "B"] and r["max"] == 1_800_000_000 and r["bits"] == 12
    assert r["fft"] == 0x10000 and r["rate"] > 0 and r["copy"]
    d = r["divisor"]
    assert r["aligned"] == [round(1000 / d) * d, -(-1000 // d) * d]
    assert lines[-1] == "False 0"


def test_acquisition_running_and_read_only_config(libs):
    """running follows the board's capture (False before an engine starts it); config is
    read-only, as vortex's (initialize adopts one)."""
    o = run("""
        import vortexgo.compat; vortexgo.compat.install()
        from vortex.acquire import AlazarAcquisition, AlazarConfig, AlazarFFTAcquisition, alazar
        a = AlazarAcquisition()
        print(a.running)
        c = AlazarConfig()
        c.inputs.append(alazar.Input(alazar.Channel.A))
        c.samples_per_record, c.records_per_block = 1024, 16
        a.initialize(c)
        print(a.running, a.config.samples_per_record)
        try:
            a.config = AlazarConfig()
        except AttributeError as e:
            print(e)
        print(AlazarFFTAcquisition().running)
    """, env=libs)
    assert o.stdout.split("\n")[:4] == ["False", "False 1024",
                                        "AlazarAcquisition.config is read-only: initialize(config) adopts a configuration",
                                        "False"], o.stdout


def test_fft_buffer_bytes_per_record():
    c = alazar.AlazarFFTConfig()
    c.inputs.append(alazar.Input(alazar.Channel.A))
    c.fft_length = 2048
    assert c.buffer_bytes_per_record == 1024 * 2
    c.include_time_domain = True
    assert c.buffer_bytes_per_record == (2048 + 1024) * 2


def test_daqmx_channels_construct_as_vortexs():
    """vortex's channels construct with no arguments (empty names, stream and channel 0)."""
    for cls in (daqmx.DigitalOutput, daqmx.DigitalInput):
        ch = cls()
        assert (ch.line_name, ch.stream, ch.channel, ch.max_bits) == ("", 0, 0, 32)
    for cls in (daqmx.AnalogVoltageOutput, daqmx.AnalogVoltageInput):
        ch = cls()
        assert (ch.port_name, ch.logical_units_per_physical_unit, ch.stream, ch.channel) == ("", 1.0, 0, 0)
        assert (ch.limits.min, ch.limits.max) == (-10.0, 10.0)
