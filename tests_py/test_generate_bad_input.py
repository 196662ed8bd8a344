"""Issue 7's bad input for the Generate stage, in one table: negative and non-finite extents, zero
samples, limits that make a pattern infeasible, unknown flags, a queue change that cannot be met,
bad strobes and warps. Each is refused with an error naming the field, and nothing is left
half-configured (a scan keeps its previous config)."""

from __future__ import annotations

import numpy as np
import pytest

import vortexgo as vg
from vortexgo import scan as vs
from vortexgo.engine import EngineConfig, SampleStrobe, SegmentStrobe
from vortexgo.marker import Flags, ScanBoundary

pytestmark = pytest.mark.timeout(60)


def _init(cls, cfg_cls, **fields):
    c = cfg_cls()
    for k, v in fields.items():
        setattr(c, k, v)
    cls().initialize(c)


def raster(**f):
    _init(vs.RasterScan, vs.RasterScanConfig, **f)


def radial(**f):
    _init(vs.RadialScan, vs.RadialScanConfig, **f)


def spiral(**f):
    _init(vs.SpiralScan, vs.SpiralScanConfig, **f)


CASES = [
    # zero samples, zero segments
    ("raster ascans_per_bscan 0", lambda: raster(ascans_per_bscan=0), ValueError, "ascans_per_bscan"),
    ("raster bscans_per_volume 0", lambda: raster(bscans_per_volume=0), ValueError, "bscans_per_volume"),
    ("radial samples_per_segment 0", lambda: radial(samples_per_segment=0), ValueError, "samples_per_segment|ascans_per_bscan"),
    ("samples_per_second 0", lambda: raster(samples_per_second=0), ValueError, "samples_per_second"),
    ("spiral rings_per_spiral 0", lambda: spiral(rings_per_spiral=0), ValueError, "rings_per_spiral"),
    # negative and non-finite extents
    ("spiral negative inner_radius", lambda: spiral(inner_radius=-1.0), ValueError, "inner_radius"),
    ("spiral outer_radius below inner", lambda: spiral(inner_radius=2.0, outer_radius=1.0), ValueError, "outer_radius"),
    ("extent not finite", lambda: raster(bscan_extent=vg.Range(0, float("inf"))), ValueError, "bscan_extent"),
    ("extent not a Range", lambda: raster(bscan_extent=(-1, 1, 2)), (TypeError, ValueError), "bscan_extent"),
    # limits that make the pattern infeasible
    ("too fast for the galvo", lambda: raster(ascans_per_bscan=4), ValueError, "velocity"),
    ("outside the position limits", lambda: raster(offset=(20.0, 0.0)), ValueError, "position"),
    ("limits of the wrong count", lambda: raster(limits=[vs.limits.ThorLabs_GVS_5mm]), ValueError, "limits"),
    ("non-positive velocity limit",
     lambda: raster(limits=[vs.Limits(vg.Range(-12.5, 12.5), 0.0, 5e6)] * 2), ValueError, "velocity"),
    # unknown flags
    ("flags beyond 64 bits", lambda: Flags(2**64), ValueError, "Flags.value"),
    ("negative flags", lambda: Flags(-1), ValueError, "Flags.value"),
    ("flags of the wrong type", lambda: raster(flags="all"), TypeError, "flags"),
    ("strobe flags of the wrong type", lambda: SegmentStrobe(flags=1), TypeError, "SegmentStrobe.flags"),
    # strobes: bounds are the engine's (gosrc/engine/strobe.go), checked with its configuration
    ("strobe line beyond 31", lambda: EngineConfig(strobes=[SampleStrobe(line=32)]).validate(), ValueError,
     r"Strobes\[0\] \(SampleStrobe\)\.line: 32"),
    ("strobe divisor 0", lambda: EngineConfig(strobes=[SampleStrobe(divisor=0)]).validate(), ValueError,
     r"Strobes\[0\] \(SampleStrobe\)\.divisor: 0"),
    ("strobe line not an int", lambda: SampleStrobe(line=1.5), TypeError, "SampleStrobe.line"),
]


@pytest.mark.parametrize("name,make,err,field", CASES, ids=[c[0] for c in CASES])
def test_bad_input_names_the_field(name, make, err, field):
    with pytest.raises(err, match=field):
        make()


def test_failed_change_leaves_the_scan_as_it_was():
    """A change that cannot be met (other channels; infeasible limits) raises naming the field and
    the scan goes on with its previous config, producing the same samples."""
    c = vs.RasterScanConfig()
    c.ascans_per_bscan, c.bscans_per_volume = 100, 4
    s = vs.RasterScan()
    s.initialize(c)
    before = s.scan_buffer().copy()
    c3 = c.copy()
    c3.channels_per_sample = 3
    with pytest.raises(ValueError, match="channels_per_sample|limits"):
        s.change(c3)
    fast = c.copy()
    fast.ascans_per_bscan = 4
    with pytest.raises(ValueError, match="velocity"):
        s.change(fast)
    assert s.config.ascans_per_bscan == 100 and s.config.channels_per_sample == 2
    np.testing.assert_array_equal(s.scan_buffer(), before)


def test_queue_refuses_what_it_cannot_play():
    q = vs.ScanQueue()
    with pytest.raises(ValueError, match="initialize"):
        q.append(vs.RasterScan())
    with pytest.raises(TypeError, match="scan="):
        q.interrupt("raster")
    with pytest.raises(TypeError, match="marker"):
        c = vs.RasterScanConfig()
        s = vs.RasterScan()
        s.initialize(c)
        q.append(s, marker=vg.marker.VolumeBoundary())
    # a scan of other channels than the output is refused when it would start, naming both
    q.clear()
    q.append(s)
    with pytest.raises(ValueError, match="2 channels, the buffer 3"):
        q.generate([], np.zeros((16, 3)))


@pytest.mark.parametrize("field,value,err", [
    ("galvo_output_channels", 0, ValueError), ("galvo_input_channels", 65, ValueError),
    ("post_scan_records", -1, ValueError), ("lead_strobes", -1, ValueError),
    ("strobes", [SampleStrobe(), "clock"], TypeError), ("scanner_warp", 2.0, TypeError),
    ("lead_marker", ScanBoundary(5), ValueError),
])
def test_engine_generate_fields(tmp_path, field, value, err):
    raw = np.zeros((64, 16), np.uint16)
    np.save(tmp_path / "raw.npy", raw)
    acq = vg.FileAcquisition(path=str(tmp_path / "raw.npy"), samples_per_record=16)
    proc = vg.CPUProcessor(samples_per_record=16, ascans_per_block=32)
    ec = EngineConfig(records_per_block=32, blocks_to_allocate=2, preload_count=1)
    ec.add_acquisition(acq, [proc])
    setattr(ec, field, value)
    with pytest.raises(err, match=field):
        ec.validate()
