"""Threads: free/close racing copies, records, queries, locks and queued
work in other threads. Only the documented errors may surface in the racing
threads (ClosedError, and TimeoutError where a timeout is given); nothing
crashes, nothing hangs, and a thread holding a tensor's lock is never freed
under."""

from __future__ import annotations

import textwrap

import pytest

from harness import Case, check, register, variants

F = "threads"

# Runs `work()` in 4 threads until it raises ClosedError (or `rounds` rounds),
# while the main thread calls `close()` after a short while. Anything but
# ClosedError from a worker is reported.
RACE = """
errors = []
def race(setup, work, close, allowed=(vg.ClosedError,), rounds=20, threads=4):
    for r in range(rounds):
        obj = setup()
        stop = threading.Event()
        def worker():
            while not stop.is_set():
                try:
                    work(obj)
                except allowed:
                    return
                except BaseException as e:
                    errors.append(f"{type(e).__name__}: {e}")
                    return
        ts = [threading.Thread(target=worker) for _ in range(threads)]
        for t in ts: t.start()
        time.sleep(0.005)
        try:
            close(obj)
        except allowed:
            pass
        stop.set()
        for t in ts: t.join(5)
        if any(t.is_alive() for t in ts):
            errors.append("a worker hangs")
            break
    print(errors[:3] if errors else "ok")
"""


def race(id: str, body: str, devices=("cpu", "cuda:0"), **kw) -> list[Case]:
    return variants(f"{F}/{id}", RACE + textwrap.dedent(body), devices=devices, prints="ok", timeout=15, **kw)


CASES: list[Case] = []
V = CASES.extend

V(race("free_while_copying", """
    src = np.ones(1 << 20, np.uint8)
    race(lambda: vg.empty(1 << 20, "uint8", DEV), lambda a: vg.copy(a, src), lambda a: a.free())""",
       issue="free() while other threads copy into the array: fatal fault"))
V(race("free_while_reading_numpy", """
    race(lambda: vg.full(1 << 20, 1, "uint8", DEV),
         lambda a: (a.numpy().sum() == (1 << 20)) or errors.append("wrong sum"), lambda a: a.free())"""))
V(race("free_while_scale_offset", """
    race(lambda: vg.full(1 << 18, 1, "float32", DEV), lambda a: vg.scale_offset(a, 2.0, 1.0, out=a),
         lambda a: a.free())"""))
V(race("free_while_dlpack_export", """
    race(lambda: vg.full(1 << 18, 1, "float32", DEV),
         lambda a: np.from_dlpack(a).sum() if DEV == "cpu" else a.__dlpack__(), lambda a: a.free())"""))
V(race("stream_close_while_recording", """
    ev = vg.Event(DEV)
    race(lambda: vg.Stream(DEV), lambda s: s.record_event(ev), lambda s: s.close())"""))
V(race("stream_close_while_synchronizing", """
    race(lambda: vg.Stream(DEV), lambda s: s.synchronize(), lambda s: s.close())"""))
V(race("event_close_while_querying", """
    race(lambda: vg.Event(DEV), lambda e: (e.record(), e.query(), e.synchronize()), lambda e: e.close())"""))
V(race("coordinator_close_while_queueing", """
    host = np.ones(4096, np.uint8)
    class Coordinator(vg.AsyncCoordinator):  # a subclass may carry its own attributes (buf)
        pass
    def setup():
        c = Coordinator(DEV); c.buf = vg.empty(4096, "uint8", DEV); return c
    def work(c):
        i = c.queue_upload(host, c.buf); c.poll(); c.done(i)
    race(setup, work, lambda c: c.close())"""))
V(race("pool_close_while_getting", """
    def work(p):
        b = p.get(timeout=0.01); p.put(b)
    race(lambda: vg.BufferPool(4096, 2, device=DEV), work, lambda p: p.close(),
         allowed=(vg.ClosedError, TimeoutError))"""))
V(race("readback_close_while_reading_back", """
    a = vg.full(1024, 1, "float32", DEV)
    def work(r):
        with r.readback(a) as h:
            h.get()
    race(lambda: vg.Readback(4096, DEV, buffers=2, max_buffers=4), work, lambda r: r.close())"""))
V(race("triple_buffer_close_while_rotating", """
    def work(tb):
        tb.get_upload_buffer(); tb.get_process_buffer(); tb.get_download_buffer(); tb.advance()
    race(lambda: vg.TripleBuffer(DEV, 1024), work, lambda tb: tb.close())"""))
V(race("tensor_close_while_locking", """
    def work(t):
        with t.locked(timeout=1.0) as v:
            v.sum() if DEV == "cpu" else None
    race(lambda: vg.DeviceTensor((1 << 16,), "float32", DEV), work, lambda t: t.close(),
         allowed=(vg.ClosedError, vg.InUseError, vg.LockError))"""))

V(variants(f"{F}/tensor_close_while_other_thread_holds_lock", """
    N = 1 << 18
    t = vg.DeviceTensor((N,), "float32", "cpu")
    got, holding = [], threading.Event()
    def holder():
        with t as v:
            v[:] = 5
            holding.set()
            time.sleep(0.3)
            junk = [vg.full(N, 9, "float32", "cpu") for _ in range(8)]
            got.append(float(v.sum()))
    th = threading.Thread(target=holder); th.start(); holding.wait(5)
    try:
        t.close()                  # waits for the holder, or is refused: never frees under it
    except (vg.InUseError, vg.LockError):
        pass
    th.join(5)
    print(got)""", devices=("cpu",), prints=f"[{5.0 * (1 << 18)}]"))
V(variants(f"{F}/tensor_resize_while_other_thread_holds_lock", """
    N = 1 << 16
    t = vg.DeviceTensor((N,), "float32", "cpu")
    got, holding = [], threading.Event()
    def holder():
        with t as v:
            v[:] = 5
            holding.set()
            time.sleep(0.2)
            got.append(float(v.sum()))
    th = threading.Thread(target=holder); th.start(); holding.wait(5)
    t.resize((N * 64,))            # waits for the other thread's lock
    th.join(5)
    print(got, t.shape)""", devices=("cpu",), prints=f"[{5.0 * (1 << 16)}] ({(1 << 16) * 64},)"))
V(variants(f"{F}/many_threads_record_and_wait", """
    streams = [vg.Stream(DEV) for _ in range(4)]
    events = [vg.Event(DEV) for _ in range(4)]
    errs = []
    def worker(i):
        try:
            for k in range(500):
                e = events[(i + k) % 4]
                streams[i].record_event(e); streams[(i + 1) % 4].wait_event(e); e.query()
            streams[i].synchronize()
        except BaseException as ex:
            errs.append(repr(ex))
    ts = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in ts: t.start()
    for t in ts: t.join(10)
    print(errs[:2] or "ok")""", prints="ok"))
V(variants(f"{F}/copies_from_many_threads_are_right", """
    N = 1 << 16
    arrays = [vg.empty(N, "int32", DEV) for _ in range(8)]
    errs = []
    def worker(i):
        try:
            for k in range(50):
                vg.copy(arrays[i], np.full(N, i * 100 + k, np.int32))
                got = arrays[i].numpy()
                if not (got == i * 100 + k).all():
                    errs.append(f"array {i} round {k}: {got[:4]}"); return
        except BaseException as ex:
            errs.append(repr(ex))
    ts = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in ts: t.start()
    for t in ts: t.join(10)
    print(errs[:2] or "ok")""", prints="ok", timeout=15))


@pytest.mark.parametrize("case", register(CASES))
def test_threads(case: Case) -> None:
    check(case)
