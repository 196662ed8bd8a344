"""vortex's wiring end to end on the CPU backend: engine.scan_queue feeds the Generate
stage, a FormatPlanner reads the markers, endpoints execute the plan with their executors,
IOs receive the generated waveform."""

import time

import math

import numpy as np
import pytest

import vortexgo as vg
from vortexgo import scan as vs
from vortexgo.engine import Engine, EngineConfig, NullEndpoint, SpectraStackDeviceTensorEndpointUInt16
from vortexgo.format import FormatPlanner, FormatPlannerConfig, StackFormatExecutor, StackFormatExecutorConfig
from vortexgo.io import NullIO, SimulatedIO
from vortexgo.marker import SegmentBoundary

pytestmark = pytest.mark.timeout(60)

S, A, B, RPB = 16, 8, 4, 32


def raster(bidirectional=True, loop=False):
    c = vs.RasterScanConfig()
    c.ascans_per_bscan, c.bscans_per_volume = A, B
    c.bidirectional_segments = bidirectional
    c.loop = loop
    c.inactive_policy = vs.inactive_policy.FixedLinear(5, 7)
    c.bypass_limits_check = True
    s = vs.RasterScan()
    s.initialize(c)
    return s


def rig(tmp_path, endpoints_for, ios=(), **cfg):
    raw = (np.arange(1024 * S, dtype=np.uint16) % 60000).reshape(1024, S)
    np.save(tmp_path / "raw.npy", raw)
    acq = vg.FileAcquisition(path=str(tmp_path / "raw.npy"), samples_per_record=S)
    proc = vg.CPUProcessor(samples_per_record=S, ascans_per_block=RPB)
    planner = FormatPlanner(FormatPlannerConfig(B, A))
    ec = EngineConfig(records_per_block=RPB, blocks_to_allocate=4, preload_count=2, **cfg)
    ec.add_acquisition(acq, [proc])
    ec.add_processor(proc, [planner])
    eps = endpoints_for(planner)
    ec.add_formatter(planner, eps)
    for io, kw in ios:
        ec.add_io(io, **kw)
    return raw, ec, eps


def reference(n):
    """The waveform and markers a fresh queue generates for one raster scan (what the engine plays)."""
    q = vs.ScanQueue()
    q.append(raster())
    markers = vg.marker.MarkerList() if hasattr(vg.marker, "MarkerList") else []
    buf = np.zeros((n, 2))
    q.generate(markers, buf)
    return buf, list(markers)


def test_raster_volume_placed_as_the_markers_say(tmp_path):
    ex = StackFormatExecutor(StackFormatExecutorConfig())
    spectra = SpectraStackDeviceTensorEndpointUInt16(ex, (B, A, S))
    raw, ec, _ = rig(tmp_path, lambda p: [spectra])
    eng = Engine(ec)
    scan = raster()
    eng.scan_queue.append(scan)
    calls = []
    spectra.segment_callback = lambda *a: calls.append(("segment",) + a)
    spectra.volume_callback = lambda *a: calls.append(("volume",) + a)
    eng.prepare()
    eng.start()
    eng.wait()
    assert eng.status().volumes == 1
    segs = [m for m in reference(512)[1] if isinstance(m, SegmentBoundary)]
    assert len(segs) == B and [m.reversed for m in segs] == [False, True, False, True]
    with spectra.tensor as vol:
        vol = np.asarray(vol)
        for m in segs:
            want = raw[m.sample:m.sample + A]
            np.testing.assert_array_equal(vol[m.index_in_volume], want[::-1] if m.reversed else want)
    # vortex's arguments: segment (sample, scan_index, volume_index, segment_index_buffer)
    segments = [c for c in calls if c[0] == "segment"]
    assert [c[4] for c in segments] == list(range(B))
    assert all(c[2] == 0 and c[3] == 0 for c in segments)
    assert [c[0] for c in calls][-1] == "volume"


def test_io_receives_the_generated_waveform(tmp_path):
    sim, lead = SimulatedIO(), SimulatedIO()
    raw, ec, _ = rig(tmp_path, lambda p: [NullEndpoint()],
                     ios=[(sim, {}), (lead, {"lead_samples": 3, "preload": False, "master": True}), (NullIO(), {})])
    eng = Engine(ec)
    eng.scan_queue.append(raster())
    eng.prepare()
    eng.start()
    eng.wait()
    n = eng.status().blocks_acquired * RPB
    assert sim.samples == lead.samples == n and sim.started and sim.stopped
    _, got0 = sim.recorded()
    _, got3 = lead.recorded()
    # the lead-3 IO gets the same waveform 3 samples earlier
    np.testing.assert_array_equal(got0[3:], got3[:-3])
    # lead 3 is the largest lead: it gets the queue's samples as generated
    buf, _ = reference(n)
    np.testing.assert_array_equal(got3, buf)


def test_config_fields_and_errors(tmp_path):
    with pytest.raises(TypeError, match="add_io"):
        EngineConfig().add_io(object())
    with pytest.raises(ValueError, match="lead_samples"):
        EngineConfig().add_io(NullIO(), lead_samples=-1)
    _, ec, _ = rig(tmp_path, lambda p: [NullEndpoint()], galvo_output_channels=3)
    eng = Engine(ec)
    eng.scan_queue.append(raster())
    eng.prepare()
    eng.start()
    with pytest.raises(Exception, match="channels"):
        eng.wait()
    _, ec2, _ = rig(tmp_path, lambda p: [NullEndpoint()])
    ec2.strobes = [1]
    with pytest.raises(TypeError, match=r"strobes\[0\]"):  # vortex: TypeError too
        ec2.validate()
    with pytest.raises(TypeError, match="FormatPlanner"):
        EngineConfig().add_formatter(StackFormatExecutor(StackFormatExecutorConfig()), [])


def test_bad_wiring_names_the_argument(tmp_path):
    from vortexgo.endpoint import RadialDeviceTensorEndpointFloat32, StackDeviceTensorEndpointFloat32
    from vortexgo.format import RadialFormatExecutor, RadialFormatExecutorConfig, SimpleSlice
    radial = RadialFormatExecutor(RadialFormatExecutorConfig(x_extent=(-1, 1), y_extent=(-1, 1), radial_extent=(-1, 1),
                                                         angular_extent=(0, math.pi), radial_segments_per_volume=4, radial_records_per_segment=8))
    with pytest.raises(ValueError, match="shape"):
        RadialDeviceTensorEndpointFloat32(radial)
    with pytest.raises(TypeError, match="RadialFormatExecutor"):
        RadialDeviceTensorEndpointFloat32(StackFormatExecutor(StackFormatExecutorConfig()), (8, 8, S))
    with pytest.raises(ValueError, match="stop"):
        StackFormatExecutor(StackFormatExecutorConfig(sample_slice=vg.SampleSlice(2)))
    # a volume whose samples disagree with the executor's slice is refused at prepare, before anything runs
    ep = StackDeviceTensorEndpointFloat32(StackFormatExecutor(StackFormatExecutorConfig(sample_slice=SimpleSlice(0, 8))),
                                          (B, A, S))
    _, ec, _ = rig(tmp_path, lambda p: [ep])
    eng = Engine(ec)
    eng.scan_queue.append(raster())
    with pytest.raises(ValueError, match="sample"):
        eng.prepare()


def test_radial_scan_end_to_end(tmp_path):
    from vortexgo.endpoint import RadialDeviceTensorEndpointFloat32
    from vortexgo.format import RadialFormatExecutor, RadialFormatExecutorConfig
    c = vs.RadialScanConfig()
    c.samples_per_segment = 16
    c.set_half_evenly_spaced(6)
    c.loop = False
    c.inactive_policy = vs.inactive_policy.FixedLinear(5, 7)
    c.bypass_limits_check = True
    scan = vs.RadialScan()
    scan.initialize(c)
    ex = RadialFormatExecutor(RadialFormatExecutorConfig(x_extent=(-1, 1), y_extent=(-1, 1), radial_extent=(-1, 1),
                                                         angular_extent=(0, math.pi), radial_segments_per_volume=6, radial_records_per_segment=16))
    ep = RadialDeviceTensorEndpointFloat32(ex, (9, 11, S))
    raw = (np.arange(1024 * S, dtype=np.uint16) % 60000).reshape(1024, S)
    np.save(tmp_path / "raw.npy", raw)
    acq = vg.FileAcquisition(path=str(tmp_path / "raw.npy"), samples_per_record=S)
    proc = vg.CPUProcessor(samples_per_record=S, ascans_per_block=RPB)
    planner = FormatPlanner(FormatPlannerConfig(6, 16))
    ec = EngineConfig(records_per_block=RPB, blocks_to_allocate=4, preload_count=2)
    ec.add_acquisition(acq, [proc])
    ec.add_processor(proc, [planner])
    ec.add_formatter(planner, [ep])
    volumes = []
    ep.volume_callback = lambda sample, scan_index, volume_index: volumes.append((scan_index, volume_index))
    eng = Engine(ec)
    eng.scan_queue.append(scan)
    eng.prepare()
    eng.start()
    eng.wait()
    assert volumes == [(0, 0)]
    with ep.tensor as vol:
        vol = np.asarray(vol)
        assert vol.shape == (9, 11, S) and np.count_nonzero(vol) > vol.size // 4


# --- the rest of vortex's Generate stage: strobes, scanner_warp, the queue while running, stop ---

from vortexgo.engine import (EventStrobe, Polarity, SampleStrobe, ScanStrobe, SegmentStrobe, StrobeList,  # noqa: E402
                             VolumeStrobe)
from vortexgo.marker import Flags, VolumeBoundary  # noqa: E402


def looping_rig(tmp_path, ep, ios=(), rate=400_000, **cfg):
    """A rig whose acquisition replays forever at ``rate`` A-scans/s (the scans end the run)."""
    raw = (np.arange(1024 * S, dtype=np.uint16) % 60000).reshape(1024, S)
    np.save(tmp_path / "raw.npy", raw)
    acq = vg.FileAcquisition(path=str(tmp_path / "raw.npy"), loop=True, rate=rate, samples_per_record=S)
    proc = vg.CPUProcessor(samples_per_record=S, ascans_per_block=RPB)
    planner = FormatPlanner(FormatPlannerConfig(B, A))
    cfg = {"records_per_block": RPB, "blocks_to_allocate": 4, "preload_count": 2, **cfg}
    proc = vg.CPUProcessor(samples_per_record=S, ascans_per_block=cfg["records_per_block"])
    ec = EngineConfig(**cfg)
    ec.add_acquisition(acq, [proc])
    ec.add_processor(proc, [planner])
    ec.add_formatter(planner, [ep])
    for io, kw in ios:
        ec.add_io(io, **kw)
    return ec


def strobe_reference(strobes, markers, n):
    """vortex's strobe words for samples 0..n-1 (engine/detail/session.hpp), per sample:
    idle (active-low lines high), then each strobe in order."""
    s = np.arange(n)
    out = np.zeros(n, np.uint32)
    for st in strobes:
        if st.polarity == Polarity.Low:
            out |= np.uint32(1 << st.line)
    kinds = {SegmentStrobe: "SegmentBoundary", VolumeStrobe: "VolumeBoundary", ScanStrobe: "ScanBoundary",
             EventStrobe: "Event"}
    for st in strobes:
        if isinstance(st, SampleStrobe):
            on = (s + st.phase) % st.divisor < st.duration
        else:
            on = np.zeros(n, bool)
            for m in markers:
                if type(m).__name__ == kinds[type(st)] and m.flags.matches(st.flags):
                    on[m.sample + st.delay:m.sample + st.delay + st.duration] = True
        bit = np.uint32(1 << st.line)
        out = np.where(on, out | bit, out) if st.polarity == Polarity.High else np.where(on, out & ~bit, out)
    return out


def test_strobe_classes_are_vortexs(tmp_path):
    c = EngineConfig()
    assert isinstance(c.strobes, StrobeList) and c.strobes == [
        SampleStrobe(0, 2), SampleStrobe(1, 1000, Polarity.High, 10), SampleStrobe(2, 1000, Polarity.Low, 10),
        SegmentStrobe(3), VolumeStrobe(4)]
    st = SampleStrobe()
    assert (st.line, st.divisor, st.polarity, st.duration, st.phase) == (0, 2, Polarity.High, 1, 0)
    st = EventStrobe()
    assert (st.line, st.polarity, st.duration, st.delay, st.flags) == (0, Polarity.High, 10, 0, Flags.all())
    assert str(Polarity.Low) == "Polarity.Low" and int(Polarity.High) == 1
    assert repr(VolumeStrobe(4)) == "VolumeStrobe(line=4, polarity=Polarity.High, duration=10, delay=0, flags=Flags(value=0xffffffffffffffff))"
    assert c.lead_strobes == 0 and repr(c.scanner_warp) == "NoWarp"
    assert c.lead_marker.flags == Flags.none() and c.lead_marker.sample == 0
    # Bounds are the engine's, checked with its configuration (gosrc/engine/strobe.go).
    def bad(strobe):
        return lambda: EngineConfig(strobes=[strobe]).validate()

    for make, err, match in [(bad(SampleStrobe(32)), ValueError, r"\(SampleStrobe\)\.line: 32"),
                             (bad(SampleStrobe(0, 0)), ValueError, r"\(SampleStrobe\)\.divisor: 0"),
                             (lambda: SegmentStrobe(0, 2), ValueError, "SegmentStrobe.polarity"),
                             (bad(VolumeStrobe(0, Polarity.Low, -1)), ValueError, r"\(VolumeStrobe\)\.duration: -1"),
                             (bad(ScanStrobe(0, Polarity.Low, 1, -3)), ValueError, r"\(ScanStrobe\)\.delay: -3"),
                             (lambda: EventStrobe(flags=3), TypeError, "EventStrobe.flags"),
                             (lambda: setattr(SampleStrobe(), "delay", 1), AttributeError, "delay")]:
        with pytest.raises(err, match=match):
            make()
    for field, value, err in [("lead_strobes", -1, ValueError), ("lead_strobes", 2**32, ValueError),
                              ("scanner_warp", "angular", TypeError), ("strobes", 5, TypeError),
                              ("lead_marker", VolumeBoundary(), TypeError)]:
        ec = looping_rig(tmp_path, NullEndpoint(), rate=0)
        setattr(ec, field, value)
        with pytest.raises(err, match=field):
            ec.validate()


@pytest.mark.parametrize("lead", [0, 5])
def test_strobes_reach_the_io(tmp_path, lead):
    """The IO records vortex's strobe words: the default strobes plus a delayed, active-low
    segment strobe and one without flags, delayed like the waveform for a smaller lead."""
    sim, leader = SimulatedIO(), SimulatedIO()
    ec = looping_rig(tmp_path, NullEndpoint(), ios=[(sim, {}), (leader, {"lead_samples": lead})], rate=0)
    ec.strobes.append(SegmentStrobe(7, Polarity.Low, 3, 2))
    ec.strobes.append(SegmentStrobe(8, Polarity.High, 1, 0, Flags.none()))  # matches no marker
    ec.lead_strobes = 1 << 20
    eng = Engine(ec)
    eng.scan_queue.append(raster())
    eng.prepare()
    eng.start()
    eng.wait()
    n = eng.status().blocks_acquired * RPB
    first, words = sim.recorded_strobes()
    assert first == 0 and words.shape == (n,) and words.dtype == np.uint32
    # the engine's queue runs `lead` samples ahead: its markers are the reference's shifted by it
    _, markers = reference(n)
    for m in markers:
        m.sample += lead
    want = strobe_reference(ec.strobes, markers, n + lead)
    # the largest lead gets the words as computed; lead 0 gets them `lead` later, lead_strobes first
    np.testing.assert_array_equal(leader.recorded_strobes()[1], want[:n])
    np.testing.assert_array_equal(words, np.concatenate([np.full(lead, 1 << 20, np.uint32), want[:n - lead]]))
    assert np.any(words & (1 << 3)) and not np.any(words & (1 << 8)), "segments fire line 3; a strobe without flags never fires"
    assert np.all(words[lead::2] & 1) and not np.any(words[lead + 1::2] & 1), "sample clock on line 0"


def test_scanner_warp_runs(tmp_path):
    ec = looping_rig(tmp_path, NullEndpoint(), rate=0, scanner_warp=vs.warp.Angular(2))
    eng = Engine(ec)
    eng.scan_queue.append(raster())
    eng.prepare()
    eng.start()
    eng.wait()
    assert eng.status().blocks_acquired > 0
    ec.scanner_warp = vs.warp.Angular(0)
    with pytest.raises(ValueError, match="ScannerWarp.factor"):
        ec.validate()


def limited_raster(offset=0.0, loop=True):
    """vortex's defaults: MinimumDynamicLimited paths within ThorLabs_GVS_5mm at 100 kHz, checked."""
    c = vs.RasterScanConfig()
    c.ascans_per_bscan, c.bscans_per_volume = 100, 4
    c.bidirectional_segments = True
    c.offset = (offset, 0.0)
    c.loop = loop
    s = vs.RasterScan()
    s.initialize(c)
    return s


def check_limits(wave):
    """Positions, and velocities / accelerations from finite differences at 100 kHz, within
    ThorLabs_GVS_5mm (1% for the discretisation); a trailing hold (the queue ran dry) is no
    transition and is left out."""
    end = len(wave)
    while end > 1 and np.array_equal(wave[end - 1], wave[end - 2]):
        end -= 1
    w = wave[:end]
    lim = vs.limits.ThorLabs_GVS_5mm
    sps = 100_000
    v = np.abs(np.diff(w, axis=0)) * sps
    a = np.abs(np.diff(w, 2, axis=0)) * sps * sps
    assert np.all(w >= lim.position.min) and np.all(w <= lim.position.max)
    assert v.max() <= lim.velocity * 1.01, v.max()
    assert a.max() <= lim.acceleration * 1.01, a.max()
    return v.max(), a.max()


def test_queue_while_running(tmp_path):
    """While the engine plays the queue: the scans' callbacks fire as vortex fires them (Start and
    Finish from the Generate stage, here on the dispatcher thread; Interrupt and Abort on the thread
    that interrupts), empty_callback(online_queue) may append and what it appends plays next; the
    switches are planned within the limits."""
    import threading
    sim = SimulatedIO(record_samples=1 << 16)
    ec = looping_rig(tmp_path, NullEndpoint(), ios=[(sim, {})], rate=200_000, records_per_block=100)
    calls = []

    def cb(name):
        return lambda sample, event: calls.append((name, str(event), threading.current_thread().name, sample))

    empties = []

    def empty(online):
        empties.append(threading.current_thread().name)
        if len(empties) == 1:
            online.append(limited_raster(-2, loop=False), cb("c"))

    eng = Engine(ec)
    q = eng.scan_queue
    q.empty_callback = empty
    q.append(limited_raster(0), cb("a"))
    eng.prepare()
    eng.start()
    deadline = time.monotonic() + 20
    while eng.status().blocks_acquired < 10 and time.monotonic() < deadline:
        time.sleep(0.002)
    q.interrupt(limited_raster(3, loop=False), cb("b"))
    eng.wait()
    names = [(c[0], c[1].split(".")[-1]) for c in calls]
    assert names == [("a", "Start"), ("a", "Interrupt"), ("a", "Abort"), ("b", "Start"), ("b", "Finish"),
                     ("c", "Start"), ("c", "Finish")], names
    threads = {(c[0], c[1].split(".")[-1]): c[2] for c in calls}
    main = threading.current_thread().name
    assert threads[("a", "Interrupt")] == threads[("a", "Abort")] == main
    for k in (("b", "Start"), ("b", "Finish"), ("c", "Start"), ("c", "Finish")):
        assert threads[k] == "vortexgo-engine-dispatcher", (k, threads[k])
    assert empties == ["vortexgo-engine-dispatcher"] * 2, "when b ran dry (c appended), then when c did"
    samples = [c[3] for c in calls]
    assert samples == sorted(samples)
    _, wave = sim.recorded()
    assert len(wave) > 3000
    check_limits(wave)
    assert wave[:, 0].max() > 3.5 and abs(wave[-1, 0] + 2) < 1.1, "went to b (x ~ 3), ended on c (x ~ -2)"


def test_queue_change_that_cannot_be_met_is_named(tmp_path):
    """A scan whose channels differ from galvo_output_channels is refused when it would start,
    naming both; a scan whose limits make it infeasible is refused at initialize."""
    c = vs.RasterScanConfig()
    c.ascans_per_bscan, c.bscans_per_volume = 4, 4  # 4 samples over 2 units at 100 kHz: 50,000 units/s
    s = vs.RasterScan()
    with pytest.raises(ValueError, match="velocity"):
        s.initialize(c)
    ec = looping_rig(tmp_path, NullEndpoint(), rate=0, galvo_output_channels=3)
    eng = Engine(ec)
    eng.scan_queue.append(raster())
    eng.prepare()
    eng.start()
    with pytest.raises(Exception, match="3 channels|channels"):
        eng.wait()


def test_stop_finishes_the_planner(tmp_path):
    """A stop mid-volume ends as vortex's does: the planner is finished, so the open segment,
    volume and scan are reported once (the last volume partial)."""
    ep = NullEndpoint()
    ec = looping_rig(tmp_path, ep, rate=20_000)
    got = []
    ep.volume_callback = lambda sample, scan_idx, volume_idx: got.append(("volume", scan_idx, volume_idx))
    ep.scan_callback = lambda sample, scan_idx: got.append(("scan", scan_idx))
    eng = Engine(ec)
    eng.scan_queue.append(raster(loop=True), marker=vg.marker.ScanBoundary(0, 9, 0))
    eng.prepare()
    eng.start()
    deadline = time.monotonic() + 20
    while eng.status().blocks_acquired < 5 and time.monotonic() < deadline:
        time.sleep(0.002)
    eng.stop()
    assert got[-1] == ("scan", 9) and [g for g in got if g[0] == "scan"] == [("scan", 9)]
    assert got[-2][0] == "volume" and all(g[1] == 9 for g in got)
    assert eng.status().volumes == len(got) - 1


def test_vortex_engine_names():
    """A vortex script imports these from vortex.engine; they are in vortexgo.engine."""
    import vortexgo.engine as ve
    for name in ["Engine", "EngineConfig", "ScanQueue", "Polarity", "SampleStrobe", "SegmentStrobe", "VolumeStrobe",
                 "ScanStrobe", "EventStrobe", "StrobeList", "NullEndpoint", "StackDeviceTensorEndpointInt8",
                 "SpectraStackDeviceTensorEndpointUInt16", "RadialDeviceTensorEndpointInt8",
                 "AscanSpiralDeviceTensorEndpointInt8", "PositionDeviceTensorEndpointInt8",
                 "SpectraRadialDeviceTensorEndpointUInt16", "SpectraSpiralDeviceTensorEndpointUInt16",
                 "SpectraPositionDeviceTensorEndpointUInt16"]:
        assert hasattr(ve, name), name
    assert ve.ScanQueue.Event.Start is not None and hasattr(ve.ScanQueue, "OnlineScanQueue")


@pytest.mark.parametrize("exc", [RuntimeError("boom"), SystemExit(3)])
def test_empty_callback_that_raises(tmp_path, exc):
    """An empty_callback (or scan callback) that raises is handled like an endpoint callback: an
    Exception is logged and counted and the run goes on to its end; a BaseException stops the
    engine and wait() re-raises it. Neither hangs the Generate stage waiting for the callback."""
    ec = looping_rig(tmp_path, NullEndpoint(), rate=0)

    def empty(online):
        raise exc

    eng = Engine(ec)
    eng.scan_queue.empty_callback = empty
    eng.scan_queue.append(raster())
    eng.prepare()
    eng.start()
    try:
        if isinstance(exc, SystemExit):
            with pytest.raises(SystemExit):
                eng.wait()
        else:
            eng.wait()
            assert eng.status().callback_errors >= 1 and eng.last_callback_error is exc
        assert eng.done
    finally:
        # The parameter outlives the test: its traceback would keep this engine (the
        # dispatcher's frames) alive for the rest of the session.
        exc.__traceback__ = exc.__context__ = None
