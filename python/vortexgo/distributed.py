"""Reprocess recorded spectra on a Dask cluster (``pip install vortexgo[distributed]``).

:func:`reprocess` takes recorded files of raw spectra, one processing and
formatting configuration (:class:`ReprocessConfig`) and a
``distributed.Client``, and writes the formatted volumes of every file, in
order, into one Zarr v3 array. The work is split into tasks of whole volumes,
about ``ReprocessConfig.task_bytes`` of spectra each: each task replays only its
byte range of one file (a
:class:`~vortexgo.acquire.FileAcquisition` with ``offset`` and ``length``)
through vortexgo's own engine -- processor (CUDA on a GPU worker, CPU
otherwise), formatter, an in-memory endpoint -- and writes its volumes as
whole chunks. Chunk writes are atomic and idempotent, so a task retried after
its worker died writes the same bytes again; a rerun skips the chunks already
written (``overwrite=True`` redoes them). One job at a time writes a store: a
second is refused with :class:`StoreBusyError` while the first runs.

Workers keep their processors, format planners and endpoints across tasks (one
set per task running at once, for one configuration and device: FFT plans and
tables are made once, not per task); a task builds only a new engine around one
and its file range. They are closed when the configuration changes or the
worker closes.

Inputs (every file vortexgo writes raw spectra to, and vortex's): ``SimpleStack``
files of ``uint16`` with the NumPy, MATLAB v5, NRRD or NIfTI-2 header or none,
``SimpleStream`` files and vortex's raw files (headerless: record after
record), and ``HDF5Stack`` files (their dataset ``data``, deflated per A-scan:
a task reads its volumes' chunks only and replays them from a local copy).

What the array's attributes hold (``array.attrs["vortexgo"]``): the
configuration, and per source its path, size, modification time, format,
first volume in the array, the byte ranges of its tasks and the SHA-256 of the
whole file (what ``sha256sum`` prints). Each file is hashed once, by a task of
its own that leaves its worker's thread pool (``distributed.secede``), so the
hash runs beside the processing instead of in front of it.

docs/distributed.md has a runnable example, the fault semantics and the
measured scaling.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import datetime
import hashlib
import json
import math
import os
import platform
import struct
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Optional, Sequence, Union

import numpy as np

try:  # the [distributed] extra; planning and run_task work without it
    from distributed.diagnostics.plugin import WorkerPlugin as _WorkerPlugin
except ImportError:  # pragma: no cover - without the extra
    _WorkerPlugin = object

__all__ = ["ReprocessConfig", "Source", "Task", "SourceError", "ReprocessError", "StoreBusyError", "Reprocessed",
           "plan_sources", "plan_tasks", "reprocess", "run_task", "file_sha256", "open_result", "close_pipelines"]

_DTYPES = ("int8", "uint16", "float32")
_FORMAT_VERSION = 2  # 2: one SHA-256 per file (1: per task's range); the job's token
# How the work is split and how chunks are stored: not part of a job's identity (the values
# are the same; a resumed array keeps the codec it was made with).
_TASK_SIZING = ("volumes_per_task", "task_bytes", "compression")
_COMPRESSIONS = ("zstd", "none")
#: chunk writes (compression, file) of one task at once, beside its engine: on a CPU worker,
#: whose processor spreads each block over every core, 2; on a GPU worker, whose CPU is idle
#: but for them, up to _MAX_WRITERS, one per core but one, and as many volumes as fit in
#: _WRITE_MEMORY (each write holds a copy of its volume). Measured on the H200 host (docs/
#: distributed.md): one GPU worker with 2 writers spent its tasks waiting on the writes.
_WRITERS = 2
_MAX_WRITERS = 8
_WRITE_MEMORY = 1 << 30
_WARMUP = (1 << 31) - 1  # the ScanBoundary sequence of warm-up scans


class SourceError(ValueError):
    """A source file that cannot be replayed: its header, or one task's byte
    range (truncated, unreadable, corrupt). ``path``, ``offset`` and ``end``
    name the bytes ``[offset, end)``; the message names them too."""

    def __init__(self, path: str, offset: int, end: int, reason: str) -> None:
        self.path, self.offset, self.end, self.reason = path, int(offset), int(end), reason
        super().__init__(f"{path}: bytes [{offset}, {end}): {reason}")

    def __reduce__(self):  # crosses process boundaries (Dask pickles task errors)
        return (SourceError, (self.path, self.offset, self.end, self.reason))


class StoreBusyError(RuntimeError):
    """Another job writes the store: ``store`` names it, ``holder`` says which job
    (its host, process and start, as that job recorded them) or that a newer job
    took the store over from this one."""

    def __init__(self, store: str, holder: str) -> None:
        self.store, self.holder = store, holder
        super().__init__(f"{store}: another reprocess job is writing this store ({holder}); "
                         "wait for it to finish, or write another store")

    def __reduce__(self):
        return (StoreBusyError, (self.store, self.holder))


class ReprocessError(RuntimeError):
    """Some tasks failed: ``failures`` lists ``(task, exception)``; every other
    task's volumes were written (rerun to retry only the failed ones)."""

    def __init__(self, failures: list) -> None:
        self.failures = failures
        lines = "\n".join(f"  volumes {t.first}..{t.first + t.count - 1}: {e}" for t, e in failures)
        super().__init__(f"{len(failures)} task(s) failed:\n{lines}")

    def __reduce__(self):
        return (ReprocessError, (self.failures,))


@dataclass(slots=True)  # no stray attributes: a typo fails instead of being ignored
class ReprocessConfig:
    """What every task runs: one processing and formatting configuration.

    Attributes:
        processor: the :class:`~vortexgo.process.ProcessorConfig` (its
            ``samples_per_record`` and ``channels_per_sample`` are the
            recorded spectra's; ``ascans_per_block`` bounds the block).
        ascans_per_bscan: A-scans per B-scan of the recorded raster.
        bscans_per_volume: B-scans per volume.
        dtype: the formatted volumes' type, ``"int8"`` (the processor's
            levels), ``"uint16"`` or ``"float32"``.
        format: the :class:`~vortexgo.format.StackFormatExecutorConfig`
            (sample slice and transform); None keeps every sample.
        records_per_block: the engine's block; 0 picks the largest divisor of
            a volume's records that is at most ``processor.ascans_per_block``
            (the rolling background average needs blocks that tile the volume,
            so that a task starts on the single-machine engine's block grid).
        chunk: ``"volume"`` (one Zarr chunk per volume) or ``"bscan"``.
        volumes_per_task: volumes of one task (one byte range); 0 (the
            default) sizes tasks by ``task_bytes``.
        task_bytes: with ``volumes_per_task=0``, the raw bytes a task aims
            at: as many whole volumes as fit (at least one), fewer where the
            job would otherwise give the cluster's threads under two tasks
            each. Neither field changes the result: a job split differently
            resumes the same array.
        compression: how the chunks are stored: ``"zstd"`` (Zarr's default
            codec; int8 OCT volumes take about 0.7 of their size) or
            ``"none"`` (the bytes as they are: about 2.5x faster to write, for
            GPU workers, whose rate the chunk writes bound, on storage with
            room to spare). Read back alike; an array being resumed keeps the
            codec it was made with.
    """

    processor: Any
    ascans_per_bscan: int
    bscans_per_volume: int
    dtype: str = "int8"
    format: Any = None
    records_per_block: int = 0
    chunk: str = "volume"
    volumes_per_task: int = 0
    task_bytes: int = 256 << 20
    compression: str = "zstd"

    @property
    def records_per_volume(self) -> int:
        """A-scans per volume."""
        return self.ascans_per_bscan * self.bscans_per_volume

    @property
    def record_bytes(self) -> int:
        """Bytes of one raw record (uint16 samples x channels)."""
        return 2 * self.processor.samples_per_record * self.processor.channels_per_sample

    @property
    def volume_bytes(self) -> int:
        """Bytes of one raw volume."""
        return self.record_bytes * self.records_per_volume

    def block(self) -> int:
        """The engine's records per block (``records_per_block``, or the pick described there)."""
        if self.records_per_block:
            return self.records_per_block
        v, cap = self.records_per_volume, max(1, self.processor.ascans_per_block)
        return max(d for d in range(1, min(v, cap) + 1) if v % d == 0)

    def validate(self) -> None:
        """Raise ValueError or TypeError naming the first bad field."""
        from .format import StackFormatExecutorConfig
        from .process import ProcessorConfig

        if not isinstance(self.processor, ProcessorConfig):
            raise TypeError(f"ReprocessConfig.processor={self.processor!r}, expected a ProcessorConfig")
        for name, low in (("ascans_per_bscan", 1), ("bscans_per_volume", 1), ("volumes_per_task", 0),
                          ("task_bytes", 1)):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < low:
                raise ValueError(f"ReprocessConfig.{name}={v!r}, expected an int >= {low}")
        if self.dtype not in _DTYPES:
            raise ValueError(f"ReprocessConfig.dtype={self.dtype!r}, expected one of {_DTYPES}")
        if self.chunk not in ("volume", "bscan"):
            raise ValueError(f"ReprocessConfig.chunk={self.chunk!r}, expected 'volume' or 'bscan'")
        if self.compression not in _COMPRESSIONS:
            raise ValueError(f"ReprocessConfig.compression={self.compression!r}, expected one of {_COMPRESSIONS}")
        if self.format is not None and not isinstance(self.format, StackFormatExecutorConfig):
            raise TypeError(f"ReprocessConfig.format={self.format!r}, expected a StackFormatExecutorConfig or None")
        b = self.block()
        if b > self.processor.ascans_per_block:
            raise ValueError(f"ReprocessConfig.records_per_block={b}, expected at most "
                             f"processor.ascans_per_block={self.processor.ascans_per_block}")
        if self.processor.average_window and self.records_per_volume % b:
            raise ValueError(f"ReprocessConfig.records_per_block={b} with processor.average_window="
                             f"{self.processor.average_window}: expected a divisor of the {self.records_per_volume} "
                             "records of a volume (the rolling average depends on the block grid)")

    def to_json(self) -> dict:
        """The configuration as JSON values (arrays as lists, complex as [re, im] pairs): the array's attributes."""
        def plain(v: Any) -> Any:
            if isinstance(v, np.ndarray):
                if np.iscomplexobj(v):
                    return {"complex": np.stack([v.real, v.imag], -1).tolist()}
                return v.tolist()
            if isinstance(v, (np.generic,)):
                return v.item()
            if isinstance(v, tuple):
                return list(v)
            return v
        proc = {f.name: plain(getattr(self.processor, f.name)) for f in dataclasses.fields(self.processor)}
        fmt = None if self.format is None else self.format._record()
        return {"processor": proc, "format": fmt, "ascans_per_bscan": int(self.ascans_per_bscan),
                "bscans_per_volume": int(self.bscans_per_volume), "dtype": self.dtype,
                "records_per_block": self.block(), "chunk": self.chunk,
                "volumes_per_task": int(self.volumes_per_task), "task_bytes": int(self.task_bytes),
                "compression": self.compression}

    def identity(self) -> dict:
        """:meth:`to_json` without how the work is split: what a resumed job must share."""
        return {k: v for k, v in self.to_json().items() if k not in _TASK_SIZING}

    def volumes_for_task(self, total_volumes: int = 0, slots: int = 0) -> int:
        """Volumes of one task: ``volumes_per_task``, or with 0 as many as fit in ``task_bytes``
        (at least one), at most ``total_volumes // (2 * slots)`` when both are given (every
        thread of the cluster gets two tasks or more, so that none idles while one finishes)."""
        if self.volumes_per_task:
            return int(self.volumes_per_task)
        n = max(1, int(self.task_bytes) // self.volume_bytes)
        if total_volumes and slots:
            n = min(n, max(1, total_volumes // (2 * slots)))
        return n


@dataclass(frozen=True)
class Source:
    """One planned input file: where its volumes' bytes are."""

    path: str
    format: str            #: "npy", "raw", "matlab", "nrrd", "nifti" or "hdf5"
    data_offset: int       #: first byte of the first record (0 for HDF5)
    volumes: int           #: volumes the header (or the size) promises
    size: int              #: bytes of the file when planned
    mtime_ns: int          #: its modification time when planned
    first: int = 0         #: its first volume in the output array
    spans: tuple = ()      #: for HDF5, per volume the bytes [lo, hi) its chunks lie in


@dataclass(frozen=True)
class Task:
    """One task: ``count`` volumes of one source, written at ``first`` in the array."""

    source: Source
    volume: int    #: first volume in the source
    count: int     #: volumes
    first: int     #: first volume in the output array
    offset: int    #: the range's first byte (for HDF5, that of its first chunk)
    end: int       #: one past its last byte
    warmup: int    #: records replayed before the range to warm the rolling average up (not written)


# --- planning: headers only ---------------------------------------------------------------------

def _read(path: str, n: int, at: int = 0) -> bytes:
    with open(path, "rb") as f:
        f.seek(at)
        return f.read(n)


def _check_shape(path: str, shape: Sequence[int], cfg: ReprocessConfig, header_end: int) -> int:
    """The volume count of a 5-D (volumes, bscans, ascans, samples, channels) or
    2-D (records, values) recorded shape, checked against the configuration."""
    p = cfg.processor
    want = (cfg.bscans_per_volume, cfg.ascans_per_bscan, p.samples_per_record, p.channels_per_sample)
    shape = tuple(int(s) for s in shape)
    if len(shape) == 5:
        if shape[1:] != want:
            raise SourceError(path, 0, header_end, f"recorded shape {shape}, expected (volumes, {', '.join(map(str, want))}) "
                              "(volumes, bscans_per_volume, ascans_per_bscan, samples_per_record, channels_per_sample)")
        return shape[0]
    if len(shape) == 4 and shape[1:] == want[:3] and want[3] == 1:
        return shape[0]
    values = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    if len(shape) >= 1 and values == p.samples_per_record * p.channels_per_sample:
        records = shape[0]
        return -(-records // cfg.records_per_volume)  # a partial last volume fails its own task
    raise SourceError(path, 0, header_end, f"recorded shape {shape}, expected (volumes, {', '.join(map(str, want))})")


def _plan_npy(path: str, cfg: ReprocessConfig) -> tuple[int, int]:
    with open(path, "rb") as f:
        try:
            major, minor = np.lib.format.read_magic(f)
            read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read(f, max_header_size=1 << 20)
        except Exception as e:  # noqa: BLE001 - any parse failure is the header's
            raise SourceError(path, 0, min(os.path.getsize(path), 4096), f"unreadable .npy header ({e})") from None
        offset = f.tell()
    if dtype != np.dtype("<u2") or fortran:
        raise SourceError(path, 0, offset, f".npy of {dtype.str}{' (Fortran order)' if fortran else ''}, "
                          "expected little-endian uint16 in C order ('<u2': raw spectra)")
    return offset, _check_shape(path, shape, cfg, offset)


def _plan_matlab(path: str, cfg: ReprocessConfig) -> tuple[int, int]:
    head = _read(path, 4096)
    end = len(head)
    try:
        pos = 128
        mtype, _ = struct.unpack_from("<II", head, pos)
        if mtype != 14:
            raise ValueError(f"first element of type {mtype}, expected miMATRIX (14)")
        pos += 8
        subs = []
        while len(subs) < 4:
            t, n = struct.unpack_from("<II", head, pos)
            if t >> 16:  # small data element: type and size in one word
                subs.append((t & 0xFFFF, head[pos + 4:pos + 4 + (t >> 16)], pos + 4))
                pos += 8
                continue
            subs.append((t, head[pos + 8:pos + 8 + n], pos + 8))
            if len(subs) < 4:
                pos += 8 + (n + 7) // 8 * 8
        dtype_code, _, data_at = subs[3]
        dims = struct.unpack(f"<{len(subs[1][1]) // 4}i", subs[1][1])
    except (struct.error, ValueError, IndexError) as e:
        raise SourceError(path, 0, end, f"unreadable MATLAB v5 header ({e})") from None
    if dtype_code != 4:  # miUINT16
        raise SourceError(path, 0, data_at, f"MATLAB data of type {dtype_code}, expected miUINT16 (4): raw spectra")
    return data_at, _check_shape(path, tuple(reversed(dims)), cfg, data_at)  # column-major dims


def _plan_nrrd(path: str, cfg: ReprocessConfig) -> tuple[int, int]:
    head = _read(path, 65536)
    end = head.find(b"\n\n")
    if end < 0:
        raise SourceError(path, 0, len(head), "NRRD header without its blank line")
    fields = {}
    for line in head[:end].decode("latin-1").splitlines()[1:]:
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            fields[k.strip()] = v.strip()
    if fields.get("type") not in ("uint16", "unsigned short", "ushort", "uint16_t") or \
            fields.get("encoding") != "raw" or fields.get("endian", "little") != "little":
        raise SourceError(path, 0, end + 2, f"NRRD of type {fields.get('type')!r}, encoding {fields.get('encoding')!r}, "
                          f"endian {fields.get('endian')!r}, expected raw little-endian uint16")
    sizes = tuple(int(s) for s in fields.get("sizes", "").split())
    return end + 2, _check_shape(path, tuple(reversed(sizes)), cfg, end + 2)


def _plan_nifti(path: str, cfg: ReprocessConfig) -> tuple[int, int]:
    head = _read(path, 544)
    if len(head) < 544 or head[4:8] != b"n+2\x00":
        raise SourceError(path, 0, len(head), "unreadable NIfTI-2 header")
    datatype = struct.unpack_from("<h", head, 12)[0]
    dim = struct.unpack_from("<8q", head, 16)
    offset = struct.unpack_from("<q", head, 168)[0]
    if datatype != 512:  # NIFTI_TYPE_UINT16
        raise SourceError(path, 0, offset, f"NIfTI datatype {datatype}, expected 512 (uint16): raw spectra")
    return offset, _check_shape(path, dim[1:1 + dim[0]], cfg, offset)  # vortex's order over C-ordered data


def _plan_hdf5(path: str, cfg: ReprocessConfig) -> tuple[int, int]:
    import h5py

    try:
        with h5py.File(path, "r") as f:
            ds = f["data"]
            shape, dtype = ds.shape, ds.dtype
    except Exception as e:  # noqa: BLE001
        raise SourceError(path, 0, os.path.getsize(path), f"unreadable HDF5 stack ({e})") from None
    if dtype != np.dtype("<u2"):
        raise SourceError(path, 0, os.path.getsize(path), f"HDF5 data of {dtype.str}, expected uint16: raw spectra")
    return 0, _check_shape(path, shape, cfg, 0)


def _format_of(path: str) -> str:
    head = _read(path, 8)
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    if head.startswith(b"\x89HDF\r\n\x1a\n"):
        return "hdf5"
    if head.startswith(b"MATLAB"):
        return "matlab"
    if head.startswith(b"NRRD"):
        return "nrrd"
    if _read(path, 4, 4) == b"n+2\x00":
        return "nifti"
    return "raw"


def plan_sources(files: Iterable[Union[str, os.PathLike]], config: ReprocessConfig) -> list[Source]:
    """Read each file's header (nothing more) and place its volumes in the
    output array, file after file. A header that cannot be read, or that
    disagrees with ``config``, raises :class:`SourceError` naming the file."""
    config.validate()
    out, first = [], 0
    for f in files:
        path = os.path.abspath(os.fspath(f))
        st = os.stat(path)
        kind = _format_of(path) if st.st_size else "raw"
        if kind == "raw":
            offset, volumes = 0, -(-st.st_size // config.volume_bytes)
            if volumes == 0:
                raise SourceError(path, 0, 0, "an empty file, expected raw spectra")
        else:
            offset, volumes = {"npy": _plan_npy, "matlab": _plan_matlab, "nrrd": _plan_nrrd,
                               "nifti": _plan_nifti, "hdf5": _plan_hdf5}[kind](path, config)
        spans = _hdf5_spans(path, volumes) if kind == "hdf5" else ()
        out.append(Source(path, kind, offset, volumes, st.st_size, st.st_mtime_ns, first, spans))
        first += volumes
    return out


def plan_tasks(sources: Sequence[Source], config: ReprocessConfig, slots: int = 0) -> list[Task]:
    """Split every source into tasks of whole volumes (byte ranges): ``config.volumes_for_task``
    over all the sources' volumes, for a cluster of ``slots`` threads (0: unknown)."""
    vb, rec = config.volume_bytes, config.record_bytes
    n = config.volumes_for_task(sum(s.volumes for s in sources), slots)
    w = config.processor.average_window
    grid = math.lcm(config.block(), config.ascans_per_bscan)
    tasks = []
    for s in sources:
        for v in range(0, s.volumes, n):
            count = min(n, s.volumes - v)
            start_record = v * config.records_per_volume
            warm = min(start_record, -(-w // grid) * grid) if w else 0
            if s.spans:  # HDF5: where the volumes' chunks are
                used = [sp for sp in s.spans[v:v + count] if sp[1]]
                lo, hi = (min(a for a, _ in used), max(b for _, b in used)) if used else (0, 0)
            else:
                lo, hi = s.data_offset + v * vb, s.data_offset + (v + count) * vb
            tasks.append(Task(s, v, count, s.first + v, lo, hi, warm))
    return tasks


# --- one task, on a worker ----------------------------------------------------------------------

def _endpoint_class(dtype: str) -> Any:
    from . import endpoint as ep

    return {"int8": ep.StackHostTensorEndpointInt8, "uint16": ep.StackHostTensorEndpointUInt16,
            "float32": ep.StackHostTensorEndpointFloat32}[dtype]


def _use_cuda(device: str) -> bool:
    from ._device import is_cuda_available

    if device == "cuda":
        return True
    return device == "auto" and is_cuda_available()


class _Pipeline:
    """A processor, format planner and endpoint for one configuration and device, kept by a
    worker across tasks (one task at a time): each task wraps them in a new engine with its own file range (the
    acquisition is the one stage that changes). The processor's FFT plans, resampling table,
    filter and (on a GPU) its module stay prepared between tasks."""

    def __init__(self, key: Any, cfg: ReprocessConfig, device: str) -> None:
        from .format import FormatPlanner, FormatPlannerConfig, StackFormatExecutor, StackFormatExecutorConfig
        from .process import CPUProcessor, CUDAProcessor

        self.key, self.cfg = key, cfg
        self.cuda = _use_cuda(device)
        if not self.cuda:
            _share_cores()  # before the processor: it takes its width when made
        self.processor = (CUDAProcessor if self.cuda else CPUProcessor)(cfg.processor)
        self.planner = FormatPlanner(FormatPlannerConfig(cfg.bscans_per_volume, cfg.ascans_per_bscan))
        self.endpoint = _endpoint_class(cfg.dtype)(StackFormatExecutor(cfg.format or StackFormatExecutorConfig()))
        self.used = False      # whether an engine ran the processor since made (its history may hold records)
        self._writer: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._rasters: dict = {}
        self.closing = False   # close when its task ends (the worker closes, or close_pipelines)

    def engine(self, acquisition: Any, empty_history: bool) -> Any:
        """A new engine over ``acquisition`` and the kept stages. ``empty_history``: the
        processor starts with no rolling-average history, as the single-machine engine at
        a file's start (the processor is remade: its history cannot be emptied otherwise)."""
        from .engine import Engine, EngineConfig

        if empty_history and self.used and self.cfg.processor.average_window:
            self.processor.initialize(self.cfg.processor)
            self.used = False
        self.planner.reset()  # a new scan: no segment or volume in progress
        ec = EngineConfig(records_per_block=self.cfg.block(), blocks_to_allocate=4, preload_count=2)
        ec.add_acquisition(acquisition, [self.processor])
        ec.add_processor(self.processor, [self.planner])
        ec.add_formatter(self.planner, [self.endpoint])
        return Engine(ec)

    def raster(self, bscans: int) -> Any:
        """The record raster of ``bscans`` B-scans (made once: a raster costs milliseconds)."""
        from .acquire import record_raster

        if bscans not in self._rasters:
            self._rasters[bscans] = record_raster(self.cfg.ascans_per_bscan, bscans)
        return self._rasters[bscans]

    def writer(self) -> concurrent.futures.ThreadPoolExecutor:
        """The threads that write its tasks' chunks (made at the first write; a task's
        semaphore, sized by :meth:`writers`, bounds how many write at once)."""
        if self._writer is None:
            self._writer = concurrent.futures.ThreadPoolExecutor(_MAX_WRITERS, thread_name_prefix="vortexgo-chunk-write")
        return self._writer

    def writers(self, volume_bytes: int) -> int:
        """How many of a task's volumes are written at once (see ``_WRITERS``)."""
        if not self.cuda:
            return _WRITERS
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return max(1, min(_MAX_WRITERS, cpus - 1, _WRITE_MEMORY // max(1, volume_bytes)))

    def close(self) -> None:
        if self._writer is not None:
            self._writer.shutdown(wait=True)
        for stage in (self.endpoint, self.planner, self.processor):
            try:
                stage.close()
            except Exception:  # noqa: BLE001 - closing is best effort; a worker closing must not fail on it
                pass


# Per owner (the Dask worker's id, or None in-process): the pipelines no task uses now (the
# pool), the ones tasks use, and the configuration asked for last.
_idle: dict = {}
_in_use: dict = {}
_latest: dict = {}
_pipelines_lock = threading.Lock()


def _share_cores() -> None:
    """In a Dask worker, run the core's CPU work on as many threads as the worker has (its
    ``nthreads``: a LocalCluster gives each worker its share of the cores), not on every core
    of the host: n CPU workers on one host would otherwise each spread their blocks over every
    core, n times too many threads (docs/distributed.md measures it). A ``GOMAXPROCS`` in the
    worker's environment (a nanny's ``env=``) is the user's choice and wins; outside a worker
    nothing changes."""
    from ._core import api, threads_from_environ

    if threads_from_environ(api):
        return
    try:
        from distributed import get_worker

        threads = int(get_worker().state.nthreads)
    except (ImportError, ValueError, AttributeError):
        return
    from ._device import cpu_threads, set_cpu_threads

    if threads >= 1 and cpu_threads() != threads:
        set_cpu_threads(threads)


def _owner() -> Optional[str]:
    """The id of the Dask worker running this task (None outside one)."""
    try:
        from distributed import get_worker

        return get_worker().id
    except (ImportError, ValueError):
        return None


@contextlib.contextmanager
def _pipeline(cfg: ReprocessConfig, device: str) -> Iterator[_Pipeline]:
    """A pipeline for ``cfg`` on ``device`` for one task: an idle one of this worker's, or a new
    one. So a worker keeps as many as it runs tasks at once (its threads, at most) and no more,
    whichever threads run them (Dask replaces a thread that secedes). One per running task
    rather than one per worker behind a lock: a worker's threads then run their engines in
    parallel, as the user's ``threads_per_worker`` asks. Idle pipelines of another configuration
    are closed when a task asks for a new one; one that a failed task used is closed too."""
    key = (json.dumps(cfg.identity(), sort_keys=True), _use_cuda(device))
    owner = _owner()
    with _pipelines_lock:
        idle = _idle.setdefault(owner, [])
        stale = [p for p in idle if p.key != key]
        idle[:] = [p for p in idle if p.key == key]
        pipe = idle.pop() if idle else None
        _latest[owner] = key
    for p in stale:
        p.close()
    if pipe is None:
        pipe = _Pipeline(key, cfg, device)
    with _pipelines_lock:
        _in_use.setdefault(owner, set()).add(pipe)
    ok = False
    try:
        yield pipe
        ok = True
    finally:
        with _pipelines_lock:
            _in_use[owner].discard(pipe)
            keep = ok and not pipe.closing and _latest.get(owner) == pipe.key
            if keep:
                _idle.setdefault(owner, []).append(pipe)
        if not keep:
            pipe.close()


def close_pipelines(owner: Any = "all") -> int:
    """Close the processors, planners and endpoints that tasks keep across tasks in this
    process: every one (``"all"``), or those of the Dask worker whose id is ``owner``. One
    in use by a running task is closed when that task ends. Returns how many were kept.
    Dask workers call it when they close (a worker plugin that :func:`reprocess` registers)."""
    with _pipelines_lock:
        owners = [o for o in set(_idle) | set(_in_use) if owner == "all" or o == owner]
        idle, n = [], 0
        for o in owners:
            idle += _idle.pop(o, [])
            for p in _in_use.get(o, ()):
                p.closing = True
                n += 1
    for p in idle:
        p.close()
    return n + len(idle)


def _pipeline_count() -> int:
    """How many pipelines this process keeps, idle or in use (tests read it through ``client.run``)."""
    with _pipelines_lock:
        return sum(map(len, _idle.values())) + sum(map(len, _in_use.values()))


class _PipelinePlugin(_WorkerPlugin):  # type: ignore[misc, valid-type]
    """Closes a worker's kept pipelines when the worker closes."""

    name = "vortexgo-distributed-pipelines"

    def teardown(self, worker: Any) -> None:
        close_pipelines(worker.id)


def _register_plugin(client: Any) -> None:
    """Register :class:`_PipelinePlugin` once per client (registering again would tear the
    previous one down, closing the pipelines that the next job would reuse). The scheduler
    hands it to workers that join later (a restarted worker) too."""
    if _WorkerPlugin is object:
        return
    try:
        if client in _plugin_clients:
            return
        _plugin_clients.add(client)
    except TypeError:  # not weak-referenceable: register every time
        pass
    register = getattr(client, "register_plugin", None) or client.register_worker_plugin  # distributed < 2023.9
    register(_PipelinePlugin(), name=_PipelinePlugin.name)


_plugin_clients: "weakref.WeakSet" = weakref.WeakSet()


def _fork_hint(e: BaseException) -> BaseException:
    """A :class:`~vortexgo.ForkError` from a worker, with what to change in Dask."""
    from ._errors import ForkError

    if isinstance(e, ForkError) or type(e).__name__ == "ForkError":
        return ForkError(f"{e} (Dask: this worker was forked because the setting distributed.worker."
                         "multiprocessing-method is 'fork'; its default, 'spawn', or 'forkserver' works)")
    return e


def output_shape(config: ReprocessConfig, device: str = "auto") -> tuple[int, int, int]:
    """One volume's formatted shape ``(bscans, ascans, depth)``: an engine prepared on a
    :class:`~vortexgo.acquire.NullAcquisition` (nothing runs)."""
    from .acquire import NullAcquisition

    acq = NullAcquisition(samples_per_record=config.processor.samples_per_record,
                          channels_per_sample=config.processor.channels_per_sample, records=config.block())
    # A kept pipeline: on a worker, the first task finds it prepared.
    with _pipeline(config, device) as pipe:
        try:
            with pipe.engine(acq, False) as engine:
                engine.prepare()
                return tuple(int(s) for s in pipe.endpoint.tensor.shape)
        finally:
            acq.close()


def _chunk_done(array: Any, root: str, volume: int, cfg: ReprocessConfig) -> bool:
    coords = [(volume, 0, 0, 0)] if cfg.chunk == "volume" else [(volume, b, 0, 0) for b in range(array.shape[1])]
    return all(os.path.exists(os.path.join(root, array.metadata.encode_chunk_key(c))) for c in coords)


_HASH_READ = 8 << 20
# Hashes that read at once in one process: each reads its file from start to end (one stream
# per file is what disks and the page cache read fastest); the rest wait their turn.
_hash_slots = threading.BoundedSemaphore(2)


def _stat_matches(path: str, size: int, mtime_ns: int, offset: int, end: int) -> None:
    try:
        st = os.stat(path)
    except OSError as e:
        raise SourceError(path, offset, end, f"cannot open ({e.strerror})") from None
    if st.st_size != size or st.st_mtime_ns != mtime_ns:
        raise SourceError(path, offset, end, f"the file changed since it was planned "
                          f"({size} -> {st.st_size} bytes): plan the job again")


def file_sha256(path: str, size: int, mtime_ns: int) -> str:
    """The SHA-256 of a whole source file (what ``sha256sum`` prints): one Dask task per file.

    On a worker it first leaves the worker's thread pool (``distributed.secede``): the hash
    reads the file beside the processing tasks, which keep every thread, instead of in front
    of them. Raises :class:`SourceError` when the file is not the one planned (size,
    modification time) before or after the read, or cannot be read."""
    try:
        from distributed import secede

        secede()
    except (ImportError, ValueError):  # not on a worker: hash here
        pass
    with _hash_slots:
        _stat_matches(path, size, mtime_ns, 0, size)
        h = hashlib.sha256()
        buf = bytearray(_HASH_READ)
        view = memoryview(buf)
        try:
            with open(path, "rb", buffering=0) as f:
                while True:
                    n = f.readinto(view)
                    if not n:
                        break
                    h.update(view[:n])  # releases the GIL: the worker's tasks run meanwhile
        except OSError as e:
            raise SourceError(path, 0, size, f"read failed ({e})") from None
        _stat_matches(path, size, mtime_ns, 0, size)
    return h.hexdigest()


_arrays: dict = {}  # (store, job) -> the array a job's tasks write, opened once per process
_arrays_lock = threading.Lock()


def _open_array(store: str, job: Optional[str]) -> Any:
    """The array at ``store`` opened for writing; for a job, opened once per process (a job's
    array does not change while it runs; the next job has another token)."""
    import zarr

    if job is None:
        return zarr.open_array(store, mode="r+", config={"write_empty_chunks": True})
    with _arrays_lock:
        a = _arrays.get((store, job))
    if a is None:
        a = zarr.open_array(store, mode="r+", config={"write_empty_chunks": True})
        with _arrays_lock:
            if len(_arrays) >= 8:
                _arrays.pop(next(iter(_arrays)))
            _arrays[(store, job)] = a
    return a


def _store_job(store: str) -> Optional[str]:
    """The token of the job that last took ``store`` (its attributes, read from zarr.json)."""
    try:
        with open(os.path.join(store, "zarr.json"), "rb") as f:
            return json.load(f).get("attributes", {}).get("vortexgo", {}).get("job")
    except (OSError, ValueError):
        return None


def _check_job(store: str, job: Optional[str]) -> None:
    """Raise :class:`StoreBusyError` when ``job`` is set and another job took ``store`` since."""
    if job is not None and _store_job(store) != job:
        raise StoreBusyError(store, f"a newer job took it over from job {job}, whose task this is")


def _stage_hdf5(task: Task, cfg: ReprocessConfig, directory: str) -> tuple[str, int, int]:
    """Copy the task's volumes (and its warm-up records) of an HDF5 stack into a raw
    file: (path, offset, length). Reads those chunks only."""
    import h5py

    src, rpv = task.source, cfg.records_per_volume
    lo = task.volume * rpv - task.warmup
    hi = (task.volume + task.count) * rpv
    try:
        with h5py.File(src.path, "r") as f:
            ds = f["data"]
            v0, v1 = lo // rpv, -(-hi // rpv)
            block = np.ascontiguousarray(ds[v0:v1], dtype="<u2").reshape(-1, *ds.shape[-2:])
            block = block[lo - v0 * rpv: hi - v0 * rpv]
    except Exception as e:  # noqa: BLE001 - h5py's errors name no range
        raise SourceError(src.path, task.offset, task.end, f"volumes {task.volume}..{task.volume + task.count - 1} "
                          f"of the HDF5 stack unreadable ({type(e).__name__}: {e})") from None
    fd, path = tempfile.mkstemp(suffix=".raw", dir=directory)
    with os.fdopen(fd, "wb") as out:
        out.write(block.data)
    return path, 0, block.nbytes


def _hdf5_spans(path: str, volumes: int) -> tuple:
    """Per volume of an HDF5 stack, the bytes ``[lo, hi)`` its stored chunks lie in (from the
    chunk index: no data read); ``(0, 0)`` for a volume with no chunk stored."""
    import h5py

    lo, hi = [None] * volumes, [0] * volumes
    with h5py.File(path, "r") as f:
        ds = f["data"]

        def visit(info: Any) -> None:
            v = info.chunk_offset[0]
            if v < volumes and info.byte_offset is not None:
                lo[v] = info.byte_offset if lo[v] is None else min(lo[v], info.byte_offset)
                hi[v] = max(hi[v], info.byte_offset + info.size)

        if hasattr(ds.id, "chunk_iter"):
            ds.id.chunk_iter(visit)
        else:  # older HDF5: one lookup per chunk
            for i in range(ds.id.get_num_chunks()):
                visit(ds.id.get_chunk_info(i))
    return tuple((int(a or 0), int(b)) for a, b in zip(lo, hi))


def run_task(task: Task, config: ReprocessConfig, store: str, overwrite: bool = False,
             device: str = "auto", job: Optional[str] = None) -> dict:
    """Run one task where it is called (a Dask worker, or in-process): an engine over the
    task's byte range, each formatted volume written as whole chunks of the array at ``store``.

    The processor, planner and endpoint are the worker's, kept across tasks (see the
    module). Skips the task when all its chunks exist and ``overwrite`` is false. With
    ``job``, each chunk is written only while the store's attributes still name that job:
    a task left running by a job whose client died stops with :class:`StoreBusyError` once
    another job took the store. Raises :class:`SourceError` naming the file and the range
    when the range cannot be replayed. Returns ``{"first", "count", "written", "seconds",
    "bytes", "timings"}``; ``timings`` holds seconds: ``setup`` (the pipeline, the engine and
    its prepare), ``run`` (the engine's run, writes included), ``write`` (the chunk writes)
    and ``outside_run`` (the task's time but the run).
    """
    from .acquire import FileAcquisition
    from .marker import ScanBoundary

    t0 = time.perf_counter()
    src = task.source
    timings = {"setup": 0.0, "run": 0.0, "write": 0.0, "outside_run": 0.0}
    result = {"first": task.first, "count": task.count, "written": 0, "bytes": task.end - task.offset,
              "seconds": 0.0, "timings": timings}
    _check_job(store, job)
    array = _open_array(store, job)
    done = [not overwrite and _chunk_done(array, store, task.first + i, config) for i in range(task.count)]
    _stat_matches(src.path, src.size, src.mtime_ns, task.offset, task.end)
    if all(done):
        result["seconds"] = timings["outside_run"] = time.perf_counter() - t0
        return result

    staged = None
    rec = config.record_bytes
    if src.format == "hdf5":
        try:
            from distributed import get_worker

            directory = get_worker().local_directory
        except (ImportError, ValueError):
            directory = tempfile.gettempdir()
        staged, off, length = _stage_hdf5(task, config, directory)
        path = staged
    else:
        path, off, length = src.path, task.offset - task.warmup * rec, task.end - task.offset + task.warmup * rec
        if src.size < task.end:
            raise SourceError(src.path, task.offset, task.end, f"the file ends at byte {src.size} (truncated?)")
    w, grid = config.processor.average_window, math.lcm(config.block(), config.ascans_per_bscan)
    full_warmup = -(-w // grid) * grid  # plan_tasks's warm-up of a task far enough from its file's start
    # A task that starts within the first warm-up of its file replays all its file's records
    # before it: the single-machine engine's history there is not full, so start empty.
    empty_history = bool(w) and task.volume * config.records_per_volume < full_warmup
    try:
        with _pipeline(config, device) as pipe:
            p = config.processor
            acq = FileAcquisition(path=path, samples_per_record=p.samples_per_record,
                                  channels_per_sample=p.channels_per_sample, loop=False, pin=False,
                                  offset=off, length=length)
            try:
                engine = pipe.engine(acq, empty_history)
                endpoint = pipe.endpoint
                writes: list = []
                errors: list = []
                pending: list = []
                spent: list = []
                # Tests make tasks last long enough to kill their worker in the middle of one.
                delay = float(os.environ.get("VORTEXGO_DISTRIBUTED_TEST_DELAY", "0") or 0)

                def write(scan_idx: int, vol: np.ndarray) -> None:
                    try:
                        tw = time.perf_counter()
                        _check_job(store, job)
                        array[task.first + scan_idx] = vol  # whole chunks: atomic, idempotent
                        spent.append(time.perf_counter() - tw)
                        writes.append(scan_idx)
                    except BaseException as e:  # noqa: BLE001 - the task raises it after the run
                        errors.append(e)
                        engine.request_stop()
                    finally:
                        room.release()

                def on_volume(sample: int, scan_idx: int, volume_idx: int) -> None:
                    if scan_idx >= task.count or errors or done[scan_idx]:  # warm-up, failed, or written
                        return
                    try:
                        room.acquire()
                        with endpoint.tensor as v:
                            vol = np.array(v.get() if hasattr(v, "get") else v)  # CuPy on a device tensor
                        # Compressed and written on the pipeline's writer threads while the engine
                        # formats the next volume (the engine waits for this callback to return).
                        pending.append(pipe.writer().submit(write, scan_idx, vol))
                        if delay:
                            time.sleep(delay)
                    except BaseException as e:  # noqa: BLE001 - the task raises it after the run
                        room.release()
                        errors.append(e)
                        engine.request_stop()

                endpoint.volume_callback = on_volume
                warm_bscans = task.warmup // config.ascans_per_bscan
                while warm_bscans:  # whole B-scans, at most a volume per scan
                    n = min(warm_bscans, config.bscans_per_volume)
                    engine.scan_queue.append(pipe.raster(n), marker=ScanBoundary(0, _WARMUP))
                    warm_bscans -= n
                scan = pipe.raster(config.bscans_per_volume)
                for i in range(task.count):
                    engine.scan_queue.append(scan, marker=ScanBoundary(0, i))
                with engine:
                    try:
                        engine.prepare()
                    except ValueError as e:  # FileAcquisition.prepare names the range
                        raise SourceError(src.path, task.offset, task.end, str(e)) from None
                    # Volumes copied out and not yet written (_Pipeline.writers, sized by the
                    # volume): the engine waits in the callback when the writers fall this far
                    # behind, so memory stays bounded.
                    tensor = endpoint.tensor
                    room = threading.BoundedSemaphore(pipe.writers(math.prod(tensor.shape) * np.dtype(config.dtype).itemsize))
                    tr = time.perf_counter()
                    timings["setup"] = tr - t0
                    pipe.used = True
                    engine.start()
                    try:
                        engine.wait()
                    finally:
                        concurrent.futures.wait(pending)  # every chunk of this task written (or failed)
                    timings["run"] = time.perf_counter() - tr
                    timings["write"] = sum(spent)
                endpoint.volume_callback = None
            finally:
                acq.close()
            if errors:
                raise errors[0]
            if len(writes) != task.count - sum(done):
                raise SourceError(src.path, task.offset, task.end, f"{len(writes)} of {task.count - sum(done)} "
                                  "volumes came out of the engine (the file ended early?)")
        result["written"] = len(writes)
    except OSError as e:
        raise SourceError(src.path, task.offset, task.end, f"read failed ({e})") from None
    except Exception as e:
        hinted = _fork_hint(e)
        if hinted is e:
            raise
        raise hinted from None
    finally:
        if staged:
            os.unlink(staged)
    result["seconds"] = time.perf_counter() - t0
    timings["outside_run"] = result["seconds"] - timings["run"]
    return result


# --- the job, from the client -------------------------------------------------------------------

@dataclass(slots=True)
class Reprocessed:
    """What :func:`reprocess` did: the array, and per task what happened."""

    store: str
    sources: list
    tasks: list
    results: list = field(default_factory=list)   #: per task, run_task's dict (None where it failed)
    seconds: float = 0.0

    @property
    def array(self) -> Any:
        """The Zarr array (read-only)."""
        import zarr

        return zarr.open_array(self.store, mode="r")

    def to_dask(self) -> Any:
        """A dask.array over the Zarr array, one dask chunk per Zarr chunk."""
        import dask.array as da

        return da.from_zarr(self.store)

    @property
    def written(self) -> int:
        """Volumes written by this run."""
        return sum(r["written"] for r in self.results if r)

    @property
    def bytes_read(self) -> int:
        """Raw bytes of the ranges whose volumes this run processed."""
        return sum(r["bytes"] for r in self.results if r and r["written"])


def open_result(store: Union[str, os.PathLike]) -> Any:
    """A dask.array over a finished job's array (``reprocess(...).to_dask()`` later)."""
    import dask.array as da

    return da.from_zarr(os.fspath(store))


def _identity(config_json: Any) -> Any:
    """A configuration's attributes without how its work was split (ReprocessConfig.identity)."""
    if not isinstance(config_json, dict):
        return config_json
    return {k: v for k, v in config_json.items() if k not in _TASK_SIZING}


class _StoreLock:
    """One job at a time per store: an exclusive ``flock`` on ``<store>.lock`` beside the
    store (not inside: ``overwrite=True`` recreates the store's directory), held by the
    client for the whole job. The kernel drops it when the client's process dies, so a
    crashed job never leaves the store locked. The file is left in place (removing it
    would let a third job lock a new file while the second still waits on the old one);
    it holds the holder's host, process and start, for the second job's error."""

    def __init__(self, store: str) -> None:
        self.fd = -1
        try:
            import fcntl
        except ImportError:  # pragma: no cover - no flock (Windows): no check
            return
        fd = os.open(store + ".lock", os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
            os.close(fd)
            raise StoreBusyError(store, holder or "it has not recorded itself yet") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, (f"job of process {os.getpid()} on host {platform.node()}, started "
                       f"{datetime.datetime.now().astimezone().isoformat(timespec='seconds')}\n").encode(), 0)
        self.fd = fd

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # drops the lock
            self.fd = -1


def _open_or_create(store: str, shape: tuple, chunks: tuple, dtype: str, overwrite: bool, meta: dict,
                    compression: str = "zstd") -> Any:
    import zarr

    try:
        a = zarr.open_array(store, mode="r")
    except (FileNotFoundError, zarr.errors.NodeNotFoundError if hasattr(zarr, "errors") and
            hasattr(zarr.errors, "NodeNotFoundError") else FileNotFoundError):
        a = None
    except Exception:  # noqa: BLE001 - not an array there (yet)
        a = None
    if a is not None and not overwrite:
        old = dict(a.attrs).get("vortexgo", {})
        same = (a.shape == shape and a.chunks == chunks and str(a.dtype) == dtype and
                _identity(old.get("config")) == _identity(meta["config"]) and
                [(s["path"], s["size"], s["mtime_ns"]) for s in old.get("sources", [])] ==
                [(s["path"], s["size"], s["mtime_ns"]) for s in meta["sources"]])
        if not same:
            raise ValueError(f"{store}: an array of another job (shape {a.shape}, chunks {a.chunks}, or another "
                             "configuration or sources), expected this job's to resume: pass overwrite=True to redo it")
        return zarr.open_array(store, mode="r+"), old
    codec: Any = "auto" if compression == "zstd" else None  # zarr's default (zstd) or none
    return zarr.create_array(store, shape=shape, chunks=chunks, dtype=dtype, fill_value=0, overwrite=True,
                             config={"write_empty_chunks": True}, compressors=codec), {}


def reprocess(client: Any, files: Iterable[Union[str, os.PathLike]], config: ReprocessConfig,
              store: Union[str, os.PathLike], *, overwrite: bool = False, device: str = "auto",
              progress: bool = False, raise_on_error: bool = True) -> Reprocessed:
    """Reprocess ``files`` with ``config`` on ``client``'s cluster into the Zarr array at ``store``.

    Args:
        client: a ``distributed.Client``. Its workers are processes (Dask's
            default start method, spawn: never fork a process that holds the Go
            runtime; workers forked from one fail with ``vortexgo.ForkError``
            before any task runs); with dask-cuda's ``LocalCUDACluster`` each
            worker sees its own GPU as device 0.
        files: recorded spectra (see the module's formats), in output order.
        config: the :class:`ReprocessConfig` every task runs.
        store: a directory all workers can reach (a shared filesystem).
        overwrite: redo every chunk (and recreate the array); otherwise chunks
            already written are skipped (resume) and an array of another job
            at ``store`` is refused.
        device: ``"auto"`` (CUDA where the worker has a GPU), ``"cuda"`` or ``"cpu"``.
        progress: show Dask's progress bar while waiting (the dashboard shows the tasks anyway).
        raise_on_error: raise :class:`ReprocessError` after the job when tasks failed
            (their files and byte ranges named); otherwise return with ``None`` results there.

    Returns:
        a :class:`Reprocessed` (``.array``, ``.to_dask()``).

    Raises:
        StoreBusyError: another job is writing ``store`` (one job at a time per store,
            checked before anything is written).
    """
    import distributed

    if device not in ("auto", "cuda", "cpu"):
        raise ValueError(f"device={device!r}, expected 'auto', 'cuda' or 'cpu'")
    t0 = time.perf_counter()
    store = os.path.abspath(os.fspath(store))
    sources = plan_sources(files, config)
    tasks = plan_tasks(sources, config, sum(client.nthreads().values()))
    total = sum(s.volumes for s in sources)
    lock = _StoreLock(store)
    try:
        _register_plugin(client)
        try:
            shape = client.submit(output_shape, config, device, pure=False,
                                  key=f"vortexgo-shape-{time.time_ns()}").result()
        except Exception as e:
            hinted = _fork_hint(e)
            if hinted is e:
                raise
            raise hinted from None
        chunks = (1,) + shape if config.chunk == "volume" else (1, 1) + shape[1:]
        token = hashlib.sha1(f"{store}{os.getpid()}{time.time_ns()}".encode()).hexdigest()[:12]
        meta = {"version": _FORMAT_VERSION, "job": token, "config": config.to_json(),
                "sources": [{"path": s.path, "format": s.format, "size": s.size, "mtime_ns": s.mtime_ns,
                             "data_offset": s.data_offset, "volumes": s.volumes, "first": s.first} for s in sources]}
        array, old = _open_or_create(store, (total,) + shape, chunks, config.dtype, overwrite, meta,
                                     config.compression)
        known = {(s["path"], s["size"], s["mtime_ns"]): s["sha256"]
                 for s in old.get("sources", []) if s.get("sha256")}
        for m in meta["sources"]:
            m["sha256"] = known.get((m["path"], m["size"], m["mtime_ns"]))
        # The job's token before any task runs: a task of an earlier job still running (its
        # client died) sees another token and writes nothing more.
        array.attrs["vortexgo"] = json.loads(json.dumps(meta))
        futures, hashes = [], {}
        index = {id(s): i for i, s in enumerate(sources)}
        for j, t in enumerate(tasks):  # a file's tasks follow each other, from its volume 0
            i = index[id(t.source)]
            if t.volume == 0 and meta["sources"][i]["sha256"] is None:
                # Each file's hash just before its tasks: it leaves its thread and reads the file
                # while they process it (one stream, warm in the page cache for them).
                hashes[i] = client.submit(file_sha256, t.source.path, t.source.size, t.source.mtime_ns,
                                          key=f"vortexgo-sha256-{token}-{i}", pure=False)
            futures.append(client.submit(run_task, t, config, store, overwrite, device, token,
                                         key=f"vortexgo-reprocess-{token}-{j}", pure=False, retries=0))
        everything = futures + list(hashes.values())
        if progress:
            distributed.progress(everything)
        distributed.wait(everything)
        results, failures = [], []
        for t, f in zip(tasks, futures):
            if f.status == "finished":
                results.append(f.result())
            else:
                results.append(None)
                failures.append((t, _fork_hint(f.exception())))
        for i, f in hashes.items():
            s = sources[i]
            if f.status == "finished":
                meta["sources"][i]["sha256"] = f.result()
            else:
                failures.append((Task(s, 0, s.volumes, s.first, 0, s.size, 0), f.exception()))
        for s, m in zip(sources, meta["sources"]):
            m["ranges"] = [{"volume": t.volume, "count": t.count, "offset": t.offset, "end": t.end,
                            "written": bool(r)} for t, r in zip(tasks, results) if t.source is s]
        meta["failed"] = [{"path": t.source.path, "offset": t.offset, "end": t.end, "error": str(e)}
                          for t, e in failures]
        if _store_job(store) == token:  # else a newer job took the store over: its attributes stay
            array.attrs["vortexgo"] = json.loads(json.dumps(meta))
    finally:
        lock.release()
    out = Reprocessed(store, sources, tasks, results, time.perf_counter() - t0)
    if failures and raise_on_error:
        raise ReprocessError(failures)
    return out
