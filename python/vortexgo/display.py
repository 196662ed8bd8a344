"""A live view of an acquisition: the en-face MIP and a B-scan of each volume.

:class:`LiveView` hooks an endpoint's ``volume_callback``. For each finished
volume it queues two small reductions (the maximum-intensity projection over
depth and one B-scan) on the endpoint's stream, with CuPy on a GPU endpoint
and NumPy on a host one, and hands them to a render thread. The newest volume
wins: while a frame is still being rendered, later volumes are counted in
:attr:`LiveView.frames_dropped` and skipped, never queued, so a slow display
(a notebook over a network, a large PNG) never holds up the engine.

Where the frames go:

- in Jupyter with ``ipywidgets``: one image widget (MIP | B-scan, always of one
  volume) and a status line, updated in place (display the view, or call
  :meth:`LiveView.widget`); when the view closes, its output also gets the
  last frame as a plain PNG, which viewers without widgets (GitHub, nbviewer,
  a notebook opened later) show instead of the widget;
- in Jupyter without it: a display handle updated with a PNG;
- anywhere: :attr:`LiveView.frame` (NumPy arrays), :meth:`LiveView.save_png`
  and :meth:`LiveView.figure` (matplotlib), which is also the fallback for
  scripts: ``view.show(engine)`` runs a matplotlib window on the main thread
  until the engine finishes.

Needs Pillow for PNGs (``pip install vortexgo[demo]``) and CuPy for device
endpoints (``vortexgo[cuda]``, or ``vortexgo[cuda12]`` with a CUDA 12 driver).
"""

from __future__ import annotations

import io
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Tuple, Union

import numpy as np

from ._validate import check_int

__all__ = ["Frame", "LiveView", "to_uint8", "frame_image"]


@dataclass(frozen=True)
class Frame:
    """One rendered volume: 8-bit images ready to show.

    Attributes:
        volume_index: which volume the frame shows, counted from 0 since the view
            opened (vortex's ``volume_idx`` is the volume's index in its scan, 0
            for every volume of a raster, so the view counts them itself).
        mip: en-face maximum-intensity projection, (bscans, ascans), uint8.
        bscan: the chosen B-scan with depth down, (depth, ascans), uint8.
        bscan_index: which B-scan of the volume ``bscan`` is.
    """

    volume_index: int
    mip: np.ndarray
    bscan: np.ndarray
    bscan_index: int


def to_uint8(img: np.ndarray, levels: Optional[Tuple[float, float]] = None) -> np.ndarray:
    """Map an image to 0..255: between ``levels`` (lo, hi), or between its
    1st and 99.9th percentiles when None (robust to a few hot pixels)."""
    a = np.asarray(img, dtype=np.float32)
    if levels is None:
        lo, hi = (np.percentile(a, [1, 99.9]) if a.size else (0.0, 1.0))
    else:
        lo, hi = float(levels[0]), float(levels[1])
    scale = 255.0 / max(float(hi - lo), 1e-12)
    return np.clip((a - lo) * scale, 0, 255).astype(np.uint8)


def frame_image(frame: Frame, size: int = 512) -> Any:
    """The frame as one PIL image: MIP on the left, B-scan on the right, each
    a ``size`` x ``size`` square. Square, not pixel-true: a scan's two lateral
    extents are usually equal however many A-scans and B-scans sample them,
    and a B-scan is read by its structure, not its pixel aspect."""
    from PIL import Image

    size = check_int("size", size, 16, 8192)
    out = Image.new("L", (2 * size + 8, size), 0)
    for i, img in enumerate((frame.mip, frame.bscan)):
        out.paste(_panel(img, size), (i * (size + 8), 0))
    return out


def _panel(img: np.ndarray, size: int) -> Any:
    from PIL import Image

    # Bilinear keeps speckle readable when enlarging small volumes.
    return Image.fromarray(img).resize((size, size), Image.BILINEAR)


def _png(frame: Frame, size: int) -> bytes:
    buf = io.BytesIO()
    frame_image(frame, size).save(buf, format="PNG")
    return buf.getvalue()


class LiveView:
    """A live en-face MIP and B-scan of an endpoint's volumes (newest wins).

    Args:
        endpoint: a stack tensor endpoint (device or host) whose tensor holds
            (bscans, ascans, depth[, channels]) volumes.
        bscan_index: which B-scan to show; None shows the middle one, ``"sweep"``
            the next one with each frame (a still phantom then visibly moves).
        levels: (lo, hi) of the displayed range in the endpoint's units;
            None picks each frame's 1st-99.9th percentiles.
        depth: (start, stop) samples of depth the MIP projects over; None
            uses all. Excluding the bright samples near zero delay (and the
            mirror image) is what makes an en-face MIP show the tissue.
        projection: "max" (the MIP) or "mean" (an average intensity
            projection, which still shows structure where bright layers
            saturate every A-scan's maximum).
        size: height in pixels of the rendered panels.
        on_frame: called on the render thread with each :class:`Frame`.

    The view attaches at once and chains any ``volume_callback`` already set.
    Close it (or use it as a context manager) to detach.
    """

    def __init__(self, endpoint: Any, *, bscan_index: Union[int, str, None] = None,
                 levels: Optional[Sequence[float]] = None, depth: Optional[Sequence[int]] = None,
                 projection: str = "max", size: int = 512,
                 on_frame: Optional[Callable[[Frame], Any]] = None) -> None:
        # On the type: the tensor property itself raises until Engine.prepare().
        if not hasattr(type(endpoint), "tensor") or not hasattr(endpoint, "volume_callback"):
            raise TypeError(f"endpoint={endpoint!r}, expected a tensor endpoint (e.g. StackDeviceTensorEndpointInt8)")
        self._ep = endpoint
        self._sweep = bscan_index == "sweep"
        if isinstance(bscan_index, str) and not self._sweep:
            raise ValueError(f"bscan_index={bscan_index!r}, expected an index >= 0, None (the middle) or 'sweep'")
        self._bscan = None if bscan_index is None or self._sweep else check_int("bscan_index", bscan_index, 0)
        if levels is not None:
            lo, hi = (float(v) for v in levels)
            if not hi > lo:
                raise ValueError(f"levels={tuple(levels)!r}, expected (lo, hi) with hi > lo")
            self._levels: Optional[Tuple[float, float]] = (lo, hi)
        else:
            self._levels = None
        if depth is not None:
            d0, d1 = (check_int("depth", v, 0) for v in depth)
            if not d1 > d0:
                raise ValueError(f"depth={tuple(depth)!r}, expected (start, stop) with stop > start")
            self._depth: Optional[slice] = slice(d0, d1)
        else:
            self._depth = None
        if projection not in ("max", "mean"):
            raise ValueError(f"projection={projection!r}, expected 'max' or 'mean'")
        self._projection = projection
        self._size = check_int("size", size, 16, 8192)
        if on_frame is not None and not callable(on_frame):
            raise TypeError(f"on_frame={on_frame!r}, expected a callable")
        self._on_frame = on_frame
        self._cond = threading.Condition()
        self._pending: Optional[tuple] = None  # (volume index, mip, bscan, b index, done event)
        self._busy = False  # a frame is queued or rendering: newer volumes are dropped
        self._volumes = 0  # volume callbacks seen: the frames' volume_index
        self._closed = False
        #: The newest rendered :class:`Frame` (None before the first).
        self.frame: Optional[Frame] = None
        #: Volumes rendered.
        self.frames_shown = 0
        #: Volumes skipped because a frame was still in progress.
        self.frames_dropped = 0
        self._error: Optional[BaseException] = None
        self._widgets: Optional[tuple] = None
        self._handle: Any = None
        self._bundle_handle: Any = None
        self._previous = endpoint.volume_callback
        endpoint.volume_callback = self._on_volume
        self._thread = threading.Thread(target=self._render_loop, name="vortexgo-liveview", daemon=True)
        self._thread.start()

    # --- engine side: the endpoint's dispatcher thread -------------------------

    def _on_volume(self, sample: int, scan_idx: int, volume_idx: int) -> None:
        if self._previous is not None:
            self._previous(sample, scan_idx, volume_idx)
        with self._cond:
            index, self._volumes = self._volumes, self._volumes + 1
            if self._closed:
                return
            if self._busy:
                self.frames_dropped += 1
                return
            self._busy = True
        try:
            item = self._reduce(index)
        except BaseException:
            with self._cond:
                self._busy = False
            raise
        with self._cond:
            self._pending = item
            self._cond.notify()

    def _reduce(self, index: int) -> tuple:
        """Queue the MIP and the B-scan copy: on the endpoint's stream for a
        device tensor (nothing waits here), at once for a host one."""
        ep = self._ep
        with ep.tensor as vol:
            if vol.ndim == 4:
                vol = vol[..., 0]  # the first channel
            if vol.ndim != 3:
                raise ValueError(f"LiveView: endpoint tensor shape {tuple(vol.shape)}, expected (bscans, ascans, depth)")
            if self._sweep:
                b = self.frames_shown % vol.shape[0]
            else:
                b = (vol.shape[0] // 2) if self._bscan is None else min(self._bscan, vol.shape[0] - 1)
            sub = vol if self._depth is None else vol[:, :, self._depth]
            if sub.shape[2] == 0:
                raise ValueError(f"LiveView depth={self._depth} selects nothing of depth {vol.shape[2]}")
            project = (lambda v: v.max(axis=2)) if self._projection == "max" else (lambda v: v.mean(axis=2, dtype="float32"))
            if isinstance(vol, np.ndarray):
                return index, project(sub), vol[b].T.copy(), b, None
            with ep.stream as stream:
                # CuPy runs these on the endpoint's stream (entered above), so
                # they follow the volume's formatting; the event tells the
                # render thread when the results are ready.
                return index, project(sub), vol[b].T.copy(), b, stream.record()

    # --- render thread ---------------------------------------------------------

    def _render_loop(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closed:
                    self._cond.wait()
                if self._pending is None:
                    return
                item, self._pending = self._pending, None
            try:
                self._render(item)
            except BaseException as e:  # shown by close(), never lost
                self._error = e
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _render(self, item: tuple) -> None:
        volume_idx, mip, bscan, b, done = item
        if done is not None:
            done.synchronize()  # this thread only: the engine and its callbacks go on
            mip, bscan = mip.get(), bscan.get()
        frame = Frame(volume_idx, to_uint8(mip, self._levels), to_uint8(bscan, self._levels), b)
        self.frame = frame
        self.frames_shown += 1
        if self._widgets is not None:
            # One image for both panels: two widgets updated one after the other were seen
            # showing two different volumes in a browser.
            self._widgets[0].value = _png(frame, self._size)
            self._widgets[1].value = self._status()
        elif self._handle is not None:
            from IPython.display import Image as IPImage

            self._handle.update(IPImage(data=_png(frame, self._size)))
        if self._on_frame is not None:
            self._on_frame(frame)

    # --- outputs ---------------------------------------------------------------

    def wait_frame(self, timeout: Optional[float] = None) -> Optional[Frame]:
        """Wait until no frame is queued or rendering; return the latest."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._busy:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                self._cond.wait(left)
        return self.frame

    def save_png(self, path: str, size: Optional[int] = None) -> str:
        """Write the latest frame (MIP | B-scan) as a PNG; returns the path."""
        frame = self.wait_frame()
        if frame is None:
            raise RuntimeError("LiveView.save_png: no frame yet (has a volume finished?)")
        frame_image(frame, self._size if size is None else size).save(path)
        return path

    def widget(self) -> Any:
        """A Jupyter widget (MIP | B-scan as one image, a status line) updated with each frame."""
        import ipywidgets as w

        if self._widgets is None:
            first = _png(self.frame, self._size) if self.frame is not None else _waiting_png(self._size)
            image = w.Image(value=first, format="png")  # never empty: an empty image shows a broken icon
            status = w.Label(self._status())
            self._widgets = (image, status, w.VBox([image, status]))
        return self._widgets[2]

    def _status(self) -> str:
        if self.frame is None:
            return "waiting for the first volume"
        return (f"volume {self.frame.volume_index}, B-scan {self.frame.bscan_index}: "
                f"{self.frames_shown} shown, {self.frames_dropped} dropped")

    def _ipython_display_(self) -> None:
        from IPython.display import display

        try:
            box = self.widget()
        except ImportError:  # no ipywidgets: a PNG display handle instead
            self._handle = display(_Placeholder(), display_id=True)
            return
        # The widget with a PNG and a text beside it in one output: front-ends with the widget
        # manager show the widget; the others (GitHub, nbviewer, a notebook reopened without
        # widget state) show the PNG, replaced by the last frame when the view closes.
        self._bundle_handle = display(self._bundle(box), raw=True, display_id=True)

    def _bundle(self, box: Any) -> dict:
        import base64

        bundle = dict(box._repr_mimebundle_() or {})
        png = _png(self.frame, self._size) if self.frame is not None else _waiting_png(self._size)
        bundle["image/png"] = base64.b64encode(png).decode("ascii")
        bundle["text/plain"] = f"LiveView: {self._status()}"
        return bundle

    def figure(self) -> Any:
        """A matplotlib figure of the latest frame (for scripts and reports)."""
        import matplotlib.pyplot as plt

        frame = self.wait_frame()
        fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4.5))
        if frame is not None:
            a.imshow(frame.mip, cmap="gray", aspect="auto")
            b.imshow(frame.bscan, cmap="gray", aspect="auto")
            fig.suptitle(f"volume {frame.volume_index}")
        a.set_title("en-face MIP")
        b.set_title(f"B-scan {frame.bscan_index if frame else ''}")
        for ax in (a, b):
            ax.set_axis_off()
        return fig

    def show(self, engine: Any, interval: float = 0.1) -> None:
        """Run a matplotlib window on this (main) thread until ``engine``
        finishes, redrawing with each new frame; then wait for the engine."""
        import matplotlib.pyplot as plt

        fig = self.figure()
        shown = -1
        while not engine.wait_for(0):
            if self.frame is not None and self.frames_shown != shown:
                shown = self.frames_shown
                for ax, img in zip(fig.axes, (self.frame.mip, self.frame.bscan)):
                    if ax.images:
                        ax.images[0].set_data(img)
                    else:
                        ax.imshow(img, cmap="gray", aspect="auto")
                fig.suptitle(f"volume {self.frame.volume_index}")
            plt.pause(interval)
        engine.wait()

    # --- lifetime --------------------------------------------------------------

    def close(self) -> None:
        """Detach from the endpoint, finish the frame in progress, stop the
        render thread; re-raises an error the renderer met."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        if self._ep.volume_callback == self._on_volume:
            self._ep.volume_callback = self._previous
        self._thread.join()
        if self._bundle_handle is not None and self._widgets is not None:
            self._bundle_handle.update(self._bundle(self._widgets[2]), raw=True)
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def __enter__(self) -> "LiveView":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "live"
        return f"<LiveView {state}: {self.frames_shown} shown, {self.frames_dropped} dropped>"


def _waiting_png(size: int) -> bytes:
    """The frame's place before the first volume: two dark panels of the frame's size."""
    from PIL import Image

    buf = io.BytesIO()
    Image.new("L", (2 * size + 8, size), 24).save(buf, format="PNG")
    return buf.getvalue()


class _Placeholder:
    def __repr__(self) -> str:
        return "LiveView: waiting for the first volume"
