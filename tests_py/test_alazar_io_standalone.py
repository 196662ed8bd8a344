"""vortex's standalone AlazarIO calls (prepare, start, stop, next, next_async outside an engine)
against the virtual board's galvo DAC (instruments/virtual, VGV_DAC_RECORD): the words the DAC
recorded equal what was written, next_async's callback arguments and thread, vortex's refusals,
and closing, dropping or exiting with callbacks pending. Each case runs in its own interpreter
(tests_py/_subproc.py): the virtual library reads its settings when it loads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from _io_standalone import PRELUDE, check_argument_misuse, last_json
from _subproc import run

pytestmark = pytest.mark.timeout(120)

_HEAD = PRELUDE + """
from vortex.io import AlazarIO, AlazarIOConfig
from vortex.io.alazar import AnalogChannel

def io_of(x=(S.GalvoTarget, 0), y=(S.GalvoTarget, 1), block=100, blocks=1, **fields):
    c = AlazarIOConfig()
    c.samples_per_block, c.blocks_to_buffer = block, blocks
    c.analog_output_channels = [AnalogChannel(1.5, *x), AnalogChannel(1.5, *y)]
    for k, v in fields.items():
        setattr(c, k, v)
    io = AlazarIO()
    io.initialize(c)
    return io

def recorded():
    try:
        return np.fromfile(os.path.join(os.environ["VGV_DAC_RECORD"], "dac1.bin"), np.float64).reshape(-1, 2)
    except FileNotFoundError:
        return np.zeros((0, 2))
"""


@pytest.fixture(scope="module")
def env(virtual_instrument: Path) -> dict:
    return {"VORTEXGO_INSTRUMENTS": "virtual", "VORTEXGO_VIRTUAL_DIR": str(virtual_instrument)}


def _dac(volts: np.ndarray) -> np.ndarray:
    """What the DAC plays for ``volts``: clipped to +-5 V, the code truncated, back in volts."""
    lsb = 5.0 / 32767
    return (np.trunc(np.clip(volts, -5, 5) / lsb + 32768) - 32768) * lsb


def test_dac_records_what_next_wrote(env, tmp_path):
    """Blocks written by next (before and after start, x from a strided view of GalvoTarget, y
    from column 2 of SampleActual) and next_async reach the DAC as vortex's _process_block
    makes them: every divisor-th sample, scaled, clipped and made a code, through a ring of two
    blocks. next_async writes before it returns (vortex's); its callback gets (count, None) on
    the IO's worker thread, in order."""
    o = run(prelude=_HEAD, code="""
        OUT = os.environ["OUT"]
        io = io_of(x=(S.GalvoTarget, 0), y=(S.SampleActual, 2), divisor=2)
        assert io.ring_samples == 200
        io.prepare()
        got, done = [], threading.Event()
        main = threading.get_ident()
        def cb(n, e):
            got.append([n, e is None, threading.get_ident() != main, threading.current_thread().name])
            if len(got) == 2:
                done.set()
        written = []
        for b in range(6):
            s = list(streams(100, 3))
            wide = np.zeros((100, 6))
            s[1] = wide[:, ::2]  # a strided view
            s[1][:, 0] = np.arange(100) / 7 + b * 10
            s[4][:, 2] = -np.arange(100) / 11
            np.save(f"{OUT}/block{b}.npy", np.stack([s[1][:, 0], s[4][:, 2]], axis=1))
            if b < 4:
                assert io.next(100, tuple(s), id=b) == 100
            else:
                io.next_async(100, s, cb, b)
            written.append(len(recorded()))
            if b == 1:
                io.start()
                assert io.running
        assert done.wait(10)
        io.stop()
        print(json.dumps([got, written, io.running]))
    """, env={**env, "VGV_DAC_RECORD": str(tmp_path), "OUT": str(tmp_path)})
    got, written, running = last_json(o.stdout)
    assert got == [[100, True, True, "vortexgo-AlazarIO-1-1"]] * 2
    assert written == [50 * (b + 1) for b in range(6)], "each call wrote its block before returning"
    assert not running
    blocks = [np.load(tmp_path / f"block{b}.npy") for b in range(6)]
    want = np.concatenate([_dac(b[::2] / 1.5) for b in blocks])
    np.testing.assert_allclose(np.fromfile(tmp_path / "dac1.bin", np.float64).reshape(-1, 2), want, rtol=0,
                               atol=1e-12)


# An engine whose AlazarIO a standalone call meets while it runs: prepared, not closed.
_ENGINE = """
import vortexgo as vg
from vortexgo.engine import Engine, EngineConfig, NullEndpoint
from vortexgo.format import FormatPlanner, FormatPlannerConfig

def engine_of(io):
    acq = vg.SimulatedAcquisition(samples_per_record=16, ascans_per_bscan=32, bscans_per_volume=4, total_volumes=1)
    proc = vg.CPUProcessor(samples_per_record=16, ascans_per_block=32)
    planner = FormatPlanner(FormatPlannerConfig(4, 32))
    ec = EngineConfig(records_per_block=32, blocks_to_allocate=4, preload_count=2)
    ec.add_acquisition(acq, [proc]); ec.add_processor(proc, [planner]); ec.add_formatter(planner, [NullEndpoint()])
    ec.add_io(io)
    return Engine(ec)
"""


def test_misuse_named_as_vortex(env, tmp_path):
    """vortex's refusals and messages; the errors of a block reach next_async's callback and
    stop the DAC (stop_on_error); closed, not prepared and in use by an engine are refused."""
    o = run(prelude=_HEAD + _ENGINE, code="""
        io = io_of(divisor=2)
        s = streams(100)
        unprepared = error(lambda: io.next(100, s))
        io.prepare()
        r = argument_misuse(io)
        r["unprepared"] = unprepared
        r["long"] = error(lambda: io.next(102, s))
        r["divisor"] = error(lambda: io.next(51, s))
        narrow = list(s); narrow[1] = np.zeros((100, 1)); r["narrow"] = error(lambda: io.next(100, narrow))
        r["uninitialized"] = error(lambda: AlazarIO().next(100, s))
        default = AlazarIO(); default.initialize(AlazarIOConfig()); default.prepare()  # vortex's stream 0
        r["counter"] = error(lambda: default.next(100, s))
        default.close()
        strobes = io_of(y=(S.Strobes, 0)); strobes.prepare()
        r["strobes"] = error(lambda: strobes.next(100, s))
        strobes.close()
        # a block's errors stop the DAC (stop_on_error) and reach next_async's callback; a
        # callback that raises is logged, the worker goes on
        io.start()
        got, ev = [], threading.Event()
        io.next_async(102, s, lambda n, e: got.append([n, type(e).__name__, str(e)]))
        r["stopped"] = not io.running
        io.next_async(100, s, lambda n, e: 1 / 0)
        io.next_async(100, s, lambda n, e: (got.append([n, e]), ev.set()))
        assert ev.wait(10)
        r["async"] = got
        keep = io_of(stop_on_error=False); keep.prepare(); keep.start()
        r["kept"] = [error(lambda: keep.next(102, s))[0], keep.running]
        keep.close()
        # an engine that prepared the IO refuses the standalone calls until it is closed
        eng = engine_of(io)
        eng.prepare()
        r["in use"] = [error(lambda: io.next(100, s)), error(lambda: io.next_async(100, s, lambda n, e: None)),
                       error(io.prepare), error(io.close)]
        eng.close()
        io.prepare(); r["released"] = io.next(100, s)
        io.close(); io.close()
        r["closed"] = error(lambda: io.next(100, s))
        r["closed async"] = error(lambda: io.next_async(100, s, lambda n, e: None))
        r["closed prepare"] = error(io.prepare)
        r["repr"] = repr(io)
        print(json.dumps(r))
    """, env={**env, "VGV_DAC_RECORD": str(tmp_path)})
    r = last_json(o.stdout)
    assert r["unprepared"][0] == "VortexError" and "expected prepare() first" in r["unprepared"][1]
    assert r["long"] == ["ValueError", "block is larger than maximum configured size: 102 > 100"]
    assert r["divisor"] == ["ValueError", "block size (51) is not evenly divisible by divisor (2): 1 != 0"]
    check_argument_misuse(r)
    assert r["short"] == ["ValueError", "stream is incorrectly sized: [50 x 2] vs [:100,0] (AlazarIO analog output "
                                        "channel 0, stream GalvoTarget)"]
    assert r["narrow"][0] == "ValueError" and r["narrow"][1].startswith("stream is incorrectly sized: [100 x 1] "
                                                                        "vs [:100,1]")
    assert r["uninitialized"] == ["ValueError", "AlazarIO is not initialized, expected initialize(config) first"]
    assert r["counter"][0] == "ValueError"
    assert r["counter"][1].startswith("tuple condition failed to match at target index: AlazarIO analog output "
                                      "channel 0 reads stream Counter (0)")
    assert r["strobes"][0] == "ValueError" and "channel 1 reads stream Strobes (5)" in r["strobes"][1]
    assert r["stopped"], "the failed block stopped the DAC"
    assert r["async"] == [[0, "ValueError", "block is larger than maximum configured size: 102 > 100"], [100, None]]
    assert "unhandled callback exception (block 0)" in o.stderr and "ZeroDivisionError" in o.stderr
    assert r["kept"] == ["ValueError", True], "without stop_on_error the DAC plays on"
    for e in r["in use"]:
        assert e[0] == "InUseError", r["in use"]
    assert r["released"] == 100
    for k in ("closed", "closed async", "closed prepare"):
        assert r[k][0] == "ClosedError" and "AlazarIO is closed" in r[k][1], (k, r[k])
    assert r["repr"] == "<AlazarIO closed>"


# Three next_async calls whose callbacks are queued behind the first, which waits for all three
# calls; then the IO closed (how: from the main thread, or by the first callback), dropped or
# left at exit.
_PENDING = _HEAD + """
how = sys.argv[1]
io = io_of()
io.prepare()
s = streams(100)
got, ev, issued, go = [], threading.Event(), threading.Event(), threading.Event()
def cb(n, e):
    if not got:
        issued.wait(10)
        if how == "from callback":
            io.close()  # on the worker: must not wait for itself
        else:
            go.wait(0.5 if how == "exit" else 10)
    got.append([n, type(e).__name__])
    if how == "exit":
        print("callback", n, type(e).__name__, flush=True)
    if len(got) == 3:
        ev.set()
for b in range(3):
    io.next_async(100, s, cb, b)
issued.set()
time.sleep(0.1)
assert how == "from callback" or not got, got  # the first callback waits
leave(how)
go.set()
assert ev.wait(10), got
print(json.dumps(got))
"""


@pytest.mark.parametrize("how", ["close", "from callback", "drop", "exit"])
def test_pending_next_async_at_close(env, how):
    """Closing (or dropping, or exiting with) an IO whose next_async callbacks are pending
    neither deadlocks nor crashes: every callback runs, with its block's result (the blocks
    were written when the calls returned, as vortex's)."""
    o = run(f"import sys; sys.argv = ['x', {how!r}]\n" + _PENDING, env=env, timeout=60)
    if how == "exit":
        lines = [ln.split() for ln in o.stdout.splitlines() if ln.startswith("callback")]
        assert lines == [["callback", "100", "NoneType"]] * 3, o.stdout
        return
    assert last_json(o.stdout) == [[100, "NoneType"]] * 3
