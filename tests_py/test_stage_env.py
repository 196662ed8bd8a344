"""The environment variables that tune or diagnose the engine's stages, read by the Go core in
a fresh interpreter (Go copies the environment when it starts, so each case is a child):
``VORTEXGO_STAGE_SPIN`` (the stages poll before they park: docs/performance.md "Small blocks")
and ``VORTEXGO_TRACE`` / ``VORTEXGO_CPUPROFILE`` (docs/bench.md "The floor")."""

from __future__ import annotations

from pathlib import Path

import pytest

import _subproc

TESTS = str(Path(__file__).resolve().parent)

RUN = f"""
import sys
sys.path.insert(0, {TESTS!r})
from test_engine import make_rig, new_engine
from vortexgo.engine import NullEndpoint
rig = make_rig([NullEndpoint()], volumes=3)
eng = new_engine(rig)
eng.prepare()
try:
    eng.start()
except Exception as e:
    print("REFUSED", type(e).__name__, str(e).replace(chr(10), " "))
    raise SystemExit(0)
eng.wait()
st = eng.status()
print("RAN", st.volumes, st.blocks_acquired, st.blocks_processed, st.blocks_formatted, st.blocks_dropped)
"""


def _run(**env: str) -> str:
    return _subproc.run(RUN, env=env, timeout=120).stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("window", ["0", "50", "2000"])
def test_every_block_runs_with_the_stages_polling_or_parking(window: str) -> None:
    ran = _run(VORTEXGO_STAGE_SPIN=window).split()
    assert ran[0] == "RAN", ran
    volumes, acquired, processed, formatted, dropped = map(int, ran[1:])
    assert volumes == 3 and acquired == processed == formatted and dropped == 0, ran


@pytest.mark.parametrize("value", ["off", "-5", "1.5", "50us", "10001"])
def test_a_bad_window_is_refused_by_start_naming_the_variable(value: str) -> None:
    out = _run(VORTEXGO_STAGE_SPIN=value)
    assert out.startswith("REFUSED"), out
    assert "VORTEXGO_STAGE_SPIN" in out and "[0, 10000]" in out, out


@pytest.mark.parametrize("var", ["VORTEXGO_TRACE", "VORTEXGO_CPUPROFILE"])
def test_a_diagnostic_profile_is_written(var: str, tmp_path: Path) -> None:
    path = tmp_path / "profile.out"
    out = _subproc.run(RUN + "import time; time.sleep(0.6)\n", env={var: f"{path},0.3"}, timeout=120)
    assert out.stdout.split()[0] == "RAN", out.output()
    data = path.read_bytes()
    if var == "VORTEXGO_TRACE":
        assert data.startswith(b"go 1."), data[:16]  # the execution trace's header
    else:
        assert data[:2] == b"\x1f\x8b", data[:16]  # pprof's gzipped protobuf


@pytest.mark.parametrize("var", ["VORTEXGO_TRACE", "VORTEXGO_CPUPROFILE"])
def test_a_bad_profile_setting_is_reported_and_ignored(var: str, tmp_path: Path) -> None:
    out = _subproc.run(RUN, env={var: f"{tmp_path / 'p.out'},soon"}, timeout=120)
    assert out.stdout.split()[0] == "RAN", out.output()
    assert f"vortexgo: {var}=" in out.stderr and "expected a number in (0, 3600]" in out.stderr, out.stderr
    assert not (tmp_path / "p.out").exists()


def test_a_window_set_from_python_after_import_counts() -> None:
    """The Go core reads the live environment at start(): a notebook's os.environ[...] set after
    the engine was prepared (the Go runtime long started) is seen, not a copy from import time."""
    code = RUN.replace("eng.prepare()\n", "eng.prepare()\nimport os; os.environ['VORTEXGO_STAGE_SPIN'] = 'off'\n")
    out = _subproc.run(code, timeout=120).stdout.strip().splitlines()[-1]
    assert out.startswith("REFUSED") and "VORTEXGO_STAGE_SPIN" in out, out


def test_vortex_profiler_log_set_from_python_after_import(tmp_path: Path) -> None:
    """VORTEX_PROFILER_LOG (vortex's variable) set with os.environ once the engine is prepared
    is the log the next start() writes: vortexgo reads the live environment, not its copy from
    the Go runtime's start."""
    log = tmp_path / "profile.bin"
    code = RUN.replace("eng.prepare()\n", f"eng.prepare()\nimport os; os.environ['VORTEX_PROFILER_LOG'] = {str(log)!r}\n")
    out = _subproc.run(code, timeout=120).stdout.strip().splitlines()[-1]
    assert out.startswith("RAN"), out
    assert log.stat().st_size > 0


CPU_THREADS = f"""
import sys
sys.path.insert(0, {TESTS!r})
import numpy as np
import vortexgo as vg
from test_engine import make_rig, new_engine
from vortexgo.engine import StackHostTensorEndpointInt8

def volume():
    ep = StackHostTensorEndpointInt8()
    eng = new_engine(make_rig([ep], volumes=1))
    with eng:
        eng.prepare(); eng.start(); eng.wait()
    with ep.tensor as view:
        return view.copy()

print("START", vg.cpu_threads())
wide = volume()
for bad in (0, -1, 4097, 2.0, True, "2"):
    try:
        vg.set_cpu_threads(bad)
        print("ACCEPTED", repr(bad))
    except ValueError as e:
        assert "threads=" in str(e), e
print("PREV", vg.set_cpu_threads(np.int64(2)), vg.set_cpu_threads(1), vg.cpu_threads())
narrow = volume()
print("EQUAL", bool(np.array_equal(wide, narrow)), wide.any())
"""


def test_cpu_threads_follow_gomaxprocs_and_set_cpu_threads() -> None:
    """``GOMAXPROCS`` sets the start count; ``set_cpu_threads`` changes it (returning the old
    count), refuses what is not 1 to 4096 naming ``threads``, and a processor made on one
    thread writes what one made on several wrote."""
    out = _subproc.run(CPU_THREADS, env={"GOMAXPROCS": "3"}, timeout=120).stdout.split("\n")
    assert "START 3" in out and "PREV 3 2 1" in out and "EQUAL True True" in out, out
    assert not [line for line in out if line.startswith("ACCEPTED")], out


def test_gomaxprocs_set_in_python_before_the_first_use_counts() -> None:
    """The Go runtime takes GOMAXPROCS from the environment the process started with; one set in
    ``os.environ`` before the core's first use (a notebook, a Dask nanny's ``env=``) counts too."""
    code = "import os, vortexgo as vg\nos.environ['GOMAXPROCS'] = '3'\nprint('THREADS', vg.cpu_threads())\n"
    assert "THREADS 3" in _subproc.run(code, timeout=60).stdout


def test_hang_stacks_show_where_go_waits() -> None:
    """``VORTEXGO_HANG_STACKS=seconds``: a process still running then prints every goroutine's
    stack to stderr (the harnesses' hang diagnostic); one that ended before prints nothing, and
    a bad value is reported and ignored."""
    slow = _subproc.run(RUN + "import time; time.sleep(1.5)\n", env={"VORTEXGO_HANG_STACKS": "0.5"}, timeout=120)
    assert "vortexgo: goroutine stacks" in slow.stderr and "goroutine " in slow.stderr, slow.stderr[-2000:]
    assert "vortexgo: end of goroutine stacks" in slow.stderr
    quick = _subproc.run(RUN, env={"VORTEXGO_HANG_STACKS": "600"}, timeout=120)
    assert "goroutine stacks" not in quick.stderr
    bad = _subproc.run(RUN, env={"VORTEXGO_HANG_STACKS": "nan"}, timeout=120)
    assert bad.stdout.split()[0] == "RAN"
    assert 'VORTEXGO_HANG_STACKS="nan"' in bad.stderr and "ignored" in bad.stderr, bad.stderr


def test_hang_stacks_at_a_moment_of_the_monotonic_clock() -> None:
    """``VORTEXGO_HANG_STACKS_AT=seconds`` (the harnesses' form): the dump comes at that moment
    of ``time.monotonic()``'s clock however late the Go core started (here 1 s after the moment
    was fixed, which a delay from the core's start would have missed), wins over
    ``VORTEXGO_HANG_STACKS``, and a bad value is reported and ignored."""
    late = ("import os, time\nos.environ['VORTEXGO_HANG_STACKS_AT'] = repr(time.monotonic() + 1.2)\n"
            "os.environ['VORTEXGO_HANG_STACKS'] = '600'\ntime.sleep(1.0)\n" + RUN + "time.sleep(1.5)\n")
    o = _subproc.run(late, timeout=120)
    assert "vortexgo: goroutine stacks" in o.stderr and "(VORTEXGO_HANG_STACKS_AT)" in o.stderr, o.stderr[-2000:]
    passed = _subproc.run("import time\n" + RUN + "time.sleep(1.0)\n", env={"VORTEXGO_HANG_STACKS_AT": "1"},
                          timeout=120)
    assert "vortexgo: goroutine stacks" in passed.stderr, "a moment already past: at once"
    bad = _subproc.run(RUN, env={"VORTEXGO_HANG_STACKS_AT": "soon"}, timeout=120)
    assert bad.stdout.split()[0] == "RAN"
    assert 'VORTEXGO_HANG_STACKS_AT="soon"' in bad.stderr and "ignored" in bad.stderr, bad.stderr


def test_a_bad_format_stream_is_refused_by_prepare_naming_the_variable() -> None:
    """``VORTEXGO_FORMAT_STREAM`` (where a device tensor endpoint formats: auto, endpoint or
    slot; read live at prepare) refuses anything else, naming the variable."""
    code = RUN.replace("eng.prepare()\n", "import os; os.environ['VORTEXGO_FORMAT_STREAM'] = 'fast'\n"
                       "try:\n    eng.prepare()\nexcept ValueError as e:\n    print('REFUSED', e)\n"
                       "    raise SystemExit(0)\n")
    code = code.replace("from vortexgo.engine import NullEndpoint", "from vortexgo.engine import StackDeviceTensorEndpointInt8 as NullEndpoint")
    out = _subproc.run(code, timeout=120).stdout.strip().splitlines()[-1]
    assert out.startswith("REFUSED") and "VORTEXGO_FORMAT_STREAM" in out, out


@pytest.mark.parametrize("where", ["endpoint", "slot", "auto"])
def test_every_block_is_formatted_wherever_the_format_stream_is(where: str) -> None:
    code = RUN.replace("from vortexgo.engine import NullEndpoint",
                       "from vortexgo.engine import StackDeviceTensorEndpointInt8 as NullEndpoint")
    ran = _subproc.run(code, env={"VORTEXGO_FORMAT_STREAM": where}, timeout=120).stdout.strip().splitlines()[-1]
    assert ran.split()[0] == "RAN" and ran.split()[-1] == "0", ran  # no block dropped


@pytest.mark.parametrize("env", [{"VORTEXGO_SLOT_PATH": "direct"}, {"VORTEXGO_SLOT_PATH": "stages"},
                                 {"VORTEXGO_SLOT_PATH": "inline"}, {"VORTEXGO_SLOT_PATH": "inline", "VORTEXGO_STAGE_SPIN": "30"},
                                 {"VORTEXGO_TURN_SPIN": "0"}, {"VORTEXGO_TURN_SPIN": "30"},
                                 {"VORTEXGO_SLOT_PATH": "stages", "VORTEXGO_TURN_SPIN": "200"},
                                 {"VORTEXGO_RECYCLE_SPIN": "0"}, {"VORTEXGO_RECYCLE_SPIN": "100"},
                                 {"VORTEXGO_REMOTE_LANES": "slot"}])
def test_every_block_runs_on_either_slot_path_and_turn_window(env: dict[str, str]) -> None:
    """``VORTEXGO_SLOT_PATH`` (how blocks reach the slots' submitters) and ``VORTEXGO_TURN_SPIN``
    (how long a submitter polls for the rolling average's turn): read at each start, the same
    blocks either way."""
    ran = _run(**env).split()
    assert ran[0] == "RAN", ran
    volumes, acquired, processed, formatted, dropped = map(int, ran[1:])
    assert volumes == 3 and acquired == processed == formatted and dropped == 0, ran


@pytest.mark.parametrize("var,value,expected", [("VORTEXGO_SLOT_PATH", "fast", "direct, stages or inline (unset: the engine picks)"),
                                                ("VORTEXGO_TURN_SPIN", "on", "[0, 10000]"),
                                                ("VORTEXGO_TURN_SPIN", "-3", "[0, 10000]"),
                                                ("VORTEXGO_RECYCLE_SPIN", "fast", "[0, 10000]"),
                                                ("VORTEXGO_REMOTE_LANES", "slots", "device or slot (unset: device)")])
def test_a_bad_slot_setting_is_refused_by_start_naming_the_variable(var: str, value: str, expected: str) -> None:
    out = _run(**{var: value})
    assert out.startswith("REFUSED"), out
    assert var in out and expected in out, out


SLACK = f"""
import os, sys, threading
sys.path.insert(0, {TESTS!r})
def slack():
    # A thread may end between the listing and the read (an engine's stage threads after a run).
    out = {{}}
    for t in os.listdir("/proc/self/task"):
        try:
            out[int(t)] = int(open(f"/proc/{{t}}/timerslack_ns").read())
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out
import numpy, vortexgo as vg  # no Go yet: its threads start with the core (NumPy's may start here)
from vortexgo import _core
before = slack()
_core.load()
loaded = slack()
# an engine run: Go starts more threads for its stages, from its own
from test_engine import make_rig, new_engine
from vortexgo.engine import NullEndpoint
eng = new_engine(make_rig([NullEndpoint()], volumes=2))
eng.prepare(); eng.start(); eng.wait()
after = slack()
main = threading.get_native_id()
go = sorted({{loaded[t] for t in loaded if t not in before}})
run = sorted(after[t] for t in after if t not in loaded)
print("SLACK", before[main], after[main], len(loaded) - len(before), "|", *go, "|", *run)
"""


@pytest.mark.skipif(not Path("/proc/self/timerslack_ns").exists(), reason="Linux's per-thread timer slack")
@pytest.mark.parametrize(("value", "expected"), [(None, 1), ("0", None), ("2500", 2500), ("soon", 1)])
def test_the_go_core_threads_timer_slack(value: "str | None", expected: "int | None") -> None:
    """The Go core's threads start with a timer slack of 1 ns (VORTEXGO_TIMER_SLACK_NS sets
    another, 0 leaves the system's; a bad value warns naming the variable): Go's scheduler sleeps
    3 us before it steals a readied goroutine, which Linux's default 50 us slack stretches. The
    loading thread gets its own back; the threads the core starts have the core's."""
    env = {} if value is None else {"VORTEXGO_TIMER_SLACK_NS": value}
    out = _subproc.run(SLACK, env=env, timeout=120)
    line = out.stdout.strip().splitlines()[-1]
    head, go, run = line.split("|")
    words = head.split()
    assert words[0] == "SLACK", out.output()
    main_before, main_after, started = map(int, words[1:])
    want = main_before if expected is None else expected
    assert main_after == main_before, "the loading thread's slack is put back"
    assert started >= 2, out.output()  # the Go runtime's threads at least
    assert [int(v) for v in go.split()] == [want], out.output()
    # Threads started during the run: Go's have the core's slack, Python's (the event
    # dispatcher, started from the main thread) the main thread's.
    assert set(int(v) for v in run.split()) <= {want, main_before}, out.output()
    if value == "soon":
        assert "VORTEXGO_TIMER_SLACK_NS='soon'" in out.stderr and "nanoseconds" in out.stderr, out.stderr
