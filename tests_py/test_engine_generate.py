"""vortex's wiring end to end on the CPU backend: engine.scan_queue feeds the Generate
stage, a FormatPlanner reads the markers, endpoints execute the plan with their executors,
IOs receive the generated waveform."""

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
    with pytest.raises(ValueError, match="strobes"):
        ec2.validate()
    with pytest.raises(TypeError, match="FormatPlanner"):
        EngineConfig().add_formatter(StackFormatExecutor(StackFormatExecutorConfig()), [])


def test_bad_wiring_names_the_argument(tmp_path):
    from vortexgo.endpoint import RadialDeviceTensorEndpointFloat32, StackDeviceTensorEndpointFloat32
    from vortexgo.format import RadialFormatExecutor, RadialFormatExecutorConfig, SimpleSlice
    radial = RadialFormatExecutor(RadialFormatExecutorConfig(radial_segments_per_volume=4, radial_records_per_segment=8))
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
    ex = RadialFormatExecutor(RadialFormatExecutorConfig(radial_segments_per_volume=6, radial_records_per_segment=16))
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
