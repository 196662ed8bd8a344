"""vortex's MachDSPIO and vortex.io.machdsp through vortexgo's serial driver, against a
servo on a pseudo-terminal (tests_py/_machdsp_peer.py: vortex's protocol, the servo's side).

In-process cases use the peer without a model (it takes every block at once); the engine
cases run in their own interpreter with the virtual digitizer and the peer on the model's
timeline (its sample k is A-line k), each fault stopping the engine with vortex's error
while the volumes completed before it stay stored. Misuse runs in subprocesses too: closing
the IO while its engine runs, one MachDSPIO in two engines, a port another process holds,
a port without permission.
"""

from __future__ import annotations

import datetime
import os
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


# --- the engine: AlazarAcquisition + MachDSPIO on the virtual instrument (in subprocesses) -------

# A child's helpers, after _alazar_child.PRELUDE: the peer on the model's timeline (the model
# the fake digitizer loaded: the library beside it) and an engine of the virtual digitizer and a
# MachDSPIO on the peer's port.
ENGINE = """
import ctypes, os
from _machdsp_peer import Peer
from vortexgo import machdsp
from vortexgo.compat import Block
from vortexgo.io import MachDSPIO, MachDSPIOConfig

def model():
    return ctypes.CDLL(os.path.join(os.path.dirname(os.environ["VORTEXGO_ATSAPI_LIBRARY"]), "libvgvirtual.so"))

def servo(port, **kw):
    c = MachDSPIOConfig()
    c.port, c.samples_per_block, c.blocks_to_buffer, c.readwrite_timeout = port, RPB, 4, 0.5
    c.output_channels = [machdsp.Channel(1.0, Block.StreamIndex.GalvoTarget, ch) for ch in (0, 1)]
    for k, v in kw.items():
        setattr(c, k, v)
    io = MachDSPIO()
    io.initialize(c)
    return io

def engine_io(acq, io, volumes, endpoints=None):
    pc = vg.ProcessorConfig(samples_per_record=S, ascans_per_block=RPB,
                            resampling_samples=SIM.resampling_positions(),
                            spectral_filter=spectral_filter(hann_window(S), SIM.dispersion_compensation()))
    proc = vg.CPUProcessor(pc)
    fmt = planner(A, B)
    eps = endpoints or [StackHostTensorEndpointFloat32()]
    ec = EngineConfig(records_per_block=RPB, blocks_to_allocate=8, preload_count=4)
    ec.add_acquisition(acq, [proc]); ec.add_processor(proc, [fmt]); ec.add_formatter(fmt, eps)
    ec.add_io(io)
    eng = Engine(ec)
    queue_volumes(eng, A, B, volumes)
    FORMATTER[id(eng)] = fmt  # a session after a stop resets it (vortex's rule)
    return eng, eps
"""


def _engine_run(virtual_instrument: Path, code: str, more: str = "", **env: str) -> _subproc.Outcome:
    from _alazar_child import PRELUDE, env as child_env
    e = {"VGV_ALINE_RATE_HZ": "10000"}  # the Python peer paces every block: a rate it keeps up with
    e.update(env)
    return _subproc.run(code, prelude=PRELUDE + ENGINE + more, env=child_env(virtual_instrument / "libATSApi.so", **e),
                        timeout=150)


@pytest.fixture(scope="module")
def virtual(virtual_instrument: Path) -> Path:
    """build/virtual (conftest.py's virtual_instrument)."""
    return virtual_instrument


# A 32 x 32 volume is 8 blocks of 128 records: a fault at block write 30 (the preload's 4
# included; the servo buffers 5 blocks) comes when about 25 blocks were acquired: two volumes
# (at least) were completed and stored.
@pytest.mark.parametrize("fault, message", [
    # a stray byte before every reply from block 30 on: the first misaligned header passes (as in
    # vortex: a reply's type is not checked), the second announces a payload with no room
    ("framing", ("received header with payload but destination buffer is null",)),
    ("servo_error", ("protocol error: UART Rx (2): invalid message (7)",)),
    ("silent", ("serial read: timeout",)),
    # the pty's master closed: asio's eof, as vortex reports it, or, read in the moment between
    # the kernel marking the other side closed and hanging the pty up, its EIO (seen once in CI)
    ("hangup", ("serial read: End of file", "serial read: Input/output error")),
])
def test_servo_fault_stops_the_engine_and_keeps_the_volumes(virtual, tmp_path, fault, message):
    """The peer, paced on the A-line clock, answers block write 30 with a stray byte, the
    servo's error, nothing, or a hang-up: the engine stops with the driver's error (vortex's
    text) for block 30, and the volumes completed before it are in the file."""
    npy = str(tmp_path / "v.npy")
    _engine_run(virtual, f"""
        from vortexgo.engine import AscanStackEndpoint
        from vortexgo.storage import SimpleStackConfig, SimpleStackInt8
        st = SimpleStackInt8(); st.open(SimpleStackConfig({npy!r}, (B, A, S)))
        store = AscanStackEndpoint(st)
        acq = AlazarAcquisition(alazar_config())
        peer = Peer(model(), fault={fault!r}, at=30)
        io = servo(peer.path)
        eng, _ = engine_io(acq, io, 0, [StackHostTensorEndpointFloat32(), store])
        eng.prepare(); eng.start()
        try:
            eng.wait()
        except vg.VortexError as e:
            assert any(m in str(e) for m in {message!r}), e
            err = str(e)
        else:
            raise AssertionError("the servo's fault went unnoticed")
        s = eng.status()
        assert s.error == err or any(m in s.error for m in {message!r}), (s.error, err)
        assert peer.blocks >= 30, peer.blocks
        assert s.volumes >= 2 and store.volumes_written >= 2, (s, store.volumes_written)
        eng.stop(); eng.close()
        st.close()
        shape = np.load({npy!r}).shape
        # every completed volume is in the file (the store also holds the part the error cut)
        assert s.volumes == store.volumes_written and shape[0] >= store.volumes_written, (shape, s.volumes)
        io.close(); acq.close(); peer.close()
        print("ok", s.volumes, err)
    """)


# --- misuse (in subprocesses) ------------------------------------------------------------------

# The proof that the servo was left ready: another session of one volume on the same IO runs
# clean and the servo's stream (reset at the session's start) holds the same codes as the
# first session's for the volume (test_closed_loop.py shows those codes make the image).
READY = """
def assert_ready(eng, io, peer, first_codes):
    eng.scan_queue.reset(); queue_volumes(eng, A, B, 1)
    FORMATTER[id(eng)].reset()
    eng.start(); eng.wait(); eng.stop()
    s = eng.status()
    assert s.error == "" and s.blocks_dropped == 0 and s.volumes == 1, s
    codes, n = list(peer.codes), 2 * A * B  # x, y of the volume's samples
    assert len(codes) >= n and len(first_codes) >= n and codes[:n] == first_codes[:n], (len(codes), len(first_codes))
"""


def test_close_while_running_and_one_io_in_two_engines(virtual):
    _engine_run(virtual, """
        acq = AlazarAcquisition(alazar_config())
        peer = Peer(model())
        io = servo(peer.path)
        first, _ = engine_io(acq, io, 0)
        first.prepare(); first.start(); time.sleep(0.3)
        try:
            io.close()
        except vg.InUseError as e:
            assert "stop the engine first" in str(e), e
        else:
            raise AssertionError("the port was closed under a running engine")
        second, _ = engine_io(SIM, io, 1)  # another engine (its own source), the same servo
        try:
            second.prepare()
        except vg.InUseError as e:
            assert f'MachDSPIO "{peer.path}" belongs to another engine' in str(e), e
        else:
            raise AssertionError("one servo ran in two engines")
        assert io.running, ("the first engine's servo stopped", first.status())
        first.stop()
        assert first.status().error == "", first.status()
        assert not io.running
        codes = list(peer.codes)
        assert len(codes) > 2 * A * B
        assert_ready(first, io, peer, codes)
        first.close()
        second.close()  # the IO is free once the first engine is closed
        io.close(); io.close()
        acq.close(); peer.close()
        print("ok")
    """, READY)


def test_port_busy_in_another_process(tmp_path):
    p = Peer()
    try:
        _subproc.run(f"""
            import subprocess, sys
            import vortexgo as vg
            from vortexgo import machdsp
            from vortexgo.io import MachDSPIO, MachDSPIOConfig
            holder = subprocess.Popen([sys.executable, "-c",
                "import sys; from vortexgo import machdsp; m = machdsp.MachDSP({p.path!r}, 115200); "
                "print('held', flush=True); sys.stdin.read(); m.close()"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            assert holder.stdout.readline().strip() == "held"
            c = MachDSPIOConfig()
            c.port = {p.path!r}
            c.readwrite_timeout = 0.3
            try:
                MachDSPIO().initialize(c)
            except vg.InUseError as e:
                assert "the port is busy: another MachDSP (in this or another process) has it open" in str(e), e
            else:
                raise AssertionError("two processes opened one servo")
            holder.stdin.close()
            assert holder.wait(30) == 0
            io = MachDSPIO(); io.initialize(c)  # free once the other process let go
            assert io.info.zero_point == 32768
            io.close()
            print("ok")
        """)
    finally:
        p.close()


@pytest.mark.skipif(os.geteuid() == 0, reason="runs as root, which opens a port whatever its mode: "
                    "a port without permission cannot be made here")
def test_port_without_permission():
    p = Peer()
    try:
        os.chmod(p.path, 0)
        _subproc.run(f"""
            import vortexgo as vg
            from vortexgo.io import MachDSPIO, MachDSPIOConfig
            c = MachDSPIOConfig()
            c.port = {p.path!r}
            try:
                MachDSPIO().initialize(c)
            except vg.VortexError as e:
                assert "open {p.path}: " in str(e) and "ermission denied" in str(e), e
            else:
                raise AssertionError("opened a port without permission")
            print("ok")
        """)
    finally:
        p.close()
