"""Streams, events and graphs at the boundary: closed objects, bad arguments,
racing threads and both fast paths (the C one and the Go one).

Cases that could crash the interpreter run in a subprocess (`run_snippet`),
so a crash is a failed test rather than a dead run.
"""

from __future__ import annotations

import ctypes
import textwrap

import pytest

import vortexgo as vg
from vortexgo import _core

import _subproc
from conftest import DEVICES, needs_cuda

def run_snippet(code: str, *, rc: int = 0, stdout: str = "", stderr: str = "", timeout: float = 240,
                extra_env: dict | None = None):
    """Run `code` in a fresh interpreter with a clean environment (see
    _subproc.run); check its exit code and output."""
    p = _subproc.run(code, rc=rc, timeout=timeout, env=extra_env, inherit_env=False)
    assert stdout in p.stdout, p.stdout
    assert stderr in p.stderr, p.stderr[-4000:]
    return p


# --- closed objects ------------------------------------------------------------

STREAM_CALLS = {
    "handle": lambda s, e: s.handle,
    "ptr": lambda s, e: s.ptr,
    "cuda_stream": lambda s, e: s.cuda_stream,
    "__cuda_stream__": lambda s, e: s.__cuda_stream__(),
    "record": lambda s, e: s.record(e),
    "record_event": lambda s, e: s.record_event(),
    "wait_event": lambda s, e: s.wait_event(e),
    "synchronize": lambda s, e: s.synchronize(),
    "query": lambda s, e: s.query(),
    "is_complete": lambda s, e: s.is_complete,
    "close": lambda s, e: s.close(),
    "event.record(closed stream)": lambda s, e: e.record(s),
}


@pytest.mark.parametrize("call", sorted(STREAM_CALLS))
def test_closed_stream_raises(call, device):
    s, e = vg.Stream(device), vg.Event(device)
    s.close()
    with pytest.raises(vg.ClosedError):
        STREAM_CALLS[call](s, e)
    e.close()


EVENT_CALLS = {
    "handle": lambda e, s, t: e.handle,
    "record": lambda e, s, t: e.record(s),
    "stream.record": lambda e, s, t: s.record(e),
    "stream.wait_event": lambda e, s, t: s.wait_event(e),
    "synchronize": lambda e, s, t: e.synchronize(),
    "query": lambda e, s, t: e.query(),
    "is_complete": lambda e, s, t: e.is_complete,
    "elapsed_time": lambda e, s, t: e.elapsed_time(t),
    "elapsed_time(end closed)": lambda e, s, t: t.elapsed_time(e),
    "close": lambda e, s, t: e.close(),
}


@pytest.mark.parametrize("call", sorted(EVENT_CALLS))
def test_closed_event_raises(call, device):
    e, t = vg.Event(device, enable_timing=True), vg.Event(device, enable_timing=True)
    s = vg.Stream(device)
    t.record(s)
    s.synchronize()
    e.close()
    with pytest.raises(vg.ClosedError):
        EVENT_CALLS[call](e, s, t)
    s.close()
    t.close()


def test_closed_graph_raises(device):
    s = vg.Stream(device)
    x = vg.zeros(16, "float32", device, stream=s)
    with vg.ScopedCapture(s) as cap:
        vg.scale_offset(x, 2.0, 1.0, out=x, stream=s)
    g = cap.graph
    assert g.nodes >= 1
    g.launch(s)
    g.close()
    with pytest.raises(vg.ClosedError):
        g.nodes
    with pytest.raises(vg.ClosedError):
        g.launch(s)
    assert "closed" in repr(g)
    g.close()  # closing again is allowed, as before
    s.close()


def test_stale_ids_never_name_new_objects(device):
    s, e = vg.Stream(device), vg.Event(device)
    old = (s._id, e._id)
    s.close()
    e.close()
    s2, e2 = vg.Stream(device), vg.Event(device)
    assert s2._id not in old and e2._id not in old
    assert _core.fast_sync_stream(old[0]) == -1
    assert _core.fast_query_event(old[1]) == -1
    assert _core.c_stream_sync(old[0]) == -1
    assert _core.c_event_query(old[1]) == -1
    s2.synchronize()
    s2.close()
    e2.close()


# --- bad arguments ---------------------------------------------------------------


@pytest.mark.parametrize("bad", [2**70, -(2**70), 2**63])
def test_stream_priority_out_of_int64(bad, device):
    with pytest.raises(ValueError, match="priority="):
        vg.Stream(device, priority=bad)


class _Proto:
    def __init__(self, h):
        self.h = h

    def __cuda_stream__(self):
        return (0, self.h)


class _Ptr:
    def __init__(self, h):
        self.ptr = h


@pytest.mark.parametrize("src", [2**70, -1, -(2**70), _Proto(2**70), _Proto(-3), _Ptr(-3), _Ptr(2**64)],
                         ids=["2**70", "-1", "-2**70", "proto 2**70", "proto -3", "ptr -3", "ptr 2**64"])
def test_from_external_bad_handle_is_value_error(src, device):
    with pytest.raises(ValueError, match="stream="):
        vg.Stream.from_external(src, device)


def test_from_external_non_int_handle_is_type_error(device):
    with pytest.raises(TypeError, match="stream="):
        vg.Stream.from_external(_Ptr("0x10"), device)


# --- the two fast paths ------------------------------------------------------------


@pytest.mark.skipif(not _core.HAVE_C_FAST_PATH, reason="the C fast path was not built")
def test_c_fast_path_refuses_what_it_cannot_name():
    from vortexgo._native import _fastcall as fc

    for f, args in [(fc.event_record, (0, 0)), (fc.stream_wait_event, (-1, 5)), (fc.event_query, (1,)),
                    (fc.event_synchronize, (2**40 + 7,)), (fc.stream_synchronize, (2**70,)),
                    (fc.stream_query, (-(2**70),))]:
        assert f(*args) == -1, f.__name__
    with pytest.raises(TypeError):
        fc.event_record(1)
    with pytest.raises(TypeError):
        fc.event_query("1")
    # A table with the wrong magic is refused; the adopted one stays.
    bogus = ctypes.create_string_buffer(64)
    assert fc.init(ctypes.addressof(bogus)) is False
    assert fc.init(0) is False
    assert fc.init(_core.api.FastAPI()) is True


def test_cpu_objects_use_the_go_fast_path(cpu):
    s, e = vg.Stream(cpu), vg.Event(cpu)
    # One id on every path; the registry publishes no CPU object for C.
    assert s._id > 0 and e._id > 0
    assert _core.c_event_record(s._id, e._id) == -1 and _core.c_stream_sync(s._id) == -1
    assert _core.fast_record(s._id, e._id) == 0
    assert _core.fast_query_event(e._id) == 1
    s.close()
    e.close()


@pytest.mark.parametrize("dev", DEVICES)
def test_without_the_c_extension_everything_works(dev):
    # The Go fast path and the method path alone (a failed C build).
    run_snippet(f"""
        import sys
        sys.modules["vortexgo._native._fastcall"] = None  # import fails
        import vortexgo as vg
        from vortexgo import _core
        assert not _core.HAVE_C_FAST_PATH
        s, e = vg.Stream({dev!r}), vg.Event({dev!r})
        s.record(e); s.wait_event(e); e.synchronize(); s.synchronize()
        assert e.is_complete and s.is_complete
        s.close()
        try:
            s.synchronize()
        except vg.ClosedError:
            print("OK")
    """, stdout="OK")


# --- threads racing close ---------------------------------------------------------------

RACE = """
import threading, vortexgo as vg
dev = vg.get_device({dev!r})
errors = []
def work(s, e, k, barrier):
    barrier.wait()
    for i in range(60):
        try:
            op = (k + i) % 6
            if op == 0: s.record(e)
            elif op == 1: s.synchronize()
            elif op == 2: e.synchronize()
            elif op == 3: e.is_complete; s.is_complete
            elif op == 4: s.close()
            else: e.close()
        except vg.ClosedError:
            pass
        except Exception as exc:  # anything else is a bug
            errors.append(repr(exc))
for it in range({iters}):
    s, e = vg.Stream(dev), vg.Event(dev)
    barrier = threading.Barrier(8)
    ts = [threading.Thread(target=work, args=(s, e, k, barrier)) for k in range(8)]
    for t in ts: t.start()
    for t in ts: t.join()
    assert s.closed and e.closed
assert not errors, errors[:5]
print("OK")
"""


@pytest.mark.parametrize("dev", DEVICES)
def test_threads_racing_close_never_crash(dev):
    run_snippet(RACE.format(dev=dev, iters=150), stdout="OK")


# --- the C fast path on a fake CUDA driver (no GPU needed) ---------------------------------
#
# gosrc/cuda/testdata/fakecuda.c is a stand-in libcuda that keeps memory on
# the host and, like the real driver, fails with CUDA_ERROR_INVALID_CONTEXT
# on a thread without the context current. It also counts calls blocked in
# cuStreamSynchronize (fake_sync_hold holds them) and flags a stream
# destroyed while one is (fake_destroyed_in_use). Loaded through
# VORTEXGO_CUDA_DRIVER in a subprocess, it runs the real shim, the real C
# extension and the real close protocol.

@pytest.fixture(scope="module")
def fake_driver(fake_cuda_driver) -> str:
    if not _core.HAVE_C_FAST_PATH:
        pytest.skip("the C fast path was not built")
    return fake_cuda_driver


def run_fake(lib: str, code: str, before: str = "", **kw):
    """run_snippet with the fake driver loaded; `fake` is its ctypes handle."""
    # In the environment of the process: Go reads the one it started with.
    kw["extra_env"] = {"VORTEXGO_CUDA_DRIVER": lib}
    prelude = before + f"""
import ctypes, threading, time
import vortexgo as vg
from vortexgo import _core as c
fake = ctypes.CDLL({lib!r})  # the instance the Go core loaded: same globals
def fake_int(name):
    return ctypes.c_int.in_dll(fake, name)
dev = vg.get_device("cuda:0")
"""
    return run_snippet(prelude + textwrap.dedent(code), **kw)


def test_fake_cuda_c_fast_path_answers(fake_driver):
    run_fake(fake_driver, """
        s, e = vg.Stream(dev), vg.Event(dev)
        assert s._id > 0 and e._id > 0 and s._id != e._id
        assert c.c_event_record(s._id, e._id) == 0
        assert c.c_stream_wait(s._id, e._id) == 0
        fake_int("fake_stream_busy").value = 1
        assert c.c_event_query(e._id) == 0 and c.c_stream_query(s._id) == 0  # not ready
        assert c.c_stream_sync(s._id) == 0
        assert c.c_event_query(e._id) == 1 and c.c_stream_query(s._id) == 1
        assert c.c_event_sync(e._id) == 0
        assert c.c_stream_sync(e._id) == -1 and c.c_event_query(s._id) == -1  # wrong kinds
        # A new thread has no context current: the shim makes it current.
        out = []
        t = threading.Thread(target=lambda: out.append((c.c_event_record(s._id, e._id), c.c_stream_sync(s._id))))
        t.start(); t.join()
        assert out == [(0, 0)], out
        # External wrappers get their own id; closing one forgets only it.
        w = vg.Stream.from_external(s.handle, dev)
        assert w._id > 0 and w._id != s._id
        wid = w._id
        w.close()
        assert c.c_stream_sync(wid) == -1 and c.c_stream_sync(s._id) == 0
        sid, eid = s._id, e._id
        s.close(); e.close()
        assert c.c_event_record(sid, eid) == -1 and c.c_event_query(eid) == -1
        for call in (s.synchronize, lambda: s.record(vg.Event(dev)), lambda: s.is_complete, e.synchronize,
                     lambda: e.is_complete, lambda: s.handle, lambda: e.handle):
            try:
                call()
            except vg.ClosedError:
                pass
            else:
                raise AssertionError(f"{call} did not raise ClosedError")
        s2 = vg.Stream(dev)
        assert s2._id != sid and c.c_stream_sync(sid) == -1
        print("OK")
    """, stdout="OK")


def test_fake_cuda_close_waits_for_a_synchronize_in_flight(fake_driver):
    run_fake(fake_driver, """
        hold, in_sync = fake_int("fake_sync_hold"), fake_int("fake_in_sync")
        for path in ("C", "Go", "method"):
            s = vg.Stream(dev)
            sync = {"C": lambda: c.c_stream_sync(s._id), "Go": lambda: c.fast_sync_stream(s._id),
                    "method": lambda: c.stream_op(c.OP_SYNC_STREAM, s._h.ID(), 0)}[path]
            hold.value = 1
            t = threading.Thread(target=sync)  # the GIL is released while it blocks
            t.start()
            deadline = time.monotonic() + 10
            while in_sync.value == 0 and time.monotonic() < deadline:
                time.sleep(0.001)
            assert in_sync.value == 1, path
            closer = threading.Thread(target=s.close)
            closer.start()
            time.sleep(0.05)
            assert closer.is_alive(), f"{path}: close returned while a synchronize used the stream"
            hold.value = 0
            t.join(); closer.join()
            assert fake_int("fake_destroyed_in_use").value == 0, path
        print("OK")
    """, stdout="OK")


@pytest.mark.parametrize("c_path", [True, False], ids=["C path", "Go path only"])
def test_fake_cuda_threads_racing_close_never_crash(fake_driver, c_path):
    block = "" if c_path else 'import sys; sys.modules["vortexgo._native._fastcall"] = None\n'
    p = run_fake(fake_driver, RACE.format(dev="cuda:0", iters=150) + textwrap.dedent("""
        assert fake_int("fake_destroyed_in_use").value == 0
        print("HAVE_C", c.HAVE_C_FAST_PATH)
    """), before=block, stdout="OK")
    assert f"HAVE_C {c_path}" in p.stdout


# --- CUDA: the C fast path itself ----------------------------------------------------------


@needs_cuda
def test_cuda_objects_use_the_c_fast_path(gpu):
    assert _core.HAVE_C_FAST_PATH
    s, e = vg.Stream(gpu), vg.Event(gpu)
    assert s._id > 0 and e._id > 0
    assert _core.c_event_record(s._id, e._id) == 0
    assert _core.c_stream_wait(s._id, e._id) == 0
    assert _core.c_stream_sync(s._id) == 0
    assert _core.c_event_sync(e._id) == 0
    assert _core.c_event_query(e._id) == 1
    assert _core.c_stream_query(s._id) == 1
    assert _core.c_stream_sync(e._id) == -1, "an event's id is no stream"
    sid, eid = s._id, e._id
    s.close()
    e.close()
    assert _core.c_event_record(sid, eid) == -1
    assert _core.c_event_query(eid) == -1


@needs_cuda
def test_c_fast_path_from_a_fresh_thread(gpu):
    # A new thread has no current context: the shim makes it current.
    import threading

    s, e = vg.Stream(gpu), vg.Event(gpu)
    out = []
    t = threading.Thread(target=lambda: out.append(
        (_core.c_event_record(s._id, e._id), _core.c_stream_sync(s._id), _core.c_event_query(e._id))))
    t.start()
    t.join()
    assert out == [(0, 0, 1)]
    s.close()
    e.close()


@needs_cuda
def test_borrowed_and_external_streams_on_cuda(gpu):
    owner = vg.Stream(gpu)
    w = vg.Stream.from_external(owner.handle, gpu)
    assert w._id > 0 and w._id != owner._id
    e = vg.Event(gpu)
    w.record(e)
    w.synchronize()
    w.close()  # forgets, does not destroy
    owner.synchronize()
    with pytest.raises(vg.ClosedError):
        w.synchronize()
    owner.close()
    e.close()


def test_closed_stream_in_sets_and_comparisons(device):
    s = vg.Stream(device)
    w = vg.Stream.from_external(s.handle, device)
    assert s == w and hash(s) == hash(w)
    bag = {s, w}
    assert len(bag) == 1
    w.close()
    assert w == w and w != s and s != w
    assert s in bag  # the hash did not change when w closed
    s.close()
    bag.discard(s)
    assert not bag


def test_collecting_an_already_released_object_is_silent(device):
    import gc
    import warnings

    s = vg.Stream(device)
    s._h.Close()  # released behind the wrapper's back, as an owner's close does
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del s
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], [str(w.message) for w in caught]
