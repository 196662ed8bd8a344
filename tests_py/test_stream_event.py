from __future__ import annotations

import threading
import time

import pytest

import vortexgo as vg


def test_stream_basics(device):
    s = vg.Stream(device)
    assert s.device == device
    assert s.handle != 0 and s.ptr == s.handle == s.cuda_stream
    assert s.__cuda_stream__() == (0, s.handle)
    assert s.owned
    s.synchronize()
    assert s.is_complete and s.query()
    assert "Stream" in repr(s)
    s.close()
    assert s.closed and "closed" in repr(s)


def test_stream_priority_is_clamped_and_readable(device):
    least, greatest = device.stream_priority_range
    lo, hi = min(least, greatest), max(least, greatest)
    for want in (least, greatest, -100, 100, 0):
        s = vg.Stream(device, priority=want)
        assert lo <= s.priority <= hi
        if lo <= want <= hi:
            assert s.priority == want
        s.close()


@pytest.mark.parametrize("bad", ["high", 1.5, None, True])
def test_stream_priority_type_checked(bad, device):
    with pytest.raises(TypeError, match="priority="):
        vg.Stream(device, priority=bad)


def test_stream_close_twice_and_use_after_close(device):
    s = vg.Stream(device)
    e = vg.Event(device)
    s.close()
    with pytest.raises(vg.ClosedError):
        s.close()
    with pytest.raises(vg.ClosedError):
        s.synchronize()
    with pytest.raises(vg.ClosedError):
        e.record(s)


def test_from_external_handle_and_protocol(device):
    owner = vg.Stream(device)

    class Foreign:
        def __cuda_stream__(self):
            return (0, owner.handle)

    for src in (owner.handle, Foreign()):
        w = vg.Stream.from_external(src, device)
        assert w.handle == owner.handle
        assert not w.owned
        w.synchronize()
        w.close()  # forgets the handle, does not destroy it
    owner.synchronize()  # still alive
    assert vg.Stream.from_external(owner) is owner


@pytest.mark.parametrize("bad, exc", [("s", TypeError), (object(), TypeError), (-5, ValueError)])
def test_from_external_rejects(bad, exc, device):
    with pytest.raises(exc):
        vg.Stream.from_external(bad, device)


def test_bad_cuda_stream_protocol(device):
    class Bad:
        def __cuda_stream__(self):
            return (1, 2)

    with pytest.raises(TypeError, match="expected \\(0, handle\\)"):
        vg.Stream.from_external(Bad(), device)


def test_with_stream_sets_current(device):
    s = vg.Stream(device)
    assert vg.current_stream(device) is vg.default_stream(device)
    with s as bound:
        assert vg.current_stream(device) is s
        if device.is_cpu:
            assert bound is s
    assert vg.current_stream(device) is vg.default_stream(device)


def test_current_stream_is_thread_local(device):
    s = vg.Stream(device)
    seen = []
    with s:
        t = threading.Thread(target=lambda: seen.append(vg.current_stream(device)))
        t.start()
        t.join()
    assert seen == [vg.default_stream(device)]


def test_events_record_query_wait(device):
    a, b = vg.Stream(device), vg.Stream(device)
    e = a.record_event()
    assert isinstance(e, vg.Event)
    b.wait_event(e)
    b.wait_stream(a)
    e.synchronize()
    assert e.is_complete and e.query()
    vg.synchronize_event(e)
    vg.synchronize_stream(b)
    assert "Event" in repr(e)


def test_event_timing(device):
    s = vg.Stream(device)
    start, end = vg.Event(device, enable_timing=True), vg.Event(device, enable_timing=True)
    start.record(s)
    x = vg.zeros((1 << 20,), "float32", device, stream=s)
    end.record(s)
    end.synchronize()
    ms = start.elapsed_time(end)
    assert ms >= 0.0
    assert x.nbytes == 4 << 20


def test_elapsed_time_needs_timing_events(device):
    a, b = vg.Event(device), vg.Event(device)
    with pytest.raises(ValueError, match="enable_timing"):
        a.elapsed_time(b)
    with pytest.raises(TypeError, match="end="):
        vg.Event(device, enable_timing=True).elapsed_time(3)


def test_event_close(device):
    e = vg.Event(device)
    e.close()
    with pytest.raises(vg.ClosedError):
        e.close()
    with pytest.raises(vg.ClosedError):
        e.synchronize()


def test_wait_event_type_checked(device):
    with pytest.raises(TypeError, match="event="):
        vg.Stream(device).wait_event("nope")


def test_synchronize_releases_the_gil(device):
    # A Go call releases the GIL: another Python thread keeps counting while
    # this one repeatedly synchronizes.
    s = vg.Stream(device)
    stop = threading.Event()
    count = [0]

    def spin():
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.2:
        s.synchronize()
    stop.set()
    t.join()
    assert count[0] > 0
