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

case("log", """
    from vortexgo import log
    fs = log.FileSink(os.path.join(TMP, "a.log"))
    lg = log.Logger("x", sinks=[fs, log.StdErrSink()])
    for sink in (log.StdErrSink(), log.StdOutSink(), log.PythonSink(), fs):
        copies(type(sink).__name__, sink, lambda s: s.flush())
    copies("Logger", lg, lambda l: l.warn("still logging"))
    # SinkList is a value: copy.copy shares the sinks (vortex's SinkList(other)); deep copies and pickle
    # refuse with the sink's TypeError
    sl = lg.sinks
    c = copy.copy(sl)
    if type(c) is not log.SinkList or c is sl or list(c) != list(sl) or any(a is not b for a, b in zip(c, sl)):
        _problems.append(f"copy.copy(SinkList): {c!r}")
    for how, fn in (("deepcopy", copy.deepcopy), ("pickle", pickle.dumps)):
        try:
            fn(sl)
        except TypeError as e:
            if "FileSink" not in str(e) and "StdErrSink" not in str(e):
                _problems.append(f"SinkList {how}: TypeError naming no sink: {e}")
        else:
            _problems.append(f"SinkList {how}: copied the sinks")
    gc.collect(); lg.flush()
    if open(os.path.join(TMP, "a.log")).read().count("still logging") != 3:  # one per copies() round
        _problems.append("the file sink lost records after the copies")
""", issue="copy.deepcopy of a log sink or logger failed with \"cannot pickle '_thread.lock' object\"; copy.copy shared the file")
case("lists", """
    from vortexgo import marker as vm, scan as vs, engine as ve
    s = vs.RasterScan(); cfg = vs.RasterScanConfig(); cfg.ascans_per_bscan = 10; cfg.bscans_per_volume = 3
    cfg.bypass_limits_check = True; s.initialize(cfg)
    markers = vm.MarkerList([vm.ScanBoundary(0, 1), vm.VolumeBoundary(5, 2, 0, True), vm.Event(7, 3)])
    lists = [("MarkerList", markers), ("FlagsList", vm.FlagsList([vm.Flags(3), vm.Flags(5)])),
             ("SegmentList", vs.SegmentList([vs.Segment(), vs.Segment()])), ("StrobeList", vg.EngineConfig().strobes)]
    for label, lst in lists:
        cls = type(lst)
        for how, fn in (("copy", copy.copy), ("deepcopy", copy.deepcopy), ("pickle", lambda o: pickle.loads(pickle.dumps(o))),
                        ("copy()", lambda o: o.copy()), ("[:]", lambda o: o[:]), ("constructor", lambda o: cls(o))):
            try:
                c = fn(lst)
            except Exception as e:
                _problems.append(f"{label} {how}: {type(e).__name__}: {str(e)[:150]}"); continue
            if type(c) is not cls or c is lst or len(c) != len(lst):
                _problems.append(f"{label} {how}: {type(c).__name__} of {len(c)}, expected an independent {cls.__name__}")
                continue
            if label != "SegmentList" and list(c) != list(lst):  # Segment has no ==: compared by repr below
                _problems.append(f"{label} {how}: not equal")
            if repr(c) != repr(lst):
                _problems.append(f"{label} {how}: repr {repr(c)[:80]} != {repr(lst)[:80]}")
            deep = how in ("deepcopy", "pickle")
            if deep and any(a is b for a, b in zip(c, lst)):
                _problems.append(f"{label} {how}: shares its items")
            c.append(lst[0]) if label != "StrobeList" else c.append(ve.SampleStrobe())
            if len(lst) == len(c):
                _problems.append(f"{label} {how}: appending to the copy changed the original")
        gc.collect()
    if type(markers[1:]) is not vm.MarkerList or markers[1] is not markers[1:][0]:
        _problems.append("a MarkerList slice is not a MarkerList of the same markers")
    d = copy.deepcopy(markers); d[1].sample = 99
    if markers[1].sample != 5:
        _problems.append("deepcopy(MarkerList) shares its markers")
    # divide / cycle hold processors: a shallow copy shares them, a deep copy refuses with the processor's TypeError
    p = vg.CPUProcessor(samples_per_record=64, ascans_per_block=8)
    for node in (ve.divide([p]), ve.cycle([p])):
        c = copy.copy(node)
        if type(c) is not type(node) or c[0] is not p:
            _problems.append(f"copy.copy({type(node).__name__}): {c!r}")
        try:
            copy.deepcopy(node)
        except TypeError as e:
            if "CPUProcessor" not in str(e):
                _problems.append(f"deepcopy({type(node).__name__}): {e}")
        else:
            _problems.append(f"deepcopy({type(node).__name__}) copied a processor")
    gc.collect(); p.initialize(p.config)
""", issue="list-likes: slices and copy() were plain lists; unknown attributes were stored")
case("scoped_capture", """
    s = vg.Stream()
    with vg.ScopedCapture(s) as cap:
        a = vg.zeros(3, stream=s) if "stream" in vg.zeros.__code__.co_varnames else vg.zeros(3)
    copies("ScopedCapture", cap, lambda c: c.graph.launch(s))
    copies("ScopedCapture (unused)", vg.ScopedCapture(s), lambda c: repr(c))
    s.synchronize()
""")

PARAMS = register(CASES)


@pytest.mark.parametrize("case", PARAMS)
def test_copies(case: Case) -> None:
    check(case)
