"""CUDA graph capture and replay."""

from __future__ import annotations

from typing import Optional

from ._attrs import NoCopy, StrictAttributes
from ._errors import native, release_on_collect
from ._stream import Stream, current_stream

__all__ = ["Graph", "ScopedCapture", "capture_launch"]


class Graph(NoCopy):
    """An instantiated graph: a recording of stream work that replays with one launch.

    On the CPU backend it is the recorded list of operations, replayed in order.
    """

    __slots__ = ("_h", "device", "_closed", "_fin", "__weakref__")

    def __init__(self, _handle, device) -> None:
        self._h = _handle
        self.device = device
        self._closed = False
        self._fin = release_on_collect(self, _handle.Close, "a graph")

    @property
    def nodes(self) -> int:
        """Number of operations captured (ClosedError once closed)."""
        return native(self._h.Nodes)()

    @native
    def launch(self, stream: Optional[Stream] = None) -> None:
        """Replay the graph on ``stream`` (default: the current stream)."""
        s = stream if stream is not None else current_stream(self.device)
        if not isinstance(s, Stream):
            s = Stream.from_external(s, self.device)
        self._h.Launch(s._h)

    @native
    def close(self) -> None:
        """Release the graph."""
        if not self._closed:
            self._closed = True
            self._fin.detach()
            self._h.Close()

    def __repr__(self) -> str:
        return f"<Graph {self.device.alias} nodes={'closed' if self._closed else self.nodes}>"


class ScopedCapture(NoCopy, StrictAttributes):
    """Capture the work issued to ``stream`` inside the block into a :class:`Graph`.

    The stream is made current for the block (for vortexgo and, with CuPy,
    for CuPy too), so CuPy kernels launched inside are captured as well::

        with vortexgo.ScopedCapture(stream) as capture:
            vortexgo.copy(dst, src, stream=stream)
            cupy.multiply(x, 2, out=x)      # runs on `stream`, captured
        capture.graph.launch(stream)

    Work is recorded, not run, during the block. If the block raises, the
    capture is ended and discarded, and the block's error propagates.

    A graph holds only work on the GPU, so inside the block the host cannot
    wait for the capturing stream (``stream.synchronize()``, ``is_complete``,
    the same on an event recorded in it), and the stream cannot wait on an
    event recorded outside the capture. Order the capture after outside work
    by synchronizing that work before the block; wait for the captured work
    after launching the graph. On CUDA such a call fails with a
    :class:`CudaError` saying so and invalidates the capture (leaving the
    block then raises too); the CPU backend refuses the synchronize and the
    query likewise.

    A capture is used where it was made, never copied: ``copy.copy``,
    ``copy.deepcopy`` and pickle raise ``TypeError`` (it stands for the
    capture in progress on its stream and owns the graph it produced).
    """

    _copy_reason = "it stands for the capture in progress on its stream and owns the graph it produced"
    _copy_hint = "use this capture (its .graph) instead, or make another with ScopedCapture(stream)"

    stream: Stream
    graph: Optional[Graph]

    def __init__(self, stream: Optional[Stream] = None) -> None:
        if stream is not None and not isinstance(stream, Stream):
            stream = Stream.from_external(stream)
        self.stream: Stream = stream if stream is not None else current_stream()
        self.graph: Optional[Graph] = None

    @native
    def __enter__(self) -> "ScopedCapture":
        self.stream._h.BeginCapture()
        try:
            self.stream.__enter__()
        except BaseException:
            self.stream._h.EndCapture().Close()
            raise
        return self

    @native
    def __exit__(self, exc_type, exc, tb) -> None:
        self.stream.__exit__(exc_type, exc, tb)
        if exc_type is None:
            # Fails with the driver's CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
            # (and what to do) if a call inside was refused and caught.
            self.graph = Graph(self.stream._h.EndCapture(), self.stream.device)
            return
        # The block raised: end the capture and drop it. Ending fails when
        # the block's error invalidated the capture (a refused synchronize
        # or wait does on CUDA); that says less than the block's own error,
        # which propagates, with the failure as a note.
        try:
            self.stream._h.EndCapture().Close()
        except Exception as end:
            add_note = getattr(exc, "add_note", None)  # Python >= 3.11
            if add_note is not None:
                add_note(f"ending the discarded capture failed too: {end}")


def capture_launch(graph: Graph, stream: Optional[Stream] = None) -> None:
    """Replay ``graph`` on ``stream`` (Warp's name for :meth:`Graph.launch`)."""
    if not isinstance(graph, Graph):
        raise TypeError(f"graph={graph!r}, expected a vortexgo.Graph")
    graph.launch(stream)
