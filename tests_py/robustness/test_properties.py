"""Property-based tests of the public API (Hypothesis): array creation, copy
and round trip over shapes (0-size included), dtypes, byte orders and
strides; fills against NumPy; sizes near the limits and odd timeouts; and a
state machine of streams, events and arrays used in random orders with
closes and frees interleaved. Nothing may crash or return wrong data, and
every error must be of the documented classes.

Each property runs in one subprocess of its own (one per test, not per
example: a crash fails the test, and the last examples tried are on its
stderr). Example counts are modest and the search derandomized, so CI is
fast and repeatable.
"""

from __future__ import annotations

import textwrap

import pytest

from harness import Case, check, register

F = "properties"

SETTINGS = """
from hypothesis import HealthCheck, assume, given, note, settings, strategies as st
from hypothesis.extra import numpy as hnp
SET = settings(max_examples=50, deadline=None, derandomize=True, database=None,
               suppress_health_check=list(HealthCheck))
SUPPORTED = [np.dtype(d) for d in vg.SUPPORTED_DTYPES]
def trace(*a):
    # The last examples before a crash end up in the harness's stderr tail.
    sys.stderr.write(" ".join(map(repr, a))[:300] + "\\n"); sys.stderr.flush()
def same(a, b):
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
def byte_order_refusal(e):
    m = str(e).lower()
    return isinstance(e, (ValueError, TypeError)) and any(w in m for w in ("order", "endian"))
"""

CASES: list[Case] = []


def prop(id: str, body: str, timeout: float = 20.0) -> None:
    code = SETTINGS + textwrap.dedent(body) + "\nprint('ok')\n"
    CASES.append(Case(f"{F}/{id}", code, prints="ok", timeout=timeout))


# NumPy arrays of every supported dtype in both byte orders, any small shape
# (0-size included), as given or as a strided / transposed / reversed view.
ARRAYS = """
@st.composite
def arrays(draw):
    dt = draw(st.sampled_from(SUPPORTED))
    if dt.itemsize > 1:
        dt = dt.newbyteorder(draw(st.sampled_from(["<", ">", "="])))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6))
    x = draw(hnp.arrays(dt, shape))
    view = draw(st.sampled_from(["as is", "step", "transpose", "reverse"]))
    if view == "step" and x.ndim:
        x = x[::2]
    elif view == "transpose":
        x = x.T
    elif view == "reverse" and x.ndim:
        x = x[::-1]
    return x
"""

prop("from_numpy_round_trip", ARRAYS + """
@SET
@given(arrays())
def t(x):
    trace("from_numpy", x.dtype.str, x.shape, x.strides)
    try:
        a = vg.from_numpy(x, device="cpu")
    except Exception as e:
        assert not x.dtype.isnative and byte_order_refusal(e), f"{x.dtype.str} {x.shape}: {e!r}"
        return
    assert a.shape == x.shape, (a.shape, x.shape)
    y = a.numpy()
    assert same(y, x), f"{x.dtype.str} {x.shape}: got {y!r}, expected {x!r}"
    # and back through an explicit copy into native NumPy memory
    out = np.empty(x.shape, x.dtype.newbyteorder("="))
    vg.copy(out, a)
    assert same(out, x), f"copy back {x.dtype.str} {x.shape}: got {out!r}"
t()
""")

prop("copy_between_arrays", """
@SET
@given(st.sampled_from(SUPPORTED), st.sampled_from(SUPPORTED),
       hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=8), st.data())
def t(dt_dst, dt_src, shape, data):
    x = data.draw(hnp.arrays(dt_src, shape))
    trace("copy", dt_dst.str, dt_src.str, shape)
    src = vg.from_numpy(x, device="cpu")
    dst = vg.zeros(shape, dt_dst, "cpu")
    try:
        vg.copy(dst, src)
    except (TypeError, ValueError) as e:
        assert dt_dst != dt_src, f"same dtype {dt_src} refused: {e!r}"
        return
    assert dt_dst == dt_src, f"copy {dt_src} -> {dt_dst} accepted (reinterpreted bits)"
    assert same(dst.numpy(), x)
    # numpy side of another dtype
    host = np.zeros(shape, dt_dst)
    try:
        vg.copy(host, src)
    except (TypeError, ValueError) as e:
        assert dt_dst != dt_src, f"same dtype {dt_src} refused: {e!r}"
        return
    assert dt_dst == dt_src, f"copy {dt_src} array -> {dt_dst} numpy accepted (reinterpreted bits)"
    assert same(host, x)
t()
""")

prop("full_matches_numpy", """
INTS = [d for d in SUPPORTED if d.kind in "iu"]
FLOATS = [d for d in SUPPORTED if d.kind == "f"]
@SET
@given(st.one_of(st.tuples(st.sampled_from(INTS), st.integers(-2**40, 2**40)),
                 st.tuples(st.sampled_from(FLOATS), st.floats(allow_nan=True, allow_infinity=True, width=32))),
       hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=5))
def t(dv, shape):
    dt, v = dv
    trace("full", shape, v, dt.str)
    try:
        want = np.full(shape, v, dt)
    except (OverflowError, ValueError):
        want = None
    try:
        got = vg.full(shape, v, dt, "cpu").numpy()
    except (OverflowError, ValueError) as e:
        assert want is None, f"full({shape}, {v}, {dt}) raised {e!r}; NumPy gives {want!r}"
        return
    assert want is not None, f"full({shape}, {v}, {dt}) gave {got!r}; NumPy raises"
    assert same(got, want), f"full({shape}, {v}, {dt}): got {got!r}, NumPy {want!r}"
t()
""")

prop("reshape_views", """
@SET
@given(st.lists(st.integers(0, 4), min_size=1, max_size=4), st.randoms(use_true_random=False))
def t(dims, rnd):
    n = math.prod(dims)
    x = np.arange(n, dtype=np.int32).reshape(dims)
    a = vg.from_numpy(x, device="cpu")
    perm = list(dims); rnd.shuffle(perm)
    trace("reshape", dims, perm)
    v = a.reshape(perm)
    assert same(v.numpy(), x.reshape(perm))
    assert v.shape == tuple(perm)
    if n:
        bad = tuple(perm) + (2,)
        try:
            a.reshape(bad)
            raise AssertionError(f"reshape {dims} -> {bad} accepted")
        except ValueError:
            pass
t()
""")

prop("shapes_near_the_limits", """
DIM = st.one_of(st.integers(-2**70, 2**70), st.sampled_from([0, 1, 2**31, 2**32, 2**48, 2**62, 2**63, 2**64, -1]),
                st.floats(allow_nan=True), st.booleans(), st.just("3"), st.just(None))
@SET
@given(st.lists(DIM, min_size=0, max_size=3), st.sampled_from(SUPPORTED))
def t(dims, dt):
    ints = all(isinstance(d, int) and not isinstance(d, bool) for d in dims)
    n = math.prod(dims) if ints else None
    assume(not ints or any(d < 0 for d in dims) or n <= 2**16 or n > 2**50)
    trace("empty", dims, dt.str)
    try:
        a = vg.empty(tuple(dims), dt, "cpu")
    except (ValueError, TypeError, MemoryError) as e:
        assert not (ints and all(d >= 0 for d in dims) and n <= 2**16), f"{dims} refused: {e!r}"
        assert "shape" in str(e).lower(), f"{dims}: message names no shape: {type(e).__name__}: {e}"
        return
    assert ints and all(d >= 0 for d in dims) and n <= 2**16, f"{dims} accepted as {a.shape} ({a.nbytes} bytes)"
    assert a.shape == tuple(dims)
t()
""")

prop("priorities_and_counts", """
PRIORITY = st.one_of(st.integers(-2**70, 2**70), st.sampled_from([2**63 - 1, 2**63, -2**63, -2**63 - 1, 2**64]),
                     st.floats(), st.booleans(), st.builds(np.int32, st.integers(-2**31, 2**31 - 1)))
# Counts: small ones (which must work), impossible ones (which must be refused) and
# odd types; counts in between (2**20..2**48) are left to the sizes family.
COUNT = st.one_of(st.integers(0, 64), st.integers(2**48, 2**70), st.integers(-2**70, -1), st.floats(), st.booleans(),
                  st.builds(np.int64, st.integers(0, 64)), st.sampled_from([2**63 - 1, 2**63, 2**64]))
@SET
@given(st.data(), st.sampled_from(["stream", "coordinator", "pool", "readback", "triple"]))
def t(data, what):
    v = data.draw(PRIORITY if what in ("stream", "coordinator") else COUNT)
    trace(what, v)
    name = {"stream": "priority", "coordinator": "compute_priority", "pool": "pool_size",
            "readback": "buffers", "triple": "size"}[what]
    try:
        if what == "stream":
            vg.Stream("cpu", priority=v).close()
        elif what == "coordinator":
            vg.AsyncCoordinator("cpu", compute_priority=v).close()
        elif what == "pool":
            vg.BufferPool(16, v, device="cpu").close()
        elif what == "readback":
            vg.Readback(16, "cpu", buffers=v).close()
        else:
            vg.TripleBuffer("cpu", v, "uint8").close()
    except (ValueError, TypeError, MemoryError) as e:
        assert name in str(e), f"{what}({v!r}): message names no {name}: {type(e).__name__}: {e}"
        ok_int = isinstance(v, (int, np.integer)) and not isinstance(v, bool)
        if ok_int and what in ("stream", "coordinator"):
            assert not (-2**63 <= int(v) < 2**63), f"{what}: priority {v!r} refused: {e!r}"
        return
    ok_int = isinstance(v, (int, np.integer)) and not isinstance(v, bool)
    assert ok_int, f"{what}: {v!r} accepted"
    if what in ("pool", "readback", "triple"):
        assert int(v) <= 2**20 and (int(v) >= 1 or what == "pool"), f"{what}: {name}={v} accepted"
t()
""", timeout=20)

prop("timeouts", """
T = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2**70, 2**70), st.text(max_size=3),
              st.booleans(), st.none())
@SET
@given(T, st.sampled_from(["tensor", "pool", "readback", "coordinator"]))
def t(v, what):
    trace(what, v)
    num = isinstance(v, (int, float)) and not isinstance(v, bool)
    # must work: None or finite seconds in [0, 1e8]; must be refused: NaN, inf, negative, str, bool;
    # finite beyond 1e8 s (3 years) may be refused or accepted.
    good = v is None or (num and math.isfinite(v) and 0 <= v <= 1e8)
    bad = not (v is None or num) or (num and (not math.isfinite(v) or v < 0))
    try:
        if what == "tensor":
            tt = vg.DeviceTensor((4,), "float32", "cpu"); tt.acquire(timeout=v); tt.release(); tt.close()
        elif what == "pool":
            p = vg.BufferPool(16, 1, device="cpu"); b = p.get(timeout=v); p.put(b); p.close()
        elif what == "readback":
            r = vg.Readback(64, "cpu"); h = r.readback(vg.zeros(4, "float32", "cpu")); h.get(v); h.release(); r.close()
        else:
            co = vg.AsyncCoordinator("cpu"); co.wait(co.queue_compute(vg.SpinOp(0)), timeout=v); co.close()
    except (ValueError, TypeError) as e:
        assert not good, f"{what}: timeout={v!r} refused: {e!r}"
        assert "timeout" in str(e), f"{what}: timeout={v!r}: message names no timeout: {type(e).__name__}: {e}"
        return
    assert not bad, f"{what}: timeout={v!r} accepted"
t()
""", timeout=20)

prop("stream_event_state_machine", """
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, precondition, rule, run_state_machine_as_test

class Streams(RuleBasedStateMachine):
    streams = Bundle("streams")
    events = Bundle("events")
    arrays = Bundle("arrays")

    def __init__(self):
        super().__init__()
        self.closed = set()      # ids of closed streams/events/freed arrays
        self.values = {}         # id(array) -> the value it must hold

    def _call(self, obj, fn, what):
        # A closed object raises ClosedError; a live one works.
        dead = id(obj) in self.closed
        trace(what, "closed" if dead else "live")
        try:
            r = fn()
        except vg.ClosedError:
            assert dead, f"{what} on a live object raised ClosedError"
            return None
        assert not dead, f"{what} on a closed object did not raise ClosedError"
        return r

    @rule(target=streams)
    def new_stream(self):
        return vg.Stream("cpu")

    @rule(target=events, timing=st.booleans())
    def new_event(self, timing):
        return vg.Event("cpu", enable_timing=timing)

    @rule(target=arrays, v=st.integers(-100, 100))
    def new_array(self, v):
        a = vg.full(64, v, "int32", "cpu")
        self.values[id(a)] = v
        return a

    @rule(s=streams, e=events)
    def record(self, s, e):
        dead_s, dead_e = id(s) in self.closed, id(e) in self.closed
        trace("record", dead_s, dead_e)
        try:
            s.record_event(e)
        except vg.ClosedError:
            assert dead_s or dead_e, "record on live objects raised ClosedError"
            return
        assert not (dead_s or dead_e), "record with a closed stream or event did not raise"

    @rule(s=streams, e=events)
    def wait_event(self, s, e):
        dead_s, dead_e = id(s) in self.closed, id(e) in self.closed
        trace("wait_event", dead_s, dead_e)
        try:
            s.wait_event(e)
        except vg.ClosedError:
            assert dead_s or dead_e, "wait_event on live objects raised ClosedError"
            return
        assert not (dead_s or dead_e), "wait_event with a closed stream or event did not raise"

    @rule(s=streams)
    def sync_stream(self, s):
        self._call(s, s.synchronize, "stream.synchronize")

    @rule(s=streams)
    def query_stream(self, s):
        r = self._call(s, s.query, "stream.query")
        assert r in (None, True), f"a CPU stream with nothing in flight reports busy: {r!r}"

    @rule(s=streams)
    def handle(self, s):
        self._call(s, lambda: s.handle, "stream.handle")

    @rule(e=events)
    def sync_event(self, e):
        self._call(e, e.synchronize, "event.synchronize")

    @rule(e=events)
    def query_event(self, e):
        self._call(e, e.query, "event.query")

    @rule(s=streams)
    def close_stream(self, s):
        trace("stream.close")
        try:
            s.close()
        except vg.ClosedError:
            assert id(s) in self.closed, "closing a live stream raised ClosedError"
        self.closed.add(id(s))

    @rule(e=events)
    def close_event(self, e):
        trace("event.close")
        try:
            e.close()
        except vg.ClosedError:
            assert id(e) in self.closed, "closing a live event raised ClosedError"
        self.closed.add(id(e))

    @rule(a=arrays)
    def free_array(self, a):
        trace("array.free")
        try:
            a.free()
        except vg.ClosedError:
            assert id(a) in self.closed, "freeing a live array raised ClosedError"
        self.closed.add(id(a))

    @rule(dst=arrays, src=arrays, s=streams)
    def copy(self, dst, src, s):
        dead = {n for n, o in (("dst", dst), ("src", src), ("stream", s)) if id(o) in self.closed}
        trace("copy", sorted(dead))
        try:
            vg.copy(dst, src, stream=s)
        except vg.ClosedError:
            assert dead, "copy between live objects raised ClosedError"
            return
        assert not dead, f"copy with a closed {sorted(dead)} did not raise ClosedError"
        self.values[id(dst)] = self.values[id(src)]

    @rule(a=arrays, s=streams, k=st.integers(-3, 3))
    def scale(self, a, s, k):
        dead = id(a) in self.closed or id(s) in self.closed
        trace("scale_offset", dead)
        try:
            vg.scale_offset(a, 1.0, float(k), out=a, stream=s)
        except vg.ClosedError:
            assert dead, "scale_offset on live objects raised ClosedError"
            return
        assert not dead, "scale_offset with a closed array or stream did not raise ClosedError"
        self.values[id(a)] += k

    @rule(a=arrays)
    def read(self, a):
        r = self._call(a, a.numpy, "array.numpy")
        if r is not None:
            assert (r == self.values[id(a)]).all(), f"array holds {r[:4]}, expected {self.values[id(a)]}"

run_state_machine_as_test(Streams, settings=settings(max_examples=50, stateful_step_count=30, deadline=None,
                                                     derandomize=True, database=None,
                                                     suppress_health_check=list(HealthCheck)))
""", timeout=30)


# --- issue 24: every config field against hostile values -----------------------------------
# For each config class and each of its fields: NaN, infinities, huge and
# negative ints, wrong types, NumPy scalars, containers. Setting either
# raises ValueError/TypeError naming the field, or keeps the value (read back
# equal); validating the config then either passes or raises
# ValueError/TypeError naming the field: never a Python-internals message
# ("len() of unsized object", a bare int() error), never a crash. Unknown
# attribute names raise AttributeError naming the attribute.
prop("config_fields_hostile_values", """
import dataclasses
from vortexgo import format as vf, process as vp, acquire as va, scan as vs, storage as vst, engine as ve, simple as vsim
CLASSES = [vf.StackFormatExecutorConfig, vf.RadialFormatExecutorConfig, vf.SpiralFormatExecutorConfig,
           vf.PositionFormatExecutorConfig, vf.FormatPlannerConfig, vp.ProcessorConfig, vp.NullProcessorConfig,
           vp.CopyProcessorConfig, va.SimulatedAcquisitionConfig, va.NullAcquisitionConfig, va.FileAcquisitionConfig,
           vs.RasterScanConfig, vs.RadialScanConfig, vs.SpiralScanConfig, vs.RepeatedRasterScanConfig,
           vs.RepeatedRadialScanConfig, vs.FreeformScanConfig,
           vst.SimpleStackConfig, vst.HDF5StackConfig, vst.BroctStorageConfig, vst.SimpleStreamConfig,
           vst.StreamDumpConfig, vst.MarkerLogConfig, ve.EngineConfig, vsim.SimpleEngineConfig]
def fields(cls):
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls) if not f.name.startswith("_")]
    if hasattr(cls, "_fields"):
        return [f.name for f in cls._fields()]
    # Plain classes (EngineConfig, SimpleEngineConfig): the settable public attributes of a new one.
    return sorted(n for n in vars(cls()) if not n.startswith("_") and not callable(getattr(cls(), n)))
BY_NAME = {c.__name__: c for c in CLASSES}  # Hypothesis prints names, not classes
PAIRS = [(c.__name__, n) for c in CLASSES for n in fields(c)]
VALUES = st.sampled_from([math.nan, math.inf, -math.inf, 2**40, 2**64, -2**63 - 1, -1, 0, 0.5, 1e308, "3", None,
                          [1, 2], (1.0, 2.0), np.int32(3), np.int64(2**40), np.float64(2.5), np.float32(math.nan),
                          np.bool_(True), True, object(), b"x"])
# vortex's names for one field: a message may use the scan's own (RasterScanConfig's
# bscans_per_volume is segments_per_volume, ascans_per_bscan is samples_per_segment).
ALIASES = {"segments_per_volume": "bscans_per_volume", "samples_per_segment": "ascans_per_bscan"}
def names(msg, field):
    low = msg.lower().replace("_", "")
    return any(f.replace("_", "").lower() in low for f in (field, ALIASES.get(field, field)))
def validate(cfg):
    # EngineConfig validates its wiring (stages), which a field alone cannot make valid.
    if hasattr(cfg, "validate") and not isinstance(cfg, ve.EngineConfig):
        cfg.validate()
    if hasattr(cfg, "_record"):
        cfg._record()
def valid(cls):
    # A config that validates as it is, so an error after one field changed is that field's.
    cfg = cls()
    if cls is vf.FormatPlannerConfig:
        cfg.shape = (2, 3)
    if cls in (vf.RadialFormatExecutorConfig, vf.SpiralFormatExecutorConfig):
        cfg.volume_xy_extent = (vg.Range(-1, 1), vg.Range(-1, 1))
        cfg.radial_extent = vg.Range(0, 1)
    if cls is vf.RadialFormatExecutorConfig:
        cfg.angular_extent, cfg.radial_shape = vg.Range(0, 3), (2, 3)
    if cls is vf.SpiralFormatExecutorConfig:
        cfg.spiral_shape, cfg.spiral_velocity = (2, 3), 1.0
    if cls is vs.FreeformScanConfig:
        cfg.pattern = vs.SequentialPattern().to_pattern([np.array([[0.0, 0.0], [1.0, 1.0]])])
    validate(cfg)
    return cfg
@settings(SET, max_examples=600)  # ~100 fields x 22 values: cover most pairs
@given(st.sampled_from(PAIRS), VALUES)
def t(pair, v):
    cls, name = BY_NAME[pair[0]], pair[1]
    trace(cls.__name__, name, v)
    cfg = valid(cls)
    try:
        setattr(cfg, name, v)
    except (ValueError, TypeError) as e:
        assert names(str(e), name), f"{cls.__name__}.{name}={v!r}: {type(e).__name__} naming not the field: {e}"
        return
    got = getattr(cfg, name)
    same = got is v or (type(got) is type(v) and repr(got) == repr(v))
    try:
        same = same or bool(got == v)
    except Exception:
        pass
    if isinstance(got, vg.Range) and isinstance(v, (list, tuple)) and len(v) == 2:
        same = same or (got.min, got.max) == tuple(v)
    try:  # normalised to an equal value (a list to an array, an int to a float)
        same = same or bool(np.array_equal(np.asarray(got, dtype=float), np.asarray(v, dtype=float), equal_nan=True))
    except Exception:
        pass
    assert same, f"{cls.__name__}.{name}={v!r} read back {got!r}"
    try:
        validate(cfg)
    except (ValueError, TypeError) as e:
        assert "vortexgo" in type(e).__module__ or names(str(e), name) or "expected" in str(e), \\
            f"{cls.__name__}.{name}={v!r}: {type(e).__name__} with Python internals' message: {e}"
        # A count may be named by the pair it belongs to (RasterScanConfig.shape).
        assert names(str(e), name) or names(str(e), "shape"), \\
            f"{cls.__name__}.{name}={v!r}: {type(e).__name__} naming not the field: {e}"
    # NumPy scalars of the right kind are accepted like Python's.
t()

@SET
@given(st.sampled_from(sorted(BY_NAME)), st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=20))
def unknown(cname, attr):
    cls = BY_NAME[cname]
    cfg = cls()
    if attr.startswith("_") or hasattr(cfg, attr):
        return
    try:
        setattr(cfg, attr, 1)
    except AttributeError as e:
        assert attr in str(e) and cls.__name__ in str(e), str(e)
    else:
        raise AssertionError(f"{cls.__name__}.{attr} stored")
unknown()
""", timeout=60)

prop("config_numpy_scalars_accepted", """
from vortexgo import format as vf, process as vp
c = vp.ProcessorConfig(samples_per_record=np.int32(64), ascans_per_block=np.int64(8), average_window=np.uint8(2))
c.validate()
f = vf.FormatPlannerConfig(np.int16(3), np.int64(4)); f.mask = np.uint64(2**64 - 1); f._record()
r = vf.RadialFormatExecutorConfig(radial_segments_per_volume=np.int32(2), radial_records_per_segment=np.int32(3))
r.volume_xy_extent = ((np.float32(-1), np.float64(1)), vg.Range(np.float64(-1), 1))
r.segment_rt_extent = (vg.Range(-1, 1), vg.Range(0, np.float64(math.pi)))
vf.RadialFormatExecutor(r)
""")


@pytest.mark.parametrize("case", register(CASES))
def test_properties(case: Case) -> None:
    check(case)

