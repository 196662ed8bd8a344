"""The :class:`Engine`'s lifecycle: prepare, sessions (start, wait, stop), status and close.
Each call is one typed method of the Go engine (gosrc/pyapi/engine.go), whose status record
holds the engine's state."""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
import warnings
import weakref
from typing import Any, Callable, Optional

import numpy as np

from .._attrs import NoCopy, StrictAttributes
from .._core import api
from .._device import Device, DeviceLike, get_device
from .._errors import ClosedError, InUseError, LockError, VortexError, native, translate
from .._validate import check_bool, check_int, check_timeout
from ..endpoint import _Endpoint, _StorageEndpoint
from ..log import is_logger
from ..scan import ScanQueue
from .config import EngineConfig, _graph_processors
from .dispatch import _CB_NAMES, _SEGMENT, _UPDATE, _VOLUME, _Dispatch
from .status import (STAGES, EngineEvent, EngineStatus, JobTiming, SessionStatus, StageTiming, read_status,
                     read_timings)

log = logging.getLogger("vortexgo.engine")


def _close_engine(h: Any) -> None:
    """The engine's finaliser. It holds the gopy handle itself (weakref.finalize
    keeps its arguments alive), so an engine dying in a reference cycle (a
    callback that refers to its engine) or at interpreter exit never reaches
    a handle the collector finalised first, as a __del__ could."""
    try:
        h.Close()
    except Exception as exc:  # pragma: no cover
        warnings.warn(f"vortexgo: closing an engine failed: {exc}", ResourceWarning, stacklevel=1)


def _own(h: Any) -> None:
    """Make engine handle ``h`` the owner of its stages (gosrc/engine Engine.Own). A stage still
    owned by an engine that was dropped but not yet collected (a reference cycle through a
    callback) is released by its finaliser: one collection, then one more try, spares a
    notebook's rebuilt engine that refusal."""
    try:
        h.Own()
    except RuntimeError as exc:
        if not isinstance(translate(exc), InUseError):
            raise
        gc.collect()
        h.Own()


class Engine(_Dispatch, NoCopy, StrictAttributes):
    """Runs an :class:`EngineConfig`'s pipeline, in sessions, as vortex's engine.

    ``Engine(config)`` or vortex's ``Engine(logger); engine.initialize(config)``;
    then :meth:`prepare` once (allocates everything, validates: ValueError
    naming the field), and any number of sessions: :meth:`start`,
    :meth:`wait` (interruptible: Ctrl-C stops the engine cleanly and
    re-raises) or :meth:`wait_for`, and :meth:`stop`, which every
    :meth:`start` needs before the next (as in vortex, ``start()`` while a
    session exists does nothing). A session's first error is raised once, by
    whichever of ``wait``, ``wait_for`` or ``stop`` sees it first.

    Its state (prepared, started, a session active, closed, done) is the Go engine's,
    read from its status record; the Python side keeps only what Go cannot hold (the
    callbacks, the dispatcher thread, a handler's exception).

    Between sessions, as in vortex: a session stopped mid-scan leaves its
    scan active, so ``scan_queue.reset()`` (or ``clear()``) before the next;
    format planners keep their state, so ``formatter.reset()`` too;
    endpoints, storage and processors keep theirs (storage appends).

    Args:
        config: the configuration.
        device: defaults to the processors' device.
        callback_error_policy: ``"continue"`` (default: a raising callback is
            logged and counted) or ``"stop"`` (also stops the engine).

    .. attribute:: event_callback
       :type: Optional[Callable[[EngineEvent, Optional[BaseException]], Any]]

       ``event_callback(event, exception_or_None)``: the session's lifecycle
       (:class:`EngineEvent`, also ``Engine.Event``), on the dispatcher thread.

    .. attribute:: job_callback
       :type: Optional[Callable[[int, SessionStatus, JobTiming], Any]]

       ``job_callback(id, SessionStatus, JobTiming)`` for every block as it
       leaves the pipeline (vortex's). Set it before :meth:`start`: the
       engine posts job events only for sessions started with one set.

    .. attribute:: profiler_log
       :type: Optional[str]

       The file the next sessions write vortex's profiler log to, or None for the
       ``VORTEX_PROFILER_LOG`` environment variable's (no log if it is unset);
       read it with :func:`read_profiler_log`.
    """

    def __init__(self, config: Optional[EngineConfig] = None, device: DeviceLike = None, *,
                 callback_error_policy: str = "continue", logger: Optional[logging.Logger] = None) -> None:
        self._h = None
        if is_logger(config):
            config, logger = None, config
        if callback_error_policy not in ("continue", "stop"):
            raise ValueError(f"callback_error_policy={callback_error_policy!r}, expected 'continue' or 'stop'")
        self.callback_error_policy = callback_error_policy
        self.logger = logger or log
        # The callbacks and the profiler log: documented in the class's docstring.
        self.event_callback: Optional[Callable[[EngineEvent, Optional[BaseException]], Any]] = None
        self.job_callback: Optional[Callable[[int, SessionStatus, JobTiming], Any]] = None
        self.profiler_log: Optional[str] = None
        self._wall0 = 0  # the session's start on time.time_ns's clock (JobTiming)
        self._device_spec = device
        self.device: Optional[Device] = None
        self._config: Optional[EngineConfig] = None
        self._endpoints: list[_Endpoint] = []
        self._dispatcher: Optional[threading.Thread] = None
        self._last_callback_error: Optional[BaseException] = None
        self._finalizer: Optional[weakref.finalize] = None
        self._latency: Optional[list[int]] = None  # off unless record_callback_latency() was called
        self._latency_cap = 0
        self._latency_base = 0  # StartMonotonicNs of the session the dispatcher records
        self._discarded = False  # closed before prepare(): no Go engine holds that state
        self._segments: dict[int, tuple[list[int], list[int]]] = {}  # _aggregate's, per endpoint id
        self._ring_spin_ns = 0  # dispatch_spin in ns when fixed (> 0): the C spin on the event ring
        self._fatal: Optional[BaseException] = None  # a handler's BaseException, re-raised by wait()
        self._scan_queue = ScanQueue()
        if config is not None:
            self.initialize(config)

    @property
    def scan_queue(self) -> ScanQueue:
        """vortex's ``engine.scan_queue``: the Generate stage plays its scans into every block.

        Assigning another :class:`ScanQueue` takes effect at the next :meth:`start` (vortex's
        session takes the queue when it starts). While a session runs it is refused with
        :class:`~vortexgo.InUseError`: that session plays the current queue to its end; change
        what it plays with ``scan_queue.interrupt(scan)``, ``append``, ``clear()`` or ``reset()``.
        """
        return self._scan_queue

    @scan_queue.setter
    @native
    def scan_queue(self, queue: ScanQueue) -> None:
        if not isinstance(queue, ScanQueue):
            raise TypeError(f"scan_queue={queue!r:.60}, expected a vortexgo.scan.ScanQueue")
        h = getattr(self, "_h", None)
        if h is not None and not self._closed:
            h.SetScanQueue(queue._h)  # InUseError while a session runs
        self._scan_queue = queue

    def initialize(self, config: EngineConfig) -> None:
        """Adopt ``config``. It is checked, and its wiring fixed, by :meth:`prepare`."""
        if not isinstance(config, EngineConfig):
            raise TypeError(f"config={config!r}, expected an EngineConfig")
        if self._config is not None:
            raise VortexError("the engine is already initialized, expected a new Engine")
        # A copy, as vortex's: changing the caller's config afterwards does not rewire this engine.
        self._config = config.copy()

    @property
    def config(self) -> EngineConfig:
        """The configuration :meth:`initialize` adopted, as a copy (read-only as vortex's).

        Each read is a new copy sharing the components it wires. Before :meth:`initialize` it is
        a default EngineConfig to fill in and pass to it (vortex's ``ec = engine.config``).
        """
        return EngineConfig() if self._config is None else self._config.copy()

    @config.setter
    def config(self, value: Any) -> None:
        raise AttributeError("Engine.config is read-only: initialize(config) adopts a configuration")

    def _pick_device(self, config: EngineConfig) -> Device:
        """The engine's device: ``device``, else the first processor's. Processors on other
        GPUs are allowed (vortex's ``cycle([a, b])`` over two GPUs): their blocks are
        uploaded to their GPU and their outputs copied back to the engine's, where the
        endpoints format them."""
        procs = config.processors
        # A processor that computes nothing (NullProcessor, made without a device) follows the
        # engine's device instead of choosing it: vortex's demos pair one with a CUDAProcessor.
        followers = [p for p in procs if p._follows_engine_device()]
        leaders = [p for p in procs if p not in followers]
        if self._device_spec is not None:
            dev = get_device(self._device_spec)
        elif leaders:
            dev = leaders[0].device
        elif procs:
            dev = procs[0].device
        else:
            dev = get_device(None)
        for p in followers:
            if p.device != dev:
                p._move_to(dev)  # InUseError while another engine holds it, as any re-initialize
        for p in procs:
            if p.device != dev and not (p.device.is_cuda and dev.is_cuda):
                raise ValueError(f"{type(p).__name__} on {p.device.alias}, expected the engine's device {dev.alias} "
                                 "(processors on other devices must be CUDA processors of a CUDA engine)")
        return dev

    @property
    def _closed(self) -> bool:
        """Whether :meth:`close` was called (Go's state once prepared)."""
        return self._discarded if self._h is None else bool(read_status(self._h).closed)

    def _handle(self):
        if self._closed:
            raise ClosedError("the engine is closed")
        if self._h is None:
            raise VortexError("the engine is not prepared, expected prepare() first")
        return self._h

    # --- lifecycle --------------------------------------------------------------

    @native
    def prepare(self) -> None:
        """Validate the configuration against the stages and allocate everything the run needs.

        Raises ValueError naming the offending field (shapes, dtypes, block
        sizes, storage not open or of the wrong shape) before anything starts.
        """
        if self._closed:
            raise ClosedError("the engine is closed")
        cfg = self._config
        if cfg is None:
            raise ValueError("the engine has no configuration, expected Engine(config) or initialize(config)")
        if self._h is not None:
            raise VortexError("engine.prepare: already prepared, expected one prepare() per engine")
        cfg._check_fields()
        dev = self._pick_device(cfg)
        self._endpoints = cfg.endpoints
        for ep in self._endpoints:
            if ep._holds_lock():
                raise LockError(f"preparing {type(ep).__name__} while this thread holds its tensor's lock")
            if ep._closed:
                raise ClosedError(f"{type(ep).__name__} is closed, expected an open endpoint")
        ch = cfg._native(self.scan_queue)
        ch.Validate()  # the bounds and the wiring (gosrc/engine Config.Validate), before anything is touched
        h = api.NewEngine(dev._h, ch)
        try:
            # Own the stages before anything touches them: a stage serves one engine at a
            # time, and acq.prepare() below would disturb another engine's run (DESIGN.md 9).
            _own(h)
            for acq, graph, _ in cfg._acquisitions:
                acq.prepare()
                spr = acq.samples_per_record
                for p in _graph_processors(graph):
                    if p.config.samples_per_record != spr:
                        raise ValueError(f"ProcessorConfig.samples_per_record={p.config.samples_per_record}, expected "
                                         f"{spr} (its acquisition's samples_per_record)")
            self._check_storage_open()
            # A fixed dispatch_spin: the dispatcher spins on the event ring in C (_dispatch).
            self._ring_spin_ns = round(cfg.dispatch_spin * 1e9) if cfg.dispatch_spin else 0
            h.Prepare()
        except BaseException:
            h.Close()  # gives back what it owned
            raise
        self._h, self.device = h, dev
        self._finalizer = weakref.finalize(self, _close_engine, h)
        for ep in self._endpoints:
            ep._bind(dev)

    def _check_storage_open(self) -> None:
        cfg = self._config
        assert cfg is not None
        routed = {id(f) for _, fs in cfg._processors for f in fs}
        for f, eps in cfg._formatters:
            if id(f) not in routed:
                continue  # the Go wiring check names it
            for ep in eps:
                if isinstance(ep, _StorageEndpoint) and not ep.storage.is_open:
                    raise ValueError(f"{type(ep).__name__}: the {type(ep.storage).__name__} is not open, expected "
                                     "storage.open(SimpleStackConfig(...)) before prepare()")

    @native
    def start(self) -> None:
        """Start a session: the pipeline and the callback dispatcher thread.

        As vortex's ``start()``, it does nothing while a session exists (one
        that is running, or that ended without :meth:`stop`): call ``stop()``
        first to start another.
        """
        h = self._handle()
        if read_status(h).active:
            self.logger.warning("vortexgo: engine.start() while a session exists does nothing (as in vortex); "
                                "call engine.stop() first to start another session")
            return
        if self._in_dispatcher():
            raise VortexError("engine.start() from a callback; start the next session from your own thread")
        # The previous session's dispatcher exited with its Exit event.
        self._join_dispatcher(None)
        # An endpoint with callbacks gets them run before the engine writes
        # the next volume into it: a volume_callback then sees the volume it
        # is told about (vortex runs callbacks inline, with the same effect).
        # Events go out only for the callbacks set now, so the dispatcher never
        # wakes for an event it would discard (set callbacks before start()).
        for i, ep in enumerate(self._endpoints):
            kinds = {kind for kind, name in _CB_NAMES.items() if getattr(ep, name) is not None}
            # Segments are gathered; volume events and the block's update (its last) deliver them.
            if ep.aggregate_segment_callback is not None:
                kinds |= {_SEGMENT, _VOLUME, _UPDATE}
            if ep.block_segment_callback is not None:
                kinds |= {_SEGMENT, _UPDATE}
            h.SetCallbacks(i, sum(1 << kind for kind in kinds))
        self._segments = {}
        h.SetJobEvents(self.job_callback is not None)
        # Read here, not in Go: the Go runtime's copy of the environment is
        # taken when the library loads, before a script sets the variable.
        prof = self.profiler_log if self.profiler_log is not None else os.environ.get("VORTEX_PROFILER_LOG", "")
        h.SetProfilerLog(os.fspath(prof))
        self._fatal = None
        self._last_callback_error = None
        h.Start()
        self._wall0 = time.time_ns() - (time.monotonic_ns() - int(h.StartMonotonicNs()))
        self._start_dispatcher(h)

    def _in_dispatcher(self) -> bool:
        return self._dispatcher is not None and threading.current_thread() is self._dispatcher

    @native
    def stop(self) -> None:
        """End the session: stop the acquisition and wait until every acquired block is
        formatted, every completed volume stored (a stop mid-volume loses no completed
        volume) and every callback run. Raises the session's error unless
        :meth:`wait` or :meth:`wait_for` already did.

        From a callback it only requests the stop (waiting there would wait for itself).
        With no session it is a no-op.
        """
        if self._h is None and not self._discarded:
            return  # never prepared: nothing runs
        h = self._handle()
        if self._in_dispatcher():
            h.RequestStop()
            return
        if not read_status(h).active:
            return
        self._check_no_lock_held("stop")
        try:
            h.Stop()  # the session is no longer active (Go's Status.Active)
        except RuntimeError:
            pass  # the session's error: raised below, unless wait() or wait_for() did
        finally:
            self._join_dispatcher(None)
        self._raise_run_error()

    def shutdown(self, interrupt: bool = False) -> None:
        """Ask the session to end without waiting (vortex's ``shutdown``); :meth:`stop`
        is still needed before the next :meth:`start`. With ``interrupt``, the blocks
        acquired but not yet processed are dropped (counted in ``blocks_dropped``);
        blocks already processed are still formatted and every completed volume is
        stored. Safe anywhere, including callbacks."""
        interrupt = check_bool("interrupt", interrupt)
        if self._h is not None:
            self._h.Shutdown(interrupt)  # a no-op on a closed engine

    def request_stop(self) -> None:
        """Ask the engine to stop without waiting (safe anywhere, including callbacks):
        ``shutdown(interrupt=False)``."""
        if self._h is not None:
            self._h.RequestStop()  # a no-op on a closed engine

    def _join_dispatcher(self, timeout: Optional[float]) -> bool:
        d = self._dispatcher
        if d is None or d is threading.current_thread():
            return True
        deadline = None if timeout is None else time.monotonic() + timeout
        while d.is_alive():
            left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
            if left <= 0:
                return False
            d.join(left)
        return True

    def wait(self) -> None:
        """Block until the session ends and every callback has run; raise the session's
        error if a stage failed (once: a later wait, wait_for or stop does not raise it
        again). With no session it returns at once, as vortex's.

        Interruptible: a KeyboardInterrupt (Ctrl-C) stops the engine cleanly
        (every completed volume delivered and stored) and is re-raised.
        """
        h = self._handle()
        if not read_status(h).active:
            return
        if self._in_dispatcher():
            raise VortexError("engine.wait() from a callback would wait for itself; use request_stop() there")
        self._check_no_lock_held("wait")
        try:
            # Short slices in Go (GIL released): the main thread returns to
            # the interpreter between them, so Ctrl-C is delivered.
            while not h.WaitFor(50):
                pass
            self._join_dispatcher(None)
        except KeyboardInterrupt:
            self._stop_quietly()
            # A fresh one: the caught one's traceback ends in the generated binding
            # (_native/pyapi.py), which says nothing to the user who pressed Ctrl-C.
            raise KeyboardInterrupt from None
        self._raise_run_error()

    def _check_no_lock_held(self, op: str) -> None:
        """Waiting for the run while this thread holds an endpoint's tensor lock
        would wait forever: the engine waits for that lock to format the next block."""
        for ep in self._endpoints:
            if ep._holds_lock():
                raise LockError(f"engine.{op}() while this thread holds {type(ep).__name__}'s tensor lock would "
                                "deadlock (the engine waits for that lock); leave the `with endpoint.tensor` "
                                "block first")

    def _stop_quietly(self) -> None:
        """Stop after a Ctrl-C in :meth:`wait`, the session still active: :meth:`stop` ends
        it (and raises its error) as after any session."""
        h = self._h
        h.RequestStop()
        while not h.WaitFor(50):  # the run's own error stays available through status() and stop()
            pass
        self._join_dispatcher(5.0)

    def wait_for(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds; True when the run has ended and its callbacks have run."""
        h = self._handle()
        timeout = check_timeout("timeout", timeout)
        if timeout is None:
            self.wait()
            return True
        if not read_status(h).active:
            return True
        if not self._in_dispatcher():
            self._check_no_lock_held("wait_for")
        deadline = time.monotonic() + timeout
        try:
            while True:
                left = deadline - time.monotonic()
                if h.WaitFor(int(max(0.0, min(left, 0.05)) * 1000)):
                    break
                if left <= 0:
                    return False
        except KeyboardInterrupt:
            raise KeyboardInterrupt from None  # as in wait(): no frame of the generated binding
        if self._in_dispatcher():
            return True
        if not self._join_dispatcher(max(0.0, deadline - time.monotonic())):
            return False
        self._raise_run_error()
        return True

    def _raise_run_error(self) -> None:
        """Raise the session's error once (vortex hands its exception out once: Go's
        TakeErr gives it to the first caller only)."""
        fatal, self._fatal = self._fatal, None
        if fatal is not None:
            # A handler raised SystemExit, KeyboardInterrupt or another
            # BaseException: the engine was stopped; it surfaces here, instead of Go's error.
            self._h.TakeErr()
            raise fatal
        err = self._h.TakeErr()
        if err:
            raise translate(RuntimeError(err))

    @property
    def done(self) -> bool:
        """Whether no session runs (vortex's ``done``): True before the first
        :meth:`start`, once the session has ended, and after :meth:`stop`."""
        if self._h is None:
            return True
        st = read_status(self._h)
        return not st.active or bool(st.done)

    @property
    def endpoints(self) -> list[_Endpoint]:
        """The endpoints, in wiring order."""
        return list(self._endpoints)

    def status(self) -> EngineStatus:
        """A snapshot of the current (or last) session's counters: blocks acquired /
        processed / formatted / dropped, volumes, callback errors, events dropped, blocks
        in flight, and vortex's fields (``active``, ``dispatched_blocks``,
        ``inflight_blocks``, ``dispatch_completion``, ``block_utilization``). Go keeps them
        after :meth:`close` (or the engine's finaliser, at interpreter exit) closed it."""
        if self._h is None:
            return EngineStatus()
        v = read_status(self._h)
        cfg = self._config
        limit = cfg.blocks_to_acquire if cfg is not None else 0
        return EngineStatus(
            blocks_acquired=v.blocks_acquired, blocks_processed=v.blocks_processed,
            blocks_formatted=v.blocks_formatted, blocks_dropped=v.blocks_dropped, volumes=v.volumes,
            callback_errors=v.callback_errors, events_dropped=v.events_dropped, in_flight=v.in_flight,
            running=bool(v.running), done=bool(v.done), error=self._h.Err().replace("\n", " "),
            active=bool(v.active), dispatched_blocks=v.dispatched, inflight_blocks=v.in_flight,
            dispatch_completion=v.dispatched / limit if limit > 0 else 0.0,
            block_utilization=v.in_flight / v.allocated if v.allocated > 0 else 0.0,
            blocks_allocated=v.allocated, profiler_dropped=v.profiler_dropped, frames_received=v.frames_received,
            frames_dropped=v.frames_dropped, frames_incomplete=v.frames_incomplete)

    @property
    def timings(self) -> dict[str, StageTiming]:
        """Per-block job timing by stage, ``{"acquire", "process", "format", "upload"}`` ->
        :class:`StageTiming` (ms); ``upload`` is the host-to-device copy within ``process``.

        On a CUDA device only with ``EngineConfig(device_timings=True)`` (empty, count 0,
        otherwise), and over a sample, one block of the pool in four: timestamped events
        between uploads cost copy-engine time. On the CPU backend every block is timed."""
        if self._h is None:
            return {s: StageTiming() for s in STAGES}
        return read_timings(self._h)  # Go keeps them after close()

    @property
    def start_monotonic_ns(self) -> int:
        """The base of the events' timestamps on ``time.monotonic_ns()``'s clock
        (``perf_counter_ns`` too, on Linux), read by Go just before the engine
        started; 0 before :meth:`start`."""
        if self._h is None or self._closed:
            return 0
        return int(self._h.StartMonotonicNs())

    def record_callback_latency(self, capacity: int = 1 << 20) -> None:
        """Record, for the first ``capacity`` endpoint callbacks, the time from the
        engine dispatching the event (the Go timestamp) to its handler starting on
        the dispatcher thread, in ns (:meth:`callback_latencies_ns`).

        Off by default (the dispatcher then pays one ``is None`` test per
        callback); call it before :meth:`start`. Used by ``bench/bench_engine.py``.
        """
        capacity = check_int("capacity", capacity, 1, 1 << 32)
        if self._h is not None and read_status(self._h).started:
            raise VortexError("record_callback_latency: the engine has started, expected a call before start()")
        self._latency, self._latency_cap = [], int(capacity)

    def callback_latencies_ns(self) -> np.ndarray:
        """The latencies recorded since :meth:`record_callback_latency` (int64 ns, in callback order)."""
        return np.array(self._latency or (), np.int64)

    @property
    def last_callback_error(self) -> Optional[BaseException]:
        """The most recent exception raised by a callback, or None."""
        return self._last_callback_error

    @native
    def close(self) -> None:
        """Stop the run if needed and free the blocks. Endpoints, processors and storage stay
        open (their tensors outlive the engine); close them yourself."""
        if self._h is None:
            self._discarded = True
            return
        if self._closed:
            return
        self._finalizer.detach()
        self._h.Close()  # stops the session: no longer active
        self._join_dispatcher(5.0)

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._config is None:
            return "<Engine (not initialized)>"
        if self._closed:
            return "<Engine closed>"
        if self._h is None:
            return f"<Engine {self._config!r} not prepared>"
        st = self.status()
        phase = st.state if read_status(self._h).started else "prepared"
        return (f"<Engine on {self.device.alias} {phase}: {st.blocks_acquired} blocks acquired, "
                f"{st.volumes} volumes, {st.callback_errors} callback errors>")
