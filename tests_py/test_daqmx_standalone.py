"""vortex's standalone DAQmxIO calls (prepare, start, stop, next, next_async outside an engine)
against the virtual NI-DAQmx card (instruments/virtual): the samples the card recorded equal
what was written, inputs read back into their streams, next_async's callback arguments and
thread, vortex's refusals, and closing, dropping or exiting with calls pending. Each case runs in
its own interpreter (tests_py/_subproc.py): the virtual library reads its settings when it loads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from _io_standalone import PRELUDE, check_argument_misuse, last_json
from _subproc import run

pytestmark = pytest.mark.timeout(120)

_HEAD = PRELUDE + """
from vortex.io import DAQmxIO, DAQmxConfig
from vortex.io.daqmx import AnalogVoltageOutput, AnalogVoltageInput, DigitalOutput

def io_of(name, *channels, block=100, rate=20000, divisor=1, blocks=4, **fields):
    c = DAQmxConfig()
    c.name, c.samples_per_block, c.samples_per_second, c.blocks_to_buffer = name, block, rate, blocks
    c.clock.divisor = divisor
    for k, v in fields.items():
        setattr(c, k, v)
    for ch in channels:
        c.channels.append(ch)
    io = DAQmxIO()
    io.initialize(c)
    return io
"""


@pytest.fixture(scope="module")
def env(virtual_instrument: Path) -> dict:
    return {"VORTEXGO_NIDAQMX_LIBRARY": str(virtual_instrument / "libnidaqmx.so"), "VGV_TRIGGER": "free",
            "VGV_IO_DELAY": "0"}


def test_card_records_what_next_wrote(env, tmp_path):
    """Blocks written by next (before and after start, a strided stream among them) and
    next_async reach the card as vortex's _process_block makes them: every divisor-th sample,
    scaled to volts and clipped; the strobes as they are. The callback gets (count, None) on
    the IO's worker thread, in order."""
    o = run(prelude=_HEAD, code="""
        c = AnalogVoltageOutput("Dev1/ao0", 1.5, S.GalvoTarget, 0)
        c2 = AnalogVoltageOutput("Dev1/ao1", 1.5, S.SampleTarget, 1)
        io = io_of("galvo", c, c2, divisor=2)
        OUT = os.environ["OUT"]
        strobe = io_of("strobe", DigitalOutput("Dev1/port0", S.Strobes))
        io.prepare(); strobe.prepare()
        got, done, strobed = [], threading.Event(), threading.Semaphore(0)
        main = threading.get_ident()
        def cb(n, e):
            got.append([n, e, threading.get_ident() != main, threading.current_thread().name])
            if len(got) == 2:
                done.set()
        for b in range(5):
            s = list(streams(100))
            wide = np.zeros((100, 4))
            s[1] = wide[:, ::2]  # a strided view
            s[1][:, 0] = np.arange(100) / 10 + b * 100
            s[2][:, 1] = -np.arange(100) / 100
            s[5][:, 0] = np.arange(100) % 7
            np.save(f"{OUT}/block{b}.npy", np.stack([s[1][:, 0], s[2][:, 1], s[5][:, 0]], axis=1))
            if b < 3:
                assert io.next(100, tuple(s), id=b) == 100
                assert strobe.next(100, s) == 100
            else:
                io.next_async(100, tuple(s), cb, b)
                strobe.next_async(100, s, lambda n, e: strobed.release())
            if b == 1:
                io.start()
                assert io.running
        assert done.wait(10)
        assert strobed.acquire(timeout=10) and strobed.acquire(timeout=10)  # the strobes' worker is another thread
        io.stop(); strobe.stop()
        print(json.dumps([[n, e is None, other, name] for n, e, other, name in got]))
    """, env={**env, "VGV_DAQMX_RECORD": str(tmp_path), "OUT": str(tmp_path)})
    got = last_json(o.stdout)
    assert got == [[100, True, True, "vortexgo-DAQmxIO-galvo"]] * 2
    blocks = [np.load(tmp_path / f"block{b}.npy") for b in range(5)]
    want = np.concatenate([np.stack([np.minimum(b[::2, 0] / 1.5, 10), b[::2, 1] / 1.5], axis=1) for b in blocks])
    np.testing.assert_array_equal(np.fromfile(tmp_path / "galvo.ao", np.float64).reshape(-1, 2), want)
    words = np.concatenate([b[:, 2] for b in blocks]).astype(np.uint32)
    np.testing.assert_array_equal(np.fromfile(tmp_path / "strobe.do", np.uint32), words)


def test_next_reads_inputs(env):
    """An input channel fills its column of its stream (here a strided view) with what the card
    measured, each card sample repeated clock.divisor times and scaled by
    logical_units_per_physical_unit; the other columns are left as they were."""
    o = run(prelude=_HEAD, code="""
        out = io_of("ao", AnalogVoltageOutput("Dev1/ao0", 1.0, S.GalvoTarget, 0))
        s = streams(100)
        s[1][:, 0] = np.arange(100) / 20
        out.next(100, s)  # the galvo timeline ai0 measures
        inp = io_of("ai", AnalogVoltageInput("Dev1/ai0", 2.0, S.GalvoActual, 1), rate=4000, divisor=4)
        inp.start()
        back = np.full((100, 4), -1.0)
        r = list(streams(100)); r[3] = back[:, ::2]
        n = inp.next(100, tuple(r))
        ev = threading.Event(); res = []
        r2 = streams(100)
        inp.next_async(100, r2, lambda n, e: (res.append([n, e]), ev.set()))
        assert ev.wait(10)
        inp.stop()
        print(json.dumps([n, back.tolist(), res[0][0], res[0][1] is None, r2[3].tolist()]))
    """, env=env)
    n, back, n2, ok, second = last_json(o.stdout)
    back, second = np.array(back), np.array(second)
    assert n == 100 and n2 == 100 and ok
    np.testing.assert_array_equal(back[:, 2], 2 * (np.arange(100) // 4) / 20)
    np.testing.assert_array_equal(back[:, [0, 1, 3]], -1)  # column 0 of the view and the view's gaps
    np.testing.assert_array_equal(second[:, 0], 0)
    assert np.all(second[:, 1] >= 0)


def test_misuse_named_as_vortex(env):
    """vortex's refusals and messages; argument errors of next_async reach its callback."""
    o = run(prelude=_HEAD, code="""
        import logging
        from vortexgo import ClosedError
        io = io_of("m", AnalogVoltageOutput("Dev1/ao0", 1.0, S.GalvoTarget, 0), divisor=2)
        s = streams(100)
        r = argument_misuse(io)
        r["long"] = error(lambda: io.next(102, s))
        r["divisor"] = error(lambda: io.next(51, s))
        counter = io_of("c", AnalogVoltageOutput("Dev1/ao1"))  # stream 0: the counter
        r["counter"] = error(lambda: counter.next(100, s))
        far = io_of("f", DigitalOutput("Dev1/port0", 6))
        r["bounds"] = error(lambda: far.next(100, s))
        inp = io_of("i", AnalogVoltageInput("Dev1/ai0", 1.0, S.GalvoActual, 0))
        ro = list(streams(100)); ro[3].flags.writeable = False
        r["readonly"] = error(lambda: inp.next(100, ro))
        r["not started"] = error(lambda: inp.next(100, s))
        r["uninitialized"] = error(lambda: DAQmxIO().next(100, s))
        np_ = io_of("np", AnalogVoltageOutput("Dev1/ao2", 1.0, S.GalvoTarget, 0), persistent_task=False)
        r["unprepared"] = error(lambda: np_.next(100, s))
        np_.prepare(); r["prepared"] = np_.next(100, s)
        # async: Go's checks reach the callback; a callback that raises is logged, the worker goes on
        got, ev = [], threading.Event()
        io.next_async(102, s, lambda n, e: got.append([n, type(e).__name__, str(e)]))
        io.next_async(100, s, lambda n, e: 1 / 0)
        io.next_async(100, s, lambda n, e: (got.append([n, e]), ev.set()))
        assert ev.wait(10)
        r["async"] = got
        # underflow: the host falls behind a fast card; stop_on_error stops the task
        fast = io_of("fast", AnalogVoltageOutput("Dev1/ao3", 1.0, S.GalvoTarget, 0), rate=4_000_000)
        fast.next(100, s); fast.start(); time.sleep(0.01)
        r["underflow"] = error(lambda: fast.next(100, s)); r["stopped"] = not fast.running
        io.close(); io.close()
        r["closed"] = error(lambda: io.next(100, s))
        r["closed async"] = error(lambda: io.next_async(100, s, lambda n, e: None))
        r["closed prepare"] = error(io.prepare)
        print(json.dumps(r))
    """, env=env)
    r = last_json(o.stdout)
    assert r["long"] == ["ValueError", "block is larger than maximum configured size: 102 > 100"]
    assert r["divisor"] == ["ValueError", "block size (51) is not evenly divisible by clock divisor (2): 1 != 0"]
    check_argument_misuse(r)
    assert r["counter"][0] == "ValueError"
    assert r["counter"][1].startswith("tuple condition failed to match at target index: AnalogVoltageOutput Dev1/ao1 "
                                      "reads stream Counter (0)")
    assert r["bounds"][0] == "ValueError" and r["bounds"][1].startswith("tuple index out of bounds")
    assert r["readonly"] == ["ValueError", "streams[3] (galvo actual): read-only, expected a writable array"]
    assert r["not started"][0] == "VortexError" and r["not started"][1].startswith("analog read failed: (-200284)")
    assert r["uninitialized"] == ["ValueError", "DAQmxIO is not initialized, expected initialize(config) first"]
    assert r["unprepared"][0] == "VortexError" and "expected prepare() first" in r["unprepared"][1]
    assert r["prepared"] == 100
    assert r["async"] == [[0, "ValueError", "block is larger than maximum configured size: 102 > 100"], [100, None]]
    assert "unhandled callback exception (block 0)" in o.stderr and "ZeroDivisionError" in o.stderr
    assert r["underflow"] == ["VortexError", "analog write failed: (-200290) buffer underflow"]
    assert r["stopped"]
    for k in ("closed", "closed async", "closed prepare"):
        assert r[k][0] == "ClosedError" and "DAQmxIO is closed" in r[k][1], (k, r[k])


# A write blocked in NI-DAQmx (the buffer full, readwrite_timeout forever) and two calls queued
# behind it, then the IO closed (how), dropped or left at exit.
_PENDING = _HEAD + """
how = sys.argv[1]
# readwrite_timeout forever: only close ends the write (stop does not: the task is not started);
# "from callback": the write times out, and its callback closes the IO
io = io_of("pending", AnalogVoltageOutput("Dev1/ao0", 1.0, S.GalvoTarget, 0), blocks=1,
           readwrite_timeout=0.5 if how == "from callback" else -1)
s = streams(100)
io.next(100, s); io.next(100, s)  # the buffer: blocks_to_buffer + 1 blocks
got, ev = [], threading.Event()
def cb(n, e):
    got.append([n, type(e).__name__])
    if how == "exit":
        print("callback", n, type(e).__name__, flush=True)
    if how == "from callback" and len(got) == 1:
        io.close()  # on the worker: must not wait for itself
    if len(got) == 3:
        ev.set()
for b in range(3):
    io.next_async(100, s, cb, b)
time.sleep(0.2)
assert not got, got  # the first is blocked in NI-DAQmx
leave(how)
assert ev.wait(10), got
print(json.dumps(got))
"""


@pytest.mark.parametrize("how", ["close", "from callback", "drop", "exit"])
def test_pending_next_async_at_close(env, how):
    """Closing (or dropping, or exiting with) an IO whose next_async is blocked in NI-DAQmx
    neither deadlocks nor crashes: every pending callback runs, with ClosedError."""
    o = run(f"import sys; sys.argv = ['x', {how!r}]\n" + _PENDING, env=env, timeout=60)
    if how == "exit":
        # at exit the task is cleared: every callback runs, with ClosedError
        lines = [ln.split() for ln in o.stdout.splitlines() if ln.startswith("callback")]
        assert lines == [["callback", "0", "ClosedError"]] * 3, o.stdout
        return
    got = last_json(o.stdout)
    if how == "from callback":
        assert got == [[0, "VortexError"], [0, "ClosedError"], [0, "ClosedError"]], got
    else:
        assert got == [[0, "ClosedError"]] * 3, got
