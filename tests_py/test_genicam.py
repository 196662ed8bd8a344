"""GenICamAcquisition against Aravis's own simulated cameras.

Each case runs in its own interpreter (tests_py/_subproc.py): Aravis is
loaded once per process. The in-process camera "Fake_1" fills each frame
with a diagonal ramp keyed by its frame id ((x + y + id) % 255 in Mono8), so
a block can be checked against the frame the camera produced. Skipped when
Aravis 0.8 is not installed (.ci/run installs it where it can).
"""

from __future__ import annotations

import ctypes.util
import os
import shutil

import pytest

import _subproc
from vortexgo import genicam

pytestmark = pytest.mark.timeout(120)


def _have_aravis() -> bool:
    try:
        ctypes.CDLL(os.environ.get("VORTEXGO_ARAVIS_LIBRARY") or "libaravis-0.8.so.0")
        return True
    except OSError:
        return False


needs_aravis = pytest.mark.skipif(not _have_aravis(), reason="Aravis 0.8 is not installed "
                                  "(apt-get install libaravis-0.8-0 aravis-tools)")

PRELUDE = """
import sys, time, threading
import numpy as np
import vortexgo as vg
from vortexgo import genicam
from vortexgo.engine import Engine, EngineConfig, SpectraStackHostTensorEndpointUInt16
from vortexgo.process import NullProcessor, NullProcessorConfig
sys.path.insert(0, %r)
from _scans import planner, queue_volumes
W, H, B = 128, 32, 6          # pixels per line, lines per frame (= A-scans per B-scan), B-scans per volume
def config(**kw):
    c = genicam.GenICamConfig(camera="Fake_1", samples_per_record=W, records_per_block=H,
                              pixel_format=genicam.PixelFormat.Mono8, line_rate=200.0 * H, exposure_time_us=10000,
                              features=[genicam.Feature("GainRaw", 0)])
    for k, v in kw.items():
        setattr(c, k, v)
    return c
def engine(acq, volumes, blocks=8, preload=4):
    proc = NullProcessor(NullProcessorConfig(samples_per_record=W, ascans_per_block=H))
    ep = SpectraStackHostTensorEndpointUInt16()
    fmt = planner(H, B)
    ec = EngineConfig(records_per_block=H, blocks_to_allocate=blocks, preload_count=preload)
    ec.add_acquisition(acq, [proc]); ec.add_processor(proc, [fmt]); ec.add_formatter(fmt, [ep])
    eng = Engine(ec)
    queue_volumes(eng, H, B, volumes)
    return eng, ep
def ramp(ids, fmt="Mono8"):
    x = np.arange(W)[None, None, :]; y = np.arange(H)[None, :, None]; i = np.asarray(ids)[:, None, None]
    if fmt == "Mono8":
        return ((x + y + i) %% 255).astype(np.uint16)
    return ((256 * (x + y + i)) %% 65535).astype(np.uint16)
""" % str(_subproc.ROOT / "tests_py")


def run(code: str, **kw):
    return _subproc.run(code, prelude=PRELUDE, **kw)


def test_config_defaults_fit_a_line_scan_camera():
    c = genicam.GenICamConfig()
    assert (c.samples_per_record, c.records_per_block, c.pixel_format) == (2048, 512, genicam.PixelFormat.Mono12)
    assert c.line_rate == 0 and c.exposure_time_us == 0 and c.trigger == genicam.Trigger()
    assert c.shape == [512, 2048, 1] and c.packet_resend and not c.tolerate_dropped_frames
    c.features.append("Gain=3")
    with pytest.raises(TypeError, match=r"GenICamConfig.features\[0\]"):
        c._record()
    c.features = []
    c.pixel_format = 17
    with pytest.raises(ValueError, match="GenICamConfig.pixel_format=17"):
        c._record()


def test_without_the_library_the_error_names_it_and_the_package():
    _subproc.run("""
        import vortexgo
        from vortexgo import genicam      # imports without Aravis
        try:
            genicam.GenICamAcquisition(genicam.GenICamConfig(camera="Fake_1"))
        except vortexgo.VortexError as e:
            m = str(e)
            assert "libaravis-0.8.so.0" in m and "VORTEXGO_ARAVIS_LIBRARY" in m and "libaravis-0.8-0" in m, m
        else:
            raise AssertionError("no error without the library")
        print("ok")
    """, env={"VORTEXGO_ARAVIS_LIBRARY": "/nonexistent/libaravis-0.8.so.0"})


@needs_aravis
@pytest.mark.parametrize("fmt", ["Mono8", "Mono16"])
def test_engine_blocks_are_the_cameras_frames(fmt):
    run(f"""
        acq = genicam.GenICamAcquisition(config(pixel_format=genicam.PixelFormat.{fmt}))
        cam = acq.camera
        assert (cam.vendor, cam.id, cam.gige_vision) == ("Aravis", "Fake_1", False), cam
        assert cam.line_rate_feature == "AcquisitionFrameRate", cam
        eng, ep = engine(acq, 2)
        eng.prepare(); eng.start(); eng.wait()
        s = eng.status()
        assert s.error == "" and s.volumes == 2 and s.blocks_dropped == 0, s
        assert s.frames_received == s.blocks_acquired >= 2 * B and s.frames_dropped == 0 and s.frames_incomplete == 0, s
        with ep.tensor as v:
            vol = np.array(v)[..., 0] if np.array(v).ndim == 4 else np.array(v)
        assert vol.shape == (B, H, W), vol.shape
        # the last volume: B consecutive frames
        first = int(vol[0, 0, 0]) if "{fmt}" == "Mono8" else int(vol[0, 0, 0]) * 256 % 65535
        np.testing.assert_array_equal(vol, ramp([first + k for k in range(B)], "{fmt}"))
        assert acq.camera.received == s.frames_received
        r = repr(s)      # a camera source: the printed status shows its frame counters
        assert f"frames_received     {{s.frames_received}}" in r and "frames_dropped      0" in r and "frames_incomplete   0" in r, r
        assert "frames_dropped" in s._repr_html_()
        eng.close(); acq.close()
        print("ok")
    """)


@needs_aravis
def test_close_while_running_is_refused_then_stop_leaves_the_camera_ready():
    run("""
        acq = genicam.GenICamAcquisition(config())
        eng, ep = engine(acq, 0)              # endless
        eng.prepare()
        for _ in range(2):
            eng.start(); time.sleep(0.2)
            try:
                acq.close()
            except vg.InUseError:
                pass
            else:
                raise AssertionError("closed while an engine runs it")
            eng.stop()
            eng.scan_queue.clear(); queue_volumes(eng, H, B, 0)
            s = eng.status()
            assert s.error == "" and s.frames_received > 0 and s.frames_incomplete == 0, s
        eng.close(); acq.close()
        print("ok")
    """)


@needs_aravis
def test_validation_errors_name_the_camera_and_feature():
    run("""
        for kw, want in [(dict(pixel_format=genicam.PixelFormat.Mono12p), "PixelFormat"),
                         (dict(features=[genicam.Feature("NoSuchFeature", 1)]), "NoSuchFeature"),
                         (dict(camera="no-such-camera"), "no-such-camera")]:
            try:
                genicam.GenICamAcquisition(config(**kw))
            except vg.VortexError as e:
                assert want in str(e), (kw, str(e))
            else:
                raise AssertionError(f"accepted {kw}")
        print("ok")
    """)


FAKE_GV = shutil.which("arv-fake-gv-camera-0.8")


@needs_aravis
@pytest.mark.skipif(FAKE_GV is None, reason="arv-fake-gv-camera-0.8 is not installed (apt-get install aravis-tools)")
def test_gige_camera_killed_mid_run_stops_the_engine_loudly_keeping_volumes():
    """arv-fake-gv-camera-0.8 serves GigE Vision on the loopback interface;
    killing it mid-run ends the run with an error naming the camera, after
    the volumes completed before."""
    run(f"""
        import subprocess, signal
        srv = subprocess.Popen([{FAKE_GV!r}, "-i", "127.0.0.1", "-s", "VGTEST"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        try:
            time.sleep(1.0)
            acq = None
            for _ in range(20):
                try:
                    acq = genicam.GenICamAcquisition(config(camera="127.0.0.1", line_rate=100.0 * H))
                    break
                except vg.VortexError:
                    time.sleep(0.25)
            assert acq is not None and acq.camera.gige_vision, "the GigE Vision fake did not answer"
            eng, ep = engine(acq, 0)
            eng.prepare(); eng.start()
            deadline = time.time() + 20
            while eng.status().volumes < 1 and time.time() < deadline:
                time.sleep(0.05)
            assert eng.status().volumes >= 1, eng.status()
            srv.send_signal(signal.SIGKILL); srv.wait()
            try:
                eng.wait()
            except vg.VortexError as e:
                m = str(e)
                assert "GenICamAcquisition" in m and ("lost" in m or "no frame" in m), m
            else:
                raise AssertionError("the run went on without its camera")
            s = eng.status()
            assert s.volumes >= 1 and s.frames_received >= B and s.frames_incomplete == 0, s
            with ep.tensor as v:
                assert np.asarray(v).any()
            eng.close(); acq.close()
        finally:
            srv.kill()
        print("ok")
    """, timeout=90)


@needs_aravis
@pytest.mark.skipif(FAKE_GV is None, reason="arv-fake-gv-camera-0.8 is not installed (apt-get install aravis-tools)")
def test_incomplete_frames_end_the_run_counted_never_delivered():
    """``arv-fake-gv-camera-0.8 -r 5`` loses 5 GVSP packets in a thousand;
    with packet resend off a lost packet leaves its frame incomplete. The
    first one ends the run with Aravis's buffer status, counted in the
    engine's status; every block delivered before it is a whole frame of
    the camera (never a frame with holes or zeros)."""
    run(f"""
        import subprocess
        W2, H2 = 512, 64       # 32 KiB frames: ~23 packets each, ~1 frame in 9 incomplete
        srv = subprocess.Popen([{FAKE_GV!r}, "-i", "127.0.0.1", "-s", "VGLOSS", "-r", "5"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        try:
            time.sleep(1.0)
            acq = None
            for _ in range(20):
                try:
                    acq = genicam.GenICamAcquisition(config(camera="127.0.0.1", samples_per_record=W2, records_per_block=H2,
                                                            line_rate=100.0 * H2, packet_resend=False))
                    break
                except vg.VortexError:
                    time.sleep(0.25)
            assert acq is not None and acq.camera.gige_vision, "the GigE Vision fake did not answer"
            proc = NullProcessor(NullProcessorConfig(samples_per_record=W2, ascans_per_block=H2))
            ep = SpectraStackHostTensorEndpointUInt16()
            fmt = planner(H2, B)
            ec = EngineConfig(records_per_block=H2, blocks_to_allocate=8, preload_count=4)
            ec.add_acquisition(acq, [proc]); ec.add_processor(proc, [fmt]); ec.add_formatter(fmt, [ep])
            eng = Engine(ec)
            queue_volumes(eng, H2, B, 0)          # endless: only an incomplete frame ends it
            seen = []
            def segment(sample, scan_idx, volume_idx, s):
                with ep.tensor as v:
                    seen.append(np.array(v)[s].copy())
            ep.segment_callback = segment
            eng.prepare(); eng.start()
            deadline = time.time() + 30
            while not eng.status().error and time.time() < deadline:
                time.sleep(0.05)
            if not eng.status().error:
                eng.stop()
                raise AssertionError(f"no incomplete frame in 30 s: {{eng.status()}}")
            try:
                eng.wait()
            except vg.VortexError as e:
                m = str(e)
                assert "incomplete" in m and ("missing packets" in m or "timeout" in m), m
            else:
                raise AssertionError("an incomplete frame did not end the run")
            s = eng.status()
            assert s.frames_incomplete == 1 and s.frames_dropped == 0, s
            assert s.blocks_acquired == s.frames_received - 1, s     # the incomplete frame was no block
            assert acq.camera.incomplete == 1 and acq.camera.received == s.frames_received
            assert len(seen) <= s.blocks_acquired, (len(seen), s)
            x = np.arange(W2)[None, :]; y = np.arange(H2)[:, None]
            first = int(seen[0][0, 0]) if seen else 0
            for k, b in enumerate(seen):      # consecutive whole frames of the camera's ramp
                np.testing.assert_array_equal(b, (x + y + first + k) % 255, err_msg=f"block {{k}}")
            eng.close(); acq.close()
        finally:
            srv.kill()
        print("ok")
    """, timeout=90)


@needs_aravis
@pytest.mark.parametrize("tolerate", [True, False])
def test_slow_consumer_drops_frames_counted_or_ends_the_run(tolerate):
    """A slow segment_callback (the engine's default event_policy "block")
    holds the blocks back, so the camera finds no buffer queued: frames are
    dropped. Tolerated, they are counted and every block delivered is still
    a whole frame of the camera, in order; otherwise the run ends loudly."""
    run(f"""
        acq = genicam.GenICamAcquisition(config(tolerate_dropped_frames={tolerate}))
        eng, ep = engine(acq, 2, blocks=4, preload=2)     # a small pool: the camera soon finds none queued
        seen = []
        def segment(sample, scan_idx, volume_idx, s):
            with ep.tensor as v:
                seen.append(np.array(v)[s].copy())
            time.sleep(0.03)              # 6 frames of the camera's 200 per second
        ep.segment_callback = segment
        eng.prepare(); eng.start()
        try:
            eng.wait()
        except vg.VortexError as e:
            assert not {tolerate}, f"tolerated drops ended the run: {{e}}"
            m = str(e)
            assert "dropped" in m and "tolerate_dropped_frames" in m and "Fake_1" in m, m
            s = eng.status()
            assert s.frames_dropped >= 1 and s.error and s.volumes < 2, s
        else:
            assert {tolerate}, "dropped frames did not end the run"
            s = eng.status()
            assert s.error == "" and s.volumes == 2 and s.frames_dropped >= 1, s
            assert s.frames_received == s.blocks_acquired and s.frames_incomplete == 0, s
            assert len(seen) == 2 * B, len(seen)
        assert acq.camera.dropped == s.frames_dropped
        assert seen, s
        first = int(seen[0][0, 0])
        # Aravis's fake numbers only the frames it fills: the delivered ones are consecutive
        np.testing.assert_array_equal(np.stack(seen), ramp([first + k for k in range(len(seen))]))
        eng.close(); acq.close()
        print("ok")
    """)


@needs_aravis
def test_live_view_example_runs_headless(tmp_path):
    """examples/genicam_live.py against the Fake camera, no window, a frame limit."""
    import subprocess
    import sys

    import vortexgo
    from PIL import Image

    out = tmp_path / "live.png"
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(vortexgo.__file__)), MPLBACKEND="Agg")
    r = subprocess.run([sys.executable, str(_subproc.ROOT / "examples" / "genicam_live.py"), "--frames", "40",
                        "--headless", "--out", str(out)], capture_output=True, text=True, env=env, timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Aravis Fake (Fake_1)" in r.stdout and "0 dropped, 0 incomplete" in r.stdout, r.stdout
    assert Image.open(out).size[0] > 0 and Image.open(out).getextrema() != ((0, 0),), r.stdout
