"""vortex's profiler log, written by the engine and read here.

Set ``VORTEX_PROFILER_LOG=/path/profile.bin`` (as for vortex) or
:attr:`vortexgo.engine.Engine.profiler_log` before :meth:`vortexgo.engine.Engine.start`: each
session writes a flat file of 32-byte little-endian records ``(code, task,
job, timestamp)``, all uint64, the timestamp in nanoseconds of the wall
clock. The first record is the version (``code`` 2**64-1). Codes 0-8 are
the lifecycle events (:class:`~vortexgo.engine.EngineEvent`), 0x100 + n the
job marks of block ``job`` (:class:`ProfileCode`), 0x10000 + n the task
marks of task ``task`` (the formatter, or the acquisition) of block ``job``.
The format is vortex's, so vortex-oct-tools' ``vortex_tools.profiler`` reads
it too. Marks are written off the engine's goroutines; if the writer falls
behind, marks are dropped and counted (``EngineStatus.profiler_dropped``).
"""

from __future__ import annotations

import enum
import os
from typing import Union

import numpy as np

from ._attrs import StrictAttributes

__all__ = ["ProfileCode", "PROFILER_DTYPE", "read_profiler_log", "job_stage_durations"]

#: One record of the log.
PROFILER_DTYPE = np.dtype([("code", "<u8"), ("task", "<u8"), ("job", "<u8"), ("timestamp", "<u8")])

_VERSION_CODE = 2**64 - 1


class ProfileCode(StrictAttributes, enum.IntEnum):
    """The job and task marks (vortex's ``profiler_job_mark_t`` + 0x100 and
    ``profiler_task_mark_t`` + 0x10000); lifecycle events are 0-8."""

    JOB_CREATE = 0x100
    JOB_CLEARANCE = 0x101
    JOB_GENERATE_SCAN = 0x102
    JOB_GENERATE_STROBE = 0x103
    JOB_ACQUIRE_DISPATCH_BEGIN = 0x104
    JOB_ACQUIRE_DISPATCH_END = 0x105
    JOB_ACQUIRE_JOIN = 0x106
    JOB_PROCESS_DISPATCH_BEGIN = 0x107
    JOB_PROCESS_DISPATCH_END = 0x108
    JOB_FORMAT_JOIN = 0x109
    JOB_RECYCLE = 0x10A
    TASK_ACQUIRE_COMPLETE = 0x10000
    TASK_PROCESS_COMPLETE = 0x10001
    TASK_FORMAT_BEGIN = 0x10002
    TASK_FORMAT_PLAN = 0x10003
    TASK_FORMAT_END = 0x10004


def read_profiler_log(path: Union[str, os.PathLike]) -> np.ndarray:
    """The log's records after the version record, as a structured array
    (``PROFILER_DTYPE``). Raises ValueError for a file that is not a profiler log."""
    raw = np.fromfile(os.fspath(path), dtype=np.uint8)
    if raw.size % PROFILER_DTYPE.itemsize:
        raise ValueError(f"{os.fspath(path)!r}: {raw.size} bytes, expected a multiple of "
                         f"{PROFILER_DTYPE.itemsize} (a vortex profiler log)")
    recs = raw.view(PROFILER_DTYPE)
    if recs.size == 0 or int(recs[0]["code"]) != _VERSION_CODE:
        raise ValueError(f"{os.fspath(path)!r}: no version record first, expected a vortex profiler log")
    return recs[1:]


# The stages between consecutive job marks, named as vortex-oct-tools names them.
_STAGES = (
    ("block wait", ProfileCode.JOB_CREATE, ProfileCode.JOB_CLEARANCE),
    ("generate", ProfileCode.JOB_CLEARANCE, ProfileCode.JOB_GENERATE_STROBE),
    ("acquire dispatch", ProfileCode.JOB_ACQUIRE_DISPATCH_BEGIN, ProfileCode.JOB_ACQUIRE_DISPATCH_END),
    ("acquire wait", ProfileCode.JOB_ACQUIRE_DISPATCH_END, ProfileCode.JOB_ACQUIRE_JOIN),
    ("process dispatch", ProfileCode.JOB_PROCESS_DISPATCH_BEGIN, ProfileCode.JOB_PROCESS_DISPATCH_END),
    ("process+format wait", ProfileCode.JOB_PROCESS_DISPATCH_END, ProfileCode.JOB_FORMAT_JOIN),
    ("recycle", ProfileCode.JOB_FORMAT_JOIN, ProfileCode.JOB_RECYCLE),
)


def job_stage_durations(records: np.ndarray) -> dict[str, np.ndarray]:
    """Per stage, each job's duration in milliseconds (jobs in id order; NaN
    where a job lacks one of the stage's marks, e.g. a stopped session's last)."""
    jobs = np.unique(records["job"][(records["code"] >= 0x100) & (records["code"] < 0x10000)])
    index = {int(j): i for i, j in enumerate(jobs)}
    out = {}
    for name, begin, end in _STAGES:
        t = np.full((2, jobs.size), np.nan)
        for k, code in enumerate((begin, end)):
            sel = records[records["code"] == int(code)]
            for job, ts in zip(sel["job"].tolist(), sel["timestamp"].tolist()):
                t[k, index[job]] = ts
        out[name] = (t[1] - t[0]) / 1e6
    return out
