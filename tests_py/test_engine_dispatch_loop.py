"""The dispatcher's two paths (issue 10, docs/design.md "Dispatch latency"): the C loop over
simple event records (``_fastcall.run_events``) calls the same handlers with the same arguments,
in the same order, with the same error routing and latency records as the Python loop it
stands in for; the fetch by registry id (``pyapi.FastNextEvents``) raises, never crashes, on a
closed or unknown id, and a closed engine still drains through the by-name path; without the
extension the Python loop runs every record."""

from __future__ import annotations

import logging
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vortexgo import _core
from vortexgo.engine import dispatch as ve  # the dispatcher's module: its C loop
from vortexgo.engine import (
    _DONE, _ENGINE, _EVENT, _FIELDS, _JOB, _QUEUE, _SCAN, _SEGMENT, _UPDATE, _VOLUME, Engine, EngineEvent,
)

import _subproc
from test_engine_dispatch import A, RPB, _rig

pytestmark = pytest.mark.timeout(120)

needs_c_loop = pytest.mark.skipif(ve._run_events is None, reason="the C extension (_fastcall) is not built")

_NAMES = ("update_callback", "segment_callback", "volume_callback", "scan_callback", "event_callback")
_KIND_NAME = {_UPDATE: "update_callback", _SEGMENT: "segment_callback", _VOLUME: "volume_callback",
              _SCAN: "scan_callback", _EVENT: "event_callback"}


class _Handle:
    """The engine's Go handle as the error routing uses it."""

    def __init__(self) -> None:
        self.calls: list = []

    def RecordCallbackErrors(self, n: int) -> None:  # noqa: N802 - gopy's name
        self.calls.append(("errors", n))

    def RequestStop(self) -> None:  # noqa: N802 - gopy's name
        self.calls.append(("stop",))


class _Endpoint:
    """The attributes the dispatcher reads from an endpoint."""

    def __init__(self) -> None:
        for name in _NAMES:
            setattr(self, name, None)
        self.aggregate_segment_callback = self.block_segment_callback = None


class _Log(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _engine(n_endpoints: int) -> tuple[Engine, _Log, list]:
    """A bare engine with fake endpoints, a fake Go handle, a captured log and the
    engine-level work (queue, lifecycle, job events) recorded into the returned list."""
    log = _Log()
    logger = logging.Logger(f"dispatch-loop-{id(log)}")
    logger.addHandler(log)
    eng = Engine(logger=logger)
    eng._h = _Handle()
    eng._endpoints = [_Endpoint() for _ in range(n_endpoints)]
    calls: list = []
    eng._queue_event = lambda empty: calls.append(("queue", empty))
    eng._engine_event = lambda event, exc: calls.append(("engine", int(event), exc))
    eng._job = lambda row: calls.append(("job", row[3]))
    return eng, log, calls


def _records(rows: list) -> tuple[np.ndarray, memoryview]:
    buf = np.zeros((max(len(rows), 1), _FIELDS), np.int64)
    for i, r in enumerate(rows):
        buf[i, :len(r)] = r
    return buf, memoryview(buf).cast("B").cast("q")


def _run_batch_with(loop, eng, records: memoryview, n: int) -> bool:
    """eng._run_batch(records, n) with `loop` as the C loop (None: the Python loop alone;
    "c" and "python": the extension's loop or none)."""
    saved = ve._run_events
    if loop == "c":
        loop = saved
    elif loop == "python":
        loop = None
    ve._run_events = loop
    try:
        return eng._run_batch(records, n)
    finally:
        ve._run_events = saved


def _run(loop, rows: list, setup) -> tuple:
    """Run `rows` through _run_batch with `loop` as the C loop (None: the Python loop alone):
    what the handlers and the engine saw."""
    eng, log, calls = _engine(3)
    setup(eng, calls)
    buf, records = _records(rows)
    done = _run_batch_with(loop, eng, records, len(rows))
    logged = [(r.levelname, r.getMessage(), r.exc_info[0] if r.exc_info else None) for r in log.records]
    return (done, calls, logged, type(eng._fatal), eng._h.calls,
            len(eng._latency) if eng._latency is not None else None)


# --- random batches: both loops give the same calls ----------------------------------------

_SIMPLE = (_UPDATE, _SEGMENT, _VOLUME, _SCAN, _EVENT)
_record = st.one_of(
    st.tuples(st.sampled_from(_SIMPLE), st.integers(0, 2), st.integers(0, 1 << 40), st.integers(-1, 1 << 20),
              st.integers(0, 1000), st.integers(0, 1000)),
    st.tuples(st.sampled_from((_QUEUE, _JOB)), st.just(-1), st.integers(0, 9), st.integers(0, 9)),
    st.tuples(st.just(_ENGINE), st.just(-1), st.just(0), st.sampled_from([int(e) for e in EngineEvent])),
)
# Per endpoint and handler: None, a recorder, one that raises an Exception at its k-th call,
# one that raises SystemExit at its k-th call, or one that replaces another handler.
_behaviour = st.one_of(st.none(), st.just("record"), st.tuples(st.just("raise"), st.integers(1, 4)),
                       st.tuples(st.just("exit"), st.integers(1, 6)),
                       st.tuples(st.just("swap"), st.integers(0, 2), st.sampled_from(_NAMES)))


@needs_c_loop
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(_record, max_size=40), behaviours=st.lists(_behaviour, min_size=15, max_size=15),
       aggregated=st.lists(st.booleans(), min_size=3, max_size=3), latency_cap=st.none() | st.integers(0, 20),
       done_at=st.none() | st.integers(0, 40))
def test_the_c_loop_and_the_python_loop_make_the_same_calls(rows, behaviours, aggregated, latency_cap, done_at):
    rows = [list(r) for r in rows]
    if done_at is not None:
        rows.insert(min(done_at, len(rows)), [_DONE, -1])
    ts = time.monotonic_ns()
    for r in rows:
        r.extend([0] * (7 - len(r)))
        r[6] = ts  # the Go timestamp: latencies are small and positive

    def setup(eng: Engine, calls: list) -> None:
        if latency_cap is not None:
            eng._latency, eng._latency_cap, eng._latency_base = [], latency_cap, 0
        for e, ep in enumerate(eng._endpoints):
            if aggregated[e]:
                ep.aggregate_segment_callback = lambda segs, e=e: calls.append(("aggregate", e, tuple(segs)))
            for h, name in enumerate(_NAMES):
                b = behaviours[e * len(_NAMES) + h]
                if b is None:
                    continue
                count = [0]

                def handler(*args, e=e, name=name, b=b, count=count):
                    count[0] += 1
                    calls.append((e, name, args))
                    if b == "record":
                        return
                    what = b[0]
                    if what == "raise" and count[0] == b[1]:
                        raise ValueError(f"{name} of {e}")
                    if what == "exit" and count[0] == b[1]:
                        raise SystemExit(3)
                    if what == "swap":
                        setattr(eng._endpoints[b[1]], b[2], lambda *a, e=e: calls.append(("swapped", e, a)))

                setattr(ep, name, handler)

    c = _run(_core.run_events, rows, setup)
    py = _run(None, rows, setup)
    assert c == py


# --- the cases, spelled out -----------------------------------------------------------------


def _segments(n: int, endpoint: int = 0) -> list:
    return [[_SEGMENT, endpoint, (i + 1) * A, 7, 0, i, time.monotonic_ns()] for i in range(n)]


@pytest.mark.parametrize("loop", [pytest.param("c", marks=needs_c_loop), "python"])
def test_a_raising_handler_is_logged_with_its_traceback_and_the_batch_goes_on(loop):
    eng, log, calls = _engine(1)
    seen = []

    def on_segment(sample, scan_idx, volume_idx, bscan_idx):
        seen.append(bscan_idx)
        if bscan_idx == 2:
            raise ValueError("bad segment")

    eng._endpoints[0].segment_callback = on_segment
    _, records = _records(_segments(5))
    assert not _run_batch_with(loop, eng, records, 5)
    assert seen == [0, 1, 2, 3, 4]
    assert isinstance(eng.last_callback_error, ValueError)
    assert eng._h.calls == [("errors", 1)]
    (rec,) = log.records
    assert "_Endpoint.segment_callback raised" in rec.getMessage()
    assert rec.exc_info[1] is eng.last_callback_error
    frames = []
    tb = rec.exc_info[2]
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    assert frames[-1] == "on_segment"  # the handler's own frame is in the logged traceback


@pytest.mark.parametrize("loop", [pytest.param("c", marks=needs_c_loop), "python"])
def test_a_handler_exiting_stops_the_engine_and_the_rest_only_drains(loop):
    eng, log, calls = _engine(1)
    seen = []

    def on_segment(sample, scan_idx, volume_idx, bscan_idx):
        seen.append(bscan_idx)
        if bscan_idx == 1:
            raise KeyboardInterrupt

    eng._endpoints[0].segment_callback = on_segment
    rows = _segments(4) + [[_ENGINE, -1, 0, int(EngineEvent.Exit)], [_DONE, -1]]
    _, records = _records(rows)
    assert _run_batch_with(loop, eng, records, len(rows))  # the done event still ends the dispatch
    assert seen == [0, 1]
    assert isinstance(eng._fatal, KeyboardInterrupt)
    assert eng._h.calls == [("stop",)]
    assert calls == []  # draining: not even the lifecycle event runs


@pytest.mark.parametrize("loop", [pytest.param("c", marks=needs_c_loop), "python"])
def test_a_handler_replaced_mid_batch_takes_effect_at_the_next_event(loop):
    eng, log, calls = _engine(2)
    first, second, other = [], [], []
    ep0, ep1 = eng._endpoints

    def swap(sample, *rest):
        first.append(sample)
        if len(first) == 2:
            ep0.segment_callback = lambda *a: second.append(a[0])
            ep1.volume_callback = lambda *a: other.append(a)

    ep0.segment_callback = swap
    rows = _segments(4) + [[_VOLUME, 1, 99, 5, 6]]
    _, records = _records(rows)
    _run_batch_with(loop, eng, records, len(rows))
    assert first == [A, 2 * A]
    assert second == [3 * A, 4 * A]
    assert other == [(99, 5, 6)]


@needs_c_loop
def test_the_c_loop_refuses_a_bad_buffer_and_range():
    eng, _, _ = _engine(1)
    with pytest.raises(TypeError, match="expected int64"):
        _core.run_events(eng, memoryview(np.zeros(_FIELDS, np.float64)), 0, 1)
    with pytest.raises(ValueError, match="expected 0 <= start <= n <= 2"):
        _core.run_events(eng, memoryview(np.zeros(2 * _FIELDS, np.int64)), 0, 3)
    with pytest.raises(ValueError, match="expected 0 <= start <= n"):
        _core.run_events(eng, memoryview(np.zeros(2 * _FIELDS, np.int64)), 2, 1)
    assert _core.run_events(eng, memoryview(np.zeros(2 * _FIELDS, np.int64)), 1, 1) == 1


# --- the fetch by registry id ---------------------------------------------------------------


def test_a_closed_or_unknown_engine_id_raises_and_never_crashes():
    """In a child: a crash would end the test run, not fail one test."""
    o = _subproc.run("""
        import numpy as np
        import test_engine_dispatch as t
        from vortexgo import _core
        from vortexgo._errors import translate
        from vortexgo.engine import _BATCH, _FIELDS

        eng, ep, proc = t._rig(2)
        ep.segment_callback = lambda *a: None
        eng.prepare(); eng.start(); eng.wait()
        buf = np.zeros((_BATCH, _FIELDS), np.int64)
        ptr = buf.ctypes.data
        eid = int(eng._h.ID())
        assert _core.fast_next_events(eid, ptr, _BATCH, 0, 1) == 0  # drained, live
        def fails(*args):
            try:
                _core.fast_next_events(*args, 1)
            except RuntimeError as exc:
                return type(translate(exc)).__name__
            return "no error"
        assert fails(eid, 0, _BATCH, 0) == "ValueError", fails(eid, 0, _BATCH, 0)
        assert fails(eid, ptr, 0, 0) == "ValueError"
        eng.close()
        for bad in (eid, 0, -1, 1 << 62, eid + (1 << 32)):
            assert fails(bad, ptr, _BATCH, 100) == "ClosedError", (bad, fails(bad, ptr, _BATCH, 100))
        proc.close(); ep.close()
        print("ok")
    """, env={"PYTHONPATH": f"{_subproc.PYTHON_DIR}:{_subproc.ROOT / 'tests_py'}"})
    assert o.stdout.strip() == "ok"


def test_a_closed_engine_still_drains_its_last_events():
    """close() releases the engine's id before the dispatcher has taken the session's last
    events: it goes on by name and still delivers the lifecycle's end."""
    eng, ep, proc = _rig(50)
    events: list = []
    eng.event_callback = lambda event, exc: events.append(event)
    ep.segment_callback = lambda *a: None
    try:
        eng.prepare()
        eng.start()
        time.sleep(0.05)
    finally:
        eng.close()
        proc.close()
        ep.close()
    assert not eng._dispatcher.is_alive()
    assert events[-1] == EngineEvent.Exit


# --- without the extension --------------------------------------------------------------------


def test_without_the_c_loop_the_python_loop_runs_every_event(monkeypatch):
    monkeypatch.setattr(ve, "_run_events", None)
    got: list = []
    eng, ep, proc = _rig(6, dispatch_spin=0)
    ep.segment_callback = lambda *a: got.append(a)
    try:
        eng.record_callback_latency()
        eng.prepare()
        eng.start()
        eng.wait()
    finally:
        eng.close()
        proc.close()
        ep.close()
    n = 6 * RPB // A
    assert [g[3] for g in got] == [i % 32 for i in range(n)]
    assert len(eng.callback_latencies_ns()) == n


def test_a_pure_python_install_dispatches():
    """In a child that cannot import the C extension: no C loop, the same handler calls."""
    o = _subproc.run("""
        import sys
        sys.modules["vortexgo._native._fastcall"] = None  # an install whose C build failed
        from vortexgo import _core
        from vortexgo.engine import dispatch as ve
        assert _core.run_events is None and ve._run_events is None
        import test_engine_dispatch as t
        got = []
        eng, ep, proc = t._rig(4)
        ep.segment_callback = lambda *a: got.append(a[3])
        eng.prepare(); eng.start(); eng.wait(); eng.close(); proc.close(); ep.close()
        assert got == [i % t.B for i in range(4 * t.RPB // t.A)], got
        print("ok")
    """, env={"PYTHONPATH": f"{_subproc.PYTHON_DIR}:{_subproc.ROOT / 'tests_py'}"})
    assert o.stdout.strip() == "ok"
