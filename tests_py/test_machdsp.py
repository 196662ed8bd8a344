"""vortex's MachDSPIO and vortex.io.machdsp through vortexgo's serial driver, against a
servo on a pseudo-terminal (tests_py/_machdsp_peer.py: vortex's protocol, the servo's side).

In-process cases use the peer without a model (it takes every block at once); the engine
cases run in their own interpreter with the virtual digitizer and the peer on the model's
timeline (its sample k is A-line k), each fault stopping the engine with vortex's error
while the volumes completed before it stay stored.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import numpy as np
import pytest

import _subproc
from _machdsp_peer import Peer

import vortexgo as vg
from vortexgo import machdsp
from vortexgo.io import MachDSPIO, MachDSPIOConfig

pytestmark = pytest.mark.timeout(120)
HERE = Path(__file__).resolve().parent


@pytest.fixture
def peer():
    p = Peer()
    yield p
    p.close()


def _config(port: str, block: int = 100) -> MachDSPIOConfig:
    c = MachDSPIOConfig()
    c.port, c.samples_per_block, c.blocks_to_buffer = port, block, 2
    c.output_channels = [machdsp.Channel(1.0, 1, 0), machdsp.Channel(1.0, 1, 1)]
    c.readwrite_timeout = 0.3
    return c


def test_config_defaults_are_vortexs():
    c = MachDSPIOConfig()
    assert (c.port, c.baud_rate, c.samples_per_block, c.blocks_to_buffer) == ("COM1", 12_000_000, 100, 1)
    assert c.readwrite_timeout == datetime.timedelta(seconds=1)
    assert (c.sample_divisor, c.aux_divisor, c.trigger_rising_edge, c.stop_on_error) == (1, 1, True, True)
    ch = c.output_channels[0]
    assert (ch.logical_units_per_physical_unit, ch.stream, ch.channel, ch.degree_scale) == (1.0, 0, 0, 15)
    c.blocks_to_buffer = 0
    with pytest.raises(ValueError, match="must buffer at least 1 block: 0"):
        c.validate()
    with pytest.raises(TypeError, match="expected 2 machdsp.Channel"):
        c.output_channels = [machdsp.Channel()]
    assert machdsp.StreamContinue is machdsp.StreamState.StreamContinue and machdsp.Loop == 2
    assert machdsp.Error is machdsp.Overflow.Error  # vortex's last export wins


def test_driver_calls(peer):
    m = machdsp.MachDSP(peer.path, 115200)
    try:
        assert m.valid and m.ping(9) == 9
        i = m.info
        assert (i.version.major, i.version.minor, i.zero_point, i.max_buffer_samples) == (1, 2, 32768, 16384)
        m.set_blocks(4, 250)
        m.set_underflow_behavior(machdsp.Underflow.Hold)
        s = m.read_settings()
        assert (s.block_count, s.block_samples, s.underflow_behavior) == (4, 250, machdsp.Underflow.Hold)
        m.stream_start()
        assert m.stream_status().state == machdsp.StreamState.StreamContinue
        m.stream_stop()
        with pytest.raises(vg.VortexError, match=r"protocol error: settings \(8\): buffer too large \(3\)"):
            m.set_blocks(100, 1000)
        with pytest.raises(vg.InUseError, match="the port is busy"):
            machdsp.MachDSP(peer.path, 115200)
        m.timeout = 0.25
        assert m.timeout == datetime.timedelta(seconds=0.25)
    finally:
        m.close()
    assert not m.valid


def test_standalone_next_sends_vortexs_codes(peer):
    io = MachDSPIO()
    io.initialize(_config(peer.path))
    io.prepare()
    g = np.zeros((100, 2))
    g[:, 0] = np.linspace(-20, 20, 100)  # clipped at degree_scale 15
    g[:, 1] = 7.5
    streams = (np.zeros((100, 1), np.uint64), g, np.zeros((100, 2)), np.zeros((100, 2)), np.zeros((100, 2)),
               np.zeros((100, 1), np.uint32))
    assert io.next(100, streams) == 100
    codes = np.array(peer.codes, np.uint16).reshape(-1, 2)
    want = np.trunc(np.clip(g, -15, 15) / (15 / 32767) + 32768).astype(np.uint16)
    np.testing.assert_array_equal(codes, want)
    with pytest.raises(ValueError, match="block is not exactly equal to the configured size: 50 != 100"):
        io.next(50, streams)
    io.close()
    with pytest.raises(vg.ClosedError):
        io.next(100, streams)


def test_initialize_refusals(tmp_path):
    io = MachDSPIO()
    with pytest.raises(vg.VortexError, match=f"open {tmp_path}/ttyNONE: No such file or directory"):
        io.initialize(_config(str(tmp_path / "ttyNONE")))
    p = Peer(fault="silent")
    try:
        silent = _config(p.path)
        ok = MachDSPIO()
        ok.initialize(silent)  # the greeting works; only block writes go unanswered
        s = (np.zeros((100, 1), np.uint64),) + tuple(np.zeros((100, 2)) for _ in range(4)) + (
            np.zeros((100, 1), np.uint32),)
        with pytest.raises(vg.VortexError, match="serial read: timeout"):
            ok.next(100, s)
        ok.close()
    finally:
        p.close()
