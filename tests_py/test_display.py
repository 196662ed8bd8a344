"""vortexgo.display: the live view renders the newest volume, drops (never
queues) frames while busy, and never changes what the engine acquires. Run
headless: frames are rendered to PNG and read back."""

from __future__ import annotations

import io
import threading
import time

import numpy as np
import pytest

PIL = pytest.importorskip("PIL")
import PIL.Image  # noqa: E402

import vortexgo as vg
from vortexgo.display import Frame, LiveView, frame_image, to_uint8
from vortexgo.engine import AscanStackEndpoint, StackDeviceTensorEndpointInt8

from test_engine import A, B, S, make_rig, open_stack, run

pytestmark = pytest.mark.timeout(120)
LEVELS = (-128.0, 127.0)  # int8 endpoint, fixed so a frame can be recomputed exactly


def test_frames_show_the_stored_volumes(tmp_path):
    ep = StackDeviceTensorEndpointInt8()
    st = open_stack(tmp_path)
    frames: list[Frame] = []
    rig = make_rig([ep, AscanStackEndpoint(st)], volumes=4)
    seen: list[int] = []
    ep.volume_callback = lambda s, scan, v: seen.append(scan)  # chained, not replaced; one scan per volume
    with LiveView(ep, levels=LEVELS, depth=(8, 120), size=64, on_frame=frames.append) as view:
        run(rig)
        view.wait_frame(10)
    st.close()
    assert seen == [0, 1, 2, 3], "the user's own volume_callback still fires"
    assert view.frames_shown == len(frames) >= 1
    assert view.frames_shown + view.frames_dropped == 4
    stored = np.load(str(tmp_path / "vol.npy"))[..., 0]  # vortex's channels axis
    for f in frames:
        vol = stored[f.volume_index]
        assert f.bscan_index == B // 2
        np.testing.assert_array_equal(f.mip, to_uint8(vol[:, :, 8:120].max(axis=2), LEVELS))
        np.testing.assert_array_equal(f.bscan, to_uint8(vol[B // 2].T, LEVELS))
    assert ep.volume_callback is not None and ep.volume_callback.__name__ == "<lambda>", "close() restores it"


def test_slow_display_drops_frames_and_never_slows_the_engine(tmp_path):
    ep = StackDeviceTensorEndpointInt8()
    gate = threading.Event()

    def slow(frame):
        gate.wait(5)  # the renderer is stuck until the run is over

    rig = make_rig([ep], volumes=6)
    view = LiveView(ep, on_frame=slow)
    eng = run(rig)
    gate.set()
    view.close()
    s = eng.status()
    assert s.volumes == 6 and s.blocks_dropped == 0 and s.callback_errors == 0
    assert view.frames_dropped >= 4, "volumes arriving while a frame renders are skipped, not queued"
    assert view.frames_shown + view.frames_dropped == 6


def test_png_and_figure_are_readable(tmp_path):
    ep = StackDeviceTensorEndpointInt8()
    rig = make_rig([ep], volumes=1)
    view = LiveView(ep, bscan_index=3, depth=(8, 120), projection="mean", size=128)
    run(rig)
    path = view.save_png(str(tmp_path / "live.png"))
    view.close()
    img = PIL.Image.open(path)
    assert img.size == (2 * 128 + 8, 128) and img.mode == "L"
    a = np.asarray(img)
    assert a[:, :128].std() > 5 and a[:, 136:].std() > 5, "both panels show structure, not a blank"
    assert view.frame.bscan_index == 3 and view.frame.bscan.shape == (S, A)
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    fig = view.figure()
    fig.savefig(tmp_path / "fig.png")
    assert PIL.Image.open(tmp_path / "fig.png").width > 100


def test_widget_updates_in_place():
    pytest.importorskip("ipywidgets")
    ep = StackDeviceTensorEndpointInt8()
    rig = make_rig([ep], volumes=2)
    view = LiveView(ep, size=32)
    box = view.widget()
    image, status = box.children
    # Before the first volume: a real image (an empty one shows a broken-image icon), same size.
    assert image.value[:8] == b"\x89PNG\r\n\x1a\n" and PIL.Image.open(io.BytesIO(image.value)).size == (72, 32)
    assert status.value == "waiting for the first volume"
    run(rig)
    view.wait_frame(10)
    view.close()
    # One image holds both panels, so they always show the same volume.
    got = np.asarray(PIL.Image.open(io.BytesIO(image.value)))
    want = np.asarray(frame_image(view.frame, 32))
    assert got.shape == (32, 72) and np.array_equal(got, want)
    assert status.value.startswith(f"volume {view.frame.volume_index}, B-scan ")


def test_output_keeps_the_last_frame_for_viewers_without_widgets(monkeypatch):
    """Displayed in a notebook, the view's output carries a PNG and a text beside the widget; on
    close both become the last frame's, which is what GitHub or nbviewer show (not "waiting")."""
    pytest.importorskip("ipywidgets")
    import base64
    import IPython.display as ipd

    shown: list = []

    class Handle:
        def update(self, obj, raw=False):
            shown.append(("update", obj, raw))

    def fake_display(obj, raw=False, display_id=False):
        shown.append(("display", obj, raw))
        return Handle()

    monkeypatch.setattr(ipd, "display", fake_display)
    ep = StackDeviceTensorEndpointInt8()
    rig = make_rig([ep], volumes=2)
    view = LiveView(ep, size=32)
    view._ipython_display_()
    (kind, first, raw), = shown
    assert kind == "display" and raw and "application/vnd.jupyter.widget-view+json" in first
    assert first["text/plain"] == "LiveView: waiting for the first volume"
    run(rig)
    view.wait_frame(10)
    view.close()
    kind, last, raw = shown[-1]
    assert kind == "update" and raw and last["text/plain"].startswith("LiveView: volume ")
    png = base64.b64decode(last["image/png"])
    assert np.array_equal(np.asarray(PIL.Image.open(io.BytesIO(png))), np.asarray(frame_image(view.frame, 32)))


def test_sweep_moves_the_bscan_with_each_frame():
    ep = StackDeviceTensorEndpointInt8()
    rig = make_rig([ep], volumes=8)
    seen: list = []
    view = LiveView(ep, bscan_index="sweep", size=16, on_frame=lambda f: seen.append(f.bscan_index))
    run(rig)
    view.wait_frame(10)
    view.close()
    assert len(set(seen)) == len(seen) > 1, seen  # a new B-scan each frame
    with pytest.raises(ValueError, match="'sweep'"):
        LiveView(ep, bscan_index="middle")


def test_frame_image_layout():
    f = Frame(0, np.full((4, 8), 200, np.uint8), np.zeros((16, 8), np.uint8), 0)
    img = frame_image(f, 64)
    a = np.asarray(img)
    assert img.size == (2 * 64 + 8, 64)
    assert a[:, :64].min() == 200 and a[:, 64 + 8:].max() == 0


@pytest.mark.parametrize("kw,exc,words", [
    (dict(levels=(1, 1)), ValueError, "levels=(1, 1)"),
    (dict(size=3), ValueError, "size=3"),
    (dict(depth=(5, 5)), ValueError, "depth=(5, 5)"),
    (dict(projection="min"), ValueError, "projection='min'"),
    (dict(bscan_index=-1), ValueError, "bscan_index=-1"),
    (dict(on_frame=5), TypeError, "on_frame=5"),
])
def test_bad_arguments_name_themselves(kw, exc, words):
    ep = StackDeviceTensorEndpointInt8()
    with pytest.raises(exc, match=words.replace("(", r"\(").replace(")", r"\)")):
        LiveView(ep, **kw)
    assert ep.volume_callback is None, "a refused view attaches nothing"
    ep.close()


def test_not_an_endpoint():
    with pytest.raises(TypeError, match="tensor endpoint"):
        LiveView(object())


def test_no_frame_yet():
    ep = StackDeviceTensorEndpointInt8()
    with LiveView(ep) as view:
        with pytest.raises(RuntimeError, match="no frame yet"):
            view.save_png("/nonexistent/x.png")
    assert "closed" in repr(view)


@pytest.mark.gpu
def test_device_endpoint_frames_match_the_volume_on_the_gpu(tmp_path):
    """On CUDA the reductions run with CuPy on the endpoint's stream; the
    frames equal NumPy's on the stored copy of the same volumes."""
    from conftest import HAS_CUPY

    if not HAS_CUPY:
        pytest.skip("needs CUDA and CuPy")
    ep = StackDeviceTensorEndpointInt8()
    st = open_stack(tmp_path)
    frames: list[Frame] = []
    rig = make_rig([ep, AscanStackEndpoint(st)], volumes=4, device="cuda")
    with LiveView(ep, levels=LEVELS, depth=(8, 120), on_frame=frames.append) as view:
        run(rig)
        view.wait_frame(10)
    st.close()
    assert frames and view.frames_shown + view.frames_dropped == 4
    stored = np.load(str(tmp_path / "vol.npy"))[..., 0]
    for f in frames:
        vol = stored[f.volume_index]
        np.testing.assert_array_equal(f.mip, to_uint8(vol[:, :, 8:120].max(axis=2), LEVELS))
        np.testing.assert_array_equal(f.bscan, to_uint8(vol[B // 2].T, LEVELS))
