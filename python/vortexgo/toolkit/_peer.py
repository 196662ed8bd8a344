"""Peer copies between two GPUs."""

from __future__ import annotations

from typing import Optional

from .._array import OP_COPY, Array, order_after, run_op
from .._device import cuda_device_count, cuda_unavailable_reason
from .._stream import Stream, current_stream
from ._records import tk_native

__all__ = ["copy_peer", "peer_copy_unavailable_reason"]


def peer_copy_unavailable_reason() -> str:
    """Why :func:`copy_peer` between two GPUs cannot run here ("" when it can)."""
    n = cuda_device_count()
    if n >= 2:
        return ""
    if n == 0:
        return f"peer copies need two CUDA devices; none found ({cuda_unavailable_reason() or 'no CUDA device'})"
    return "peer copies need two CUDA devices; only cuda:0 is present"


@tk_native
def copy_peer(dst: Array, src: Array, *, stream: Optional[Stream] = None) -> None:
    """Copy ``src`` on one GPU into ``dst`` on another, asynchronously.

    The copy runs on ``stream`` (default: the current stream of ``dst``'s
    device) after ``src``'s producer stream (an event wait, no host wait);
    ``dst`` records the stream as its producer. The driver uses a direct
    peer-to-peer transfer where the GPUs support it, else it stages the
    bytes through host memory. Both arrays must be CUDA device memory of the
    same size and dtype.
    """
    for name, a in (("dst", dst), ("src", src)):
        if not isinstance(a, Array):
            raise TypeError(f"{name}={type(a).__name__}, expected a vortexgo.Array")
        if not a.device.is_cuda or a.pinned:
            raise ValueError(f"{name} is {'pinned host' if a.pinned else 'CPU'} memory on {a.device.alias}, expected "
                             f"CUDA device memory ({peer_copy_unavailable_reason() or 'use vortexgo.copy for host copies'})")
        a._check()
    if dst.nbytes != src.nbytes or dst.dtype != src.dtype:
        raise ValueError(f"dst is {dst.nbytes} bytes of {dst.dtype.name}, src {src.nbytes} bytes of "
                         f"{src.dtype.name}: expected the same size and dtype")
    s = stream if stream is not None else current_stream(dst.device)
    if not isinstance(s, Stream):
        s = Stream.from_external(s, dst.device)
    order_after(s, src.stream)
    if dst.nbytes:
        # Named by memory id, the copy holds both arrays' memory while queued.
        run_op(OP_COPY, s, dst._mid, dst.ptr, src._mid, src.ptr, dst.nbytes)
    dst.stream = s
