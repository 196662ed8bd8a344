"""The robustness harness: every case is a short snippet run in a subprocess of
its own, so a SIGSEGV, a Go fatal error or a hang fails one case instead of
ending the run.

A case declares what a correct library does:

- ``raises="ClosedError", words=("closed",)``: the snippet raises an exception
  whose class is, or derives from, the named class (a builtin or a vortexgo
  error class, matched by name along the MRO), and whose message contains
  every word (case-insensitive);
- ``prints="ok"``: the snippet runs to the end and the last line it printed
  is exactly that;
- neither: it runs to the end without an exception.

Whatever the expectation, the process must then exit with status 0 within
the case's timeout: a crash or a hang at interpreter exit fails the case too.
A hang is caught by :mod:`faulthandler` one second before the timeout (the
Python stacks go to stderr), the process group is killed at the timeout.

All cases of the session run in a thread pool as soon as the first one is
asked for (``ROBUST_JOBS`` workers, default: CPUs + 1), so the suite's wall
time is about the sum of the cases' times over the workers.
``ROBUST_TIMEOUT_SCALE`` multiplies every timeout (slow or loaded machines).
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import tempfile
import textwrap
import threading
from dataclasses import dataclass, field
from typing import Optional

import pytest

import _subproc

TIMEOUT_SCALE = float(os.environ.get("ROBUST_TIMEOUT_SCALE", "1"))
JOBS = int(os.environ.get("ROBUST_JOBS", str((os.cpu_count() or 2) + 1)))

_MARK = "__robust_result__"

# Runs the snippet under exec() so that any exception, SystemExit included,
# is reported with its class chain; the process then exits normally, so a
# crash or hang during interpreter shutdown is still seen.
_PRELUDE = """\
import faulthandler, json, sys
faulthandler.enable()
faulthandler.dump_traceback_later({hang_after}, exit=True)
import os as _os, time as _time
# Go's stacks a second before faulthandler's dump, on the clock faulthandler counts on
# (CLOCK_MONOTONIC): the Go core starts at vortexgo's first use, whenever that comes.
_os.environ["VORTEXGO_HANG_STACKS_AT"] = repr(_time.monotonic() + {hang_after} - 1.0)
_code = {code!r}
_res = {{"ok": True}}
try:
    exec(compile(_code, "<case {cid}>", "exec"), {{"__name__": "__case__"}})
except BaseException as _e:
    import traceback
    traceback.print_exc()
    _res = {{"ok": False, "mro": [c.__name__ for c in type(_e).__mro__], "msg": str(_e)}}
sys.stdout.flush()
print({mark!r} + json.dumps(_res), flush=True)
faulthandler.cancel_dump_traceback_later()
faulthandler.dump_traceback_later({hang_after}, exit=True)
"""

# Every case starts with these names bound.
COMMON = """\
import gc, os, sys, threading, time, math
import numpy as np
import vortexgo as vg
TMP = os.environ["ROBUST_TMP"]  # a fresh directory per case, removed afterwards
BIG = "ValueError|MemoryError"
_problems = []
def expect(label, fn, exc="ClosedError", *words):
    # Several checks in one process (for misuse that cannot crash): fn() must
    # raise exc ("A|B" for either; "...|none": or return), its message naming
    # every word; report() then prints "ok" or the checks that misbehaved.
    try:
        r = fn()
    except BaseException as e:
        names = [c.__name__ for c in type(e).__mro__]
        msg = str(e)
        if not any(x in names for x in exc.split("|")):
            _problems.append(f"{label}: {type(e).__name__}: {msg[:150]} (expected {exc})")
        else:
            low = msg.lower().replace("_", "")
            miss = [w for w in words if w.lower().replace("_", "") not in low]
            if miss:
                _problems.append(f"{label}: {type(e).__name__} naming no {miss}: {msg[:150]}")
        return
    if "none" not in exc.split("|"):
        _problems.append(f"{label}: no error (returned {str(r)[:60]!r}, expected {exc})")
def report():
    print(_problems if _problems else "ok")
"""


# A small continuous (or finite) pipeline on the CPU backend, for engine and
# storage cases: rig(endpoints, volumes=0) runs until stopped. vortex's
# wiring: new_engine(ec, volumes) queues `volumes` one-volume rasters on the
# engine's scan queue (0: a looping one), a FormatPlanner reads the markers,
# and the queue, not the (endless) acquisition, ends the run.
RIG = """\
from vortexgo.process import hann_window, spectral_filter
from vortexgo.format import FormatPlanner, FormatPlannerConfig
from vortexgo import scan as _vs
S, A, B = 64, 16, 4
def raster(loop):
    return vg.acquire.record_raster(A, B, loop=loop)  # every record active, in order
def config(endpoints, volumes=0, device="cpu", rpb=16, blocks=4, **kw):
    acq = vg.SimulatedAcquisition(samples_per_record=S, ascans_per_bscan=A, bscans_per_volume=B, volumes=2)
    pc = vg.ProcessorConfig(samples_per_record=S, ascans_per_block=rpb,
                            resampling_samples=acq.resampling_positions(),
                            spectral_filter=spectral_filter(hann_window(S), acq.dispersion_compensation()))
    proc = (vg.CPUProcessor if device == "cpu" else vg.CUDAProcessor)(pc)
    fmt = FormatPlanner(FormatPlannerConfig(B, A))
    ec = vg.EngineConfig(records_per_block=rpb, blocks_to_allocate=blocks, preload_count=2, **kw)
    ec.add_acquisition(acq, [proc])
    ec.add_processor(proc, [fmt])
    ec.add_formatter(fmt, endpoints)
    return ec, acq, proc
def new_engine(ec, volumes=0):
    eng = vg.Engine(ec)
    if volumes == 0:
        eng.scan_queue.append(raster(True))
    for _ in range(volumes):
        eng.scan_queue.append(raster(False))
    return eng
def rig(endpoints, volumes=0, device="cpu", **kw):
    ec, acq, proc = config(endpoints, volumes, device, **kw)
    eng = new_engine(ec, volumes)
    eng.prepare()
    return eng, acq, proc
def started(endpoints, volumes=0, device="cpu", **kw):
    eng, acq, proc = rig(endpoints, volumes, device, **kw)
    eng.start()
    time.sleep(0.2)
    return eng, acq, proc
def stack(path, cls=vg.SimpleStackInt8, shape=(B, A, S)):
    st = cls()
    st.open(vg.SimpleStackConfig(str(path), shape))
    return st
"""


@dataclass
class Case:
    """One misuse case. ``code`` is dedented and run after :data:`COMMON`."""

    id: str
    code: str
    raises: Optional[str] = None  # a class name, or alternatives "ValueError|MemoryError"
    words: tuple[str, ...] = ()
    prints: Optional[str] = None
    # Generous: only a real hang waits this long, and a 2-core machine
    # under load took over 6 s to start an interpreter and run a 1 MiB case.
    timeout: float = 20.0
    needs: tuple[str, ...] = ()  # "cuda", "cupy", "torch": skipped when absent
    issue: str = ""  # the repro in issue 12 this covers, if any
    env: dict = field(default_factory=dict)


@dataclass
class Outcome(_subproc.Outcome):
    """How a case's process ended, with the result line the prelude printed."""

    result: Optional[dict] = None


# Seconds a case may spend on costs that are not ours on a fresh machine:
# importing CuPy or PyTorch and their first kernel compile (NVRTC), and
# Hypothesis building its character tables. A hang of ours still fails.
FRAMEWORK_FLOOR_S = 90.0


def _run(case: Case) -> Outcome:
    timeout = case.timeout
    if set(case.needs) & {"cupy", "torch"} or "hypothesis" in case.code:
        timeout = max(timeout, FRAMEWORK_FLOOR_S)
    timeout *= TIMEOUT_SCALE
    code = COMMON + textwrap.dedent(case.code)
    hang_after = max(1.0, timeout - 1.5)
    script = _PRELUDE.format(hang_after=hang_after, code=code, cid=case.id, mark=_MARK)
    # Go's stacks a second before faulthandler's Python ones (the prelude's
    # VORTEXGO_HANG_STACKS_AT): a hang inside a Go call then shows where Go waits, not only the
    # Python line that called in (a case that ends in time prints nothing). A delay counted
    # from the Go core's start (VORTEXGO_HANG_STACKS) missed faulthandler's dump on a loaded
    # machine: the core starts at vortexgo's first use, which came late.
    env = _subproc.child_env({"PYTHONUNBUFFERED": "1", **case.env})
    with tempfile.TemporaryDirectory(prefix="robust-") as tmp:
        env["ROBUST_TMP"] = tmp
        return _spawn(script, env, timeout)


def _spawn(script: str, env: dict, timeout: float) -> Outcome:
    o = _subproc.spawn(script, timeout=timeout, env=env)
    res = None
    for line in o.stdout.splitlines():
        if line.startswith(_MARK):
            res = json.loads(line[len(_MARK):])
    return Outcome(**vars(o), result=res)


def _tail(s: str, n: int = 2500) -> str:
    return s if len(s) <= n else "..." + s[-n:]


def judge(case: Case, o: Outcome) -> str:
    """"" when the case behaved as declared, else a one-line reason (its symptom first)."""
    r = o.result
    sym = o.symptom()
    if r is None:
        return sym or f"no result (exit status {o.rc})"
    if r["ok"]:
        if case.raises is not None:
            why = f"no error: expected {case.raises}"
            if case.words:
                why += f" naming {', '.join(map(repr, case.words))}"
            printed = [ln for ln in o.stdout.splitlines() if not ln.startswith(_MARK)]
            if printed:
                why += f" (printed {printed[-1][:200]!r})"
            return why + (f"; then {sym}" if sym else "")
        if case.prints is not None:
            printed = [ln for ln in o.stdout.splitlines() if not ln.startswith(_MARK)]
            last = printed[-1] if printed else ""
            if last.strip() != case.prints:
                return f"wrong value: printed {last[:300]!r}, expected {case.prints!r}" + (f"; then {sym}" if sym else "")
    else:
        got = f"{r['mro'][0]}: {r['msg'][:300]}"
        if case.raises is None:
            return f"unexpected error: {got}" + (f"; then {sym}" if sym else "")
        if not any(cls in r["mro"] for cls in case.raises.split("|")):
            return f"wrong error: {got}, expected {case.raises}" + (f"; then {sym}" if sym else "")
        # Case and underscores are ignored, so Go's spelling of a field
        # (SamplesPerRecord) names the Python argument (samples_per_record).
        low = r["msg"].lower().replace("_", "")
        missing = [w for w in case.words if w.lower().replace("_", "") not in low]
        if missing:
            return f"unhelpful message: {got}, expected it to name {', '.join(map(repr, missing))}"
    if sym:
        return f"{sym} after the case ran"
    return ""


# --- the pool --------------------------------------------------------------------

_registry: dict[str, Case] = {}
_futures: dict[str, cf.Future] = {}
_lock = threading.Lock()
_pool: Optional[cf.ThreadPoolExecutor] = None
_skipped: set[str] = set()
_outcomes: dict[str, tuple[Case, Outcome, str]] = {}
#: ids of the cases pytest selected, in its order (set by conftest after collection); None: all
selected: Optional[list[str]] = None


def _available(need: str) -> bool:
    if need == "cuda":
        import vortexgo

        return vortexgo.is_cuda_available()
    import importlib.util

    if need in ("cupy", "torch"):
        if importlib.util.find_spec(need) is None:
            return False
        return _available("cuda")
    if need in ("nrrd", "nibabel", "h5py", "scipy"):  # the field's readers, from PyPI
        return importlib.util.find_spec(need) is not None
    raise ValueError(need)


def skip_reason(case: Case) -> str:
    for n in case.needs:
        if not _available(n):
            return f"needs {n}"
    return ""


def variants(id: str, code: str, devices: tuple[str, ...] = ("cpu", "cuda:0"), **kw) -> list[Case]:
    """One case per device: the code sees ``DEV`` ("cpu" or "cuda:0"); the CUDA
    variant is skipped where there is no CUDA device."""
    base_needs = tuple(kw.pop("needs", ()))
    out = []
    for dev in devices:
        needs = base_needs if dev == "cpu" else base_needs + ("cuda",)
        tag = "cpu" if dev == "cpu" else "cuda"
        out.append(Case(f"{id}[{tag}]", f"DEV = {dev!r}\n" + textwrap.dedent(code), needs=needs, **kw))
    return out


def register(cases: list[Case]) -> list:
    """Add ``cases`` to the session's pool; returns pytest params (one per case)."""
    params = []
    for c in cases:
        if c.id in _registry and _registry[c.id] is not c:
            raise ValueError(f"duplicate robustness case id {c.id!r}")
        _registry[c.id] = c
        params.append(pytest.param(c, id=c.id))
    return params


def _start() -> None:
    global _pool
    with _lock:
        if _pool is not None:
            return
        _pool = cf.ThreadPoolExecutor(max_workers=JOBS, thread_name_prefix="robust")
        # In pytest's order, so each test waits only for the cases before it
        # (pytest-timeout counts that wait against the test).
        order = selected if selected is not None else list(_registry)
        for cid in order:
            c = _registry.get(cid)
            if c is None:
                continue
            if skip_reason(c):
                _skipped.add(c.id)
                continue
            _futures[c.id] = _pool.submit(_run, c)


def check(case: Case) -> None:
    """Run (or collect) ``case`` and fail the calling test with its symptom."""
    why = skip_reason(case)
    if why:
        pytest.skip(why)
    _start()
    o = _futures[case.id].result()
    reason = judge(case, o)
    _outcomes[case.id] = (case, o, reason)
    if reason:
        detail = [f"{case.id}: {reason}",
                  f"exit status {o.rc}{' (killed at timeout)' if o.timed_out else ''}, {o.seconds:.1f} s",
                  "--- case ---", textwrap.dedent(case.code.replace(RIG, "# harness.RIG: raster/config/new_engine/rig/started/stack\n")).strip()]
        err = o.stderr
        go_start, go_end = err.find("vortexgo: goroutine stacks"), err.find("vortexgo: end of goroutine stacks")
        if go_start >= 0:  # Go's stacks apart, so the tail below keeps Python's
            detail += ["--- Go goroutine stacks ---", err[go_start:go_end if go_end > go_start else None][:12000]]
            err = err[:go_start] + err[go_end:] if go_end > go_start else err[:go_start]
        if err.strip():
            detail += ["--- stderr (tail) ---", _tail(err)]
        pytest.fail("\n".join(detail), pytrace=False)


def outcomes() -> dict[str, tuple[Case, Outcome, str]]:
    return _outcomes


def shutdown() -> None:
    if _pool is not None:
        _pool.shutdown(wait=False, cancel_futures=True)
