"""vortex's ImaqAcquisition against the virtual line-scan camera (instruments/virtual/imaq.c).

NI-IMAQ is loaded once per process and the virtual instrument reads its
configuration when it loads, so every case that drives the camera runs in its
own interpreter (tests_py/_subproc.py, with _alazar_child's engine helper);
the configuration classes, which need no library, are tested here. With no
scanner attached the camera's lines are the phantom in raster order, so an
engine run through the real driver equals the same run through
SimulatedAcquisition (noise off).
"""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

import _alazar_child
import _subproc
from vortexgo import imaq
from vortexgo.imaq import ImaqAcquisition, ImaqAcquisitionConfig

pytestmark = pytest.mark.timeout(180)

PRELUDE = _alazar_child.PRELUDE + """
from vortexgo import imaq
from vortexgo.imaq import ImaqAcquisition, ImaqAcquisitionConfig

def imaq_config(**kw):
    c = ImaqAcquisitionConfig()
    c.samples_per_record, c.records_per_block = S, RPB
    for k, v in kw.items():
        setattr(c, k, v)
    return c
"""


@pytest.fixture(scope="module")
def virtual(virtual_instrument: Path) -> Path:
    """The virtual camera (conftest.py's virtual_instrument)."""
    return virtual_instrument / "libniimaq.so"


def run(lib: Path, code: str, **kw) -> _subproc.Outcome:
    extra = {"VORTEXGO_NIIMAQ_LIBRARY": str(lib), "VGV_ALINE_RATE_HZ": "20000", **kw.pop("env", {})}
    return _subproc.run(code, prelude=PRELUDE, env=_alazar_child.env(lib.parent / "libATSApi.so", **extra), **kw)


def test_config_has_vortexs_fields_and_defaults():
    c = ImaqAcquisitionConfig()
    assert (c.samples_per_record, c.records_per_block, c.channels_per_sample) == (1024, 1000, 1)
    assert c.device_name == "img0" and c.offset == [0, 0] and (c.sample_offset, c.record_offset) == (0, 0)
    assert c.line_trigger is None and c.frame_trigger is None
    assert list(c.trigger_output) == [imaq.TriggerOutput(0, imaq.Source.Hsync, imaq.Polarity.High, imaq.Signal.External)]
    assert c.ring_size == 10 and c.acquire_timeout == datetime.timedelta(seconds=1)
    assert c.stop_on_error and not c.bypass_region_check
    assert c.shape == [1000, 1024, 1]
    c.sample_offset, c.record_offset = 4, 2
    assert c.offset == [4, 2]
    assert imaq.LineTrigger() == imaq.LineTrigger(0, 0, imaq.Polarity.High, imaq.Signal.External)
    assert repr(imaq.FrameTrigger()) == "FrameTrigger(line=0, polarity=<Polarity.High: 0>, signal=<Signal.External: 0>)"
    assert imaq.RegionOfInterest(1, 2, 3, 4).pixels_per_row == 0
    c.ring_size = 0
    with pytest.raises(RuntimeError, match=r"^ring size \(0\) must be non-zero$"):
        c.validate()
    d = ImaqAcquisitionConfig()
    d.trigger_output.append(imaq.TriggerOutput(1))
    assert len(ImaqAcquisitionConfig().trigger_output) == 1 and len(d.copy().trigger_output) == 2


def test_without_the_library_the_error_names_the_variable():
    _subproc.run("""
        import vortexgo, vortexgo.compat
        vortexgo.compat.install()
        from vortex.acquire import ImaqAcquisition, ImaqAcquisitionConfig, imaq   # imports without NI-IMAQ
        import vortex.driver.imaq, vortex.acquire.imaq
        assert vortex.driver.imaq.Signal is imaq.Signal is vortex.acquire.imaq.Signal
        for make in (imaq.enumerate, lambda: ImaqAcquisition(ImaqAcquisitionConfig())):
            try:
                make()
            except vortexgo.VortexError as e:
                assert "VORTEXGO_NIIMAQ_LIBRARY" in str(e) and "libniimaq.so" in str(e), e
            else:
                raise AssertionError("no error without the library")
        print("ok")
    """, env={"VORTEXGO_NIIMAQ_LIBRARY": "/nonexistent/libniimaq.so"})


def test_engine_run_equals_the_simulated_source(virtual):
    o = run(virtual, """
        acq = ImaqAcquisition(imaq_config())
        assert imaq.enumerate() == ["img0"]
        assert acq.info["BitsPerPixel"] == 16 and acq.info["LineScan"]
        assert acq.region == imaq.RegionOfInterest(0, 0, RPB, S, S)
        vols = []
        for src in (acq, acq, SIM):   # twice: stop leaves the camera ready for the next run
            eng, (ep,) = engine(src, 2)
            eng.prepare(); eng.start(); eng.wait()
            s = eng.status()
            assert s.error == "" and s.volumes == 2 and s.blocks_dropped == 0, s
            with ep.tensor as v:
                vols.append(np.array(v))
        assert vols[0].shape == (B, A, S) and np.abs(vols[0]).max() > 10
        np.testing.assert_array_equal(vols[0], vols[2])
        np.testing.assert_array_equal(vols[1], vols[2])
        print("ok")
    """)
    assert "ok" in o.stdout


def test_validation_uses_vortexs_messages(virtual):
    run(virtual, """
        cases = [
            (dict(ring_size=0), "ring size (0) must be non-zero"),
            (dict(device_name="img3"), 'interface "img3" open failed: (-1074397145)'),
            (dict(samples_per_record=8192),
             "requested region with offset (0, 0) is larger than maximum: (128 x 8192) > (128 x 4096) (records x samples)"),
            (dict(offset=[5000, 0]), "fitting ROI failed (t=0, l=5000) and shape [h=128 x w=256] failed: "
                                     "(-1074397161) incompatible ROI (check alignment and size)"),
            (dict(line_trigger=imaq.LineTrigger(9)), "external line trigger on line 9 failed: (-1074397091)"),
        ]
        for kw, msg in cases:
            try:
                ImaqAcquisition(imaq_config(**kw))
            except RuntimeError as e:  # vg.VortexError is one
                assert str(e).startswith(msg), (kw, str(e))
            else:
                raise AssertionError(f"{kw}: no error")
        a = ImaqAcquisition(imaq_config())
        try:
            ImaqAcquisition(imaq_config())
        except vg.VortexError as e:
            assert str(e) == "session open failed: (-1074396995) device in use", e
        else:
            raise AssertionError("a second session on img0")
        print("ok")
    """)


def test_overrun_stops_the_engine_loudly_keeping_completed_volumes(virtual):
    """A slow endpoint starves the engine of blocks: the camera's ring (2 frames) laps the host."""
    o = run(virtual, """
        from vortexgo.endpoint import SpectraStackHostTensorEndpointUInt16
        acq = ImaqAcquisition(imaq_config(ring_size=2))
        done = []
        ep = StackHostTensorEndpointFloat32()
        def slow(*a):
            done.append(1)
            time.sleep(0.5)
        ep.volume_callback = slow
        eng, _ = engine(acq, 50, endpoints=[ep])
        eng.prepare(); eng.start()
        try:
            eng.wait()
        except vg.VortexError as e:
            assert "has been overwritten" in str(e), e
        else:
            raise AssertionError("no overrun")
        s = eng.status()
        assert "has been overwritten" in s.error, s
        assert s.volumes >= 1 and done, s
        assert not acq.running
        print("ok", s.volumes)
    """)
    assert "ok" in o.stdout


def test_close_while_running_and_two_engines(virtual):
    run(virtual, """
        acq = ImaqAcquisition(imaq_config())
        eng, _ = engine(acq, 1000)
        eng2, _ = engine(acq, 1)
        eng.prepare(); eng.start()
        try:
            acq.close()
        except vg.InUseError as e:
            pass
        else:
            raise AssertionError("closed while an engine runs")
        try:
            eng2.prepare()
        except vg.VortexError as e:
            assert "ImaqAcquisition" in str(e), e
        else:
            pass  # a second engine may prepare; it must not run concurrently
        eng.stop(); eng.wait()
        acq.close()
        assert not acq.running
        print("ok")
    """)
