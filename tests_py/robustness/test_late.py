"""Late changes (issue 24): a change made after the object it changes was
wired in must take effect, as vortex's does, or be refused clearly; never be
silently ignored. ``executor.initialize(config)`` after its endpoint was
built (vortex's endpoints execute with the executor's current
configuration), ``engine.scan_queue = ScanQueue()`` after prepare (vortex's
session takes the queue at start), ``scan_queue.reset()`` while the engine
plays the queue (vortex's reset drops the scans; before the fix the run died
later with a FormatPlanner message naming neither)."""

from __future__ import annotations

import textwrap

import pytest

from harness import RIG, Case, check, register, variants

F = "late"

CASES: list[Case] = []

EXECUTOR = RIG + """
from vortexgo.format import StackFormatExecutor, StackFormatExecutorConfig, SampleSlice
def volume_of(ep):
    with ep.tensor as v:
        return np.array(v.get() if hasattr(v, "get") else v)
"""

# initialize after the endpoint was built: the engine uses the new slice.
CASES.extend(variants(f"{F}/executor_initialize_after_endpoint_built", EXECUTOR + textwrap.dedent("""
    sfe = StackFormatExecutor(StackFormatExecutorConfig())
    ep = (vg.StackHostTensorEndpointFloat32 if DEV == "cpu" else vg.StackDeviceTensorEndpointFloat32)(sfe)
    sfe.initialize(StackFormatExecutorConfig(sample_slice=SampleSlice(0, 32)))
    eng, acq, proc = rig([ep], volumes=1, device=DEV)
    eng.start(); eng.wait()
    print(tuple(ep.tensor.shape))"""), prints="(4, 16, 32)", timeout=30,
    issue="executor.initialize(new_config) after its endpoint was built has no effect"))
# The same for a storage endpoint's executor.
CASES.append(Case(f"{F}/storage_executor_initialize_after_endpoint_built", EXECUTOR + textwrap.dedent("""
    sfe = StackFormatExecutor(StackFormatExecutorConfig())
    st = stack(os.path.join(TMP, "v.npy"), shape=(B, A, 32))
    ep = vg.AscanStackEndpoint(sfe, st)
    sfe.initialize(StackFormatExecutorConfig(sample_slice=SampleSlice(0, 32)))
    eng, acq, proc = rig([ep], volumes=1)
    eng.start(); eng.wait(); eng.close(); st.close()
    print(np.load(os.path.join(TMP, "v.npy")).shape[:4])"""),
    prints="(1, 4, 16, 32)", timeout=30))
# A planner re-initialized before prepare: the engine plans with the new shape.
CASES.append(Case(f"{F}/planner_initialize_after_config", RIG + textwrap.dedent("""
    ep = vg.StackHostTensorEndpointInt8()
    ec, acq, proc = config([ep], volumes=1)
    fmt = ec._formatters[0][0]
    fmt.initialize(FormatPlannerConfig(B // 2, A))   # a volume of 2 B-scans now (the rest dropped)
    eng = new_engine(ec, 1); eng.prepare(); eng.start(); eng.wait()
    print(eng.status().volumes, tuple(ep.tensor.shape))"""), prints="1 (2, 16, 64)", timeout=20))
# While an engine holds them, re-initializing is refused clearly (its volume
# was sized for the old configuration), and works once the engine is closed.
CASES.append(Case(f"{F}/executor_initialize_while_engine_holds_it", EXECUTOR + textwrap.dedent("""
    sfe = StackFormatExecutor(StackFormatExecutorConfig())
    ep = vg.StackHostTensorEndpointFloat32(sfe)
    eng, acq, proc = started([ep], volumes=0)
    expect("initialize while running", lambda: sfe.initialize(StackFormatExecutorConfig(sample_slice=SampleSlice(0, 32))),
           "InUseError", "StackFormatExecutor", "close")
    fmt = eng.config._formatters[0][0]
    expect("planner initialize while running", lambda: fmt.initialize(FormatPlannerConfig(B, A)),
           "InUseError", "FormatPlanner", "close")
    time.sleep(0.2)
    if eng.status().error or not eng.status().running:
        _problems.append(f"the run was disturbed: {eng.status().error}")
    eng.stop(); eng.close()
    sfe.initialize(StackFormatExecutorConfig(sample_slice=SampleSlice(0, 32)))
    eng, acq, proc = rig([ep], volumes=1)
    eng.start(); eng.wait()
    if tuple(ep.tensor.shape) != (4, 16, 32):
        _problems.append(f"the rebuilt engine's volume is {tuple(ep.tensor.shape)}, expected (4, 16, 32)")
    report()"""), prints="ok", timeout=30))

# engine.scan_queue = ScanQueue() after prepare: the next start plays it.
CASES.extend(variants(f"{F}/scan_queue_replaced_after_prepare", RIG + textwrap.dedent("""
    eng, acq, proc = rig([vg.NullEndpoint()], volumes=0, device=DEV)
    q = _vs.ScanQueue()
    q.append(raster(False)); q.append(raster(False))
    eng.scan_queue = q
    eng.start(); eng.wait()
    print(eng.status().volumes, eng.scan_queue is q)"""), prints="2 True", timeout=20,
    issue="engine.scan_queue = ScanQueue() after prepare is accepted and ignored (0 volumes)"))
# Between sessions it works too; during one it is refused (InUseError naming scan_queue).
CASES.append(Case(f"{F}/scan_queue_replaced_between_and_during_sessions", RIG + textwrap.dedent("""
    eng, acq, proc = rig([vg.NullEndpoint()], volumes=1)
    eng.start(); eng.wait(); eng.stop()
    q = _vs.ScanQueue(); q.append(raster(False)); q.append(raster(False)); q.append(raster(False))
    eng.scan_queue = q
    fmt = eng.config._formatters[0][0]; fmt.reset()
    eng.start(); eng.wait(); eng.stop()
    if eng.status().volumes != 3:
        _problems.append(f"{eng.status().volumes} volumes from the new queue, expected 3")
    eng.scan_queue.append(raster(True))
    eng.start(); time.sleep(0.1)
    old = eng.scan_queue
    expect("replaced while running", lambda: setattr(eng, "scan_queue", _vs.ScanQueue()), "InUseError", "scan_queue", "stop")
    if eng.scan_queue is not old:
        _problems.append("the refused queue was kept")
    eng.stop()
    expect("not a queue", lambda: setattr(eng, "scan_queue", 3), "TypeError", "scan_queue")
    report()"""), prints="ok", timeout=20))

# scan_queue.reset() while the engine plays it: vortex's reset drops the
# scans, so the queue runs dry and the session completes (the engine's
# post-scan records, then its last block) with every volume delivered; the
# next session plays what is queued then.
CASES.extend(variants(f"{F}/scan_queue_reset_while_playing", RIG + textwrap.dedent("""
    ep = vg.NullEndpoint(); vols = []
    ep.volume_callback = lambda *a: vols.append(a)
    eng, acq, proc = started([ep], volumes=0, device=DEV)
    eng.scan_queue.reset()
    problems = []
    try:
        eng.wait()                 # the session completes: no error
    except Exception as e:
        problems.append(f"wait() raised {type(e).__name__}: {e}")
    if eng.status().volumes != len(vols) or not vols:
        problems.append(f"{eng.status().volumes} volumes formatted, {len(vols)} delivered")
    eng.stop()
    eng.scan_queue.append(raster(False)); eng.scan_queue.append(raster(False))
    eng.config._formatters[0][0].reset()
    eng.start(); eng.wait()
    if eng.status().volumes != 2:
        problems.append(f"{eng.status().volumes} volumes in the next session, expected 2")
    print(problems or "ok")"""), prints="ok", timeout=20,
    issue="scan_queue.reset() while the engine plays it kills the run with a FormatPlanner message"))
# reset(sample, position, velocity) while playing cannot move the stream's
# sample: refused naming scan_queue.reset, the run unharmed.
CASES.append(Case(f"{F}/scan_queue_reset_at_while_playing", RIG + textwrap.dedent("""
    eng, acq, proc = started([vg.NullEndpoint()], volumes=0)
    expect("reset(sample, ...)", lambda: eng.scan_queue.reset(0, [0, 0], [0, 0]), "InUseError", "scan_queue.reset", "stop")
    time.sleep(0.2)
    if eng.status().error or not eng.status().running:
        _problems.append(f"the run was disturbed: {eng.status().error}")
    eng.stop()
    eng.scan_queue.reset(0, [0, 0], [0, 0])     # between sessions: as vortex
    eng.scan_queue.append(raster(False))
    fmt = eng.config._formatters[0][0]; fmt.reset()
    eng.start(); eng.wait()
    if eng.status().volumes != 1:
        _problems.append(f"{eng.status().volumes} volumes after the reset, expected 1")
    report()"""), prints="ok", timeout=20))


@pytest.mark.parametrize("case", register(CASES))
def test_late(case: Case) -> None:
    check(case)
