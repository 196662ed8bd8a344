"""Misuse of the engine and its stages on the CPU backend (issue 12): closing
what a running engine uses, impossible sizes, a full disk, handlers that
exit, waits that would deadlock, stops before starts, storage shapes and
seeks that overflow.

Each case runs in its own interpreter: a crash (SIGSEGV, a Go fatal error)
is then a failed case with its output, not a dead test run, and a hang is a
failed timeout.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import _subproc

pytestmark = pytest.mark.timeout(120)

# Shared by every case: a small continuous pipeline (rate-limited, endless
# unless total_volumes is given) so that a case can act while it runs. As in
# vortex the scan queue ends the run: total_volumes one-volume rasters are
# queued (0: a looping one) and the acquisition itself never ends.
PRELUDE = '''
import os, sys, time, threading
sys.path.insert(0, @TESTS@)  # _scans
import numpy as np
import vortexgo as vg
from vortexgo.engine import (Engine, EngineConfig, EngineEvent, AscanStackEndpoint, NullEndpoint,
                             StackHostTensorEndpointInt8)
from vortexgo.storage import SimpleStackConfig, SimpleStackInt8
from _scans import planner, queue_volumes
S, A, B = 64, 16, 8

def rig(endpoints, rate=200_000.0, total_volumes=0, rpb=64):
    acq = vg.SimulatedAcquisition(samples_per_record=S, ascans_per_bscan=A, bscans_per_volume=B, volumes=1,
                                  total_volumes=0, rate=rate)
    proc = vg.CPUProcessor(vg.ProcessorConfig(samples_per_record=S, ascans_per_block=rpb))
    fmt = planner(A, B)
    ec = EngineConfig(records_per_block=rpb, blocks_to_allocate=4, preload_count=2)
    ec.add_acquisition(acq, [proc])
    ec.add_processor(proc, [fmt])
    ec.add_formatter(fmt, endpoints)
    eng = Engine(ec)
    queue_volumes(eng, A, B, total_volumes)
    return eng, acq, proc

def expect(exc, fn, *args, match=None):
    try:
        fn(*args)
    except exc as e:
        if match is not None:
            assert match in str(e), (match, str(e))
        print("RAISED", type(e).__name__, e)
        return e
    raise AssertionError(f"{fn} did not raise {exc.__name__}")
'''


PRELUDE = PRELUDE.replace("@TESTS@", repr(str(Path(__file__).resolve().parent)))


def run_case(code: str, timeout: float = 60) -> str:
    """Run PRELUDE + code in a fresh interpreter (see _subproc.run); return
    its output. The case must exit 0 within timeout."""
    r = _subproc.run(code, prelude=PRELUDE, timeout=timeout)
    return r.stdout + r.stderr


# --- closing what a running engine uses ---------------------------------------------


def test_endpoint_close_while_running_raises_in_use_and_stream_dies_after_close():
    out = run_case('''
        ep = StackHostTensorEndpointInt8()
        vols = []
        ep.volume_callback = lambda *a: vols.append(a)
        eng, acq, proc = rig([ep])
        eng.prepare()
        cached = ep.stream
        eng.start()
        while not vols:
            time.sleep(0.01)
        e = expect(vg.InUseError, ep.close, match="stop the engine first")
        assert "StackHostTensorEndpoint" in str(e)
        assert not ep._closed
        cached.synchronize()  # still the endpoint's live stream
        eng.stop()
        n = len(vols)
        assert n >= 1 and eng.status().error == "", eng.status()
        ep.close()
        expect(vg.ClosedError, lambda: ep.stream)
        expect(vg.ClosedError, cached.synchronize)
        expect(vg.ClosedError, lambda: cached.handle)
        eng.close()
        print("OK", n)
    ''')
    assert "RAISED InUseError" in out and "OK" in out


def test_acquisition_and_processor_close_while_running_raise_in_use():
    out = run_case('''
        ep = NullEndpoint()
        ups = []
        ep.update_callback = lambda: ups.append(1)
        eng, acq, proc = rig([ep])
        eng.prepare()
        eng.start()
        while len(ups) < 2:
            time.sleep(0.01)
        expect(vg.InUseError, acq.close, match="SimulatedAcquisition")
        expect(vg.InUseError, proc.close, match="CPUProcessor")
        time.sleep(0.05)  # the run goes on over the refused closes
        eng.stop()
        assert eng.status().error == "" and eng.status().blocks_formatted >= 2, eng.status()
        acq.close()
        proc.close()
        ep.close()
        eng.close()
        print("OK")
    ''')
    assert out.count("RAISED InUseError") == 2 and "OK" in out


def test_prepared_but_not_started_engine_holds_its_stages_until_closed():
    out = run_case('''
        ep = NullEndpoint()
        eng, acq, proc = rig([ep])
        eng.prepare()
        expect(vg.InUseError, acq.close)
        eng.close()
        acq.close()
        proc.close()
        ep.close()
        print("OK")
    ''')
    assert "OK" in out


def test_storage_close_under_running_engine_raises_and_loses_nothing(tmp_path):
    path = tmp_path / "s.npy"
    out = run_case(f'''
        st = SimpleStackInt8()
        st.open(SimpleStackConfig(path={str(path)!r}, shape=(B, A, S)))
        ep = AscanStackEndpoint(st)
        eng, acq, proc = rig([ep], total_volumes=0)
        eng.prepare()
        eng.start()
        while ep.volumes_written < 2:
            time.sleep(0.01)
        expect(vg.InUseError, st.close, match="SimpleStack")
        eng.stop()
        assert eng.status().error == "", eng.status()
        n = ep.volumes_written
        st.close()
        data = np.load({str(path)!r})
        assert data.shape[0] == n and n >= 2, (data.shape, n)
        eng.close()
        print("OK", n)
    ''')
    assert "RAISED InUseError" in out and "OK" in out


# --- sizes ----------------------------------------------------------------------------


@pytest.mark.parametrize("code, exc, name", [
    ("EngineConfig(event_queue_size=2**40).validate()", "ValueError", "event_queue_size"),
    ("EngineConfig(records_per_block=2**40).validate()", "ValueError", "records_per_block"),
    ("EngineConfig(blocks_to_allocate=2**70).validate()", "ValueError", "blocks_to_allocate"),
    ("vg.SimulatedAcquisition(samples_per_record=2**40, ascans_per_bscan=4, bscans_per_volume=4)",
     "MemoryError", "samples_per_record"),
    ("vg.SimulatedAcquisition(ascans_per_bscan=2**31, bscans_per_volume=2**31)", "MemoryError", "ascans_per_bscan"),
    ("vg.SimulatedAcquisition(volumes=2**40)", "MemoryError", "volumes"),
    ("vg.SimulatedAcquisition(volumes=2**70)", "ValueError", "volumes"),
])
def test_impossible_sizes_raise_before_allocating(code, exc, name):
    out = run_case(f'''
        expect({exc}, lambda: {code}, match={name!r})
        print("OK")
    ''')
    assert f"RAISED {exc}" in out and "OK" in out


def test_engine_refuses_a_huge_event_queue_in_go():
    # The Go core bounds it (Python checks only that it is an int).
    out = run_case('''
        ep = NullEndpoint()
        eng, acq, proc = rig([ep], total_volumes=1, rate=0.0)
        cfg = eng.config  # a copy (vortex's): changing it leaves eng as it is
        cfg.event_queue_size = 2**40
        assert eng.config.event_queue_size != 2**40
        eng2 = Engine(cfg)
        expect(ValueError, eng2.prepare, match="EngineConfig.event_queue_size=1099511627776")
        print("OK")
    ''')
    assert "OK" in out


# --- a failing disk ---------------------------------------------------------------------


def test_disk_full_stops_the_engine_and_raises_from_wait(tmp_path):
    path = tmp_path / "full.npy"
    out = run_case(f'''
        import resource, signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        vol = B * A * S
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 + 3 * vol + vol // 2, resource.RLIM_INFINITY))
        st = SimpleStackInt8()
        st.open(SimpleStackConfig(path={str(path)!r}, shape=(B, A, S)))
        ep = AscanStackEndpoint(st)
        eng, acq, proc = rig([ep], rate=0.0)
        events = []
        eng.event_callback = lambda ev, exc: events.append((ev, exc))
        eng.prepare()
        eng.start()
        t0 = time.monotonic()
        e = expect(OSError, eng.wait)
        assert time.monotonic() - t0 < 20
        st_ = eng.status()
        assert st_.error and st_.state == "failed", st_
        assert any(ev == EngineEvent.Error for ev, _ in events), events
        assert ep.volumes_written == 3, ep.volumes_written
        # The 4th volume's first segments reached the file (vortex's Volume strategy
        # writes each block's finished segments): close cannot pad it on the full disk
        # and says so, after writing the header of the 3 complete volumes.
        expect(OSError, st.close)
        assert np.load({str(path)!r}).shape[0] == 3
        eng.close()
        print("OK", st_.volumes, ep.volumes_written)
    ''')
    assert "RAISED OSError" in out and "OK" in out


# --- handlers and waits -----------------------------------------------------------------


@pytest.mark.parametrize("where, raise_, exc", [
    ("volume", "sys.exit(3)", "SystemExit"),
    ("volume", "(_ for _ in ()).throw(KeyboardInterrupt())", "KeyboardInterrupt"),
    ("event", "sys.exit(3)", "SystemExit"),
])
def test_base_exception_in_a_handler_stops_the_engine_and_reraises(where, raise_, exc):
    out = run_case(f'''
        ep = StackHostTensorEndpointInt8()
        calls = []
        def handler(*a):
            calls.append(a)
            {raise_}
        if {where!r} == "volume":
            ep.volume_callback = handler
        eng, acq, proc = rig([ep], rate=0.0)
        if {where!r} == "event":
            eng.event_callback = lambda ev, e: handler() if ev == EngineEvent.Start else None
        eng.prepare()
        eng.start()
        e = expect({exc}, eng.wait)
        assert eng.done and len(calls) == 1, calls
        eng.close()
        ep.close()
        print("OK")
    ''', timeout=30)
    assert f"RAISED {exc}" in out and "OK" in out


def test_wait_while_holding_the_tensor_lock_raises_lock_error():
    out = run_case('''
        ep = StackHostTensorEndpointInt8()
        eng, acq, proc = rig([ep])
        eng.prepare()
        eng.start()
        with ep.tensor:
            expect(vg.LockError, eng.wait)
            expect(vg.LockError, eng.wait_for, 0.1)
            expect(vg.LockError, eng.stop)
        eng.stop()
        eng.close()
        print("OK")
    ''', timeout=30)
    assert out.count("RAISED LockError") == 3 and "OK" in out


@pytest.mark.parametrize("arg, exc", [("float('nan')", "ValueError"), ("float('inf')", "ValueError"),
                                      ("'1'", "TypeError"), ("-1", "ValueError"), ("2**70", "ValueError")])
def test_wait_for_names_its_timeout(arg, exc):
    out = run_case(f'''
        ep = NullEndpoint()
        eng, acq, proc = rig([ep], total_volumes=1, rate=0.0)
        eng.prepare()
        eng.start()
        expect({exc}, eng.wait_for, {arg}, match="timeout")
        eng.wait()
        eng.close()
        print("OK")
    ''', timeout=30)
    assert "OK" in out


def test_stop_before_start_does_not_poison_the_next_run():
    out = run_case('''
        ep = NullEndpoint()
        vols = []
        ep.volume_callback = lambda *a: vols.append(a)
        eng, acq, proc = rig([ep], total_volumes=2, rate=0.0)
        eng.stop()  # not prepared: no-op
        eng.prepare()
        eng.stop()  # prepared, not started: no-op
        eng.request_stop()
        eng.start()
        eng.wait()
        assert eng.status().volumes == 2 and len(vols) == 2, (eng.status(), vols)
        eng.close()
        print("OK")
    ''', timeout=30)
    assert "OK" in out


# --- storage ------------------------------------------------------------------------------


@pytest.mark.parametrize("shape, exc", [("(2**32, 2**32, 1)", "ValueError"), ("(2**14, 2**14, 2**14)", "MemoryError"),
                                        ("(2, 1.5, 3)", "TypeError"),
                                        ("(2, 2**70, 3)", "ValueError"), ("(2, 0, 3)", "ValueError")])
def test_storage_shapes_are_checked(tmp_path, shape, exc):
    path = tmp_path / "x.npy"
    out = run_case(f'''
        st = SimpleStackInt8()
        expect({exc}, st.open, SimpleStackConfig(path={str(path)!r}, shape={shape}))
        assert not st.is_open
        print("OK")
    ''')
    assert "OK" in out


def test_storage_seek_beyond_any_file_raises_and_keeps_the_file_valid(tmp_path):
    path = tmp_path / "s.npy"
    out = run_case(f'''
        st = SimpleStackInt8()
        st.open(SimpleStackConfig(path={str(path)!r}, shape=(2, 3, 4)))
        v = np.arange(24, dtype=np.int8).reshape(2, 3, 4)
        st.write_volume(v)
        st.advance_volume()  # vortex: write_volume does not advance
        expect(ValueError, st.seek, 2**62, match="volume")
        expect(ValueError, st.seek, 2**70, match="volume_index")
        expect(TypeError, st.seek, 1.5)
        st.write_volume(v + 1)
        st.close()
        data = np.load({str(path)!r})[..., 0]
        assert data.shape == (2, 2, 3, 4) and (data[0] == v).all() and (data[1] == v + 1).all()
        print("OK")
    ''')
    assert "OK" in out


# --- structured records -------------------------------------------------------------------


def test_reflectors_are_pairs_and_name_bad_indices():
    import vortexgo as vg

    a = vg.SimulatedAcquisition(samples_per_record=256, ascans_per_bscan=16, bscans_per_volume=8, volumes=1)
    rs = a.reflectors(0, 3, 5)
    assert len(rs) > 8, "more than the first buffer holds: the second call is exercised"
    assert all(isinstance(d, float) and isinstance(r, float) and 0 < r < 1 for d, r in rs)
    assert len({d for d, _ in rs}) == len(rs)
    for args, exc, name in [((-1, 0, 0), ValueError, "volume"), ((0, 8, 0), ValueError, "bscan"),
                            ((0, 0, 2**70), ValueError, "ascan"), ((0, "1", 0), TypeError, "bscan")]:
        with pytest.raises(exc, match=name):
            a.reflectors(*args)


def test_reinitialising_stages_of_a_running_engine_raises_in_use():
    out = run_case('''
        ep = NullEndpoint()
        ups = []
        ep.update_callback = lambda: ups.append(1)
        eng, acq, proc = rig([ep])
        eng.prepare()
        eng.start()
        while len(ups) < 2:
            time.sleep(0.01)
        h_acq, h_proc = acq._h, proc._h
        expect(vg.InUseError, acq.initialize, acq.config)
        expect(vg.InUseError, proc.initialize, proc.config)
        assert acq._h is h_acq and proc._h is h_proc
        eng.stop()
        assert eng.status().error == "", eng.status()
        eng.close()
        acq.initialize(acq.config)
        proc.initialize(proc.config)
        print("OK")
    ''')
    assert out.count("RAISED InUseError") == 2 and "OK" in out


# --- closed stages ------------------------------------------------------------------------


def _closed_error(fn, *args):
    import vortexgo as vg

    with pytest.raises(Exception) as ei:
        fn(*args)
    assert isinstance(ei.value, vg.ClosedError), f"{type(ei.value).__name__}: {ei.value}"
    return ei.value


def test_closed_acquisitions_raise_closed_error(tmp_path):
    import vortexgo as vg

    raw = tmp_path / "r.raw"
    np.zeros(128, np.uint16).tofile(raw)
    for make in (lambda: vg.SimulatedAcquisition(samples_per_record=64, ascans_per_bscan=4, bscans_per_volume=4),
                 lambda: vg.NullAcquisition(samples_per_record=64),
                 lambda: vg.FileAcquisition(path=str(raw), samples_per_record=64)):
        acq = make()
        acq.prepare()
        acq.close()
        acq.close()  # a second close does nothing
        name = type(acq).__name__
        assert "closed" in _closed_error(acq.prepare).args[0] and name in repr(acq) and "closed" in repr(acq)
        _closed_error(lambda: acq.samples_per_record)
        if isinstance(acq, vg.SimulatedAcquisition):
            for fn in (acq.resampling_positions, acq.dispersion_compensation, lambda: acq.reflectors(0, 0, 0)):
                _closed_error(fn)
        acq.initialize(acq.config)  # makes a new source
        acq.prepare()
        acq.close()


def test_closed_processor_is_told_apart_from_an_uninitialised_one():
    import vortexgo as vg

    p = vg.CPUProcessor()
    with pytest.raises(ValueError, match="not initialized") as ei:
        p.samples_per_ascan
    assert not isinstance(ei.value, vg.ClosedError)
    p.initialize(vg.ProcessorConfig(samples_per_record=64, ascans_per_block=16))
    assert p.samples_per_ascan == 64
    p.close()
    p.close()
    assert "closed" in _closed_error(lambda: p.samples_per_ascan).args[0]
    assert "closed" in repr(p)
    ec = vg.EngineConfig(records_per_block=16)
    ec.add_acquisition(vg.NullAcquisition(samples_per_record=64), [p])
    _closed_error(ec.validate)
    p.initialize(vg.ProcessorConfig(samples_per_record=64, ascans_per_block=16))
    assert p.samples_per_ascan == 64
    p.close()


def test_closed_endpoints_and_storage_raise_closed_error(tmp_path):
    import vortexgo as vg

    st = vg.SimpleStackInt8()
    _closed_error(st.write_volume, np.zeros((2, 2, 2), np.int8))  # never opened: closed too
    st.open(vg.SimpleStackConfig(str(tmp_path / "a.npy"), (2, 2, 2)))
    eps = [vg.NullEndpoint(), vg.StackHostTensorEndpointInt8(), vg.AscanStackEndpoint(st)]
    for ep in eps:
        ep.close()
        ep.close()
        _closed_error(lambda: ep.prepared)
        _closed_error(lambda: ep.stream)
        assert "closed" in repr(ep)
    _closed_error(lambda: eps[1].tensor)
    assert eps[2].volumes_written == 0  # what was stored stays readable
    st.close()
    for fn, args in ((st.write_volume, (np.zeros((2, 2, 2), np.int8),)),
                     (st.write_partial_bscan, (0, 0, np.zeros((1, 2), np.int8))),
                     (st.advance_volume, ()), (st.seek, (0, 0))):
        _closed_error(fn, *args)


@pytest.mark.parametrize("call, name", [("st.seek(0, 5)", "bscan"), ("st.write_partial_bscan(2**40, 0, a)", "bscan"),
                                        ("st.write_partial_bscan(0, 1, np.ones((5, 2), np.int8))", "ascan_index"),
                                        ("st.write_partial_bscan(0, 0, np.ones((1, 3), np.int8))", "shape")])
def test_storage_bad_arguments_are_value_errors(tmp_path, call, name):
    import vortexgo as vg

    st = vg.SimpleStackInt8()
    st.open(vg.SimpleStackConfig(str(tmp_path / "v.npy"), (2, 2, 2)))
    a = np.ones((1, 2), np.int8)  # noqa: F841 - used by call
    with pytest.raises(ValueError, match=name.replace("(", r"\(").replace(")", r"\)")) as ei:
        eval(call)
    assert not isinstance(ei.value, vg.ClosedError)
    st.write_volume(np.zeros((2, 2, 2), np.int8))  # the stack is still usable
    st.close()
    assert np.load(tmp_path / "v.npy").shape == (1, 2, 2, 2, 1)


# --- the event dispatcher losing its queue --------------------------------------------


def test_event_queue_failing_stops_the_engine_and_wait_raises_it():
    """If the dispatcher thread's event queue fails (Go's NextEvents raising), no handler will
    ever run: the engine is stopped and wait() raises that error, instead of an endless run
    waiting in wait() forever. (Both of the dispatcher's paths fail here: the fast call, then
    the generated binding's.)"""
    out = run_case('''
        import vortexgo.engine.dispatch as dispatch
        def gone(*a):
            raise RuntimeError("event queue gone (test)")
        ep = StackHostTensorEndpointInt8()
        ep.volume_callback = lambda *a: None  # the engine waits at each volume for its handler
        eng, acq, proc = rig([ep], total_volumes=0)  # endless
        eng.prepare()
        dispatch._core.fast_next_events = gone
        type(eng._h).NextEvents = gone
        eng.start()
        t0 = time.monotonic()
        try:
            while not eng.wait_for(0.5):
                assert time.monotonic() - t0 < 30, "wait() never learned that the dispatcher stopped"
        except RuntimeError as e:
            assert "event queue gone (test)" in str(e), e
            print("RAISED", e)
        else:
            raise AssertionError("wait() returned without the dispatcher's error")
        assert eng.done
        eng.stop(); eng.close(); ep.close(); proc.close(); acq.close()
        print("ok")
    ''')
    assert "RAISED event queue gone (test)" in out and "ok" in out, out
