"""vortex's AlazarAcquisition with several channels, and its standalone API, on the virtual digitizer.

Channels: vortex's block is ``(records_per_block, samples_per_record, channels_per_sample)``
with the channels interleaved sample by sample (ADMA_INTERLEAVE_SAMPLES) and
``samples_per_record`` counting one channel's samples. The virtual board puts the phantom on
every channel it digitizes (instruments/virtual/atsapi.c ``fill_record``), so channel A and
channel B both equal a one-channel acquisition of the same A-lines (the board's A-line clock
restarts with each capture).

Standalone: vortex's ``prepare``, ``start``, ``stop``, ``running``, ``next`` and
``next_async`` (callback ``(records, exception)`` on the acquisition's worker thread), with
vortex's errors. Every case drives the board in its own interpreter (tests_py/_subproc.py),
as test_alazar.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import _subproc

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def virtual(virtual_instrument: Path) -> Path:
    """The virtual digitizer (conftest.py's virtual_instrument)."""
    return virtual_instrument / "libATSApi.so"


PRELUDE = """
import sys, time, threading
sys.path.insert(0, %r)
import numpy as np
import vortexgo as vg
from vortexgo import alazar
from vortexgo.alazar import AlazarAcquisition, AlazarConfig, AlazarFFTAcquisition, AlazarFFTConfig

S, RPB = 256, 64

def config(*channels, **kw):
    ac = AlazarConfig()
    ac.samples_per_record, ac.records_per_block = S, RPB
    for c in channels or (alazar.Channel.A,):
        ac.inputs.append(alazar.Input(c))
    ac.options.append(alazar.AuxIOTriggerOut())
    for k, v in kw.items():
        setattr(ac, k, v)
    return ac

def until(pred, timeout=10.0):
    t = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < t, "timed out"
        time.sleep(0.005)

def one_block(*channels, **kw):
    acq = AlazarAcquisition(config(*channels, **kw))
    acq.prepare()
    buf = np.zeros(acq.config.shape, np.uint16)
    acq.start()
    assert acq.next(buf) == RPB
    acq.stop()
    acq.close()
    return buf
""" % str(Path(__file__).resolve().parent)


def run(lib: Path, code: str, **kw) -> _subproc.Outcome:
    env = {"VORTEXGO_ATSAPI_LIBRARY": str(lib), "VGV_ALINE_RATE_HZ": "100000", "VGV_NOISE_LEVEL": "0",
           "VGV_PHANTOM": "32,32,-1,1,-1,1", **kw.pop("env", {})}
    return _subproc.run(code, prelude=PRELUDE, env=env, **kw)


# --- several channels --------------------------------------------------------------------------


def test_two_channel_block_shape_and_content(virtual):
    o = run(virtual, """
        acq = AlazarAcquisition(config(alazar.Channel.A, alazar.Channel.B))
        c = acq.config
        assert (c.channels_per_sample, c.shape, c.bytes_per_multisample) == (2, [RPB, S, 2], 4)
        assert acq.samples_per_record == S, "vortex's samples_per_record counts one channel's samples"
        assert repr(acq) == f"<AlazarAcquisition board 1-1, {RPB} x {S} x 2 uint16>"
        acq.close()
        one = one_block(alazar.Channel.A)
        two = one_block(alazar.Channel.A, alazar.Channel.B)
        b_only = one_block(alazar.Channel.B)
        assert one.shape == (RPB, S, 1) and two.shape == (RPB, S, 2)
        assert one.std() > 10 and not np.array_equal(one[0], one[RPB // 2]), "the phantom's spectra"
        np.testing.assert_array_equal(two[..., 0], one[..., 0])   # channel A: the phantom
        np.testing.assert_array_equal(two[..., 1], one[..., 0])   # channel B: the phantom too (the model's)
        np.testing.assert_array_equal(b_only, one)
        # the inputs' order is the channels' order in the block
        ba = one_block(alazar.Channel.B, alazar.Channel.A)
        np.testing.assert_array_equal(ba, two)
        print("ok")
    """)
    assert "ok" in o.stdout


def test_a_processor_fed_by_one_channel_of_two(virtual):
    """A CPUProcessor with channels_per_sample=2 processes channel ``channel`` of the
    two-channel block: the volume equals a one-channel run's, and the engine refuses a
    processor that reads one channel's records of a two-channel block."""
    o = run(virtual, """
        from vortexgo.engine import Engine, EngineConfig, StackHostTensorEndpointFloat32
        from _scans import planner, queue_volumes
        A, B = 32, 32
        def volume(channels, pc_channels, channel):
            acq = AlazarAcquisition(config(*channels, records_per_block=128))
            pc = vg.ProcessorConfig(samples_per_record=S, ascans_per_block=128, channels_per_sample=pc_channels,
                                    channel=channel)
            proc = vg.CPUProcessor(pc)
            fmt, ep = planner(A, B), StackHostTensorEndpointFloat32()
            ec = EngineConfig(records_per_block=128, blocks_to_allocate=8, preload_count=4)
            ec.add_acquisition(acq, [proc]); ec.add_processor(proc, [fmt]); ec.add_formatter(fmt, [ep])
            eng = Engine(ec)
            queue_volumes(eng, A, B, 1)
            eng.prepare(); eng.start(); eng.wait()
            s = eng.status()
            assert s.error == "" and s.volumes == 1, s
            with ep.tensor as v:
                out = np.array(v)
            eng.close(); acq.close()
            return out
        ref = volume([alazar.Channel.A], 1, 0)
        assert np.abs(ref).max() > 10
        for ch in (0, 1):
            np.testing.assert_array_equal(volume([alazar.Channel.A, alazar.Channel.B], 2, ch), ref)
        try:
            volume([alazar.Channel.A, alazar.Channel.B], 1, 0)
        except ValueError as e:
            assert "reads 256 raw values per record" in str(e) and "gives 512" in str(e), e
        else:
            raise AssertionError("a one-channel processor of a two-channel block ran")
        print("ok")
    """)
    assert "ok" in o.stdout


def test_storage_of_both_channels(virtual, tmp_path):
    """vortex's acquire_to_disk.py wiring: a NullProcessor configured with the per-channel
    samples_per_record, spectra stored (bscans, ascans, samples, channels)."""
    pytest.importorskip("h5py")
    o = run(virtual, f"""
        import h5py
        from vortexgo.engine import Engine, EngineConfig, SpectraStackEndpoint, SpectraHDF5StackEndpoint
        from vortexgo.process import NullProcessor
        from vortexgo.storage import (SimpleStackUInt16, SimpleStackConfig, HDF5StackUInt16, HDF5StackConfig,
                                      HDF5StackHeader)
        from _scans import planner, queue_volumes
        A, B, R = 32, 8, 32
        def record(channels, name):
            acq = AlazarAcquisition(config(*channels, records_per_block=R))
            ac = acq.config
            proc = NullProcessor()
            pc = proc.config
            pc.samples_per_record, pc.ascans_per_block = ac.samples_per_record, ac.records_per_block
            proc.initialize(pc)
            shape = (B, A, ac.samples_per_record, ac.channels_per_sample)
            npy, h5 = SimpleStackUInt16(), HDF5StackUInt16()
            npy.open(SimpleStackConfig({str(tmp_path)!r} + f"/{{name}}.npy", shape))
            hc = h5.config
            hc.path, hc.shape, hc.header = {str(tmp_path)!r} + f"/{{name}}.mat", shape, HDF5StackHeader.MATLAB
            h5.open(hc)
            fmt = planner(A, B)
            ec = EngineConfig(records_per_block=R, blocks_to_allocate=8, preload_count=4)
            ec.add_acquisition(acq, [proc]); ec.add_processor(proc, [fmt])
            ec.add_formatter(fmt, [SpectraStackEndpoint(npy), SpectraHDF5StackEndpoint(h5)])
            eng = Engine(ec)
            queue_volumes(eng, A, B, 1)
            eng.prepare(); eng.start(); eng.wait()
            s = eng.status()
            assert s.error == "" and s.volumes == 1, s
            eng.close(); npy.close(); h5.close(); acq.close()
            with h5py.File({str(tmp_path)!r} + f"/{{name}}.mat", "r") as f:
                mat = np.array(f["data"])
            return np.load({str(tmp_path)!r} + f"/{{name}}.npy"), mat
        one, one_mat = record([alazar.Channel.A], "one")
        two, two_mat = record([alazar.Channel.A, alazar.Channel.B], "two")
        assert one.shape[-4:] == (B, A, S, 1) and two.shape[-4:] == (B, A, S, 2), (one.shape, two.shape)
        assert one.std() > 10
        np.testing.assert_array_equal(two[..., 0], one[..., 0])
        np.testing.assert_array_equal(two[..., 1], one[..., 0])
        assert two_mat.size == two.size and np.array_equal(np.sort(two_mat.ravel()), np.sort(two.ravel()))
        print("ok")
    """)
    assert "ok" in o.stdout


# --- the standalone API -------------------------------------------------------------------------


def test_prepare_next_async_start_stop_as_vortexs_demo(virtual):
    """live_view_alazar_fft.py's background step, and the callbacks' order and arguments."""
    o = run(virtual, """
        acq = AlazarAcquisition(config())
        assert not acq.running
        acq.prepare()
        bufs = [np.zeros(acq.config.shape, np.uint16) for _ in range(3)]
        got, threads = [], []
        def cb(i):
            def f(n, e):
                got.append((i, n, e)); threads.append(threading.current_thread())
            return f
        for i, b in enumerate(bufs):
            acq.next_async(b, cb(i), id=i)
        assert got == [] and not acq.running
        acq.start()
        assert acq.running
        until(lambda: len(got) == 3)
        assert got == [(0, RPB, None), (1, RPB, None), (2, RPB, None)], got
        assert all(t is not threading.main_thread() for t in threads) and len(set(threads)) == 1
        assert all(b.std() > 10 for b in bufs) and not np.array_equal(bufs[0], bufs[1])
        # next: the following block, in the calling thread
        b = np.zeros((RPB, S), np.uint16)      # vortex's shape compatibility: axes of 1 may be left out
        assert acq.next(b, 7) == RPB and b.std() > 10
        acq.stop()
        assert not acq.running
        # a stop ends the waits: 0 records, no error
        got.clear()
        acq.prepare(); acq.start()
        acq.next_async(np.zeros(acq.config.shape, np.uint16), cb(0))
        acq.stop()
        until(lambda: len(got) == 1)
        assert got == [(0, 0, None)], got
        # prepared again, it runs again
        acq.prepare(); acq.start()
        assert acq.next(bufs[0]) == RPB
        acq.stop(); acq.stop()   # a second stop does nothing
        acq.close()
        print("ok")
    """)
    assert "ok" in o.stdout


def test_errors_are_vortexs(virtual):
    o = run(virtual, """
        acq = AlazarAcquisition(config(alazar.Channel.A, alazar.Channel.B, acquire_timeout=0.2))
        good = np.zeros(acq.config.shape, np.uint16)
        def raises(exc, match, f, *a):
            try:
                f(*a)
            except exc as e:
                assert match in str(e), (match, str(e))
                return e
            raise AssertionError(f"no {exc.__name__}: {match}")
        cb = lambda n, e: None
        raises(vg.VortexError, "no capture is prepared, expected prepare() first", acq.next, good)
        raises(vg.VortexError, "no capture is prepared, expected prepare() first", acq.start)
        acq.prepare()
        raises(ValueError, "block is not exactly equal to the configured size: 63 != 64",
               acq.next, np.zeros((RPB - 1, S, 2), np.uint16))
        raises(ValueError, "block is not exactly equal to the configured size: 63 != 64",
               acq.next_async, np.zeros((RPB - 1, S, 2), np.uint16), cb)
        raises(RuntimeError, "buffer shape is not compatible with configured shape: [64, 256, 1] !~= [64, 256, 2]",
               acq.next_async, np.zeros((RPB, S, 1), np.uint16), cb)
        raises(TypeError, "expected uint16", acq.next, np.zeros(acq.config.shape, np.float32))
        raises(TypeError, "expected a NumPy uint16 array", acq.next, [0] * 10)
        class FakeCuda:
            __cuda_array_interface__ = {}
        raises(TypeError, "a CUDA array", acq.next_async, FakeCuda(), cb)
        raises(TypeError, "callback=None, expected a callable", acq.next_async, good, None)
        # a wait past acquire_timeout (the board never started): the SDK's error to the callback,
        # and stop_on_error stops the board
        got = []
        acq.next_async(good, lambda n, e: got.append((n, e)))
        until(lambda: got)
        n, e = got[0]
        assert n == 0 and isinstance(e, vg.VortexError) and "ApiWaitTimeout" in str(e), got
        raises(vg.VortexError, "no capture is prepared", acq.start)   # stopped on the error
        # the same through next
        acq.prepare()
        raises(vg.VortexError, "ApiWaitTimeout", acq.next, good)
        # a callback that raises is logged; the worker goes on
        acq.prepare(); acq.start()
        def bad(n, e):
            raise KeyError("from the callback")
        got.clear()
        acq.next_async(good, bad)
        acq.next_async(np.zeros_like(good), lambda n, e: got.append((n, e)))
        until(lambda: got)
        assert got == [(RPB, None)], got
        acq.stop()
        acq.close()
        raises(vg.ClosedError, "closed", acq.prepare)
        raises(vg.ClosedError, "closed", acq.next, good)
        print("ok")
    """)
    assert "ok" in o.stdout
    assert "unhandled callback exception" in o.stderr and "KeyError" in o.stderr


def test_standalone_calls_are_refused_while_an_engine_uses_it(virtual):
    o = run(virtual, """
        from vortexgo.engine import Engine, EngineConfig, StackHostTensorEndpointFloat32
        from _scans import planner, queue_volumes
        acq = AlazarAcquisition(config(records_per_block=128))
        proc = vg.CPUProcessor(vg.ProcessorConfig(samples_per_record=S, ascans_per_block=128))
        fmt, ep = planner(32, 32), StackHostTensorEndpointFloat32()
        ec = EngineConfig(records_per_block=128, blocks_to_allocate=8, preload_count=4)
        ec.add_acquisition(acq, [proc]); ec.add_processor(proc, [fmt]); ec.add_formatter(fmt, [ep])
        eng = Engine(ec)
        queue_volumes(eng, 32, 32, 1)
        eng.prepare()
        buf = np.zeros(acq.config.shape, np.uint16)
        for f in (lambda: acq.next(buf), acq.start, acq.stop, lambda: acq.next_async(buf, print)):
            try:
                f()
            except vg.InUseError as e:
                assert "an engine that prepared the source has not finished its run" in str(e), e
            else:
                raise AssertionError("a standalone call ran under an engine")
        # a standalone capture before the engine's does not disturb it
        eng.start(); eng.wait()
        assert eng.status().error == "" and eng.status().volumes == 1
        eng.close()
        acq.prepare(); acq.start()
        assert acq.next(buf) == 128
        acq.stop(); acq.close()
        print("ok")
    """)
    assert "ok" in o.stdout


def test_fft_acquisition_standalone(virtual):
    o = run(virtual, """
        fc = AlazarFFTConfig()
        fc.samples_per_record, fc.records_per_block, fc.fft_length = S, RPB, 256
        fc.inputs.append(alazar.Input(alazar.Channel.A))
        acq = AlazarFFTAcquisition(fc)
        assert acq.samples_per_record == fc.samples_per_ascan == 128
        acq.prepare()
        buf = np.zeros(fc.shape, np.uint16)
        got = []
        acq.next_async(buf, lambda n, e: got.append((n, e)))
        acq.start()
        until(lambda: got)
        assert got == [(RPB, None)] and buf.std() > 10, got
        acq.stop(); acq.close()
        print("ok")
    """)
    assert "ok" in o.stdout


# --- closing and exiting with waits pending (each in its own interpreter) ------------------------


@pytest.mark.parametrize("how", ["close", "drop", "exit", "exit_running"])
def test_pending_next_async_at_close_drop_and_exit(virtual, how):
    """A next_async still waiting when the acquisition is closed, dropped or the interpreter
    exits: the wait ends (the board is stopped), the callback gets 0 records and no error,
    nothing deadlocks or crashes."""
    o = run(virtual, f"""
        import gc
        acq = AlazarAcquisition(config(acquire_timeout=60))
        acq.prepare()
        got = []
        buf = np.zeros(acq.config.shape, np.uint16)
        def cb(n, e):
            got.append((n, e)); print(f"callback {{n}} {{e}}", flush=True)
        acq.next_async(buf, cb)
        how = {how!r}
        if how == "exit_running":  # started, at 10 A-lines/s: the block is 6.4 s away
            acq.start()
            assert acq.running
        time.sleep(0.2)
        t0 = time.monotonic()
        if how == "close":
            acq.close()
            until(lambda: len(got) == 1, 5)
            assert got == [(0, None)], got
            acq.close()
        elif how == "drop":
            del acq
            gc.collect()
            until(lambda: len(got) == 1, 5)
            assert got == [(0, None)], got
        print("t", time.monotonic() - t0, flush=True)
        print("ok", flush=True)
    """, timeout=60, env={"VGV_ALINE_RATE_HZ": "10"} if how == "exit_running" else {})
    assert "ok" in o.stdout
    assert "callback 0 None" in o.stdout, o.stdout
    assert o.seconds < 30, "the exit waited for the wait's 60 s timeout"
