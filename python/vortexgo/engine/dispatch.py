"""The engine's dispatcher thread: it takes the session's event records from Go (or, with a
fixed ``dispatch_spin``, from the event ring in C) and runs the handlers in order: endpoint
callbacks, the scan queue's callbacks, lifecycle and job events (docs/design.md, "Dispatch
latency"). :class:`_Dispatch` is the part of :class:`~vortexgo.engine.Engine` that runs on
that thread; the C loop (``_fastcall.run_events``) reads the same engine attributes."""

from __future__ import annotations

import datetime
import logging
import threading
import time
import weakref
from typing import Any, Optional

import numpy as np

from .. import _core
from .. import _records
from .._errors import VortexError, translate
from ..endpoint import _Endpoint
from ..scan import ScanQueue
from .status import EngineEvent, JobTiming, SessionStatus

# The event record, declared once in gosrc/engine/layout.go and generated into _records:
# the kinds, then the fields in order (kind, endpoint, sample, scan_idx, volume_idx,
# bscan_idx, timestamp_ns, then a job's stage times). Errors are lifecycle events
# (_ENGINE: EngineEvent.Error).
_UPDATE, _SEGMENT, _VOLUME, _SCAN = _records.UPDATE, _records.SEGMENT, _records.VOLUME, _records.SCAN
_DONE, _EVENT, _QUEUE, _QUEUE_EMPTY = _records.DONE, _records.EVENT, _records.QUEUE, _records.QUEUE_EMPTY
_ENGINE, _JOB = _records.ENGINE, _records.JOB
_FIELDS = _records.FIELDS
_BATCH = 256
_POLL_MS = 100  # the dispatcher's wait per Go call: bounds how long interpreter exit can wait for it
# The C loop over simple event records (_fastcall.c run_events), or None: every record then runs
# in _run_records. Tests swap it to compare both loops.
_run_events = _core.run_events if _core.EVENT_FIELDS == _FIELDS else None
# The dispatcher's C wait on the event ring (_fastcall.c ring_next), or None (Go's wait only).
_ring_next = _core.ring_next if _core.EVENT_FIELDS == _FIELDS else None


class _Dispatch:
    """The engine's work on the dispatcher thread (mixed into :class:`~vortexgo.engine.Engine`,
    whose attributes it reads: ``_h``, ``_endpoints``, ``_fatal``, the latency record, the
    callbacks and the logger)."""

    _h: Any
    config: Any
    logger: logging.Logger
    callback_error_policy: str
    event_callback: Any
    job_callback: Any
    scan_queue: ScanQueue
    _endpoints: list
    _fatal: Optional[BaseException]
    _segments: dict
    _latency: Optional[list]
    _latency_cap: int
    _latency_base: int
    _ring_spin_ns: int
    _wall0: int
    _last_callback_error: Optional[BaseException]

    def _start_dispatcher(self, h: Any) -> None:
        """Start the dispatcher thread of the session engine handle ``h`` just started."""
        # With a fixed dispatch_spin the dispatcher takes events from the session's ring in C
        # (_fastcall.c ring_next); the ring object keeps the ring's memory mapped while it reads.
        ring = h.EventRing() if self._ring_spin_ns and _ring_next is not None else None
        # The thread holds the engine weakly (_dispatch_loop): an engine dropped while it runs is
        # collected, and its finaliser stops it, as vortex's destructor does.
        # Assigned before it starts: a callback on its first batch must find itself the
        # dispatcher (_in_dispatcher), or a wait() there would wait for itself.
        self._dispatcher = threading.Thread(target=_dispatch_loop, args=(weakref.ref(self), ring),
                                            name="vortexgo-engine-dispatcher", daemon=True)
        self._dispatcher.start()

    def _callback_failed(self, what: str, exc: BaseException) -> None:
        self._last_callback_error = exc
        self.logger.exception("vortexgo: %s raised; %s", what,
                              "stopping the engine" if self.callback_error_policy == "stop" else "the engine keeps running")
        try:
            self._h.RecordCallbackErrors(1)  # Go counts them: EngineStatus.callback_errors
            if self.callback_error_policy == "stop":
                self._h.RequestStop()
        except RuntimeError:  # pragma: no cover - the engine was closed under us
            pass

    def _handler_exited(self, what: str, exc: BaseException) -> None:
        """A handler raised a BaseException (``sys.exit()``, KeyboardInterrupt):
        never let it kill the dispatcher (the engine would wait forever for its
        events). Stop the engine, keep draining, and re-raise it from wait()."""
        if self._fatal is None:
            self._fatal = exc
        self.logger.error("vortexgo: %s raised %s; stopping the engine (wait() re-raises it)",
                          what, type(exc).__name__)
        try:
            self._h.RequestStop()
        except RuntimeError:  # pragma: no cover - the engine was closed under us
            pass

    def _dispatcher_failed(self, exc: BaseException) -> None:
        """The event queue failed under the dispatcher: no event will be taken again. Stop the
        engine as vortex's ``shutdown(interrupt=True)`` does, so that its format stage stops
        waiting for handlers that will never run (a plain stop keeps that backpressure, which
        only a draining dispatcher releases), and re-raise ``exc`` from wait()."""
        if self._fatal is None:
            self._fatal = exc
        self.logger.error("vortexgo: the engine's event queue failed (%s); stopping the engine, "
                          "wait() re-raises it", exc)
        try:
            self._h.Shutdown(True)
        except RuntimeError:  # pragma: no cover - the engine was closed under us
            pass

    def _engine_event(self, event: EngineEvent, exc: Optional[BaseException]) -> None:
        cb = self.event_callback
        if cb is None:
            return
        try:
            cb(event, exc)
        except Exception as e:
            self._callback_failed(f"event_callback({event!r})", e)
        except BaseException as e:
            self._handler_exited(f"event_callback({event!r})", e)

    def _session_error(self) -> BaseException:
        err = self._h.Err()
        return translate(RuntimeError(err)) if err else VortexError("engine error")

    def _job(self, row: list) -> None:
        """vortex's ``job_callback(id, SessionStatus, JobTiming)`` for a job event row."""
        cb = self.job_callback
        if cb is None:
            return
        cfg = self._config
        status = SessionStatus(allocated=cfg.blocks_to_allocate, inflight=row[2], dispatched=row[4],
                               limit=cfg.blocks_to_acquire)
        at = datetime.datetime.fromtimestamp
        w0 = self._wall0
        timing = JobTiming(*(at((w0 + t) / 1e9) for t in row[7:14]))
        try:
            cb(row[3], status, timing)
        except Exception as exc:
            self._callback_failed("job_callback", exc)
        except BaseException as exc:
            self._handler_exited("job_callback", exc)

    def _queue_event(self, empty: bool) -> None:
        """The scan queue's callbacks while the engine plays it (vortex runs them on its acquire
        thread, here they run on the dispatcher): the scans' ``callback(sample, event)`` recorded
        by the Generate stage, or ``empty_callback(online_queue)`` when the queue ran dry (the
        Generate stage waits until it returns, so what it appends plays next, as in vortex)."""
        q = self.scan_queue
        try:
            if empty and q.empty_callback is not None:
                q.empty_callback(ScanQueue.OnlineScanQueue(q))
            q.poll_events()
        except Exception as exc:
            self._callback_failed("ScanQueue.empty_callback" if empty else "a ScanQueue callback", exc)
        except BaseException as exc:
            self._handler_exited("ScanQueue.empty_callback" if empty else "a ScanQueue callback", exc)

    def _aggregate(self, i: int, ep: _Endpoint, kind: int, segment: int) -> None:
        """vortex's aggregated segment callbacks, around the events of endpoint ``i``: segments
        gather per volume and per block; a volume event first hands its volume's segments to
        ``aggregate_segment_callback``, the block's update event (its last) the open volume's,
        then all of the block's to ``block_segment_callback``. The dispatcher keeps what it
        gathers (``_segments``, per endpoint; a session starts with none)."""
        gathered = self._segments.get(i)
        if gathered is None:
            gathered = self._segments[i] = ([], [])
        volume, blk = gathered
        aggregate, block = ep.aggregate_segment_callback, ep.block_segment_callback
        if kind == _SEGMENT:
            volume.append(segment)
            blk.append(segment)
            return
        calls = []
        if kind == _VOLUME or kind == _UPDATE:
            if volume and aggregate is not None:
                calls.append(("aggregate_segment_callback", aggregate, list(volume)))
            volume.clear()
            if kind == _UPDATE:
                if blk and block is not None:
                    calls.append(("block_segment_callback", block, list(blk)))
                blk.clear()
        for name, cb, segments in calls:
            try:
                cb(segments)
            except Exception as exc:
                self._callback_failed(f"{type(ep).__name__}.{name}", exc)
            except BaseException as exc:
                self._handler_exited(f"{type(ep).__name__}.{name}", exc)

    def _dispatch_setup(self, ring: Any) -> tuple:
        """What the dispatcher loop needs of the engine, read once per session: the record
        buffer, its flat view, the registry id and the ring's address and spin."""
        h = self._h
        buf = np.zeros((_BATCH, _FIELDS), np.int64)
        # One flat int64 view of the records: the loop reads each field it
        # needs straight from the buffer (docs/design.md, "Dispatch latency").
        records = memoryview(buf).cast("B").cast("q")
        if self._latency is not None:
            self._latency_base = int(h.StartMonotonicNs())
        addr, spin = (int(ring.Addr()), self._ring_spin_ns) if ring is not None else (0, 0)
        return h, buf, records, int(h.ID()), addr, spin

    def _run_batch(self, ev: memoryview, n: int) -> bool:
        """Run the handlers of the first ``n`` event records of ``ev`` (``_FIELDS`` int64s each);
        True after the done event.

        Runs of simple records (an endpoint's update, segment, volume, scan or event record
        without aggregated segments) go through the C loop (``_fastcall.run_events``), which
        does what :meth:`_run_records` does for them; every other record, and every record
        without the extension, runs in :meth:`_run_records`.
        """
        run = _run_events
        if run is None:
            return self._run_records(ev, 0, n)
        i = 0
        while i < n:
            r = run(self, ev, i, n)
            if r.__class__ is tuple:  # record r[0]'s handler raised r[1]
                self._handler_raised(ev, *r)
                i = r[0] + 1
            elif r < n:
                if self._fatal is not None:  # stopping after a handler's BaseException: drain only
                    return self._run_records(ev, r, n)
                if self._run_records(ev, r, r + 1):
                    return True
                i = r + 1
            else:
                break
        return False

    def _handler_raised(self, ev: memoryview, i: int, exc: BaseException) -> None:
        """Route the exception the C loop's handler of record ``i`` raised as the Python loop
        routes its own: raised here, so that the log has its traceback."""
        o = i * _FIELDS
        what = f"{type(self._endpoints[ev[o + 1]]).__name__}.{_CB_NAMES[ev[o]]}"
        try:
            raise exc
        except Exception as e:
            self._callback_failed(what, e)
        except BaseException as e:
            self._handler_exited(what, e)
        finally:
            exc = None  # noqa: F841 - the frame, kept by the traceback, must not keep the exception

    def _run_records(self, ev: memoryview, start: int, stop: int) -> bool:
        """Run the handlers of event records ``start`` to ``stop - 1`` of ``ev``; True after
        the done event.

        The hot path allocates no container per event: fields are read from the buffer (ints,
        which the cyclic GC does not track), handlers are called with their arguments spelled
        out (no slice, no argument tuple) and read from the endpoint when their event runs (a
        handler replaced while the engine runs takes effect from its next event), so a stream of
        events never triggers a collection in the dispatcher.
        """
        eps = self._endpoints
        lat = self._latency
        for o in range(start * _FIELDS, stop * _FIELDS, _FIELDS):
            kind = ev[o]
            if self._fatal is not None and kind != _DONE:
                continue  # stopping after a handler's BaseException: drain only
            if kind <= _SCAN or kind == _EVENT:
                ep = eps[ev[o + 1]]
                if kind != _SCAN and kind != _EVENT and (ep.aggregate_segment_callback is not None
                                                         or ep.block_segment_callback is not None):
                    self._aggregate(ev[o + 1], ep, kind, ev[o + 5])
                if kind == _SEGMENT:
                    cb = ep.segment_callback
                elif kind == _UPDATE:
                    cb = ep.update_callback
                elif kind == _VOLUME:
                    cb = ep.volume_callback
                elif kind == _SCAN:
                    cb = ep.scan_callback
                else:
                    cb = ep.event_callback
                if cb is None:
                    continue
                if lat is not None and len(lat) < self._latency_cap:
                    lat.append(time.monotonic_ns() - self._latency_base - ev[o + 6])
                try:
                    if kind == _SEGMENT:
                        cb(ev[o + 2], ev[o + 3], ev[o + 4], ev[o + 5])
                    elif kind == _UPDATE:
                        cb()
                    elif kind == _VOLUME:
                        cb(ev[o + 2], ev[o + 3], ev[o + 4])
                    else:  # scan (sample, scan_idx), event (sample, id: it travels in scan_idx)
                        cb(ev[o + 2], ev[o + 3])
                except Exception as exc:
                    self._callback_failed(f"{type(ep).__name__}.{_CB_NAMES[kind]}", exc)
                except BaseException as exc:
                    self._handler_exited(f"{type(ep).__name__}.{_CB_NAMES[kind]}", exc)
            elif kind == _QUEUE or kind == _QUEUE_EMPTY:
                self._queue_event(kind == _QUEUE_EMPTY)
            elif kind == _ENGINE:
                event = EngineEvent(ev[o + 3])
                if event == EngineEvent.Exit and self._fatal is None:
                    self._queue_event(False)  # the last block's Finish
                # The sample field says the event carries the session's error.
                self._engine_event(event, self._session_error() if ev[o + 2] else None)
            elif kind == _JOB:
                self._job(ev[o:o + _FIELDS].tolist())
            elif kind == _DONE:
                return True
        return False


def _dispatch_loop(ref: "weakref.ref[Any]", ring: Any = None) -> None:
    """The dispatcher thread: drain the Go event queue and run the handlers, in order
    (DESIGN.md section 1).

    With ``ring`` (a fixed ``dispatch_spin``: the session's ``EventRing``), each wait spins on
    the queue's ring in C with the GIL released (``_fastcall.ring_next``) and takes the records
    with no call into Go; only a wait the spin does not cover parks in Go.

    The engine is held only while a batch's handlers run (``ref``, a weak reference, between
    batches), so an engine the user dropped while it runs is collected and its finaliser stops
    it, as vortex's destructor does. The loop then drains the session to its done event,
    running no handler (a format stage may wait for the acknowledgement of the records).
    """
    eng = ref()
    if eng is None:
        return
    h, buf, records, eid, addr, spin = eng._dispatch_setup(ring)
    eng = None
    ptr = buf.ctypes.data
    # At most one cgo call per batch on the engine's registry id (pyapi.FastNextEvents), not gopy's
    # method wrapper. Once the engine is closed that id is stale (a ClosedError, before any
    # event is taken): the rest of the last session drains through the engine's NextEvents.
    fast = _core.fast_next_events
    while True:
        try:
            if addr and eid:
                n = _ring_next(addr, records, spin)
                if n == -2:  # stages wait for this acknowledgement: wake them, then take events
                    ring.Ack()
                    continue
                if n <= 0:  # spun out (0): park in Go without a second spin; closed and
                    n = fast(eid, ptr, _BATCH, _POLL_MS, 0)  # drained (-1): Go's done event
            elif eid:
                n = fast(eid, ptr, _BATCH, _POLL_MS, 1)
            else:
                n = h.NextEvents(ptr, _BATCH, _POLL_MS)
        except RuntimeError as exc:
            if eid:
                eid = 0
                continue
            # The queue itself failed: no event will come. Stop the engine and make wait()
            # raise this (a silent exit would leave wait() to an endless run, and the format
            # stage to wait for handlers that never run).
            eng = ref()
            if eng is None:
                logging.getLogger("vortexgo.engine").error("vortexgo: the event queue failed: %s", exc)
            else:
                eng._dispatcher_failed(exc)
            return
        if n <= 0:
            continue
        eng = ref()
        if eng is None:  # dropped while running: its finaliser closed it; drain to the done event
            if _DONE in buf[:n, 0]:
                return
            continue
        done = eng._run_batch(records, n)
        eng = None  # the last reference may go here: the finaliser then runs on this thread
        if done:
            return


# An event record's fields (kind, endpoint, sample, scan_idx, volume_idx,
# bscan_idx, timestamp, then a job's times) and each handler's arguments
# (_run_batch): update (), segment (sample, scan_idx, volume_idx, bscan_idx),
# volume (sample, scan_idx, volume_idx), scan (sample, scan_idx), event
# (sample, id: the id travels in scan_idx). vortex's meanings: scan_idx is the
# scan's sequence number, volume_idx the volume's index in its scan, bscan_idx
# the segment's index in the volume.
_CB_NAMES = {_UPDATE: "update_callback", _SEGMENT: "segment_callback", _VOLUME: "volume_callback",
             _SCAN: "scan_callback", _EVENT: "event_callback"}
