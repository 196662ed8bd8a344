"""The dispatcher's C wait on the event ring (issue 10, callback latency with a fixed
``dispatch_spin``; docs/design.md "Dispatch latency"): with a fixed spin the dispatcher takes
records straight from the engine's event ring in C (``_fastcall.ring_next``), and handlers see
the same events, in the same order, as on Go's path; the acknowledgement a volume callback
gives still releases the format stage; stop, restart and close work while it spins; misuse of
the C call raises, and a ring outlives its engine while its object is held."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vortexgo.engine import dispatch as ve  # the dispatcher's module: its C wait

import _subproc
from _scans import queue_volumes
from test_engine_dispatch import A, B, RPB, _rig

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.skipif(ve._ring_next is None, reason="the C extension (_fastcall) is not built")]


_REAL_RING_NEXT = ve._ring_next


def _record_run(blocks: int, spin, monkeypatch, volume_sleep: float = 0.0) -> tuple[list, dict]:
    """Every callback of a `blocks`-block run with dispatch_spin=`spin`, in order, and what
    ring_next returned (counts by kind: taken, spun out, closed, waiters)."""
    calls: list = []
    seen = {"taken": 0, "spun_out": 0, "closed": 0, "waiters": 0}
    real = _REAL_RING_NEXT

    def counting(addr, records, spin_ns):
        n = real(addr, records, spin_ns)
        seen["taken" if n > 0 else {0: "spun_out", -1: "closed", -2: "waiters"}[n]] += 1
        return n

    monkeypatch.setattr(ve, "_ring_next", counting)
    eng, ep, proc = _rig(blocks, dispatch_spin=spin)
    ep.segment_callback = lambda *a: calls.append(("segment", *a))

    def on_volume(*a):
        calls.append(("volume", *a))
        if volume_sleep:
            time.sleep(volume_sleep)  # the format stage waits for this callback (vortex's order)

    ep.volume_callback = on_volume
    ep.update_callback = lambda: calls.append(("update",))
    try:
        eng.prepare()
        eng.start()
        eng.wait()
    finally:
        eng.close()
        proc.close()
        ep.close()
    return calls, seen


def test_a_fixed_spin_takes_events_in_c_with_the_go_paths_order(monkeypatch):
    blocks = 24
    go_adaptive, seen_adaptive = _record_run(blocks, None, monkeypatch)
    go_parked, seen_parked = _record_run(blocks, 0.0, monkeypatch)
    ring, seen_ring = _record_run(blocks, 0.005, monkeypatch)
    assert seen_adaptive == seen_parked == {"taken": 0, "spun_out": 0, "closed": 0, "waiters": 0}, \
        "the adaptive spin and no spin stay on Go's path"
    assert seen_ring["taken"] > 0, seen_ring
    assert ring == go_adaptive == go_parked
    segments = [c for c in ring if c[0] == "segment"]
    assert len(segments) == blocks * RPB // A
    assert [c[4] for c in segments] == [i % B for i in range(len(segments))]
    assert sum(c[0] == "volume" for c in ring) == blocks * RPB // (A * B)
    assert sum(c[0] == "update" for c in ring) == blocks


def test_a_slow_volume_callback_releases_the_format_stage_through_the_ring(monkeypatch):
    # Each volume callback sleeps: the format stage waits for its acknowledgement, which the
    # C wait stores and reports (-2) so that the dispatcher wakes the stage through Go.
    blocks = 16
    calls, seen = _record_run(blocks, 0.002, monkeypatch, volume_sleep=0.01)
    assert seen["waiters"] >= 1, seen
    assert sum(c[0] == "volume" for c in calls) == blocks * RPB // (A * B)
    assert sum(c[0] == "segment" for c in calls) == blocks * RPB // A


def test_stop_restart_and_close_while_the_dispatcher_spins():
    # A long spin (50 ms) on a looping acquisition: stop() ends the session at once (the ring
    # closes and the C wait returns), a second start() gets a new ring and delivers again.
    eng, ep, proc = _rig(0, dispatch_spin=0.05)
    got = [0]
    ep.segment_callback = lambda *a: got.__setitem__(0, got[0] + 1)
    try:
        eng.prepare()
        for session in range(3):
            before = got[0]
            if session:  # the last session stopped mid-scan: start afresh (vortex's rule)
                eng.scan_queue.reset()
                queue_volumes(eng, A, B, 0)
            eng.start()
            deadline = time.monotonic() + 10
            while got[0] < before + 50 and time.monotonic() < deadline:
                time.sleep(0.005)
            t0 = time.monotonic()
            eng.stop()
            assert time.monotonic() - t0 < 5, "stop() waited for the spinning dispatcher"
            assert got[0] >= before + 50, f"session {session} delivered {got[0] - before} events"
            assert not (eng._dispatcher is not None and eng._dispatcher.is_alive()), "the dispatcher ended"
    finally:
        eng.close()
        proc.close()
        ep.close()


def test_ring_next_refuses_misuse_and_a_ring_outlives_its_engine():
    """In a child: a crash would end the test run, not fail one test."""
    o = _subproc.run("""
        import gc
        import numpy as np
        import test_engine_dispatch as t
        from vortexgo import _core
        from vortexgo._errors import translate
        from vortexgo.engine import dispatch as ve  # the dispatcher's module: its C wait
        from vortexgo.engine import _BATCH, _FIELDS

        ring_next = _core.ring_next
        buf = np.zeros((_BATCH, _FIELDS), np.int64)
        recs = memoryview(buf).cast("B").cast("q")

        def raises(*args):
            try:
                ring_next(*args)
            except (ValueError, TypeError) as exc:
                return f"{type(exc).__name__}: {exc}"
            return "no error"

        eng, ep, proc = t._rig(4, dispatch_spin=0.001)
        ep.segment_callback = lambda *a: None
        eng.prepare()
        try:
            eng._h.EventRing()
            raise SystemExit("EventRing before start() did not raise")
        except RuntimeError as exc:
            assert type(translate(exc)).__name__ == "ValueError", translate(exc)
            assert "start()" in str(translate(exc))
        eng.start()
        ring = eng._h.EventRing()
        addr = ring.Addr()
        eng.wait()
        not_a_ring = np.zeros(64, np.int64)
        for args, want in [
            ((0, recs, 0), "ValueError: ring_next: address 0"),
            ((addr, recs, -1), "ValueError: ring_next: spin_ns=-1"),
            ((addr, recs, 2_000_000_000), "ValueError: ring_next: spin_ns=2000000000"),
            ((addr, memoryview(np.zeros(_FIELDS, np.float64)), 0), "TypeError: ring_next: records of format d"),
            ((addr, memoryview(np.zeros(_FIELDS - 1, np.int64)), 0), "ValueError: ring_next: records hold no whole"),
            ((addr, bytes(8 * _FIELDS), 0), "BufferError"),
            ((not_a_ring.ctypes.data, recs, 0), "ValueError: ring_next: not an event ring"),
            ((addr, recs), "TypeError"),
        ]:
            try:
                got = raises(*args)
            except BufferError as exc:
                got = f"BufferError: {exc}"
            assert got.startswith(want), (args, got)
        # The engine is closed and dropped; the ring object keeps the ring mapped and readable.
        eng.close(); proc.close(); ep.close()
        del eng
        gc.collect()
        for _ in range(3):
            n = ring_next(addr, recs, 1000)
            assert n in (-1, 0) or n > 0, n
        assert ring_next(addr, recs, 0) == -1, "closed and drained"
        print("ok")
    """, env={"PYTHONPATH": f"{_subproc.PYTHON_DIR}:{_subproc.ROOT / 'tests_py'}"})
    assert o.stdout.strip().endswith("ok")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          derandomize=True)
@given(queue=st.sampled_from([0, 1, 5, 31, 64]), policy=st.sampled_from(["block", "drop"]),
       spin=st.sampled_from([None, 0.0, 20e-6, 0.002]), blocks=st.integers(1, 12),
       slow_every=st.sampled_from([0, 7, 40]))
def test_any_queue_delivers_every_event_once_in_order_or_counts_it_dropped(queue, policy, spin, blocks,
                                                                           slow_every):
    """Whatever the queue's size, policy and the dispatcher's spin (the ring's C wait with a
    fixed one), and however slow the handlers: under "block" every segment event arrives, once
    and in order; under "drop" those that arrive are in order and the rest are counted."""
    eng, ep, proc = _rig(blocks, dispatch_spin=spin, event_queue_size=queue, event_policy=policy)
    got: list[int] = []

    def on_segment(sample, scan_idx, volume_idx, bscan_idx):
        got.append(sample)
        if slow_every and len(got) % slow_every == 0:
            time.sleep(0.001)  # a handler that falls behind: the queue fills

    ep.segment_callback = on_segment
    try:
        eng.prepare()
        eng.start()
        eng.wait()
        dropped = eng.status().events_dropped
    finally:
        eng.close()
        proc.close()
        ep.close()
    total = blocks * RPB // A
    # The run's last segment, cut by blocks_to_acquire, may repeat the sample before it
    # (test_engine_dispatch): the others increase strictly, each delivered once.
    body = got[:-1]
    assert all(a < b for a, b in zip(body, body[1:])), "in order, each once"
    if policy == "block":
        assert len(got) == total and dropped == 0
    else:
        assert len(got) + dropped >= total - 1, (len(got), dropped, total)  # + the session's own events
