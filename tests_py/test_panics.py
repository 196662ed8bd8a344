"""A Go panic never ends the interpreter (docs/design.md, "Go panics never end
the interpreter"): a panic in a call from Python raises
:class:`vortexgo.InternalError` with the Go stack, and a panic in an engine
stage ends the session with that error (``wait()`` raises it).

The panics come from the test-only ``_debug_panic`` hook of a
NullAcquisition, enabled only with ``VORTEXGO_TEST_PANICS=1``. Every case
that panics runs in a subprocess (_subproc), so a guard that fails kills the
child and fails the test, not the test run.
"""

from __future__ import annotations

import pytest

import vortexgo as vg

import _subproc

pytestmark = pytest.mark.timeout(180)

PANICS = {"VORTEXGO_TEST_PANICS": "1"}

NULL_ACQ = """
import vortexgo as vg
acq = vg.NullAcquisition(vg.NullAcquisitionConfig(samples_per_record=64, records_per_block=8))
"""


def test_debug_panic_is_refused_without_the_env_var(monkeypatch):
    # In process: without the variable the hook refuses and nothing panics.
    monkeypatch.delenv("VORTEXGO_TEST_PANICS", raising=False)
    acq = vg.NullAcquisition(vg.NullAcquisitionConfig(samples_per_record=64, records_per_block=8))
    for lend in (False, True):
        with pytest.raises(ValueError, match="VORTEXGO_TEST_PANICS=1"):
            acq._debug_panic(lend)
    acq.close()


def test_panic_in_a_call_raises_internal_error_and_the_interpreter_goes_on():
    p = _subproc.run(NULL_ACQ + """
try:
    acq._debug_panic()
except vg.InternalError as e:
    assert isinstance(e, RuntimeError) and isinstance(e, vg.VortexError)
    print("MESSAGE", e)
    print("STACK", e.go_stack)
    assert e.go_stack and e.where and chr(10) not in str(e), (e.where, str(e))
    assert any("Go stack of the panic" in n for n in e.__notes__)
else:
    raise SystemExit("no exception")
# The interpreter, and the object, keep working.
acq.start()
acq.stop()
for _ in range(3):  # and every later panic is caught too
    try:
        acq._debug_panic()
    except vg.InternalError:
        pass
acq.close()
print("DONE")
""", env=PANICS)
    assert "MESSAGE pyapi.Acquisition.DebugPanic: internal error (Go panic: acquire: NullAcquisition.debug_panic" in p.stdout
    stack = p.stdout.split("STACK", 1)[1]
    assert "goroutine " in stack and "NullAcquisition).DebugPanic" in stack and "pyapi_Acquisition_DebugPanic" in stack
    assert "DONE" in p.stdout


def test_panic_in_an_engine_stage_ends_the_session_with_internal_error():
    # The acquisition's Lend panics on the engine's acquire goroutine: the
    # session ends loudly (Error, Abort), wait() raises InternalError with
    # the stack, and the engine runs its next session and closes.
    p = _subproc.run(NULL_ACQ + """
import sys
sys.path.insert(0, "tests_py")
from _scans import planner, queue_volumes
from vortexgo.engine import Engine, EngineConfig, NullEndpoint

S, A, B = 64, 8, 4
proc = vg.CPUProcessor(vg.ProcessorConfig(samples_per_record=S, ascans_per_block=8))
fmt = planner(A, B)
ep = NullEndpoint()
ec = EngineConfig(records_per_block=8, blocks_to_allocate=4, preload_count=2)
ec.add_acquisition(acq, [proc])
ec.add_processor(proc, [fmt])
ec.add_formatter(fmt, [ep])
eng = Engine(ec)
queue_volumes(eng, A, B, 0)  # endless: only the panic ends the session
got = []
eng.event_callback = lambda ev, exc: got.append((ev, exc))
eng.prepare()
acq._debug_panic(lend=True)
eng.start()
try:
    eng.wait()
except vg.InternalError as e:
    print("MESSAGE", e)
    print("STACK", e.go_stack)
    assert e.go_stack and e.where and chr(10) not in str(e), (e.where, str(e))
else:
    raise SystemExit("wait() did not raise")
eng.stop()  # raised once (vortex's rule): stop does not raise it again
names = [ev.name for ev, _ in got]
print("EVENTS", names)
assert "Error" in names and "Abort" in names and names[-1] == "Exit", names
err = next(exc for ev, exc in got if ev.name == "Error")
assert isinstance(err, vg.InternalError), repr(err)

# The next session runs clean over the whole pool.
eng.scan_queue.reset()
fmt.reset()
queue_volumes(eng, A, B, 2)
eng.start()
eng.wait()
eng.stop()
s = eng.status()
assert s.error == "" and s.volumes == 2, s
eng.close()
print("DONE")
""", env=PANICS)
    assert "MESSAGE engine: acquire stage: internal error (Go panic: acquire: NullAcquisition.Lend: debug_panic" in p.stdout
    stack = p.stdout.split("STACK", 1)[1]
    assert "goroutine " in stack and "NullAcquisition).Lend" in stack and "acquireLoop" in stack
    assert "DONE" in p.stdout


def test_a_wrapper_whose_handle_lookup_fails_raises_instead_of_crashing():
    # gopy's wrapper returned with the GIL released when it found no object
    # behind a handle (a segfault before the guard); it now raises.
    p = _subproc.run("""
import vortexgo as vg
from vortexgo._native import _gocore
from vortexgo._errors import translate
try:
    _gocore.pyapi_Engine_Stop(987654321)
except RuntimeError as e:
    e = translate(e)
    assert type(e) is vg.VortexError, repr(e)
    print("RAISED", e)
else:
    raise SystemExit("no exception")
print("DONE")
""")
    assert "RAISED pyapi.Engine.Stop: no Go object of the expected type behind this handle" in p.stdout
    assert "DONE" in p.stdout
