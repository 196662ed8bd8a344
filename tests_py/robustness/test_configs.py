"""Config and object attributes (issue 24): a misspelt or unimplemented
attribute raises AttributeError naming the class and the attribute, with the
closest field suggested, as vortex's classes do; vortex's paired fields of the
radial and spiral format executors (volume_xy_extent, segment_rt_extent,
segment_extent, radial_shape, spiral_shape) exist with vortex's defaults and
behave as vortex's; user subclasses and vortexgo's own attributes still work.
The golden values come from vortex's C++ core (format/radial.hpp,
spiral.hpp: range_t defaults to (-inf, inf), counts to 0); a case compares
with vortex itself when it is importable (../shared/vortex-build) and skips
that part otherwise."""

from __future__ import annotations

import textwrap

import pytest

from harness import Case, check, register

F = "configs"

CASES: list[Case] = []


def ok(id: str, code: str, **kw) -> None:
    CASES.append(Case(f"{F}/{id}", textwrap.dedent(code) + "\nreport()\n", prints="ok", **kw))


def err(id: str, code: str, raises: str, *words: str, **kw) -> None:
    CASES.append(Case(f"{F}/{id}", code, raises=raises, words=words, **kw))


err("misspelt_field", """
    cfg = vg.RasterScanConfig()
    cfg.ascans_per_bscn = 5""", "AttributeError", "RasterScanConfig", "ascans_per_bscn", "ascans_per_bscan",
    issue="cfg.ascans_per_bscn = 5 was stored and ignored")
err("misspelt_processor_field", """
    vg.ProcessorConfig().samples_per_recrd = 5""", "AttributeError", "ProcessorConfig", "samples_per_recrd",
    "samples_per_record")

# Every public config class and object class we can build with no arguments.
ok("unknown_attributes_everywhere", """
    from vortexgo import format as vf, process as vp, acquire as va, scan as vs, storage as vst, simple as vsi
    from vortexgo import endpoint as ven
    from vortexgo.format import StackFormatExecutor, StackFormatExecutorConfig
    made = [
        vf.StackFormatExecutorConfig, vf.RadialFormatExecutorConfig, vf.SpiralFormatExecutorConfig,
        vf.PositionFormatExecutorConfig, vf.FormatPlannerConfig, vf.FormatPlanner, vf.StackFormatExecutor,
        vf.RadialFormatExecutor, vf.SpiralFormatExecutor, vf.PositionFormatExecutor, lambda: vf.SimpleSlice(3),
        vp.ProcessorConfig, vp.NullProcessorConfig, vp.CopyProcessorConfig, vp.CPUProcessor, vp.NullProcessor,
        vp.CopyProcessor, va.SimulatedAcquisitionConfig, va.NullAcquisitionConfig, va.FileAcquisitionConfig,
        va.SimulatedAcquisition, va.NullAcquisition,
        vs.RasterScanConfig, vs.RepeatedRasterScanConfig, vs.RadialScanConfig, vs.RepeatedRadialScanConfig,
        vs.SpiralScanConfig, vs.FreeformScanConfig, vs.RasterScan, vs.RadialScan, vs.SpiralScan, vs.FreeformScan,
        vs.ScanQueue, vs.Segment, vs.Limits, vs.Range, vs.RasterWaypoints, vs.SequentialPattern,
        vs.warp.NoWarp, vs.warp.Angular, vs.warp.Telecentric, vs.inactive_policy.MinimumDynamicLimited,
        vs.inactive_policy.FixedLinear, vs.RepeatPack,
        vst.SimpleStackConfig, vst.SimpleStreamConfig, vst.StreamDumpConfig, vst.MarkerLogConfig,
        vst.BroctStorageConfig, vst.HDF5StackConfig, vst.SimpleStackInt8, vst.StreamDump, vst.BroctStorage,
        vg.EngineConfig, vg.Engine, vg.NullEndpoint,
        lambda: vg.StackHostTensorEndpointInt8(StackFormatExecutor(StackFormatExecutorConfig()), (2, 3, 4)),
        vsi.SimpleEngineConfig, vg.AsyncCoordinator, lambda: vg.TripleBuffer("cpu", 16),
        lambda: vg.BufferPool(64, 1, device="cpu"), lambda: vg.Readback(64, "cpu"),
        lambda: vg.DeviceTensor((2,)), vg.memory.CpuTensorInt8,
    ]
    for make in made:
        o = make()
        name = type(o).__name__
        try:
            o.zzz_not_a_field = 1
        except AttributeError as e:
            frozen = type(e).__name__ == "FrozenInstanceError"  # an immutable value (SimpleSlice): refused too
            if "zzz_not_a_field" not in str(e) or (name not in str(e) and not frozen):
                _problems.append(f"{name}: AttributeError naming not the class and attribute: {e}")
        except Exception as e:
            _problems.append(f"{name}: {type(e).__name__}: {e} (expected AttributeError)")
        else:
            _problems.append(f"{name}: unknown attribute stored")
""")

ok("suggests_closest_field", """
    from vortexgo.format import RadialFormatExecutorConfig, FormatPlannerConfig
    for obj, bad, good in ((RadialFormatExecutorConfig(), "volume_xy_extnt", "volume_xy_extent"),
                           (FormatPlannerConfig(), "segments_per_volum", "segments_per_volume"),
                           (vg.SimulatedAcquisitionConfig(), "bscans_per_volumes", "bscans_per_volume"),
                           (vg.CPUProcessor(), "confg", "config")):
        try:
            setattr(obj, bad, 1)
        except AttributeError as e:
            if good not in str(e):
                _problems.append(f"{type(obj).__name__}.{bad}: no suggestion of {good!r}: {e}")
        else:
            _problems.append(f"{type(obj).__name__}.{bad} stored")
        try:
            getattr(obj, bad)
        except AttributeError as e:
            if good not in str(e):
                _problems.append(f"reading {type(obj).__name__}.{bad}: no suggestion of {good!r}: {e}")
""")

ok("known_and_internal_attributes_still_work", """
    from vortexgo.format import FormatPlannerConfig, FormatPlanner
    c = FormatPlannerConfig(); c.shape = (3, 4); c.mask = 5
    p = vg.CPUProcessor(samples_per_record=64, ascans_per_block=8)
    p.logger = None; p.config  # set after __init__, read back
    e = vg.SimpleEngineConfig() if hasattr(vg, "SimpleEngineConfig") else None
    if e is not None:
        e.bscans_per_volume = 7
    # A user's subclass of one of our classes is free, as a subclass of a pybind11 class is.
    class MyConfig(vg.ProcessorConfig):
        pass
    m = MyConfig(); m.my_note = "mine"
    class MyProcessor(vg.CPUProcessor):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            self.calls = 0
    q = MyProcessor(); q.calls += 1
    if (list(c.shape), m.my_note, q.calls) != ([3, 4], "mine", 1):  # vortex's shape reads back a list
        _problems.append(f"read back {(c.shape, m.my_note, q.calls)}")
""")

# --- vortex's paired fields of the radial and spiral executors ---------------------------------

ok("radial_vortex_fields", """
    import math
    from vortexgo.format import RadialFormatExecutorConfig, RadialFormatExecutor
    c = RadialFormatExecutorConfig()
    # vortex's defaults (radial.hpp: range_t is (-inf, inf), the shape 0s): unset
    inf = math.inf
    want = ((vg.Range(-inf, inf),) * 2, (vg.Range(-inf, inf),) * 2, (0, 0))
    got = (tuple(c.volume_xy_extent), tuple(c.segment_rt_extent), tuple(c.radial_shape))
    if got != want:
        _problems.append(f"defaults {got}, expected vortex's {want}")
    expect("initialize with vortex's defaults", lambda: RadialFormatExecutor(c), "ValueError", "x_extent")
    c.volume_xy_extent = (vg.Range(-2, 2), vg.Range(-3, 3))
    c.segment_rt_extent = (vg.Range(-1, 1), vg.Range(0, math.pi))
    c.radial_shape = (4, 8)
    if (c.x_extent, c.y_extent, c.radial_extent, c.angular_extent) != (vg.Range(-2, 2), vg.Range(-3, 3), vg.Range(-1, 1), vg.Range(0, math.pi)):
        _problems.append("volume_xy_extent / segment_rt_extent did not set the accessors")
    if (c.radial_segments_per_volume, c.radial_records_per_segment) != (4, 8):
        _problems.append("radial_shape did not set the counts")
    RadialFormatExecutor(c)  # now valid
    expect("volume_xy_extent of one", lambda: setattr(c, "volume_xy_extent", vg.Range(0, 1)), "TypeError", "volume_xy_extent")
    c.y_extent = vg.Range(-1e308, 1e308)
    expect("overflowing length", lambda: RadialFormatExecutor(c), "ValueError", "y_extent")
""", issue="RadialFormatExecutorConfig.volume_xy_extent / segment_rt_extent were stored and ignored")

ok("spiral_vortex_fields", """
    import math
    from vortexgo.format import SpiralFormatExecutorConfig, SpiralFormatExecutor
    c = SpiralFormatExecutorConfig()
    inf = math.inf
    got = (tuple(c.volume_xy_extent), c.segment_extent, c.radial_extent, tuple(c.spiral_shape), c.spiral_velocity)
    want = ((vg.Range(-inf, inf),) * 2, vg.Range(-inf, inf), vg.Range(-inf, inf), (0, 0), 0.0)
    if got != want:
        _problems.append(f"defaults {got}, expected vortex's {want}")
    expect("initialize with vortex's defaults", lambda: SpiralFormatExecutor(c), "ValueError", "extent")
    c.volume_xy_extent = (vg.Range(-1, 1), vg.Range(-1, 1))
    c.segment_extent = vg.Range(0, 1)
    c.spiral_shape = (2, 100)
    c.spiral_velocity = 3.0
    if c.radial_extent != vg.Range(0, 1) or (c.rings_per_spiral, c.samples_per_spiral) != (2, 100):
        _problems.append("segment_extent / spiral_shape did not set the accessors")
    SpiralFormatExecutor(c)
""", issue="SpiralFormatExecutorConfig.volume_xy_extent was stored and ignored")

ok("radial_extents_change_the_volume", """
    # The extents reach the Go stage: the same segment rectified onto two grids
    # of different x_extent gives different volumes, and the one whose grid
    # misses the scan entirely stays empty (vortex writes only covered pixels).
    import math
    from vortexgo.format import RadialFormatExecutorConfig, RadialFormatExecutor
    from vortexgo.endpoint import RadialDeviceTensorEndpointFloat32
    def rec(xy):
        c = RadialFormatExecutorConfig()
        c.volume_xy_extent = xy
        c.segment_rt_extent = (vg.Range(-1, 1), vg.Range(0, math.pi))
        c.radial_shape = (4, 8)
        return c._record()
    a, b = rec((vg.Range(-1, 1), vg.Range(-1, 1))), rec((vg.Range(5, 6), vg.Range(5, 6)))
    if a["VolumeXYExtent"] == b["VolumeXYExtent"]:
        _problems.append("volume_xy_extent did not reach the Go record")
    if a["VolumeXYExtent"][0] != {"Min": -1.0, "Max": 1.0} or a["SegmentRTExtent"][1]["Max"] != math.pi:
        _problems.append(f"record {a}")
""")

ok("matches_vortex_when_available", """
    import importlib.util, math
    from vortexgo.format import RadialFormatExecutorConfig, SpiralFormatExecutorConfig
    vf = None
    if importlib.util.find_spec("vortex") is not None:  # else the golden values above stand
        import vortex.format as vf
    def compare(vf):
        r, ours = vf.RadialFormatExecutorConfig(), RadialFormatExecutorConfig()
        def pair(rs): return [(x.min, x.max) for x in rs]
        if pair(r.volume_xy_extent) != pair(ours.volume_xy_extent) or pair(r.segment_rt_extent) != pair(ours.segment_rt_extent) \\
                or list(r.radial_shape) != list(ours.radial_shape):
            _problems.append("radial defaults differ from vortex's")
        s, ours_s = vf.SpiralFormatExecutorConfig(), SpiralFormatExecutorConfig()
        if pair(s.volume_xy_extent) != pair(ours_s.volume_xy_extent) or list(s.spiral_shape) != list(ours_s.spiral_shape) \\
                or s.spiral_velocity != ours_s.spiral_velocity:
            _problems.append("spiral defaults differ from vortex's")
        for o in (r, ours):
            try:
                o.ascans_per_bscn = 5
            except AttributeError:
                pass
            else:
                _problems.append(f"{type(o).__module__}: unknown attribute stored")
    if vf is not None:
        compare(vf)
""")

ok("configs_copy", """
    import copy, pickle
    from vortexgo import format as vf, scan as vs
    for c in (vg.ProcessorConfig(resampling_samples=np.arange(4, dtype=np.float32)), vf.FormatPlannerConfig(3, 4),
              vf.RadialFormatExecutorConfig(), vs.RasterScanConfig(), vg.SimulatedAcquisitionConfig(),
              vg.SimpleStackConfig("x.npy", (1, 2, 3))):
        for how, fn in (("copy()", lambda c: c.copy()), ("deepcopy", copy.deepcopy),
                        ("pickle", lambda c: pickle.loads(pickle.dumps(c)))):
            try:
                d = fn(c)
            except Exception as e:
                _problems.append(f"{type(c).__name__} {how}: {type(e).__name__}: {e}"); continue
            try:
                same = bool(d == c)
            except ValueError:  # dataclass == over array fields: compare field by field
                same = vars(d).keys() == vars(c).keys() and all(
                    np.array_equal(vars(d)[k], vars(c)[k]) if isinstance(vars(c)[k], np.ndarray) else vars(d)[k] == vars(c)[k]
                    for k in vars(c))
            if d is c or not same:
                _problems.append(f"{type(c).__name__} {how}: not an independent equal copy")
""")

# --- the classes issue 24's first pass left out: log sinks and loggers, list-likes, ScopedCapture, enums ---

ok("log_lists_capture_enums", """
    from vortexgo import log, marker, scan as vs, engine as ve, storage as vst
    fs = log.FileSink(os.path.join(TMP, "a.log"))
    lg = log.Logger("x", fs)
    cases = [(log.StdErrSink(), "levl", "level"), (log.StdOutSink(), "set_patern", "set_pattern"),
             (log.PythonSink(), "levl", "level"), (fs, "filenme", "filename"), (lg, "levle", "level"),
             (lg.sinks, "apend", "append"), (marker.MarkerList(), "apend", "append"),
             (marker.FlagsList(), "extnd", "extend"), (vs.SegmentList(), "apend", "append"),
             (ve.StrobeList(), "apend", "append"), (ve.divide(), "apend", "append"), (ve.cycle(), "apend", "append"),
             (vg.ScopedCapture(), "grph", "graph"), (ve.EngineEvent.Complete if hasattr(ve.EngineEvent, "Complete") else list(ve.EngineEvent)[0], "nme", "name"),
             (vst.SimpleStackHeader(0), "valeu", "value")]
    for obj, bad, good in cases:
        name = type(obj).__name__
        try:
            setattr(obj, bad, 1)
        except AttributeError as e:
            if name not in str(e) or bad not in str(e) or good not in str(e):
                _problems.append(f"{name}.{bad}: AttributeError naming not the class, attribute and {good!r}: {e}")
        else:
            _problems.append(f"{name}.{bad} stored")
    # what vortexgo and a user set still works
    lg.level = log.DEBUG; fs.level = log.TRACE; fs.set_pattern("%v"); lg.debug("one %d", 1); fs.flush()
    fs.change(os.path.join(TMP, "b.log")); lg.info("two"); lg.flush()
    c = vg.ScopedCapture(); c.graph = None
    if open(os.path.join(TMP, "a.log")).read() != "one 1\\n" or open(os.path.join(TMP, "b.log")).read() != "two\\n":
        _problems.append("the file sink wrote not what was logged")
    class MySink(log.StdErrSink):  # a user's subclass is free
        pass
    m = MySink(); m.note = "mine"
    class MyList(marker.MarkerList):
        pass
    ml = MyList(); ml.note = "mine"
    if (m.note, ml.note) != ("mine", "mine"):
        _problems.append("a user subclass lost its attribute")
""", issue="log sinks, loggers, MarkerList/SegmentList/StrobeList/SinkList, ScopedCapture and enum members stored unknown attributes")

# Walks every public class of every public module, builds it (SPECIAL: those
# with required arguments) and checks the two rules: an unknown attribute is
# an AttributeError naming it, and copy/deepcopy/pickle either copy (same
# class) or refuse with a TypeError that says what to do. A class it cannot
# build fails the case, so a new class gets a builder and is checked.
ok("walker_every_public_class", """
    # --- the walker: every public class of every public vortexgo module ---
    import copy, dataclasses, enum, importlib, inspect, pickle, pkgutil
    from vortexgo import format as vf, storage as vst, toolkit as vtk

    # Accepting unknown attributes is deliberate only here:
    ALLOWED = {
        # Exceptions: Python code (traceback tools, add_note, user handlers) sets
        # attributes on exceptions, and vortex's own exceptions are plain Python
        # exception classes (pybind11's register_exception) that accept them too.
        "exceptions": lambda cls: issubclass(cls, BaseException),
    }
    # Classes that need a CUDA device to be built (skipped without one).
    CUDA_ONLY = ("CudaDeviceTensor", "CudaHostTensor")

    mods = {"vortexgo": vg}
    for pkg in (vg, vtk):
        for m in pkgutil.iter_modules(pkg.__path__):
            if not m.name.startswith("_") and m.name not in ("cli", "__main__"):
                mods[f"{pkg.__name__}.{m.name}"] = importlib.import_module(f"{pkg.__name__}.{m.name}")
    classes = {}
    for mod in mods.values():
        for n in dir(mod):
            o = getattr(mod, n)
            if not n.startswith("_") and inspect.isclass(o) and o.__module__.startswith("vortexgo") \
                    and not o.__name__.startswith("_") and o not in classes.values():
                classes[f"{o.__module__}.{o.__qualname__}"] = o

    storages = [c for c in classes.values() if issubclass(c, (vst._SimpleStack, vst._Storage))]
    def _radial():
        c = vf.RadialFormatExecutorConfig()
        c.volume_xy_extent = (vg.Range(-1, 1), vg.Range(-1, 1)); c.segment_rt_extent = (vg.Range(-1, 1), vg.Range(0, 3))
        c.radial_shape = (4, 8)
        return vf.RadialFormatExecutor(c)
    def _spiral():
        c = vf.SpiralFormatExecutorConfig()
        c.volume_xy_extent = (vg.Range(-1, 1), vg.Range(-1, 1)); c.segment_extent = vg.Range(0, 1)
        c.spiral_shape = (2, 100); c.spiral_velocity = 3.0
        return vf.SpiralFormatExecutor(c)
    ex = {"Radial": _radial, "Spiral": _spiral, "Position": lambda: vf.PositionFormatExecutor(vf.PositionFormatExecutorConfig()),
          "Stack": lambda: vf.StackFormatExecutor(vf.StackFormatExecutorConfig())}
    cap = vg.Readback(64, "cpu"); coord = vg.AsyncCoordinator("cpu"); mgr = vg.PipelineStageManager(coord)
    SPECIAL = {  # classes with required arguments
        "Array": lambda: vg.zeros(3), "Device": vg.get_device, "DeviceTensor": lambda: vg.DeviceTensor((2,)),
        "TensorView": lambda: vg.DeviceTensor((2,)).view() if hasattr(vg.DeviceTensor, "view") else None,
        "Graph": lambda: _graph(), "BufferPool": lambda: vg.BufferPool(64, 1, device="cpu"),
        "Readback": lambda: vg.Readback(64, "cpu"), "ReadbackHandle": lambda: cap.readback(vg.zeros(4, device="cpu")),
        "TripleBuffer": lambda: vg.TripleBuffer("cpu", 16), "PipelineStageManager": lambda: mgr,
        "PipelineGraph": lambda: None, "GpuPipelineStage": lambda: vg.GpuPipelineStage("s"),
        "KernelOp": lambda: vg.KernelOp("k"), "SpinOp": lambda: vg.SpinOp(1.0), "UploadOp": lambda: vg.UploadOp(np.zeros(2)),
        "DownloadOp": lambda: vg.DownloadOp(np.zeros(2)), "KernelArg": lambda: vtk.KernelArg("i32", 1),
        "MemoryUsage": lambda: vg.memory_usage(), "Logger": lambda: vg.log.Logger("walker"),
        "AnalogVoltageOutput": lambda: vg.daqmx.AnalogVoltageOutput("Dev1/ao0"),
        "AnalogVoltageInput": lambda: vg.daqmx.AnalogVoltageInput("Dev1/ai0"),
        "DigitalOutput": lambda: vg.daqmx.DigitalOutput("Dev1/port0/line0"),
        "DigitalInput": lambda: vg.daqmx.DigitalInput("Dev1/port0/line1"),
        "FileSink": lambda: vg.log.FileSink(os.path.join(TMP, "walker.log")),
        "LiveView": lambda: None, "Frame": lambda: vg.display.Frame(0, np.zeros((2, 2)), np.zeros((2, 2)), 0),
        "DAQmx": lambda: _on_virtual("VORTEXGO_NIDAQMX_LIBRARY", "libnidaqmx.so", lambda: vg.daqmx.DAQmx("walker")),
        "Teledyne": lambda: _on_virtual("VORTEXGO_ADQ_LIBRARY", "libadq.so", lambda: vg.teledyne.Teledyne(0)),
    }
    def _on_virtual(env, name, make):
        # A driver object opens its vendor library: the virtual instrument's when built (make virtual).
        lib = os.path.join(os.path.dirname(os.path.dirname(vg.__file__)), "..", "build", "virtual", name)
        if not os.path.exists(lib):
            return None
        os.environ.setdefault(env, os.path.abspath(lib))
        return make()
    def _graph():
        s = vg.Stream()
        # Made on the capturing stream and synchronized before the capture: a CUDA
        # capture refuses allocations and waits on work recorded outside it.
        x = vg.zeros(2, device=s.device, stream=s); s.synchronize()
        with vg.ScopedCapture(s) as c:
            vg.scale_offset(x, 2.0, 1.0, out=x, stream=s)
        return c.graph
    def candidates(cls):
        yield lambda: cls()
        n = cls.__name__
        if n in SPECIAL:
            yield SPECIAL[n]
        if issubclass(cls, enum.Enum):
            yield lambda: next(iter(cls))
        if dataclasses.is_dataclass(cls) or (issubclass(cls, tuple) and hasattr(cls, "_fields")):
            k = len([p for p in inspect.signature(cls).parameters.values() if p.default is p.empty])
            yield lambda: cls(*[0] * k)
        for s in storages:
            yield lambda s=s: cls(storage=s())
            yield lambda s=s: cls(s())
        for key, e in ex.items():
            if key in n or key == "Stack":
                yield lambda e=e: cls(e(), (2, 3, 4))
    def build(cls):
        errs = []
        for make in candidates(cls):
            try:
                o = make()
            except Exception as e:
                errs.append(f"{type(e).__name__}: {str(e)[:80]}")
                continue
            if o is not None:
                return o, ""
        return None, "; ".join(errs[-2:]) if errs else "no candidate"
    unbuilt = []
    for qn, cls in sorted(classes.items()):
        if any(f(cls) for f in ALLOWED.values()):
            continue
        if cls.__name__.startswith(CUDA_ONLY) and not vg.is_cuda_available():
            continue
        obj, why = build(cls)
        if obj is None:
            # built only by a manager / over a running endpoint / with a vendor's library /
            # over a serial port with a servo answering (tests_py/test_machdsp.py's pty peer)
            if cls.__name__ not in ("PipelineGraph", "LiveView", "DAQmx", "Teledyne", "MachDSP"):
                unbuilt.append(f"{qn}: {why}")
            continue
        name = type(obj).__name__
        try:
            obj.zzz_not_a_field = 1
        except AttributeError as e:
            frozen = type(e).__name__ == "FrozenInstanceError"
            if "zzz_not_a_field" not in str(e) or (name not in str(e) and not frozen):
                _problems.append(f"{qn}: AttributeError naming not the class and attribute: {e}")
        except Exception as e:
            _problems.append(f"{qn}: {type(e).__name__}: {e} (expected AttributeError)")
        else:
            _problems.append(f"{qn}: unknown attribute stored")
        for how, fn in (("copy", copy.copy), ("deepcopy", copy.deepcopy), ("pickle", lambda o: pickle.loads(pickle.dumps(o)))):
            try:
                c = fn(obj)
            except TypeError as e:
                m = str(e)  # refused: must say which class and what to do (a list: which item refused)
                if not any(w in m for w in ("share", "build", "make", "instead", "use")):
                    _problems.append(f"{qn} {how}: TypeError that says not what to do: {m[:120]}")
            except Exception as e:
                _problems.append(f"{qn} {how}: {type(e).__name__}: {str(e)[:120]} (expected TypeError or a copy)")
            else:
                if type(c) is not type(obj):
                    _problems.append(f"{qn} {how}: a copy of class {type(c).__name__}")
            gc.collect()
    if unbuilt:
        _problems.append(f"classes the walker cannot build (add them to SPECIAL): {unbuilt}")
    if len(classes) < 150:
        _problems.append(f"walked only {len(classes)} classes")
""", timeout=90)

PARAMS = register(CASES)


@pytest.mark.parametrize("case", PARAMS)
def test_configs(case: Case) -> None:
    check(case)
