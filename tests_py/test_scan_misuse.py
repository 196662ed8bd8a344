"""vortexgo.scan under misuse: configs (hypothesis: valid ones round-trip, invalid ones raise a
ValueError/TypeError naming the field, nothing crashes), wrong buffers for next() and generate(),
huge sizes refused before allocating, wrong types, the queue's callbacks. Cases that could take
the interpreter down run in a subprocess."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import _subproc
import vortexgo as vg
from vortexgo import marker as vm
from vortexgo import scan as vs


def small(**kw) -> vs.RasterScanConfig:
    c = vs.RasterScanConfig()
    c.bscan_extent, c.volume_extent = vg.Range(-0.4, 0.4), vg.Range(-1, 1)
    c.ascans_per_bscan, c.bscans_per_volume = 12, 4
    c.inactive_policy = vs.inactive_policy.FixedLinear(5, 7)
    for k, v in kw.items():
        setattr(c, k, v)
    return c


FIELD_VALUES = {
    "ascans_per_bscan": st.integers(2, 64),
    "bscans_per_volume": st.integers(1, 8),
    "angle": st.floats(-3.2, 3.2),
    "offset": st.tuples(st.floats(-1, 1), st.floats(-1, 1)),
    "bidirectional_segments": st.booleans(),
    "bidirectional_volumes": st.booleans(),
    "loop": st.booleans(),
    "samples_per_second": st.integers(10_000, 1_000_000),
    "bscan_extent": st.tuples(st.floats(-0.5, 0.5), st.floats(-0.5, 0.5)).map(lambda t: vg.Range(*t)),
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries({}, optional=FIELD_VALUES))
def test_valid_configs_round_trip(fields):
    c = small(**fields)
    scan = vs.RasterScan()
    try:
        scan.initialize(c)
    except ValueError as e:  # a limit the pattern breaks: named, and nothing half-configured
        assert "RasterScanConfig" in str(e) or "limit" in str(e)
        with pytest.raises(ValueError):
            scan.scan_buffer()
        return
    assert scan.config == c
    buf = scan.scan_buffer()
    assert buf.shape[1] == 2 and np.all(np.isfinite(buf))
    assert len(scan.scan_segments()) == c.bscans_per_volume * (2 if c.bidirectional_volumes else 1)


BAD = [
    ("ascans_per_bscan", 1, ValueError, "ascans_per_bscan"),
    ("bscans_per_volume", 0, ValueError, "bscans_per_volume"),
    ("channels_per_sample", 0, ValueError, "channels_per_sample"),
    ("channels_per_sample", 3, ValueError, "limits"),
    ("samples_per_second", 0, ValueError, "samples_per_second"),
    ("limits", [vs.Limits(vg.Range(-1, 1), -5.0, 1.0)] * 2, ValueError, "velocity"),
    ("ascans_per_bscan", 2**40, ValueError, "RasterScanConfig"),
]


@pytest.mark.parametrize("field,value,exc,named", BAD, ids=lambda v: str(v)[:20])
def test_invalid_configs_name_the_field(field, value, exc, named):
    c = small()
    setattr(c, field, value)
    scan = vs.RasterScan()
    with pytest.raises(exc, match=named):
        scan.initialize(c)
    with pytest.raises(ValueError, match="not initialized"):
        scan.scan_buffer()


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(sorted(FIELD_VALUES) + ["limits", "warp", "inactive_policy", "flags", "channels_per_sample"]),
       st.one_of(st.none(), st.text(max_size=3), st.floats(allow_nan=True), st.integers(-2**70, 2**70),
                 st.lists(st.integers(), max_size=3), st.booleans()))
def test_any_value_is_refused_or_accepted_never_crashes(field, value):
    c = small()
    try:
        setattr(c, field, value)
    except (TypeError, ValueError) as e:
        assert field in str(e) or "Range" in str(e)
        return
    try:
        vs.RasterScan().initialize(c)
    except (TypeError, ValueError, MemoryError) as e:
        assert str(e)


def test_wrong_types():
    s = vs.RasterScan()
    with pytest.raises(TypeError, match="RasterScanConfig"):
        s.initialize(vs.RadialScanConfig())
    with pytest.raises(TypeError, match="Range"):
        vs.RasterScanConfig().bscan_extent = "wide"
    with pytest.raises(TypeError, match="warp"):
        vs.RasterScanConfig().warp = 2.0
    with pytest.raises(TypeError, match="Limits"):
        vs.RasterScanConfig().limits = [1, 2]
    with pytest.raises(TypeError, match="unknown field"):
        vs.RasterScanConfig(ascans=3)
    with pytest.raises(ValueError, match="Range.min"):
        vg.Range(float("nan"), 1)
    with pytest.raises(TypeError, match="scan"):
        vs.ScanQueue().append("raster")
    with pytest.raises(TypeError, match="ScanBoundary"):
        vs.ScanQueue().append(vs.RasterScan(), marker=vm.Event(0))


@pytest.mark.parametrize("buf,exc", [
    (np.zeros((10, 3)), ValueError),                 # wrong channel count
    (np.zeros((10, 2), np.float32), ValueError),     # wrong dtype
    (np.zeros((2, 10)).T, ValueError),               # Fortran order
    (np.zeros((20, 2))[::2], ValueError),            # strided
    (np.zeros(20), ValueError),                      # 1-D
    ([[0.0, 0.0]], TypeError),                       # not an array
], ids=["channels", "dtype", "order", "strided", "1d", "list"])
def test_next_refuses_wrong_buffers(buf, exc):
    s = vs.RasterScan()
    s.initialize(small())
    with pytest.raises(exc):
        s.next(vm.MarkerList(), buf)
    ro = np.zeros((4, 2))
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        s.next(vm.MarkerList(), ro)


def test_next_before_initialize_and_empty_buffer():
    with pytest.raises(ValueError, match="not initialized"):
        vs.SpiralScan().next(vm.MarkerList(), np.zeros((4, 2)))
    s = vs.RasterScan()
    s.initialize(small())
    assert s.next(vm.MarkerList(), np.zeros((0, 2))) == 0


def test_change_keeps_the_old_pattern_on_error():
    s = vs.RasterScan()
    s.initialize(small())
    s.next(vm.MarkerList(), np.zeros((20, 2)))
    with pytest.raises(ValueError):
        s.change(small(channels_per_sample=1, limits=[vs.limits.ThorLabs_GVS_5mm]))
    assert s.config == small()
    ms = vm.MarkerList()
    s.change(small(offset=(0.1, 0.1)), event_id=5)
    s.next(ms, np.zeros((200, 2)))
    assert any(isinstance(m, vm.Event) and m.id == 5 for m in ms)


def test_segment_without_samples_is_held_and_refused_by_the_scan():
    """As vortex's: a new Segment holds an empty (0, 2) position and takes an empty (0, channels)
    one back; a freeform config holds it; the scan that would play it refuses it, naming it, at
    initialize and at change (which keeps the old pattern)."""
    seg = vs.Segment()
    assert seg.position.shape == (0, 2) and seg.position.dtype == np.float64
    seg.position = seg.position
    seg.position = np.zeros((0, 3))
    assert seg.position.shape == (0, 3)
    with pytest.raises(ValueError, match=r"Segment.position: shape \(0,\)"):
        seg.position = np.zeros(0)
    with pytest.raises(vg.VortexError, match="no samples, cannot take the entry position"):
        seg.entry_position
    with pytest.raises(vg.VortexError, match="no samples, cannot take the exit position"):
        seg.exit_position
    good = vs.Segment()
    good.position = np.array([[0.0, 0.0], [0.1, 0.1], [0.2, 0.2]])
    c = vs.FreeformScanConfig()
    c.pattern = [good, vs.Segment()]
    c.bypass_limits_check = True
    c.inactive_policy = vs.inactive_policy.FixedLinear(5, 7)
    c.validate()
    held = c.to_segments()
    assert [s.position.shape for s in held] == [(3, 2), (0, 2)]
    assert c.copy() == c
    s = vs.FreeformScan()
    with pytest.raises(ValueError, match=r"segment 1: no samples \(an empty position\), expected at least one"):
        s.initialize(c)
    ok = c.copy()
    ok.pattern = [good]
    s.initialize(ok)
    with pytest.raises(ValueError, match="segment 1: no samples"):
        s.change(c)
    assert s.config == ok
    assert s.next(vm.MarkerList(), np.zeros((10, 2))) == 10


def test_queue_callbacks_run_in_python_after_the_call():
    import threading

    q = vs.ScanQueue()
    seen = []
    a = vs.RasterScan()
    a.initialize(small(loop=False))
    q.append(a, lambda sample, e: seen.append((sample, str(e), threading.get_ident())))
    q.generate(vm.MarkerList(), np.zeros((300, 2)))
    assert [e for _, e, _ in seen] == ["ScanQueue.Event.Start", "ScanQueue.Event.Finish"]
    assert {t for _, _, t in seen} == {threading.get_ident()}
    assert q.state()[0] == 300 and "ScanQueue" in repr(q)


def test_queue_callback_error_propagates_and_queue_survives():
    q = vs.ScanQueue()
    a = vs.RasterScan()
    a.initialize(small())

    def boom(sample, e):
        raise RuntimeError("user callback")
    q.append(a, boom)
    with pytest.raises(RuntimeError, match="user callback"):
        q.generate(vm.MarkerList(), np.zeros((10, 2)))
    got, total = q.generate(vm.MarkerList(), np.zeros((10, 2)))
    assert (got, total) == (10, 10)


@pytest.mark.parametrize("code", [
    # huge requests: refused before allocating
    """
    import vortexgo.scan as vs, vortexgo as vg
    c = vs.RasterScanConfig(); c.ascans_per_bscan = 2**31; c.bscans_per_volume = 2**31; c.bypass_limits_check = True
    try:
        vs.RasterScan().initialize(c)
    except (ValueError, MemoryError) as e:
        print("refused", type(e).__name__)
    """,
    """
    import vortexgo.scan as vs
    c = vs.FixedLinear(2**26, 2**26) if hasattr(vs, "FixedLinear") else vs.inactive_policy.FixedLinear(2**27, 2**27)
    cfg = vs.RasterScanConfig(); cfg.inactive_policy = c; cfg.bypass_limits_check = True
    cfg.ascans_per_bscan = 2**20; cfg.bscans_per_volume = 64
    try:
        s = vs.RasterScan(); s.initialize(cfg); s.scan_buffer()
    except (ValueError, MemoryError) as e:
        print("refused", type(e).__name__)
    """,
    # a buffer freed under a scan: Python holds it for the call, so this only reuses memory
    """
    import numpy as np, vortexgo.scan as vs, vortexgo.marker as vm, gc
    c = vs.RasterScanConfig(); c.bscan_extent = vs.Range(-0.4, 0.4); c.ascans_per_bscan = 12; c.bscans_per_volume = 4
    c.inactive_policy = vs.inactive_policy.FixedLinear(5, 7)
    s = vs.RasterScan(); s.initialize(c)
    for i in range(200):
        s.next(vm.MarkerList(), np.zeros((97, 2))); gc.collect()
    print("refused", "none")
    """,
], ids=["huge-shape", "huge-inactive", "buffer-churn"])
def test_risky_cases_in_subprocess(code):
    # The shared runner: the vortexgo this session imported, a crash or hang
    # fails the case with the child's output.
    r = _subproc.run(code)
    assert "refused" in r.stdout
