"""vortex's stream storage endpoints through the engine: the strobe stream, the
stream stack endpoints (SimpleStack and HDF5) with each BufferStrategy, and the
counter / galvo-actual host tensor endpoints. The files are read back with NumPy
and h5py and compared with independent references: the scan queue's waveform and
markers (a fresh queue, as test_engine_generate does), the strobe words computed
in NumPy from vortex's rules, and a SimulatedIO's fed-back positions."""

import os
import threading

import numpy as np
import pytest

import vortexgo as vg
import vortexgo.engine as ve
from vortexgo import storage as vs
from vortexgo.engine import (
    BufferStrategy, CounterStackEndpoint, CounterStackHostTensorEndpoint, Engine, EngineConfig,
    GalvoActualStackEndpoint, GalvoActualStackHostTensorEndpoint, GalvoTargetStackEndpoint, SampleActualStackEndpoint,
    SampleTargetStackEndpoint, StrobesStackEndpoint, StrobesStreamEndpoint,
)
from vortexgo.format import (FormatPlanner, FormatPlannerConfig, LinearTransform, SimpleSlice, StackFormatExecutor,
                             StackFormatExecutorConfig)
from vortexgo.io import SimulatedIO
from vortexgo.marker import SegmentBoundary

import test_engine_generate as tg
from conftest import needs_cuda

pytestmark = pytest.mark.timeout(120)

S, A, B, RPB = tg.S, tg.A, tg.B, tg.RPB
DELAY = 3  # the SimulatedIO's feedback delay: the measured position lags the output by it
DEVICES = ["cpu", pytest.param("cuda", marks=needs_cuda)]


def sfe():
    """A stack executor keeping every column."""
    return StackFormatExecutor(StackFormatExecutorConfig())


def rig(tmp_path, eps, device="cpu", ios=(), loop=False, planners=None, **cfg):
    """tg.rig on `device` (the processor picks the engine's device); the planner is
    appended to `planners` when given."""
    raw = (np.arange(1024 * S, dtype=np.uint16) % 60000).reshape(1024, S)
    np.save(tmp_path / "raw.npy", raw)
    acq = vg.FileAcquisition(path=str(tmp_path / "raw.npy"), samples_per_record=S, loop=loop,
                             **({"rate": 200_000} if loop else {}))
    proc = (vg.CUDAProcessor if device == "cuda" else vg.CPUProcessor)(samples_per_record=S, ascans_per_block=RPB)
    planner = FormatPlanner(FormatPlannerConfig(B, A))
    if planners is not None:
        planners.append(planner)
    ec = EngineConfig(records_per_block=RPB, blocks_to_allocate=4, preload_count=2, **cfg)
    ec.add_acquisition(acq, [proc])
    ec.add_processor(proc, [planner])
    ec.add_formatter(planner, eps)
    for io, kw in ios:
        ec.add_io(io, **kw)
    return ec


def stack(tmp_path, cls, name, columns, hdf5=False):
    s = cls()
    if hdf5:
        s.open(vs.HDF5StackConfig(str(tmp_path / name), (B, A, columns, 1)))
    else:
        s.open(vs.SimpleStackConfig(str(tmp_path / name), (B, A, columns, 1)))
    return s


def run(ec, scan=None):
    eng = Engine(ec)
    eng.scan_queue.append(scan or tg.raster())
    eng.prepare()
    eng.start()
    eng.wait()
    s = eng.status()
    assert s.done and s.error == "", s
    return eng, s


def layout(values, markers):
    """values (samples, columns) laid out as the plan does: segment i's records
    from its marker's sample, reversed where the marker says so -> (B, A, columns)."""
    out = np.zeros((B, A) + values.shape[1:], values.dtype)
    for m in markers:
        if isinstance(m, SegmentBoundary):
            rows = values[m.sample:m.sample + A]
            out[m.index_in_volume] = rows[::-1] if m.reversed else rows
    return out


def expected(ec, n):
    """The scan queue's waveform, the actual positions a SimulatedIO feeds back
    DELAY samples late, the record counter and vortex's strobe words, per sample."""
    buf, markers = tg.reference(n)
    actual = np.concatenate([np.repeat(buf[:1], DELAY, 0), buf[:-DELAY]])
    counter = np.arange(n, dtype=np.uint64)[:, None]
    strobes = tg.strobe_reference(ec.strobes, markers, n)[:, None]
    return buf, actual, counter, strobes, markers


@pytest.mark.parametrize("device", DEVICES)
def test_stream_stacks_and_tensors_hold_the_plan_layout(tmp_path, device):
    stores = {
        "counter": stack(tmp_path, vs.SimpleStackUInt64, "counter.npy", 1),
        "galvo_target": stack(tmp_path, vs.SimpleStackFloat64, "gt.npy", 2),
        "sample_target": stack(tmp_path, vs.SimpleStackFloat64, "st.npy", 2),
        "galvo_actual": stack(tmp_path, vs.SimpleStackFloat64, "ga.npy", 2),
        "sample_actual": stack(tmp_path, vs.SimpleStackFloat64, "sa.npy", 2),
        "strobes": stack(tmp_path, vs.SimpleStackUInt32, "strobes.npy", 1),
    }
    strobe_stream = vs.SimpleStreamUInt32()
    strobe_stream.open(vs.SimpleStreamConfig(str(tmp_path / "strobes.bin")))
    classes = {"counter": CounterStackEndpoint, "galvo_target": GalvoTargetStackEndpoint,
               "sample_target": SampleTargetStackEndpoint, "galvo_actual": GalvoActualStackEndpoint,
               "sample_actual": SampleActualStackEndpoint, "strobes": StrobesStackEndpoint}
    eps = {k: classes[k](sfe(), s) for k, s in stores.items()}
    counter_t = CounterStackHostTensorEndpoint(sfe(), (B, A, 1))
    actual_t = GalvoActualStackHostTensorEndpoint(sfe(), (B, A, 2))
    strobe_ep = StrobesStreamEndpoint(strobe_stream)
    sim = SimulatedIO(feedback=True, feedback_delay=DELAY)
    ec = rig(tmp_path, list(eps.values()) + [counter_t, actual_t, strobe_ep], device, ios=[(sim, {})])
    eng, s = run(ec)
    assert s.volumes == 1 and all(e.volumes_written == 1 for e in eps.values())
    for st in list(stores.values()) + [strobe_stream]:
        st.close()
    n = s.blocks_acquired * RPB
    buf, actual, counter, strobes, markers = expected(ec, n)
    want = {"counter": counter, "galvo_target": buf, "sample_target": buf, "galvo_actual": actual,
            "sample_actual": actual, "strobes": strobes}
    files = {"counter": "counter.npy", "galvo_target": "gt.npy", "sample_target": "st.npy", "galvo_actual": "ga.npy",
             "sample_actual": "sa.npy", "strobes": "strobes.npy"}
    for k, f in files.items():
        got = np.load(tmp_path / f)
        assert got.dtype == want[k].dtype and got.shape == (1, B, A, want[k].shape[1], 1), k
        np.testing.assert_array_equal(got[0, ..., 0], layout(want[k], markers), err_msg=k)
    # the SimulatedIO measured what the engine commanded, DELAY samples late
    first, out = sim.recorded(2)
    np.testing.assert_array_equal(out[:n], buf[first:first + n])
    with counter_t.tensor as v:
        assert v.dtype == np.uint64 and v.shape == (B, A, 1)
        np.testing.assert_array_equal(v, layout(counter, markers))
    with actual_t.tensor as v:
        assert v.dtype == np.float64 and v.shape == (B, A, 2)
        np.testing.assert_array_equal(v, layout(actual, markers))
    # the strobe stream: the copied records' words in acquisition order
    rows = np.concatenate([np.arange(m.sample, m.sample + A) for m in markers if isinstance(m, SegmentBoundary)])
    np.testing.assert_array_equal(np.fromfile(tmp_path / "strobes.bin", np.uint32), strobes[rows, 0])
    assert np.any(strobes & (1 << 3)) and np.any(strobes & 1), "segment and sample strobes fire"
    eng.close()


def test_hdf5_stream_stacks(tmp_path):
    h5py = pytest.importorskip("h5py")
    try:
        vs.hdf5_library()
    except vg.VortexError as e:
        pytest.skip(f"no HDF5 library: {e}")
    h5 = {"counter": (vs.HDF5StackUInt64, 1), "galvo_target": (vs.HDF5StackFloat64, 2),
          "sample_target": (vs.HDF5StackFloat64, 2), "galvo_actual": (vs.HDF5StackFloat64, 2),
          "sample_actual": (vs.HDF5StackFloat64, 2), "strobes": (vs.HDF5StackUInt32, 1)}
    stores = {k: stack(tmp_path, cls, f"{k}.h5", cols, hdf5=True) for k, (cls, cols) in h5.items()}
    classes = {k: getattr(ve, "".join(p.title() for p in k.split("_")) + "HDF5StackEndpoint") for k in h5}
    eps = [classes[k](sfe(), s, BufferStrategy.Segment) for k, s in stores.items()]
    ec = rig(tmp_path, eps, ios=[(SimulatedIO(feedback=True, feedback_delay=DELAY), {})])
    eng, s = run(ec)
    for st in stores.values():
        st.close()
    buf, actual, counter, strobes, markers = expected(ec, s.blocks_acquired * RPB)
    want = {"counter": counter, "galvo_target": buf, "sample_target": buf, "galvo_actual": actual,
            "sample_actual": actual, "strobes": strobes}
    for k in h5:
        with h5py.File(tmp_path / f"{k}.h5", "r") as f:
            d = f["data"][...]
        assert d.dtype == want[k].dtype and d.shape == (1, B, A, want[k].shape[1], 1), k
        np.testing.assert_array_equal(d[0, ..., 0], layout(want[k], markers), err_msg=k)
    eng.close()


@pytest.mark.parametrize("strategy", list(BufferStrategy) + ["segment", 0])
def test_buffer_strategies_write_complete_volumes_alike(tmp_path, strategy):
    c = stack(tmp_path, vs.SimpleStackUInt64, "c.npy", 1)
    # the executor's slice and transform act on the stream's columns: the second column, 2x + 1
    ex = StackFormatExecutor(StackFormatExecutorConfig(SimpleSlice(1, 2), LinearTransform(2, 1)))
    g = stack(tmp_path, vs.SimpleStackFloat64, "g.npy", 1)
    eps = [CounterStackEndpoint(sfe(), c, strategy), GalvoTargetStackEndpoint(ex, g, strategy)]
    assert eps[0].buffer_strategy in BufferStrategy
    ec = rig(tmp_path, eps)
    eng, s = run(ec)
    c.close()
    g.close()
    buf, _, counter, _, markers = expected(ec, s.blocks_acquired * RPB)
    np.testing.assert_array_equal(np.load(tmp_path / "c.npy")[0, ..., 0], layout(counter, markers))
    np.testing.assert_array_equal(np.load(tmp_path / "g.npy")[0, ..., 0], layout(2 * buf[:, 1:2] + 1, markers))
    eng.close()


def test_sample_streams_follow_the_scanner_warp(tmp_path):
    gt = stack(tmp_path, vs.SimpleStackFloat64, "gt.npy", 2)
    st = stack(tmp_path, vs.SimpleStackFloat64, "st.npy", 2)
    ec = rig(tmp_path, [GalvoTargetStackEndpoint(gt), SampleTargetStackEndpoint(st)],
             scanner_warp=vg.scan.warp.Angular(2))
    eng, s = run(ec)
    gt.close()
    st.close()
    buf, _, _, _, markers = expected(ec, s.blocks_acquired * RPB)
    # galvo_target is the waveform the scan queue generated; sample_target its Angular(2) image
    np.testing.assert_array_equal(np.load(tmp_path / "gt.npy")[0, ..., 0], layout(buf, markers))
    np.testing.assert_allclose(np.load(tmp_path / "st.npy")[0, ..., 0], layout(2 * buf, markers))
    eng.close()


def test_stop_mid_volume_keeps_completed_volumes(tmp_path):
    c = stack(tmp_path, vs.SimpleStackUInt64, "c.npy", 1)
    blk = stack(tmp_path, vs.SimpleStackUInt64, "blk.npy", 1)
    ep, blk_ep = CounterStackEndpoint(c), CounterStackEndpoint(None, blk, BufferStrategy.Block)
    # the callback sits on its own endpoint: one with callbacks gives up the blocks a stop
    # interrupts while it waits for them (the engine's callback sync)
    watch = ve.NullEndpoint()
    two = threading.Event()
    seen = []
    watch.volume_callback = lambda *a: (seen.append(a), len(seen) >= 2 and two.set())
    ec = rig(tmp_path, [ep, blk_ep, watch], loop=True)
    eng = Engine(ec)
    eng.scan_queue.append(tg.raster(loop=True))
    eng.prepare()
    eng.start()
    assert two.wait(60)
    with pytest.raises(vg.InUseError):
        c.close()
    with pytest.raises(vg.InUseError):
        ep.close()
    eng.stop()
    s = eng.status()
    assert s.done and s.error == ""
    written = ep.volumes_written
    assert written >= 2 and written == blk_ep.volumes_written == s.volumes
    c.close()
    blk.close()
    vol = np.load(tmp_path / "c.npy")[..., 0, 0]  # (volumes, B, A)
    by_block = np.load(tmp_path / "blk.npy")[..., 0, 0]
    assert vol.shape[0] == by_block.shape[0] == written
    # every volume but the last (which the stop may have cut): each B-scan one run of
    # consecutive records, in either direction, the volumes in acquisition order
    for v in vol[:-1]:
        d = np.diff(v.astype(np.int64), axis=1)
        assert np.all(np.abs(d) == 1) and np.all(d == d[:, :1])
    assert np.all(np.diff(vol[:, 0, 0].astype(np.int64)) > 0)
    np.testing.assert_array_equal(by_block[:-1], vol[:-1])
    # the last: every record the stop let through is in both files (the Block strategy
    # wrote only those; the Volume strategy wrote the finished segments whole)
    got = by_block[-1] != 0
    np.testing.assert_array_equal(by_block[-1][got], vol[-1][got])
    eng.close()


def test_bad_input_is_named(tmp_path):
    u16 = vs.SimpleStackUInt16()
    with pytest.raises(ValueError, match="uint64 stack for CounterStackEndpoint"):
        CounterStackEndpoint(None, u16)
    with pytest.raises(TypeError, match="expected a SimpleStack of float64"):
        GalvoTargetStackEndpoint(None, vs.SimpleStreamFloat64())
    with pytest.raises(TypeError, match="expected a HDF5Stack of uint32"):
        ve.StrobesHDF5StackEndpoint(None, vs.SimpleStackUInt32())
    with pytest.raises(ValueError, match="buffer_strategy='whole'"):
        CounterStackEndpoint(None, vs.SimpleStackUInt64(), "whole")
    with pytest.raises(ValueError, match="buffer_strategy"):
        CounterStackEndpoint(None, vs.SimpleStackUInt64(), 3)
    with pytest.raises(TypeError, match="buffer_strategy"):
        CounterStackEndpoint(None, vs.SimpleStackUInt64(), 1.5)
    with pytest.raises(ValueError, match="SimpleStream of uint32 for StrobesStreamEndpoint"):
        StrobesStreamEndpoint(vs.SimpleStreamUInt16())
    with pytest.raises(TypeError, match="shape=None"):
        CounterStackHostTensorEndpoint(sfe())
    with pytest.raises(ValueError, match="shape"):
        GalvoActualStackHostTensorEndpoint(sfe(), (B, 0, 2))
    t = CounterStackHostTensorEndpoint(sfe(), (B, A, 1))
    assert not t.tensor.valid and t.tensor.shape == [B, A, 1]
    with t.tensor as empty:
        assert empty.shape == (0, A, 1)
    # an unopened storage and a storage of the wrong shape: named at prepare
    with pytest.raises(ValueError, match="not open"):
        Engine(rig(tmp_path, [CounterStackEndpoint(vs.SimpleStackUInt64())])).prepare()
    bad = vs.SimpleStackFloat64()
    bad.open(vs.SimpleStackConfig(str(tmp_path / "bad.npy"), (B + 1, A, 2, 1)))
    with pytest.raises(ValueError, match=r"expected \(4, 8, columns, 1\)"):
        Engine(rig(tmp_path, [GalvoTargetStackEndpoint(bad)])).prepare()
    bad.close()
    # a counter stack sized for 2 columns: the run stops with the mismatch named
    wide = vs.SimpleStackUInt64()
    wide.open(vs.SimpleStackConfig(str(tmp_path / "wide.npy"), (B, A, 2, 1)))
    eng = Engine(rig(tmp_path, [CounterStackEndpoint(wide)]))
    eng.scan_queue.append(tg.raster())
    eng.prepare()
    eng.start()
    with pytest.raises(ValueError, match="counter stream has 1 columns"):
        eng.wait()
    eng.close()
    wide.close()


def test_vortex_names_and_values():
    names = ["BufferStrategy", "StrobesStreamEndpoint", "CounterStackHostTensorEndpoint",
             "GalvoActualStackHostTensorEndpoint"]
    for stream in ("Counter", "GalvoActual", "GalvoTarget", "SampleActual", "SampleTarget", "Strobes"):
        names += [f"{stream}StackEndpoint", f"{stream}HDF5StackEndpoint", f"{stream}StreamEndpoint"]
    for n in names:
        assert n in ve.__all__ and hasattr(ve, n), n
    # vortex's values (buffer_strategy_t: none, segment, volume) and default
    assert [(s.name, s.value) for s in BufferStrategy] == [("Block", 0), ("Segment", 1), ("Volume", 2)]
    u64 = vs.SimpleStackUInt64()
    assert CounterStackEndpoint(sfe(), u64).buffer_strategy is BufferStrategy.Volume
    assert "SimpleStackUInt32" in vs.__all__ and vs.SimpleStreamUInt32().dtype == np.uint32


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("strategy", list(BufferStrategy))
def test_ascan_hdf5_and_broct_strategies_match_a_simple_stack(tmp_path, device, strategy):
    """The A-scan and spectra stack endpoints (formatted on the engine's device) write the
    same complete volumes with every strategy as a SimpleStack with vortex's default."""
    import test_engine as te

    h5py = pytest.importorskip("h5py")
    try:
        vs.hdf5_library()
    except vg.VortexError as e:
        pytest.skip(f"no HDF5 library: {e}")
    TB, TA, TS = te.B, te.A, te.S
    ref = te.open_stack(tmp_path, "ref.npy")
    sref = te.open_stack(tmp_path, "sref.npy", cls=vs.SimpleStackUInt16)
    h5 = vs.HDF5StackInt8()
    h5.open(vs.HDF5StackConfig(str(tmp_path / "vol.h5"), (TB, TA, TS)))
    sh5 = vs.HDF5StackUInt16()
    sh5.open(vs.HDF5StackConfig(str(tmp_path / "spectra.h5"), (TB, TA, TS)))
    br = vs.BroctStorage()
    br.open(vs.BroctStorageConfig(str(tmp_path / "vol.broct"), (TB, TA, TS)))
    eps = [ve.AscanStackEndpoint(ref), ve.SpectraStackEndpoint(sref),
           ve.AscanHDF5StackEndpoint(sfe(), h5, strategy), ve.SpectraHDF5StackEndpoint(sfe(), sh5, strategy),
           ve.BroctStorageEndpoint(sfe(), br, strategy)]
    assert all(e.buffer_strategy is strategy for e in eps[2:])
    eng = te.run(te.make_rig(eps, volumes=2, device=device))
    assert eng.status().error == ""
    assert [e.volumes_written for e in eps] == [2] * 5
    for st in (ref, sref, h5, sh5, br):
        st.close()
    want, swant = np.load(tmp_path / "ref.npy"), np.load(tmp_path / "sref.npy")
    with h5py.File(tmp_path / "vol.h5", "r") as f:
        np.testing.assert_array_equal(f["data"][...], want)
    with h5py.File(tmp_path / "spectra.h5", "r") as f:
        np.testing.assert_array_equal(f["data"][...], swant)
    raw = (tmp_path / "vol.broct").read_bytes()
    body = np.frombuffer(raw[len(raw) - want.size:], np.int8).reshape(2, TB, TS, TA)
    np.testing.assert_array_equal(body, want[..., 0].transpose(0, 1, 3, 2))
    eng.close()


@pytest.mark.parametrize("header", list(vs.SimpleStackHeader))
def test_uint32_stack_headers_read_back(tmp_path, header):
    """The strobe stacks' uint32 files open in the field's tools (vortex's headers
    describe uint32: NumPy 'uint32', MATLAB mxUINT32/miUINT32, NRRD uint32, NIfTI 768)."""
    shape = (2, 3, 4, 1)
    vol = (np.arange(np.prod(shape), dtype=np.uint32) * 0x01010101).reshape(shape)
    ext = {vs.SimpleStackHeader.NifTI: ".nii", vs.SimpleStackHeader.NRRD: ".nrrd", vs.SimpleStackHeader.MATLAB: ".mat",
           vs.SimpleStackHeader.NumPy: ".npy"}.get(header, ".bin")  # nibabel goes by the extension
    path = tmp_path / f"s{ext}"
    st = vs.SimpleStackUInt32()
    st.open(vs.SimpleStackConfig(str(path), shape, header=header))
    st.write_volume(vol)
    st.advance_volume()
    st.close()
    raw = path.read_bytes()
    np.testing.assert_array_equal(np.frombuffer(raw[len(raw) - vol.nbytes:], np.uint32).reshape(shape), vol)
    if header == vs.SimpleStackHeader.NumPy:
        got = np.load(path)
        assert got.dtype == np.uint32
        np.testing.assert_array_equal(got[0], vol)
    elif header == vs.SimpleStackHeader.MATLAB:
        sio = pytest.importorskip("scipy.io")
        got = sio.loadmat(str(path))["data"]
        assert got.dtype == np.uint32
        np.testing.assert_array_equal(got.T[0], vol)
    elif header == vs.SimpleStackHeader.NRRD:
        nrrd = pytest.importorskip("nrrd")
        got, hdr = nrrd.read(str(path))
        assert got.dtype == np.uint32 and hdr["type"] in ("uint32", "unsigned int")
        np.testing.assert_array_equal(got.T[0], vol)
    elif header == vs.SimpleStackHeader.NifTI:
        nib = pytest.importorskip("nibabel")
        img = nib.load(str(path))
        assert img.get_data_dtype() == np.uint32
        x = np.asarray(img.dataobj)  # vortex's layout: (volumes, bscans, ...) over C-ordered bytes
        np.testing.assert_array_equal(x.ravel(order="F").reshape(x.shape)[0], vol)


def test_stream_stacks_across_sessions(tmp_path):
    """prepare once, two start ... stop sessions: each session's volume is appended."""
    c = stack(tmp_path, vs.SimpleStackUInt64, "c.npy", 1)
    g = stack(tmp_path, vs.SimpleStackFloat64, "g.npy", 2)
    eps = [CounterStackEndpoint(sfe(), c, BufferStrategy.Segment), GalvoTargetStackEndpoint(sfe(), g)]
    planners: list = []
    eng = Engine(rig(tmp_path, eps, planners=planners))
    eng.prepare()
    for session in range(2):
        if session:
            planners[0].reset()  # vortex's planner keeps its state across sessions
        eng.scan_queue.append(tg.raster())
        eng.start()
        eng.wait()
        eng.stop()
        assert eng.status().error == ""
    assert [e.volumes_written for e in eps] == [2, 2]
    c.close()
    g.close()
    vol = np.load(tmp_path / "c.npy")[..., 0, 0].astype(np.int64)
    assert vol.shape == (2, B, A)
    # the same raster in both sessions: the same layout, offset by where each session's samples start
    np.testing.assert_array_equal(vol[1] - vol[1].min(), vol[0] - vol[0].min())
    gv = np.load(tmp_path / "g.npy")
    np.testing.assert_array_equal(gv[1], gv[0])
    eng.close()


from _vortex import VORTEX_PY, WHY_NOT, have_vortex, vortex_env  # noqa: E402

# The storage operations the stack endpoints run for gosrc/endpoint's three-block plan
# (streams_test.go's strategyOps): (op, index, ascan, values).
STRATEGY_OPS = {
    "Block": [("partial", 0, 0, [0, 1, 2, 3]), ("partial", 1, 0, [4, 5]), ("partial", 1, 2, [6, 7]),
              ("partial", 2, 0, [11, 10, 9, 8]), ("advance",), ("partial", 0, 0, [12, 13]), ("advance",)],
    "Segment": [("multi", 0, 0, [0, 1, 2, 3]), ("multi", 1, 0, [4, 5, 6, 7]), ("multi", 2, 0, [11, 10, 9, 8]),
                ("advance",), ("multi", 0, 0, [12, 13, 9, 8]), ("advance",)],
    "Volume": [("multi", 0, 0, [0, 1, 2, 3]), ("multi", 1, 0, [4, 5, 6, 7, 11, 10, 9, 8]), ("advance",),
               ("multi", 0, 0, [12, 13, 2, 3]), ("advance",)],
}
_REPLAY = r"""
import json, sys, numpy as np
ops, path, header = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
if sys.argv[4] == "vortex":
    from vortex.storage import SimpleStackUInt16, SimpleStackConfig, SimpleStackHeader
    c = SimpleStackConfig(); c.path = path; c.shape = (3, 4, 1, 1); c.header = getattr(SimpleStackHeader, header)
else:
    from vortexgo.storage import SimpleStackUInt16, SimpleStackConfig, SimpleStackHeader
    c = SimpleStackConfig(path, (3, 4, 1, 1), header=getattr(SimpleStackHeader, header))
s = SimpleStackUInt16(); s.open(c)
for op in ops:
    if op[0] == "advance":
        s.advance_volume(False)
    elif op[0] == "multi":
        s.write_multi_bscan(op[1], np.array(op[3], np.uint16).reshape(-1, 4, 1, 1))
    else:
        s.write_partial_bscan(op[1], op[2], np.array(op[3], np.uint16).reshape(-1, 1, 1))
s.close()
"""


@pytest.mark.skipif(not have_vortex(), reason=WHY_NOT)
@pytest.mark.parametrize("header", ["NumPy", "Empty", "NRRD"])
@pytest.mark.parametrize("strategy", list(STRATEGY_OPS))
def test_strategy_operations_write_vortexs_file(tmp_path, strategy, header):
    """The storage operations each strategy runs (advance_volume(False) past partly
    written volumes included) leave vortex's file byte for byte, vortex's storage
    driven directly (its engine needs CUDA; uint16: vortex's SimpleStackUInt64 refuses
    every array)."""
    import json
    import subprocess
    import sys

    ops = json.dumps(STRATEGY_OPS[strategy])
    env = vortex_env()
    try:
        p = subprocess.run([str(VORTEX_PY), "-c", _REPLAY, ops, str(tmp_path / "vortex.bin"), header, "vortex"],
                           env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.skip("vortex did not answer in time")
    if p.returncode != 0:
        pytest.skip(f"vortex does not run here: {p.stderr[-300:]}")
    ours = subprocess.run([sys.executable, "-c", _REPLAY, ops, str(tmp_path / "ours.bin"), header, "vortexgo"],
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert ours.returncode == 0, ours.stderr
    assert (tmp_path / "ours.bin").read_bytes() == (tmp_path / "vortex.bin").read_bytes()
