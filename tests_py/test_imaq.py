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
    # 64 frames (0.4 s of lines at the tests' 20 kHz) rather than vortex's 10 (64 ms): a
    # loaded CI machine may fall that far behind a camera that never waits; the overrun
    # test sets its own small ring.
    c.ring_size = 64
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
        assert acq.info.bits_per_pixel == 16 and acq.info.line_scan
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
    """A slow endpoint starves the engine of blocks: the camera's ring laps the host. The ring
    (24 frames, 154 ms of lines) outlasts a loaded machine's lag before the first volume, and
    the callback's 0.5 s per volume laps it."""
    o = run(virtual, """
        from vortexgo.endpoint import SpectraStackHostTensorEndpointUInt16
        acq = ImaqAcquisition(imaq_config(ring_size=24))
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


def test_close_while_running(virtual):
    """close() while an engine runs is refused (InUseError); after stop it closes and the camera is free."""
    run(virtual, """
        acq = ImaqAcquisition(imaq_config())
        eng, (ep,) = engine(acq, 1000)
        eng.prepare(); eng.start()
        try:
            acq.close()
        except vg.InUseError as e:
            assert "ImaqAcquisition" in str(e), e
        else:
            raise AssertionError("closed while an engine runs")
        eng.stop(); eng.wait(); eng.close()
        acq.close()
        assert not acq.running
        again = ImaqAcquisition(imaq_config())     # the interface was released
        eng, (ep,) = engine(again, 1)
        eng.prepare(); eng.start(); eng.wait()
        assert eng.status().error == "" and eng.status().volumes == 1
        with ep.tensor as v:
            got = np.array(v)
        eng, (ep,) = engine(SIM, 1)
        eng.prepare(); eng.start(); eng.wait()
        with ep.tensor as v:
            np.testing.assert_array_equal(got, np.array(v))
        print("ok")
    """)


def test_one_acquisition_in_two_engines(virtual):
    """As test_instrument_misuse.py's Alazar case: the second engine's prepare is refused
    (InUseError naming the acquisition) until the first is closed; then it runs, its data
    equal to the simulated source's (the camera was left ready)."""
    run(virtual, """
        acq = ImaqAcquisition(imaq_config())
        first, _ = engine(acq, 0)
        second, (ep,) = engine(acq, 1)
        first.prepare(); first.start()
        try:
            second.prepare()
        except vg.InUseError as e:
            assert "ImaqAcquisition belongs to another engine" in str(e) and "close that engine" in str(e), e
        else:
            raise AssertionError("one camera's acquisition ran in two engines")
        time.sleep(0.1)
        first.stop(); first.close()
        second.prepare()            # free once the first engine is closed
        second.start(); second.wait()
        s = second.status()
        assert s.error == "" and s.volumes == 1, s
        with ep.tensor as v:
            got = np.array(v)
        sim, (sep,) = engine(SIM, 1)
        sim.prepare(); sim.start(); sim.wait()
        with sep.tensor as v:
            np.testing.assert_array_equal(got, np.array(v))
        second.close(); acq.close()
        print("ok")
    """)


def test_the_driver_class_on_the_virtual_camera(virtual):
    """vortex's imaq.Imaq: open, info, region, triggers, vortex's errors, close frees the interface."""
    run(virtual, """
        import datetime
        none = imaq.Imaq()
        assert not none.valid and none.name == "" and not none.running and none.info == imaq.Info()
        try:
            none.query_region()
        except RuntimeError as e:
            assert "no interface is open" in str(e), e
        else:
            raise AssertionError("an unopened Imaq answered")
        cam = imaq.Imaq("img0")
        assert cam.valid and cam.name == "img0" and not cam.running
        i = cam.info
        assert isinstance(i, imaq.Info) and i.line_scan and (i.bits_per_pixel, i.bytes_per_pixel) == (16, 2), i
        assert i.resolution == imaq.Resolution(4096, 1) and i.serial == 0x01A2B3C4 and i.device == 0x1473, i
        assert i.acquisition_window == imaq.RegionOfInterest(0, 0, 65535, 4096, 4096), i
        assert i.calibration == datetime.datetime.fromtimestamp(1700000000, datetime.timezone.utc), i
        i.serial = 1
        assert cam.info.serial == 0x01A2B3C4 and i.copy() == i and i.copy() is not i
        cam.configure_region(imaq.RegionOfInterest(2, 8, 64, 256))
        assert cam.query_region() == imaq.RegionOfInterest(2, 8, 64, 256, 256)
        assert cam.required_buffer_size() == 64 * 256 * 2
        cam.configure_region(imaq.RegionOfInterest(0, 0, 64, 256, 512))
        assert cam.query_region().pixels_per_row == 512 and cam.required_buffer_size() == 64 * 512 * 2
        cases = [
            (lambda: cam.configure_region(imaq.RegionOfInterest(0, 5, 64, 256)),
             "setting ROI offset (t=0, l=5) and shape [h=64 x w=256] failed: (-1074397161) "
             "incompatible ROI (check alignment and size)"),
            (lambda: cam.configure_line_trigger(9), "external line trigger on line 9 failed: (-1074397091)"),
            (lambda: imaq.Imaq("img0"), "session open failed: (-1074396995) device in use"),
            (lambda: imaq.Imaq("img3"), 'interface "img3" open failed: (-1074397145)'),
        ]
        for make, msg in cases:
            try:
                make()
            except vg.VortexError as e:
                assert str(e).startswith(msg), (msg, str(e))
            else:
                raise AssertionError(f"no error: {msg}")
        cam.configure_line_trigger(0, 1, imaq.Polarity.Low, imaq.Signal.External)
        cam.configure_trigger_output(1, imaq.Source.FrameStart, imaq.Polarity.High)
        try:
            cam.configure_trigger_output(0, 99)
        except ValueError as e:
            assert "expected a Source" in str(e), e
        else:
            raise AssertionError("a bad source was accepted")
        cam.stop_capture()          # nothing runs: nothing to stop
        assert "img0" in repr(cam) and "4096 x 1" in repr(cam)
        cam.close()
        assert not cam.valid and not cam.running
        cam.close()                 # twice is fine
        with imaq.Imaq("img0") as again:     # close freed the interface
            assert again.valid
        acq = ImaqAcquisition(imaq_config())
        assert acq.info.serial == 0x01A2B3C4 and acq.info.resolution == imaq.Resolution(4096, 1)
        print("ok")
    """)
