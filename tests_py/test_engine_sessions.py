"""vortex's engine lifecycle: prepare once, then any number of start ... stop
sessions, with vortex's events in vortex's order, ``job_callback``,
``shutdown(interrupt)``, errors raised once and never carried into the next
session, and the profiler log. CPU backend, small sizes.
"""

from __future__ import annotations

import datetime
import logging
import threading

import numpy as np
import pytest

import vortexgo as vg
from vortexgo.engine import AscanStackEndpoint, Engine, EngineConfig, NullEndpoint, StackHostTensorEndpointInt8
from vortexgo.profiler import ProfileCode, job_stage_durations, read_profiler_log

from _scans import planner, queue_volumes
from test_engine import A, B, RPB, RPV, S, make_rig, new_engine, open_stack

pytestmark = pytest.mark.timeout(60)

E = Engine.Event
COMPLETED = [E.Launch, E.Run, E.Start, E.Complete, E.Stop, E.Exit]
STOPPED = [E.Launch, E.Run, E.Start, E.Shutdown, E.Complete, E.Stop, E.Exit]


def lifecycle(eng: Engine) -> list:
    """Record the session events of ``eng`` (and the thread they arrive on)."""
    got: list = []
    eng.event_callback = lambda ev, exc: got.append((ev, exc, threading.current_thread().name))
    return got


def names(got: list) -> list:
    return [ev for ev, _, _ in got]


def wait_volumes(eng: Engine, n: int) -> None:
    import time
    deadline = time.monotonic() + 20
    while eng.status().volumes < n:
        assert time.monotonic() < deadline, "no volume within 20 s"
        time.sleep(0.002)


def test_vortex_event_values():
    # The values of vortex's bindings (vortex/engine/common.hpp).
    assert [(e.name, int(e)) for e in E] == [("Launch", 0), ("Start", 1), ("Run", 2), ("Stop", 3), ("Complete", 4),
                                             ("Shutdown", 5), ("Exit", 6), ("Error", 7), ("Abort", 8)]
    assert vg.engine.EngineEvent is E
    cfg = EngineConfig()
    assert (cfg.blocks_to_allocate, cfg.preload_count, cfg.records_per_block) == (4, 2, 1000)


def test_sessions_append_to_storage_and_deliver_events_in_order(tmp_path):
    st = open_stack(tmp_path)
    store = AscanStackEndpoint(st)
    rig = make_rig([store], volumes=2)
    eng = new_engine(rig)
    got = lifecycle(eng)
    eng.prepare()
    eng.stop()  # no session: a no-op
    eng.wait()  # no session: returns at once (vortex's)
    assert eng.wait_for(0) and eng.done and not eng.status().active
    for session in range(3):
        if session:
            rig.fmt.reset()  # vortex's planner keeps its state across sessions
            queue_volumes(eng, A, B, 2)
        got.clear()
        eng.start()
        assert eng.status().active
        eng.wait()
        assert eng.done and eng.status().active, "the session exists until stop()"
        eng.stop()
        s = eng.status()
        assert not s.active and s.error == ""
        assert names(got) == COMPLETED, f"session {session}"
        assert {t for _, _, t in got} == {"vortexgo-engine-dispatcher"}
        assert all(exc is None for _, exc, _ in got)
        assert s.volumes == 2 and s.blocks_formatted == 2 * RPV // RPB + 1, "counters are the session's"
        assert s.dispatched_blocks == s.blocks_formatted and s.inflight_blocks == 0
    assert store.volumes_written == 6
    st.close()
    stored = np.load(tmp_path / "vol.npy")
    assert stored.shape == (6, B, A, S, 1)
    # Each session replays the simulated ring from where the last stopped; the
    # volumes are whole (the ring holds 2 distinct volumes).
    assert all(np.abs(stored[i]).sum() > 0 for i in range(6))


def test_start_while_a_session_exists_does_nothing(caplog):
    rig = make_rig([NullEndpoint()], volumes=1)
    eng = new_engine(rig)
    got = lifecycle(eng)
    eng.prepare()
    eng.start()
    eng.wait()
    with caplog.at_level(logging.WARNING):
        eng.start()  # vortex: a no-op while the session exists
    assert "does nothing" in caplog.text
    assert names(got) == COMPLETED
    eng.stop()
    assert names(got) == COMPLETED


def test_stop_mid_run_then_start_again():
    ep = StackHostTensorEndpointInt8()
    rig = make_rig([ep], volumes=0, scan_volumes=0)  # endless
    eng = new_engine(rig)
    got = lifecycle(eng)
    eng.prepare()
    for _ in range(3):
        got.clear()
        eng.start()
        wait_volumes(eng, 1)
        eng.stop()
        assert names(got) == STOPPED
        s = eng.status()
        assert s.blocks_acquired == s.blocks_formatted + s.blocks_dropped and s.volumes >= 1
        # As in vortex: the stopped session left its scan active.
        with pytest.raises(vg.VortexError, match=r"scan_queue.reset\(\)"):
            eng.start()
        assert not eng.status().active
        eng.scan_queue.reset()
        rig.fmt.reset()
        queue_volumes(eng, A, B, 0)


def test_shutdown_interrupt_mid_volume_keeps_completed_volumes(tmp_path):
    st = open_stack(tmp_path)
    store = AscanStackEndpoint(st)
    rig = make_rig([store], volumes=0, scan_volumes=0, rpb=96)  # blocks straddle volumes
    eng = new_engine(rig)
    got = lifecycle(eng)
    eng.prepare()
    eng.start()
    wait_volumes(eng, 2)
    eng.shutdown(interrupt=True)
    eng.wait()
    eng.stop()
    evs = names(got)
    assert E.Complete not in evs, "an interrupted session did not dispatch to its end"
    assert evs[:4] == [E.Launch, E.Run, E.Start, E.Shutdown] and evs[-2:] == [E.Stop, E.Exit]
    s = eng.status()
    assert s.error == "" and s.blocks_acquired == s.blocks_formatted + s.blocks_dropped
    written = store.volumes_written
    assert written >= 2
    st.close()
    stored = np.load(tmp_path / "vol.npy")
    assert stored.shape[0] == written and stored.shape[1:] == (B, A, S, 1)


def test_shutdown_validates_and_is_safe_without_a_session():
    rig = make_rig([NullEndpoint()], volumes=1)
    eng = new_engine(rig)
    eng.shutdown()  # never prepared: a no-op
    eng.prepare()
    eng.shutdown(True)  # no session: a no-op, the next start is unaffected
    with pytest.raises(TypeError, match="interrupt"):
        eng.shutdown("yes")
    got = lifecycle(eng)
    eng.start()
    eng.wait()
    eng.stop()
    assert names(got) == COMPLETED


def _full_disk_rig(tmp_path):
    """A storage endpoint writing to /dev/full: every volume write fails (a full disk)."""
    from vortexgo.storage import SimpleStackConfig, SimpleStackHeader, SimpleStackInt8
    st = SimpleStackInt8()
    st.open(SimpleStackConfig("/dev/full", (B, A, S), header=SimpleStackHeader.Empty))
    store = AscanStackEndpoint(st)
    rig = make_rig([store], volumes=0, scan_volumes=0)
    return rig, st, store


needs_dev_full = pytest.mark.skipif(not __import__("os").path.exists("/dev/full"), reason="needs /dev/full")


@needs_dev_full
def test_an_error_is_raised_once_and_does_not_poison_the_next_session(tmp_path):
    from vortexgo.storage import SimpleStackConfig, SimpleStackHeader
    rig, st, store = _full_disk_rig(tmp_path)
    eng = new_engine(rig)
    got = lifecycle(eng)
    eng.prepare()
    eng.start()
    with pytest.raises(OSError, match="space"):
        eng.wait()
    eng.wait()  # raised once
    assert eng.wait_for(0)
    eng.stop()  # already raised: stop does not raise it again
    evs = names(got)
    assert E.Error in evs and evs.index(E.Error) < evs.index(E.Shutdown) and evs[-1] == E.Exit
    err = next(exc for ev, exc, _ in got if ev == E.Error)
    assert isinstance(err, OSError) and "space" in str(err)

    # The next session writes to a real file: nothing of the failure remains.
    try:
        st.close()
    except OSError:
        pass  # the failed writes are reported again on close
    st.open(SimpleStackConfig(str(tmp_path / "ok.npy"), (B, A, S), header=SimpleStackHeader.NumPy))
    eng.scan_queue.reset()
    rig.fmt.reset()
    queue_volumes(eng, A, B, 2)
    got.clear()
    eng.start()
    eng.wait()
    eng.stop()
    s = eng.status()
    assert s.error == "" and s.volumes == 2
    assert names(got) == COMPLETED and all(exc is None for _, exc, _ in got)
    st.close()
    assert np.load(tmp_path / "ok.npy").shape == (2, B, A, S, 1)


@needs_dev_full
def test_stop_raises_an_error_nobody_waited_for(tmp_path):
    rig, st, store = _full_disk_rig(tmp_path)
    eng = new_engine(rig)
    eng.prepare()
    eng.start()
    while not eng.status().done:
        pass
    with pytest.raises(OSError, match="space"):
        eng.stop()
    assert not eng.status().active
    eng.stop()  # no session: a no-op
    try:
        st.close()
    except OSError:
        pass


def test_job_callback_per_block_with_vortex_types():
    rig = make_rig([NullEndpoint()], volumes=2, blocks=4)
    eng = new_engine(rig)
    jobs = []
    eng.job_callback = lambda i, status, timing: jobs.append((i, status, timing))
    eng.prepare()
    eng.start()
    eng.wait()
    eng.stop()
    n = 2 * RPV // RPB + 1
    assert [i for i, _, _ in jobs] == list(range(n))
    for i, status, timing in jobs:
        assert isinstance(status, vg.engine.SessionStatus) and isinstance(timing, vg.engine.JobTiming)
        assert status.allocated == 4 and 0 <= status.inflight <= 4 and status.limit == 0
        assert status.dispatched >= i + 1 and status.progress == 0.0
        assert status.available == status.allocated - status.inflight
        stamps = [timing.create, timing.service, timing.scan, timing.acquire, timing.process, timing.format,
                  timing.recycle]
        assert all(isinstance(t, datetime.datetime) for t in stamps)
        assert stamps == sorted(stamps)
        assert abs((timing.recycle - datetime.datetime.now()).total_seconds()) < 60


def test_job_callback_errors_are_counted():
    rig = make_rig([NullEndpoint()], volumes=1)
    eng = new_engine(rig)

    def boom(*a):
        raise RuntimeError("job handler")
    eng.job_callback = boom
    eng.prepare()
    eng.start()
    eng.wait()
    eng.stop()
    assert eng.status().callback_errors == 2 * 0 + RPV // RPB + 1
    assert "job handler" in str(eng.last_callback_error)


def test_profiler_log_in_vortexs_format(tmp_path, monkeypatch):
    path = tmp_path / "logs" / "profile.bin"
    monkeypatch.setenv("VORTEX_PROFILER_LOG", str(path))
    rig = make_rig([NullEndpoint()], volumes=2)
    eng = new_engine(rig)
    eng.prepare()
    eng.start()
    eng.wait()
    eng.stop()
    recs = read_profiler_log(path)
    codes = recs["code"].tolist()
    assert [c for c in codes if c < 0x100] == [int(e) for e in COMPLETED]
    jobs = 2 * RPV // RPB + 1
    assert codes.count(ProfileCode.JOB_CREATE) == jobs and codes.count(ProfileCode.JOB_RECYCLE) == jobs
    stages = job_stage_durations(recs)
    assert set(stages) >= {"block wait", "acquire wait", "process dispatch", "recycle"}
    assert all(v.shape == (jobs,) and np.all(v >= 0) for v in stages.values())
    assert eng.status().profiler_dropped == 0
    # The API overrides the variable; a bad path fails start with the path named.
    eng.profiler_log = str(tmp_path / "api.bin")
    eng.scan_queue.reset()
    rig.fmt.reset()
    queue_volumes(eng, A, B, 1)
    eng.start()
    eng.wait()
    eng.stop()
    assert read_profiler_log(tmp_path / "api.bin").size > 0
    (tmp_path / "file").write_text("")
    eng.profiler_log = str(tmp_path / "file" / "x.bin")
    queue_volumes(eng, A, B, 1)
    with pytest.raises(Exception, match="profiler log"):
        eng.start()
    assert not eng.status().active


def test_read_profiler_log_rejects_other_files(tmp_path):
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\x00" * 31)
    with pytest.raises(ValueError, match="multiple of 32"):
        read_profiler_log(bad)
    bad.write_bytes(b"\x00" * 32)
    with pytest.raises(ValueError, match="version record"):
        read_profiler_log(bad)


def test_many_sessions_keep_threads_flat():
    rig = make_rig([NullEndpoint()], volumes=1)
    eng = new_engine(rig)
    eng.prepare()
    before = threading.active_count()
    for _ in range(20):
        eng.start()
        eng.wait()
        eng.stop()
        eng.scan_queue.reset()
        rig.fmt.reset()
        queue_volumes(eng, A, B, 1)
    assert threading.active_count() <= before
    eng.close()


def test_formatter_reset_while_running_is_safe():
    """vortex allows reset() at any time; here the planner's lock makes each reset whole
    beside the engine's format goroutine: no crash, the session ends cleanly."""
    rig = make_rig([NullEndpoint()], volumes=0, scan_volumes=0)
    eng = new_engine(rig)
    eng.prepare()
    eng.start()
    wait_volumes(eng, 1)
    for _ in range(200):
        rig.fmt.reset()
    eng.stop()
    assert eng.status().error == ""
