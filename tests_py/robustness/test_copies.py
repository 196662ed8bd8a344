"""copy.copy, copy.deepcopy and pickle of every public class (issue 24).

A class that owns a Go handle refuses with TypeError (saying what to do
instead) before anything is built; a config copies into an independent,
equal config. Either way, once the copy (or the half-built one) is
collected, the original and the process still work: each case collects,
uses the original and allocates on the default device (a half-built copy
of an array used to release the process's default device)."""

from __future__ import annotations

import textwrap

import pytest

from harness import Case, check, register

F = "copies"

CASES: list[Case] = []

# Runs the three copies of `obj`; refused ones must be TypeError naming the
# class and saying what to do; accepted ones must be independent equal copies
# (configs). Then collects and checks the original with `use(obj)` and the process.
HARNESS = """
import copy, pickle
def copies(label, obj, use, config=False, singleton=False):
    name = type(obj).__name__
    for how, fn in (("copy", copy.copy), ("deepcopy", copy.deepcopy),
                    ("pickle", lambda o: pickle.loads(pickle.dumps(o)))):
        try:
            c = fn(obj)
        except TypeError as e:
            m = str(e)
            if config:
                _problems.append(f"{label} {how}: refused a config: {m[:120]}")
            elif name not in m or not any(w in m for w in ("share", "build", "make", "instead")):
                _problems.append(f"{label} {how}: TypeError that says not what to do: {m[:150]}")
        except Exception as e:
            _problems.append(f"{label} {how}: {type(e).__name__}: {str(e)[:150]} (expected TypeError or a copy)")
        else:
            if not config:
                _problems.append(f"{label} {how}: copied an object that owns a Go handle")
            elif (c is obj) != singleton or c != obj:
                _problems.append(f"{label} {how}: copy is {'the same object' if c is obj else 'not equal'}")
        c = None
        gc.collect()
        try:
            use(obj)
            vg.get_device(); vg.zeros(2).numpy()
        except Exception as e:
            _problems.append(f"{label} {how}: original or process broken after the copy was collected: "
                             f"{type(e).__name__}: {str(e)[:150]}")
"""


def case(id: str, code: str, **kw) -> None:
    CASES.append(Case(f"{F}/{id}", HARNESS + textwrap.dedent(code) + "\nreport()\n", prints="ok", **kw))


case("array", """
    a = vg.from_numpy(np.arange(3, dtype=np.float32))
    copies("Array", a, lambda a: a.numpy().tolist() == [0, 1, 2] or _problems.append("array values changed"))
    copies("Array view", a.reshape((3, 1)), lambda v: v.numpy())
    copies("Device", vg.get_device(), lambda d: d.synchronize(), config=True, singleton=True)
""", issue="copy.deepcopy(vg.zeros(3)): the half-built copy destroyed the default device")
case("stream_event_tensor", """
    copies("Stream", vg.Stream(), lambda s: s.synchronize())
    copies("Event", vg.Event(), lambda e: e.query())
    copies("DeviceTensor", vg.DeviceTensor((2, 3)), lambda t: t.resize((4,)))
    copies("CpuTensorFloat32", vg.memory.CpuTensorFloat32(), lambda t: t.resize((4,)))
""")
case("processors", """
    from vortexgo.process import NullProcessor, CopyProcessor
    p = vg.CPUProcessor(samples_per_record=64, ascans_per_block=8)
    copies("CPUProcessor", p, lambda p: p.initialize(p.config))
    copies("NullProcessor", NullProcessor(), lambda p: repr(p))
    copies("CopyProcessor", CopyProcessor(), lambda p: repr(p))
    copies("ProcessorConfig", p.config, lambda c: c.validate(), config=True)
""", issue="deepcopy of a processor broke the original once collected")
case("acquisitions", """
    a = vg.SimulatedAcquisition(samples_per_record=64, ascans_per_bscan=8, bscans_per_volume=2, volumes=1)
    copies("SimulatedAcquisition", a, lambda a: a.initialize(a.config))
    copies("NullAcquisition", vg.NullAcquisition(), lambda a: repr(a))
    copies("SimulatedAcquisitionConfig", a.config, lambda c: repr(c), config=True)
    copies("NullAcquisitionConfig", vg.NullAcquisitionConfig(), lambda c: repr(c), config=True)
""")
case("scans", """
    from vortexgo import scan as vs
    s = vs.RasterScan(); cfg = vs.RasterScanConfig(); cfg.ascans_per_bscan = 10; cfg.bscans_per_volume = 3; cfg.bypass_limits_check = True
    cfg.inactive_policy = vs.inactive_policy.FixedLinear(5, 7); s.initialize(cfg)
    before = s.scan_buffer().copy()
    copies("RasterScan", s, lambda s: np.array_equal(s.scan_buffer(), before) or _problems.append("scan changed"))
    copies("RadialScan", vs.RadialScan(), lambda s: repr(s))
    copies("ScanQueue", vs.ScanQueue(), lambda q: q.state())
    for cls in (vs.RasterScanConfig, vs.RadialScanConfig, vs.SpiralScanConfig, vs.FreeformScanConfig,
                vs.RepeatedRasterScanConfig, vs.RepeatedRadialScanConfig):
        copies(cls.__name__, cls(), lambda c: repr(c), config=True)
    copies("Range", vg.Range(-1, 2), lambda r: r.length, config=True)
    copies("Limits", vs.Limits(), lambda r: repr(r), config=True)
""", issue="deepcopy(RasterScan) shared state with the original")
case("format", """
    from vortexgo import format as vf
    p = vf.FormatPlanner(vf.FormatPlannerConfig(2, 4))
    copies("FormatPlanner", p, lambda p: p.reset())
    copies("StackFormatExecutor", vf.StackFormatExecutor(vf.StackFormatExecutorConfig()), lambda e: repr(e))
    copies("RadialFormatExecutor", vf.RadialFormatExecutor(), lambda e: repr(e))
    for cls in (vf.FormatPlannerConfig, vf.StackFormatExecutorConfig, vf.RadialFormatExecutorConfig,
                vf.SpiralFormatExecutorConfig, vf.PositionFormatExecutorConfig):
        c = cls()
        copies(cls.__name__, c, lambda c: c.copy(), config=True)
        d = c.copy()
        if d is c or d != c:
            _problems.append(f"{cls.__name__}.copy(): not an independent equal copy")
    r = vf.RadialFormatExecutorConfig(); d = copy.deepcopy(r); d.x_extent = vg.Range(-3, 3)
    if r.x_extent == d.x_extent:
        _problems.append("deepcopy of RadialFormatExecutorConfig shares its extents")
""")
case("storage_and_endpoints", """
    import vortexgo.storage as vst
    st = vg.SimpleStackInt8(); st.open(vg.SimpleStackConfig(os.path.join(TMP, "a.npy"), (2, 3, 4)))
    copies("SimpleStackInt8", st, lambda s: s.write_volume(np.zeros((2, 3, 4), np.int8)))
    copies("SimpleStackConfig", vg.SimpleStackConfig(os.path.join(TMP, "b.npy"), (1, 2, 3)), lambda c: repr(c), config=True)
    from vortexgo.format import StackFormatExecutor, StackFormatExecutorConfig
    ep = vg.StackHostTensorEndpointInt8(StackFormatExecutor(StackFormatExecutorConfig()), (2, 3, 4))
    copies("StackHostTensorEndpointInt8", ep, lambda e: repr(e))
    copies("NullEndpoint", vg.NullEndpoint(), lambda e: repr(e))
""")
case("engine", """
    from vortexgo.format import FormatPlanner, FormatPlannerConfig
    acq = vg.SimulatedAcquisition(samples_per_record=64, ascans_per_bscan=8, bscans_per_volume=2, volumes=1)
    proc = vg.CPUProcessor(samples_per_record=64, ascans_per_block=8)
    ec = vg.EngineConfig(records_per_block=8)
    ec.add_acquisition(acq, [proc])
    eng = vg.Engine(ec)
    copies("Engine", eng, lambda e: repr(e))
    # An EngineConfig holds its stages: a copy that shares them, or a refusal.
    for how, fn in (("deepcopy", copy.deepcopy), ("pickle", lambda o: pickle.loads(pickle.dumps(o)))):
        try:
            fn(ec)
        except TypeError:
            pass
        except Exception as e:
            _problems.append(f"EngineConfig {how}: {type(e).__name__}: {e}")
        gc.collect()
    proc.initialize(proc.config); acq.initialize(acq.config); vg.zeros(2).numpy()
""")
case("toolkit", """
    copies("TripleBuffer", vg.TripleBuffer("cpu", 16), lambda t: repr(t))
    copies("AsyncCoordinator", vg.AsyncCoordinator("cpu"), lambda c: c.pending)
    copies("BufferPool", vg.BufferPool(64, 1, device="cpu"), lambda p: p.stats())
    r = vg.Readback(64, "cpu"); h = r.readback(vg.zeros(4, device="cpu"))
    copies("Readback", r, lambda r: r.stats())
    copies("ReadbackHandle", h, lambda h: h.get())
    copies("ManagedGpuContext", vg.ManagedGpuContext("cpu"), lambda c: repr(c))
""")
case("go_handles_refuse", """
    # The Go wrappers themselves (defence in depth, for a container holding one).
    a = vg.zeros(3)
    for fn in (copy.copy, copy.deepcopy, pickle.dumps):
        try:
            fn(a._buf)
        except TypeError:
            pass
        else:
            _problems.append(f"{fn.__name__} of a Go handle did not refuse")
        gc.collect()
    a.numpy(); vg.zeros(2); vg.get_device().synchronize()
""")

PARAMS = register(CASES)


@pytest.mark.parametrize("case", PARAMS)
def test_copies(case: Case) -> None:
    check(case)
