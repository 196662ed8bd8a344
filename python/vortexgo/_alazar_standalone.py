"""vortex's standalone calls of an AlazarTech acquisition, outside an engine.

vortex's ``AlazarAcquisition`` (and ``AlazarFFTAcquisition``) can be driven by
hand (``acquire/dso/alazar/base.hpp``; vortex's demo ``live_view_alazar_fft.py``
records its background so): :meth:`~_AlazarStandalone.prepare` configures the
board's capture, :meth:`~_AlazarStandalone.next_async` posts the caller's
buffer to the board and queues its wait on the acquisition's worker thread,
:meth:`~_AlazarStandalone.start` starts the board, and each wait ends in
``callback(records, exception)`` on that thread, in posting order;
:meth:`~_AlazarStandalone.stop` aborts, and the waits then report 0 records
and no error. :meth:`~_AlazarStandalone.next` is a post and its wait in the
calling thread.

The board writes the caller's memory until the buffer's wait returns or the
capture stops: every posted array is held here until then, so dropping it
early cannot let the board write freed memory. The worker thread holds the
native handle, never the acquisition, so an acquisition dropped with waits
pending is collected (its finaliser closes it, which stops the board and ends
the waits). At interpreter exit, acquisitions with waits pending are stopped
first, so that no thread is left inside a wait.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from ._errors import ClosedError, InUseError, VortexError, native
from ._standalone import Worker, call_back
from ._validate import check_callable, check_int
from .acquire import _host_uint16, _Standalone

_log = logging.getLogger("vortexgo.acquire")


def _shape_is_compatible(shape: tuple, config_shape: list) -> bool:
    """vortex's ``shape_is_compatible``: the shapes agree once axes of 1 are skipped."""
    return [d for d in shape if d != 1] == [d for d in config_shape if d != 1]


class _AlazarStandalone(_Standalone):
    """vortex's ``prepare``, ``start``, ``stop``, ``running``, ``next`` and
    ``next_async`` of an Alazar acquisition (see the module's docstring)."""

    _worker: Any = None

    def initialize(self, config: Any = None, **fields: Any) -> None:
        super().initialize(config, **fields)
        # at exit with waits pending the board is stopped, which ends them
        self._worker = Worker(f"vortexgo-{type(self).__name__}-worker", self._h.Stop)
        self._posted: list[np.ndarray] = []

    @native
    def prepare(self) -> None:
        """Configure the board's capture of ``records_per_block``-record
        buffers (vortex's ``prepare``), abandoning buffers posted before; once
        per acquisition, and again after :meth:`stop`. An engine calls it for
        the acquisitions it runs."""
        self._handle().AlazarPrepare()
        self._posted.clear()

    @native
    def start(self) -> None:
        """Start the board's capture (after :meth:`prepare`; nothing while it
        runs). Buffers may be posted before or after."""
        self._handle().Start()

    @native
    def stop(self) -> None:
        """Abort the capture: the board writes no posted buffer after this
        returns, and their waits report 0 records and no error. Nothing
        happens when no capture is prepared."""
        self._handle().Stop()
        self._posted.clear()

    def close(self) -> None:
        """Stop the board and close the acquisition (waits still pending report
        0 records); see :meth:`~vortexgo.acquire.SimulatedAcquisition.close`."""
        super().close()
        if self._closed:
            self._posted.clear()

    def _block(self, buffer: Any) -> np.ndarray:
        """``buffer`` checked as vortex's post does (its messages): exactly
        ``records_per_block`` records (ValueError), a shape compatible with
        ``config.shape`` (RuntimeError)."""
        a = _host_uint16(buffer)
        c = self._config
        if a.shape[0] != c.records_per_block:
            raise ValueError(f"block is not exactly equal to the configured size: {a.shape[0]} != {c.records_per_block}")
        if not _shape_is_compatible(a.shape, c.shape):
            raise VortexError(f"buffer shape is not compatible with configured shape: "
                              f"[{', '.join(map(str, a.shape))}] !~= [{', '.join(map(str, c.shape))}]")
        return a

    def next(self, buffer: Any, id: int = 0) -> int:
        """Post ``buffer`` (NumPy uint16 of ``config.shape``, or host memory
        exporting the array interface) to the board and wait for it, up to
        ``config.acquire_timeout``: returns ``records_per_block``, or 0 when
        the capture is stopped meanwhile. A board error (a timeout, an
        overflow) raises :class:`~vortexgo.VortexError` and, with
        ``stop_on_error``, stops the board. ``id`` is for logging only."""
        id = check_int("id", id, 0)
        a = self._block(buffer)
        h = self._handle()
        if self.logger is not None:
            self.logger.debug("acquiring block %d", id)
        self._post(h, a)
        try:
            n = int(native(h.AlazarWait)(a.ctypes.data))
        except VortexError:
            _release(self._posted, a, self._config.stop_on_error)
            raise
        _release(self._posted, a, True)
        return n

    def _post(self, h: Any, a: np.ndarray) -> None:
        """Post ``a`` to the board, holding it until its wait returns or the capture stops."""
        self._posted.append(a)
        try:
            native(h.AlazarPost)(a.ctypes.data, a.nbytes)
        except BaseException:
            _release(self._posted, a, True)  # the board did not take it
            raise

    def next_async(self, buffer: Any, callback: Any, id: int = 0) -> None:
        """Post ``buffer`` (as :meth:`next`) and return; the acquisition's
        worker thread waits for it and calls ``callback(records, exception)``:
        ``records_per_block`` and None once filled, 0 and None when the capture
        is stopped (or the acquisition closed) first, 0 and the
        :class:`~vortexgo.VortexError` of a board error (a failed post too),
        in posting order. A buffer of the wrong shape raises here, as
        vortex's, and so do :class:`~vortexgo.InUseError` (an engine uses the
        acquisition) and :class:`~vortexgo.ClosedError`. An exception from
        ``callback`` is logged, as vortex's."""
        check_callable("callback", callback, allow_none=False)
        id = check_int("id", id, 0)
        a = self._block(buffer)
        h = self._handle()
        posted, logger, stop_on_error = self._posted, self.logger or _log, self._config.stop_on_error
        if self.logger is not None:
            self.logger.debug("posting block %d", id)
        try:
            self._post(h, a)
        except (InUseError, ClosedError):
            raise  # misuse, raised as the other calls do
        except VortexError as e:
            error: BaseException = e

            def job() -> None:  # vortex reports a failed post to the callback, in order
                call_back(logger, callback, 0, error, id)
        else:
            def job() -> None:
                try:
                    n, exc = int(native(h.AlazarWait)(a.ctypes.data)), None
                except Exception as e:  # reported to the callback, as vortex's worker does
                    n, exc = 0, e
                _release(posted, a, exc is None or stop_on_error)
                call_back(logger, callback, n, exc, id)
        self._worker.push(job)


def _release(posted: list, a: np.ndarray, done: bool) -> None:
    """Drop ``a`` from ``posted`` when the board no longer holds it (``done``:
    its wait returned, or an error stopped the board)."""
    if done:
        for i, b in enumerate(posted):
            if b is a:
                del posted[i]
                return
