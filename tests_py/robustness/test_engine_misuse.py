"""Engine misuse: closing an endpoint, acquisition, processor or storage
while the engine runs (refused with InUseError, or deferred until the engine
is done: never a crash), stop before start, wait() or stop() while the same
thread holds an endpoint's tensor lock (LockError, not a deadlock), callbacks
that exit, raise BaseException or close things, engines dropped while
running. Every case must end: a hang is a failure."""

from __future__ import annotations

import textwrap

import pytest

from harness import RIG, Case, check, register, variants

F = "engine"

CASES: list[Case] = []

# After a close under a running engine: the close was refused (InUseError) or
# deferred until the engine is done; either way the run goes on unharmed (no
# error, still running) and stopping it works. A close that breaks the run
# ("use of closed object", "Lend before PinTo") is the misbehaviour.
CLOSE_WHILE_RUNNING = """
eng, acq, proc = started([ep], device=DEV)
try:
    {close}
except vg.InUseError:
    pass
time.sleep(0.3)
st = eng.status()
problems = []
if st.error:
    problems.append(f"the close broke the run: {{st.error}}")
elif not st.running:
    problems.append("the engine stopped")
try:
    eng.stop()
except Exception as e:
    problems.append(f"stop() raised {{type(e).__name__}}: {{e}}")
eng.close()
print(problems or "ok")
"""


def running(id: str, setup: str, close: str, devices=("cpu", "cuda:0"), **kw) -> None:
    code = RIG + textwrap.dedent(setup) + CLOSE_WHILE_RUNNING.format(close=close)
    CASES.extend(variants(f"{F}/{id}", code, devices=devices, prints="ok", timeout=12, **kw))


HOST_EP = "ep = vg.StackHostTensorEndpointInt8(); ep.volume_callback = lambda *a: None\n"
running("close_endpoint_while_running", HOST_EP, "ep.close()",
        issue="ep.close() while the engine runs: Go nil dereference (formatInto)")
running("close_device_endpoint_while_running",
        "ep = vg.StackDeviceTensorEndpointFloat32(); ep.volume_callback = lambda *a: None\n", "ep.close()")
running("close_acquisition_while_running", HOST_EP, "acq.close()",
        issue="acq.close() while the engine runs: fatal fault in cpu.(*Stream).Copy")
running("close_processor_while_running", HOST_EP, "proc.close()",
        issue="processor.close() while it runs breaks the run (GPU)")
running("close_endpoint_stream_while_running", HOST_EP, "ep.stream.close()")
running("reinitialize_acquisition_while_running", HOST_EP, "acq.initialize(acq.config)")
running("reinitialize_processor_while_running", HOST_EP, "proc.initialize(proc.config)")

CASES.append(Case(f"{F}/stop_before_start", RIG + textwrap.dedent("""
    eng, acq, proc = rig([vg.NullEndpoint()], volumes=2)
    try:
        eng.stop()                 # refused, or a no-op: not a silent end of the next run
    except vg.VortexError:
        pass
    eng.start(); eng.wait()
    print(eng.status().volumes)"""), prints="2", timeout=12, issue="stop() before start(): next run 0 volumes"))
CASES.append(Case(f"{F}/wait_holding_tensor_lock", RIG + textwrap.dedent("""
    ep = vg.StackHostTensorEndpointInt8()
    eng, acq, proc = started([ep], volumes=0)
    with ep.tensor:
        eng.wait()"""), raises="LockError", timeout=8,
    issue="wait() while the same thread holds an endpoint's tensor lock deadlocks"))
CASES.append(Case(f"{F}/stop_holding_tensor_lock", RIG + textwrap.dedent("""
    ep = vg.StackHostTensorEndpointInt8()
    eng, acq, proc = started([ep], volumes=0)
    with ep.tensor:
        try:
            eng.stop()             # LockError, or it stops without needing the lock: never a deadlock
        except vg.LockError:
            pass
    eng.stop(); eng.close()
    print("ok")"""), prints="ok", timeout=8))
CASES.append(Case(f"{F}/close_engine_holding_tensor_lock", RIG + textwrap.dedent("""
    ep = vg.StackHostTensorEndpointInt8()
    eng, acq, proc = started([ep], volumes=0)
    with ep.tensor as v:
        try:
            eng.close()
        except vg.LockError:
            pass
        v.sum()
    eng.close()
    print("ok")"""), prints="ok", timeout=8))
CASES.append(Case(f"{F}/callback_sys_exit", RIG + textwrap.dedent("""
    ep = vg.StackHostTensorEndpointInt8()
    ep.volume_callback = lambda *a: sys.exit(3)
    eng, acq, proc = started([ep], volumes=0)
    try:
        eng.wait()                 # returns or raises: the engine must not stall
    except BaseException as e:
        pass
    eng.close()
    print("ok")"""), prints="ok", timeout=10, issue="volume_callback calling sys.exit(): wait() never returns"))
CASES.append(Case(f"{F}/callback_keyboard_interrupt", RIG + textwrap.dedent("""
    ep = vg.StackHostTensorEndpointInt8()
    def cb(*a):
        raise KeyboardInterrupt
    ep.volume_callback = cb
    eng, acq, proc = started([ep], volumes=0)
    try:
        eng.wait()
    except BaseException as e:
        pass
    eng.close()
    print("ok")"""), prints="ok", timeout=10))
CASES.append(Case(f"{F}/event_callback_sys_exit", RIG + textwrap.dedent("""
    ep = vg.NullEndpoint()
    eng, acq, proc = rig([ep], volumes=2)
    eng.event_callback = lambda ev, exc: sys.exit(1)
    eng.start()
    try:
        eng.wait()
    except BaseException:
        pass
    eng.close()
    print("ok")"""), prints="ok", timeout=10))
CASES.append(Case(f"{F}/callback_closes_its_endpoint", RIG + textwrap.dedent("""
    ep = vg.StackHostTensorEndpointInt8()
    def cb(*a):
        try:
            ep.close()
        except vg.InUseError:
            pass
    ep.volume_callback = cb
    eng, acq, proc = started([ep], volumes=0)
    time.sleep(0.2)
    try:
        eng.stop()
    except vg.VortexError:
        pass
    eng.close()
    print("ok")"""), prints="ok", timeout=10))
CASES.append(Case(f"{F}/callback_closes_engine", RIG + textwrap.dedent("""
    ep = vg.StackHostTensorEndpointInt8()
    holder = {}
    def cb(*a):
        try:
            holder["eng"].close()
        except vg.VortexError:
            pass
    ep.volume_callback = cb
    eng, acq, proc = rig([ep], volumes=0); holder["eng"] = eng
    eng.start()
    try:
        eng.wait_for(3)            # ClosedError once the callback closed it
        eng.close()
    except vg.VortexError:
        pass
    print("ok")"""), prints="ok", timeout=10))
CASES.append(Case(f"{F}/callback_waits_on_engine", RIG + textwrap.dedent("""
    ep = vg.NullEndpoint(); seen = []
    holder = {}
    def cb(*a):
        try:
            holder["eng"].wait()
        except vg.VortexError as e:
            seen.append("refused")
    ep.volume_callback = cb
    eng, acq, proc = rig([ep], volumes=2); holder["eng"] = eng
    eng.start(); eng.wait()
    print(seen[:1])"""), prints="['refused']", timeout=10))
CASES.append(Case(f"{F}/start_twice", RIG + textwrap.dedent("""
    eng, acq, proc = started([vg.NullEndpoint()], volumes=0)
    try:
        eng.start()                    # vortex: a no-op while the session exists
        print("ok" if eng.status().running else "the session ended")
    finally:
        eng.stop()"""), prints="ok", timeout=10))
CASES.append(Case(f"{F}/close_while_running", RIG + textwrap.dedent("""
    ep = vg.StackHostTensorEndpointInt8(); ep.volume_callback = lambda *a: None
    eng, acq, proc = started([ep], volumes=0)
    eng.close()                    # stops the run: no crash, no hang
    print("ok")"""), prints="ok", timeout=10))
CASES.append(Case(f"{F}/engine_dropped_while_running", RIG + textwrap.dedent("""
    ep = vg.StackHostTensorEndpointInt8(); ep.volume_callback = lambda *a: None
    eng, acq, proc = started([ep], volumes=0)
    del eng; gc.collect(); time.sleep(0.2)
    print("ok")"""), prints="ok", timeout=10))
CASES.append(Case(f"{F}/exit_while_running", RIG + textwrap.dedent("""
    ep = vg.StackHostTensorEndpointInt8(); ep.volume_callback = lambda *a: None
    eng, acq, proc = started([ep], volumes=0)
    print("ok")                     # the interpreter exits with the engine running"""), prints="ok", timeout=10))
CASES.append(Case(f"{F}/endpoint_in_two_running_engines", RIG + textwrap.dedent("""
    ep = vg.StackHostTensorEndpointInt8()
    eng1, _, _ = started([ep], volumes=0)
    try:
        eng2, _, _ = started([ep], volumes=0)
        how = "both"
    except (vg.VortexError, ValueError):
        how = "refused"
    time.sleep(0.2)
    eng1.stop(); eng1.close()
    if how == "both":
        eng2.stop(); eng2.close()
    print("ok")"""), prints="ok", timeout=12))

# GPU-only: the stream of a closed endpoint (cuStreamSynchronize on a destroyed handle).
CASES.extend(variants(f"{F}/endpoint_stream_after_close", RIG + textwrap.dedent("""
    ep = vg.StackDeviceTensorEndpointFloat32()
    eng, acq, proc = rig([ep], volumes=1, device=DEV)
    eng.start(); eng.wait(); s = ep.stream; eng.close(); ep.close()
    s.synchronize()"""), raises="ClosedError", timeout=12, issue="ep.stream used after ep.close() kills the process (GPU)"))


@pytest.mark.parametrize("case", register(CASES))
def test_engine(case: Case) -> None:
    check(case)
