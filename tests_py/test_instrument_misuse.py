"""Misuse of the hardware drivers the way users misuse them, through the real
driver code on the virtual instrument (instruments/virtual).

A notebook user shares one AlazarAcquisition or DAQmxIO between two engines,
closes it while its engine runs, presses Ctrl-C in ``wait()``, interrupts a
session with buffers posted to the board, forks a worker mid-run, or reads
the board from another thread. None of it may crash, hang or leave the board
unusable: each case ends with a session whose data equals the simulated
source's (the board was left ready), and each runs in its own interpreter.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import _subproc
from _alazar_child import PRELUDE, env

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def virtual(virtual_instrument: Path) -> Path:
    """The virtual digitizer (conftest.py's virtual_instrument)."""
    return virtual_instrument / "libATSApi.so"


# The proof that the board was left ready: one more session on the same
# engine, reset as vortex documents between sessions, equals the simulated
# source's volume bit for bit.
READY = """
def simulated_volume():
    eng, (ep,) = engine(SIM, 1)
    eng.prepare(); eng.start(); eng.wait(); eng.stop()
    with ep.tensor as v:
        out = np.array(v)
    eng.close()
    return out

def assert_ready(eng, ep):
    eng.scan_queue.reset(); queue_volumes(eng, A, B, 1)
    FORMATTER[id(eng)].reset()
    eng.start(); eng.wait(); eng.stop()
    s = eng.status()
    assert s.error == "" and s.blocks_dropped == 0, s
    with ep.tensor as v:
        got = np.array(v)
    np.testing.assert_array_equal(got, simulated_volume())
"""


def run(lib: Path, code: str, **extra: str) -> _subproc.Outcome:
    """``code`` in a child with the Alazar prelude, READY and the virtual board."""
    return _subproc.run(code, prelude=PRELUDE + READY, env=env(lib, **extra))


def test_one_acquisition_in_two_engines(virtual):
    run(virtual, """
        acq = AlazarAcquisition(alazar_config())
        first, _ = engine(acq, 0)
        second, (ep,) = engine(acq, 1)
        first.prepare(); first.start()
        try:
            second.prepare()
        except vg.InUseError as e:
            assert "AlazarAcquisition belongs to another engine" in str(e) and "close that engine" in str(e), e
        else:
            raise AssertionError("one board's acquisition ran in two engines")
        time.sleep(0.1)
        first.stop(); first.close()
        second.prepare()            # free once the first engine is closed
        assert_ready(second, ep)
        second.close(); acq.close()
        print("ok")
    """)


def test_two_acquisitions_of_one_board(virtual):
    """A notebook cell re-run builds a second AlazarAcquisition of the board
    before the first is dropped: refused while the first captures (naming
    what to stop), accepted after; each session then runs on its own
    configuration (the board's is applied again when it changed hands)."""
    run(virtual, """
        first = AlazarAcquisition(alazar_config())
        eng1, (ep1,) = engine(first, 0)
        eng1.prepare(); eng1.start(); time.sleep(0.05)
        try:
            AlazarAcquisition(alazar_config())
        except vg.InUseError as e:
            assert "board 1-1 is capturing for another AlazarAcquisition; stop that one first" in str(e), e
        else:
            raise AssertionError("a second acquisition reconfigured the board under the first's DMA")
        eng1.stop()
        second = AlazarAcquisition(alazar_config(inputs=[alazar.Input(alazar.Channel.A)], acquire_timeout=2.0))
        eng2, (ep2,) = engine(second, 1)
        eng2.prepare(); eng2.start()
        try:
            eng1.scan_queue.reset(); queue_volumes(eng1, A, B, 0); eng1.start(); eng1.wait()
        except vg.InUseError as e:
            assert "is capturing for another AlazarAcquisition" in str(e), e
        else:
            raise AssertionError("two captures on one board")
        eng1.stop()
        eng2.wait(); eng2.stop()
        assert_ready(eng1, ep1)     # the first's configuration again, its data right
        eng1.close(); eng2.close(); first.close(); second.close()
        print("ok")
    """)


def test_close_while_its_engine_runs(virtual):
    """close() on a running source raises (never frees the board under the
    DMA); after the engine stops it closes, and closing twice is harmless."""
    run(virtual, """
        acq = AlazarAcquisition(alazar_config())
        eng, (ep,) = engine(acq, 0)
        eng.prepare(); eng.start(); time.sleep(0.05)
        try:
            acq.close()
        except vg.InUseError as e:
            assert "stop the engine first" in str(e), e
        else:
            raise AssertionError("closed under a running engine")
        assert eng.status().error == "" and eng.status().active
        eng.stop()
        assert_ready(eng, ep)       # the refused close changed nothing
        eng.close(); acq.close(); acq.close()
        try:
            acq.board.info
        except vg.VortexError as e:
            assert "closed" in str(e), e
        else:
            raise AssertionError("a closed source answered")
        print("ok")
    """)


def test_ctrl_c_in_wait_leaves_the_board_ready(virtual):
    """Ctrl-C (SIGINT) in wait() of an endless raster: KeyboardInterrupt within
    a fraction of a second, the capture aborted with buffers posted, and the
    next session's data is right."""
    run(virtual, """
        import os, signal
        acq = AlazarAcquisition(alazar_config())
        eng, (ep,) = engine(acq, 0)
        eng.prepare(); eng.start()
        threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        t0 = time.monotonic()
        try:
            eng.wait()
        except KeyboardInterrupt:
            took = time.monotonic() - t0
        else:
            raise AssertionError("wait() swallowed Ctrl-C")
        assert took < 2.0, took
        s = eng.status()
        assert s.error == "" and s.blocks_acquired > 0, s
        eng.stop()
        assert not acq.running
        assert_ready(eng, ep)
        eng.close(); acq.close()
        print("ok")
    """)


def test_shutdown_interrupt_with_buffers_posted(virtual):
    """shutdown(interrupt=True) mid-volume, every block's buffer posted to the
    board: the session ends without error, repeatedly, and the board is ready."""
    run(virtual, """
        acq = AlazarAcquisition(alazar_config())
        eng, (ep,) = engine(acq, 0)
        eng.prepare()
        for i in range(3):
            eng.scan_queue.reset(); queue_volumes(eng, A, B, 0)
            eng.start(); time.sleep(0.05 + 0.03 * i)
            eng.shutdown(interrupt=True)
            assert eng.wait_for(5.0), "the interrupted session did not end"
            eng.stop()
            s = eng.status()
            assert s.error == "" and s.blocks_acquired > 0, s
        assert_ready(eng, ep)
        eng.close(); acq.close()
        print("ok")
    """)


def test_fork_mid_run(virtual):
    """A worker forked while the board streams: the child gets ForkError naming
    spawn (never a hang or a second DMA owner); the parent's run goes on."""
    run(virtual, """
        import os, warnings
        warnings.simplefilter("ignore", DeprecationWarning)
        acq = AlazarAcquisition(alazar_config())
        eng, (ep,) = engine(acq, 0)
        eng.prepare(); eng.start(); time.sleep(0.1)
        before = eng.status().blocks_acquired
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                acq.board.info
            except vg.ForkError as e:
                code = 0 if "spawn" in str(e) else 4
            except BaseException:
                code = 5
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        time.sleep(0.2)
        s = eng.status()
        assert s.error == "" and s.blocks_acquired > before, (before, s)
        eng.stop()
        assert_ready(eng, ep)
        eng.close(); acq.close()
        print("ok")
    """)


def test_threads_read_the_board_while_it_streams(virtual):
    """Four threads read the board's information and the source's state while
    the engine streams: no error, no corrupted block."""
    run(virtual, """
        acq = AlazarAcquisition(alazar_config())
        eng, (ep,) = engine(acq, 0)
        eng.prepare(); eng.start()
        errors, stop = [], threading.Event()
        def reader():
            try:
                while not stop.is_set():
                    assert acq.board.info.type.model == "ATS9360"
                    acq.running; acq.config.samples_per_record
                    [b.info.board_index for b in alazar.enumerate()]
            except BaseException as e:
                errors.append(e)
        ts = [threading.Thread(target=reader) for _ in range(4)]
        for t in ts: t.start()
        time.sleep(0.3); stop.set()
        for t in ts: t.join(10)
        assert not errors, errors
        eng.stop()
        assert_ready(eng, ep)
        eng.close(); acq.close()
        print("ok")
    """)


# --- NI-DAQmx -------------------------------------------------------------------------

# A child's DAQmx engine: the simulated acquisition, the galvo waveform to
# the virtual card (free-running sample clock), a SimulatedIO beside it
# recording what the Generate stage produced.
DAQ_PRELUDE = """
import os, signal, sys, threading, time
import numpy as np
import vortexgo as vg
from vortexgo import scan as vs, daqmx
from vortexgo.engine import Engine, EngineConfig, NullEndpoint
from vortexgo.format import FormatPlanner, FormatPlannerConfig
from vortexgo.io import DAQmxConfig, DAQmxIO, SimulatedIO
from vortexgo.compat import Block
S, A, B, RPB = 16, 32, 8, 32

def daq(name="galvo", ports=("Dev1/ao0", "Dev1/ao1"), rate=4_000):
    c = DAQmxConfig()
    c.name, c.samples_per_block, c.samples_per_second, c.blocks_to_buffer = name, RPB, rate, 4
    for i, p in enumerate(ports):
        c.channels.append(daqmx.AnalogVoltageOutput(p, 1.0, Block.StreamIndex.GalvoTarget, i))
    d = DAQmxIO()
    d.initialize(c)
    return d

def engine(*ios, volumes=0):
    acq = vg.SimulatedAcquisition(samples_per_record=S, ascans_per_bscan=A, bscans_per_volume=B,
                                  total_volumes=volumes)
    proc = vg.CPUProcessor(samples_per_record=S, ascans_per_block=RPB)
    planner = FormatPlanner(FormatPlannerConfig(B, A))
    ec = EngineConfig(records_per_block=RPB, blocks_to_allocate=8, preload_count=4)
    ec.add_acquisition(acq, [proc]); ec.add_processor(proc, [planner]); ec.add_formatter(planner, [NullEndpoint()])
    for io in ios:
        ec.add_io(io)
    eng = Engine(ec)
    rs = vs.RasterScan(); rc = vs.RasterScanConfig()
    rc.ascans_per_bscan, rc.bscans_per_volume, rc.bypass_limits_check, rc.loop = A, B, True, volumes == 0
    rc.inactive_policy = vs.inactive_policy.FixedLinear(5, 7)
    rs.initialize(rc)
    for _ in range(max(volumes, 1)):
        eng.scan_queue.append(rs)
    return eng

def card(name):
    return np.fromfile(os.path.join(os.environ["VGV_DAQMX_RECORD"], name + ".ao"), np.float64).reshape(-1, 2)

def assert_ready(d):
    # a fresh engine over the same task: the card generates what was generated, exactly
    sim = SimulatedIO()
    eng = engine(d, sim, volumes=1)
    eng.prepare(); eng.start(); eng.wait(); eng.stop()
    _, target = sim.recorded()
    np.testing.assert_array_equal(card(d.config.name)[-len(target):], target)
    eng.close()
"""


def daq_run(lib: Path, code: str, tmp_path: Path) -> _subproc.Outcome:
    return _subproc.run(code, prelude=DAQ_PRELUDE, env={"VORTEXGO_NIDAQMX_LIBRARY": str(lib), "VGV_TRIGGER": "free",
                                                         "VGV_DAQMX_RECORD": str(tmp_path)})


@pytest.fixture(scope="module")
def card(virtual_instrument: Path) -> Path:
    """The virtual NI-DAQmx card."""
    return virtual_instrument / "libnidaqmx.so"


def test_daqmx_one_io_in_two_engines_and_one_channel_in_two_tasks(card, tmp_path):
    daq_run(card, """
        d = daq()
        first, second = engine(d), engine(d, volumes=1)
        first.prepare(); first.start(); time.sleep(0.05)
        try:
            second.prepare()
        except vg.InUseError as e:
            assert 'DAQmxIO "galvo" belongs to another engine' in str(e), e
        else:
            raise AssertionError("one task ran in two engines")
        # another task on a channel the running one generates on: NI's reservation error, loudly,
        # at the second engine's start; the first runs on
        other = daq(name="other", ports=("Dev1/ao1", "Dev1/ao2"))
        third = engine(other, volumes=1)
        third.prepare(); third.start()
        try:
            third.wait()
        except vg.VortexError as e:
            assert "-50103" in str(e), e
        else:
            raise AssertionError("two tasks generated on Dev1/ao1")
        third.stop(); third.close()
        assert first.status().error == "" and first.status().active
        first.stop(); first.close()
        assert not d.running
        assert_ready(d); assert_ready(other)
        print("ok")
    """, tmp_path)


def test_daqmx_close_and_ctrl_c_while_generating(card, tmp_path):
    daq_run(card, """
        d = daq()
        eng = engine(d)
        eng.prepare(); eng.start(); time.sleep(0.05)
        try:
            d.close()
        except vg.InUseError as e:
            assert "stop the engine first" in str(e), e
        else:
            raise AssertionError("the task was cleared under a running engine")
        threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        try:
            eng.wait()
        except KeyboardInterrupt:
            pass
        else:
            raise AssertionError("wait() swallowed Ctrl-C")
        eng.stop(); eng.close()
        assert not d.running and eng.status().error == ""
        assert_ready(d)
        d.close(); d.close()
        print("ok")
    """, tmp_path)
