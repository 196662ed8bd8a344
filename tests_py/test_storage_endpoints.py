"""vortex's storage endpoints on the CPU backend: stream endpoints (A-scans,
spectra, counter, galvo waveforms), StreamDumpStorage, MarkerLogStorage, HDF5 and
BROCT stack endpoints. Files are read back with NumPy / h5py and compared with
independent references (the raw file, the scan queue's waveform and markers, a
SimpleStack written by the same engine); a full disk stops the engine loudly; a
stop keeps every completed volume."""

import threading
from collections import Counter

import numpy as np
import pytest

import vortexgo as vg
from vortexgo import storage as vs
from vortexgo.engine import (
    AscanHDF5StackEndpoint, AscanStackEndpoint, AscanStreamEndpoint, BroctStorageEndpoint, CounterStreamEndpoint,
    Engine, GalvoActualStreamEndpoint, GalvoTargetStreamEndpoint, MarkerLogStorage, SpectraHDF5StackEndpoint,
    SpectraStackEndpoint, SpectraStreamEndpoint, StreamDumpStorage,
)
from vortexgo.marker import ActiveLines, Event, InactiveLines, ScanBoundary, SegmentBoundary, VolumeBoundary

import test_engine as te
import test_engine_generate as tg
from _subproc import run as run_case
from conftest import needs_cuda

# The engine's device: the endpoints download from device memory on CUDA (the lead runs these on a GPU).
DEVICES = ["cpu", pytest.param("cuda", marks=needs_cuda)]

pytestmark = pytest.mark.timeout(120)


def stream(tmp_path, cls, name):
    s = cls()
    s.open(vs.SimpleStreamConfig(str(tmp_path / name)))
    return s


def marker_line(m):
    """vortex's text log line, written independently of vortexgo's Go code."""
    rf = lambda r: "R" if r else "F"  # noqa: E731
    if isinstance(m, ScanBoundary):
        rest = f"C {m.sequence} 0 - {m.volume_count_hint} {m.flags.value}"
    elif isinstance(m, VolumeBoundary):
        rest = f"V {m.sequence} {m.index_in_scan} {rf(m.reversed)} {m.segment_count_hint} {m.flags.value}"
    elif isinstance(m, SegmentBoundary):
        rest = f"S {m.sequence} {m.index_in_volume} {rf(m.reversed)} {m.record_count_hint} {m.flags.value}"
    elif isinstance(m, ActiveLines):
        rest = "A 0 0 - 0 0"
    elif isinstance(m, InactiveLines):
        rest = "I 0 0 - 0 0"
    else:
        assert isinstance(m, Event)
        rest = f"E {m.id} 0 - 0 0"
    return f"{m.sample:12d} {rest}"


def test_stream_endpoints_with_the_scan_queue(tmp_path):
    spectra = stream(tmp_path, vs.SimpleStreamUInt16, "spectra.bin")
    counter = stream(tmp_path, vs.SimpleStreamUInt64, "counter.bin")
    galvo = stream(tmp_path, vs.SimpleStreamFloat64, "galvo.bin")
    log = vs.MarkerLog()
    log.open(vs.MarkerLogConfig(str(tmp_path / "markers.txt")))
    blog = vs.MarkerLog()
    blog.open(vs.MarkerLogConfig(str(tmp_path / "markers.bin"), binary=True))
    dump = vs.StreamDump()
    dump.open(vs.StreamDumpConfig(str(tmp_path / "dump.bin"), stream=1, divisor=3))
    cdump = vs.StreamDump()
    cdump.open(vs.StreamDumpConfig(str(tmp_path / "cdump.bin"), stream=0))
    eps = [SpectraStreamEndpoint(spectra), CounterStreamEndpoint(counter), GalvoTargetStreamEndpoint(galvo),
           MarkerLogStorage(log), MarkerLogStorage(blog), StreamDumpStorage(dump), StreamDumpStorage(cdump)]
    raw, ec, _ = tg.rig(tmp_path, lambda p: eps)
    eng = Engine(ec)
    eng.scan_queue.append(tg.raster())
    eng.prepare()
    assert all(e.prepared for e in eps)
    eng.start()
    eng.wait()
    s = eng.status()
    assert s.done and s.error == ""
    assert [e.blocks_written for e in eps] == [s.blocks_formatted] * len(eps)
    for st in (spectra, counter, galvo, log, blog, dump, cdump):
        st.close()
    n = s.blocks_acquired * tg.RPB
    buf, markers = tg.reference(n)
    segs = [m for m in markers if isinstance(m, SegmentBoundary)]
    rows = np.concatenate([np.arange(m.sample, m.sample + tg.A) for m in segs])
    # the plan's copies, in block order (vortex writes each copy's block range as is)
    np.testing.assert_array_equal(np.fromfile(tmp_path / "spectra.bin", np.uint16).reshape(-1, tg.S), raw[rows])
    np.testing.assert_array_equal(np.fromfile(tmp_path / "counter.bin", np.uint64), rows)
    np.testing.assert_array_equal(np.fromfile(tmp_path / "galvo.bin").reshape(-1, 2), buf[rows])
    # the dump: every block whole, every 3rd row from each block's first
    blocks = buf.reshape(-1, tg.RPB, 2)
    np.testing.assert_array_equal(np.fromfile(tmp_path / "dump.bin").reshape(-1, 2),
                                  blocks[:, ::3].reshape(-1, 2))
    np.testing.assert_array_equal(np.fromfile(tmp_path / "cdump.bin", np.uint64), np.arange(n))
    # the markers: the scan queue's, in order (after the engine's lead markers)
    lines = (tmp_path / "markers.txt").read_text().splitlines()
    want = [marker_line(m) for m in markers if m.sample < n]
    it = iter(lines)
    assert all(any(line == w for line in it) for w in want), (want, lines)
    rec = np.fromfile(tmp_path / "markers.bin", np.dtype([("sample", "<i8"), ("type", "S1"), ("a", "<u8"),
                                                         ("b", "<u8"), ("dir", "S1"), ("c", "<u8"), ("d", "<u8")]))
    assert len(rec) == len(lines)
    assert [int(line[:12]) for line in lines] == rec["sample"].tolist()
    assert [line[13] for line in lines] == [t.decode() for t in rec["type"]]


@pytest.mark.parametrize("blocks", [0.5, 1.5])
def test_stream_dump_at_each_io_lead(tmp_path, blocks):
    """vortex's galvo delay: IOs added with leads 0, d/3 and d (d half a block, or a block and a
    half), one StreamDumpStorage per lead for the galvo target, the sample target and the strobes.
    Read back, each lead's galvo target is lead 0's shifted ``lead`` rows earlier, the largest
    lead's is the scan queue's own waveform, and the sample target is the same for every lead."""
    d = int(blocks * tg.RPB)
    leads = [0, d // 3, d]
    streams = {"galvo": (1, np.float64), "sample": (2, np.float64), "strobes": (5, np.uint32)}
    dumps = {}
    for lead in leads:
        for name, (index, _) in streams.items():
            sd = vs.StreamDump()
            sd.open(vs.StreamDumpConfig(str(tmp_path / f"{name}-{lead}.bin"), stream=index))
            dumps[lead, name] = sd
    eps = [StreamDumpStorage(sd, lead) for (lead, _), sd in dumps.items()]
    _, ec, _ = tg.rig(tmp_path, lambda p: eps, ios=[(tg.NullIO(), {"lead_samples": lead}) for lead in leads],
                      blocks_to_acquire=8)
    eng = Engine(ec)
    eng.scan_queue.append(tg.raster(loop=True))
    eng.prepare()
    eng.start()
    eng.wait()
    assert eng.status().error == ""
    for sd in dumps.values():
        sd.close()
    read = {(lead, name): np.fromfile(tmp_path / f"{name}-{lead}.bin", dtype=streams[name][1])
            for lead, name in dumps}
    n = 8 * tg.RPB
    ref, ref_strobes = read[0, "galvo"].reshape(-1, 2), read[0, "strobes"]
    assert ref.shape == (n, 2) and ref_strobes.shape == (n,)
    q = vg.scan.ScanQueue()
    q.append(tg.raster(loop=True))
    wave = np.zeros((n, 2))
    q.generate(vg.marker.MarkerList(), wave)
    for lead in leads:
        galvo, sample = read[lead, "galvo"].reshape(-1, 2), read[lead, "sample"].reshape(-1, 2)
        np.testing.assert_array_equal(sample, ref, err_msg=f"lead {lead}: the sample target is lead 0's")
        np.testing.assert_array_equal(galvo[:n - lead], ref[lead:], err_msg=f"lead {lead}")
        np.testing.assert_array_equal(read[lead, "strobes"][:n - lead], ref_strobes[lead:], err_msg=f"lead {lead}")
        # before the scan reaches a smaller lead, it holds the queue's start (the origin)
        np.testing.assert_array_equal(galvo[:d - lead], 0.0)
    np.testing.assert_array_equal(read[d, "galvo"].reshape(-1, 2), wave, err_msg="the largest lead plays the queue")
    assert not np.array_equal(read[d, "galvo"], read[0, "galvo"])


def test_stream_dump_lead_no_io_has_is_refused(tmp_path):
    """A StreamDumpStorage lead that no IO of the engine has is refused by prepare, naming the
    argument and the engine's leads (vortex fails at the first block)."""
    sd = vs.StreamDump()
    sd.open(vs.StreamDumpConfig(str(tmp_path / "d.bin"), stream=1))
    _, ec, _ = tg.rig(tmp_path, lambda p: [StreamDumpStorage(sd, lead_samples=5)],
                      ios=[(tg.NullIO(), {"lead_samples": 4})])
    with pytest.raises(ValueError, match=r"StreamDumpStorage.*lead_samples=5, expected one of the engine's IO leads \[0 4\]"):
        Engine(ec).prepare()
    sd.close()


def new_engine(rig):
    """test_engine's engine for the rig (its scan queue filled where the rig has one)."""
    return te.new_engine(rig) if hasattr(te, "new_engine") else Engine(rig.config)


def rows_of(a, n):
    """The multiset of a's rows of n values (records in any order)."""
    return Counter(r.tobytes() for r in np.asarray(a).reshape(-1, n))


def legacy_rig(tmp_path, extra, **kw):
    """test_engine's simulated pipeline with a SimpleStack reference beside `extra`."""
    ref = te.open_stack(tmp_path, "ref.npy")
    ref_ep = AscanStackEndpoint(ref)
    rig = te.make_rig([ref_ep] + extra, **kw)
    return rig, ref, ref_ep


@pytest.mark.parametrize("device", DEVICES)
def test_hdf5_broct_and_ascan_stream_match_a_simple_stack(tmp_path, device):
    h5py = pytest.importorskip("h5py")
    B, A, S = te.B, te.A, te.S
    h5 = vs.HDF5StackInt8()
    h5.open(vs.HDF5StackConfig(str(tmp_path / "vol.h5"), (B, A, S), compression_level=3))
    br = vs.BroctStorage()
    br.open(vs.BroctStorageConfig(str(tmp_path / "vol.broct"), (B, A, S)))
    asc = stream(tmp_path, vs.SimpleStreamInt8, "ascans.bin")
    h5_ep, br_ep, asc_ep = AscanHDF5StackEndpoint(h5), BroctStorageEndpoint(br), AscanStreamEndpoint(asc)
    rig, ref, ref_ep = legacy_rig(tmp_path, [h5_ep, br_ep, asc_ep], volumes=3, device=device)
    eng = te.run(rig)
    assert eng.status().error == ""
    assert h5_ep.volumes_written == br_ep.volumes_written == ref_ep.volumes_written == 3
    for st in (ref, h5, br, asc):
        st.close()
    want = np.load(tmp_path / "ref.npy")  # (3, B, A, S, 1)
    with h5py.File(tmp_path / "vol.h5", "r") as f:
        np.testing.assert_array_equal(f["data"][...], want)
        assert f["data"].compression_opts == 3
    raw = (tmp_path / "vol.broct").read_bytes()
    body = np.frombuffer(raw[len(raw) - want.size:], np.int8).reshape(3, B, S, A)
    np.testing.assert_array_equal(body, want[..., 0].transpose(0, 1, 3, 2))
    # the stream holds the same records in acquisition order (a reversed B-scan is not flipped)
    assert rows_of(np.fromfile(tmp_path / "ascans.bin", np.int8), S) == rows_of(want, S)


@pytest.mark.parametrize("device", DEVICES)
def test_spectra_hdf5_and_float32_stream(tmp_path, device):
    h5py = pytest.importorskip("h5py")
    B, A, S = te.B, te.A, te.S
    ref = te.open_stack(tmp_path, "ref.npy", cls=vs.SimpleStackUInt16)
    h5 = vs.HDF5StackUInt16()
    h5.open(vs.HDF5StackConfig(str(tmp_path / "spectra.h5"), (B, A, S)))
    f32 = stream(tmp_path, vs.SimpleStreamFloat32, "f32.bin")
    f32_ref = te.open_stack(tmp_path, "f32.npy", cls=vs.SimpleStackFloat32)
    rig = te.make_rig([SpectraStackEndpoint(ref), SpectraHDF5StackEndpoint(h5), AscanStreamEndpoint(f32),
                       AscanStackEndpoint(f32_ref)], volumes=2, device=device)
    te.run(rig)
    for st in (ref, h5, f32, f32_ref):
        st.close()
    with h5py.File(tmp_path / "spectra.h5", "r") as f:
        np.testing.assert_array_equal(f["data"][...], np.load(tmp_path / "ref.npy"))
    assert rows_of(np.fromfile(tmp_path / "f32.bin", np.float32), S) == rows_of(np.load(tmp_path / "f32.npy"), S)


def test_stop_keeps_completed_volumes_and_storage_in_use(tmp_path):
    h5py = pytest.importorskip("h5py")
    B, A, S = te.B, te.A, te.S
    h5 = vs.HDF5StackInt8()
    h5.open(vs.HDF5StackConfig(str(tmp_path / "vol.h5"), (B, A, S)))
    asc = stream(tmp_path, vs.SimpleStreamInt8, "ascans.bin")
    h5_ep, asc_ep = AscanHDF5StackEndpoint(h5), AscanStreamEndpoint(asc)
    two = threading.Event()
    seen: list = []  # a looping scan: volume_idx is its index in the scan (vortex), always 0
    h5_ep.volume_callback = lambda s, i, v: (seen.append(s), len(seen) >= 2 and two.set())
    rig, ref, ref_ep = legacy_rig(tmp_path, [h5_ep, asc_ep], volumes=0, scan_volumes=0, rpb=te.A * 3)
    eng = new_engine(rig)
    eng.prepare()
    eng.start()
    assert two.wait(30)
    with pytest.raises(vg.InUseError):
        h5.close()
    with pytest.raises(vg.InUseError):
        asc.close()
    with pytest.raises(vg.InUseError):
        asc_ep.close()
    eng.stop()
    s = eng.status()
    assert s.done and s.error == ""
    written = h5_ep.volumes_written
    assert written >= 2 and written == ref_ep.volumes_written == s.volumes
    for st in (ref, h5, asc):
        st.close()  # an open HDF5 stack's file is locked (HDF5's file locking), as vortex's
    with h5py.File(tmp_path / "vol.h5", "r") as f:
        got = f["data"][...]
    want = np.load(tmp_path / "ref.npy")
    # As in vortex the stop finishes the planner: the volume open at the stop is stored too,
    # partly written (what the rest holds depends on each endpoint's buffers): compare the
    # completed volumes.
    assert got.shape == want.shape
    np.testing.assert_array_equal(got[:-1], want[:-1])
    stored = np.fromfile(tmp_path / "ascans.bin", np.int8)
    assert stored.size >= want[:-1].size and stored.size % S == 0  # every formatted block, whole records
    assert not rows_of(want[:-1], S) - rows_of(stored, S)  # every record of every completed volume
    eng.close()


def test_bad_wiring_names_the_argument(tmp_path):
    with pytest.raises(TypeError, match="storage=.*expected a SimpleStream"):
        AscanStreamEndpoint(vs.MarkerLog())
    with pytest.raises(ValueError, match="SimpleStream of int8 or float32"):
        AscanStreamEndpoint(vs.SimpleStreamUInt16())
    with pytest.raises(ValueError, match="float64"):
        GalvoActualStreamEndpoint(vs.SimpleStreamFloat32())
    with pytest.raises(TypeError, match="expected a StreamDump"):
        StreamDumpStorage(vs.MarkerLog())
    with pytest.raises(ValueError, match="lead_samples=-1"):
        StreamDumpStorage(vs.StreamDump(), lead_samples=-1)
    with pytest.raises(TypeError):
        AscanStreamEndpoint(vs.SimpleStreamInt8(), lead_samples=3)  # vortex's takes no lead
    with pytest.raises(TypeError, match="expected a MarkerLog"):
        MarkerLogStorage(vs.StreamDump())
    with pytest.raises(TypeError, match="expected a HDF5Stack"):
        AscanHDF5StackEndpoint(vs.SimpleStackInt8())
    with pytest.raises(ValueError, match="uint16"):
        SpectraHDF5StackEndpoint(vs.HDF5StackInt8())
    with pytest.raises(TypeError, match="expected a BroctStorage"):
        BroctStorageEndpoint(vs.HDF5StackInt8())
    ep = AscanStreamEndpoint(vs.SimpleStreamInt8())
    with pytest.raises(vg.VortexError, match="no stream"):
        ep.stream
    # A Broct volume that does not match the engine's: refused at prepare, naming the shape.
    br = vs.BroctStorage()
    br.open(vs.BroctStorageConfig(str(tmp_path / "x.broct"), (te.B, te.A, te.S + 1)))
    with pytest.raises(ValueError, match="shape"):
        new_engine(te.make_rig([BroctStorageEndpoint(br)])).prepare()
    br.close()


def test_disk_full_stops_the_engine_loudly(tmp_path):
    """A stream endpoint's failed write (file size limit) stops the engine; wait raises OSError."""
    path = tmp_path / "full.bin"
    out = run_case(f'''
        import resource, signal, sys, time
        sys.path.insert(0, {str(te.__file__.rsplit("/", 1)[0])!r})
        import test_engine as te
        from vortexgo import storage as vs
        from vortexgo.engine import AscanStreamEndpoint, Engine
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (te.RPB * te.S * 2 + 100, resource.RLIM_INFINITY))
        st = vs.SimpleStreamInt8()
        st.open(vs.SimpleStreamConfig({str(path)!r}))
        ep = AscanStreamEndpoint(st)
        eng = te.new_engine(te.make_rig([ep], volumes=2)) if hasattr(te, "new_engine") else Engine(te.make_rig([ep], volumes=2).config)
        eng.prepare()
        eng.start()
        try:
            eng.wait()
        except OSError as e:
            print("RAISED", type(e).__name__, e)
        s = eng.status()
        assert s.error and s.state == "failed", s
        st.close()
        eng.close()
        print("OK", ep.blocks_written)
    ''')
    assert "RAISED OSError" in out.stdout and "OK" in out.stdout, out.stdout


def test_two_channels_spectra_stream_and_hdf5(tmp_path):
    """Two interleaved channels: the spectra endpoints store both, as (…, samples, channels)."""
    h5py = pytest.importorskip("h5py")
    S, A, B, RPB = tg.S, tg.A, tg.B, tg.RPB
    raw = (np.arange(1024 * 2 * S, dtype=np.uint16) % 60000).reshape(1024, S, 2)
    np.save(tmp_path / "raw.npy", raw)
    try:
        acq = vg.FileAcquisition(path=str(tmp_path / "raw.npy"), samples_per_record=S, channels_per_sample=2)
    except TypeError as e:
        pytest.skip(f"this FileAcquisition has no channels_per_sample: {e}")
    proc = vg.CPUProcessor(samples_per_record=S, ascans_per_block=RPB, channels_per_sample=2)
    planner = tg.FormatPlanner(tg.FormatPlannerConfig(B, A))
    sp = stream(tmp_path, vs.SimpleStreamUInt16, "spectra.bin")
    h5 = vs.HDF5StackUInt16()
    h5.open(vs.HDF5StackConfig(str(tmp_path / "spectra.h5"), (B, A, S, 2)))
    ex = tg.StackFormatExecutor(tg.StackFormatExecutorConfig())
    eps = [SpectraStreamEndpoint(sp), SpectraHDF5StackEndpoint(ex, h5)]
    ec = tg.EngineConfig(records_per_block=RPB, blocks_to_allocate=4, preload_count=2)
    ec.add_acquisition(acq, [proc])
    ec.add_processor(proc, [planner])
    ec.add_formatter(planner, eps)
    eng = Engine(ec)
    eng.scan_queue.append(tg.raster(bidirectional=False))
    eng.prepare()
    eng.start()
    eng.wait()
    assert eng.status().error == ""
    sp.close()
    h5.close()
    segs = [m for m in tg.reference(eng.status().blocks_acquired * RPB)[1] if isinstance(m, SegmentBoundary)]
    rows = np.concatenate([np.arange(m.sample, m.sample + A) for m in segs])
    np.testing.assert_array_equal(np.fromfile(tmp_path / "spectra.bin", np.uint16).reshape(-1, S, 2), raw[rows])
    with h5py.File(tmp_path / "spectra.h5", "r") as f:
        got = f["data"][...]
    assert got.shape == (1, B, A, S, 2)
    np.testing.assert_array_equal(got[0].reshape(-1, S, 2), raw[rows])
