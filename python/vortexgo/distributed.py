"""Reprocess recorded spectra on a Dask cluster (``pip install vortexgo[distributed]``).

:func:`reprocess` takes recorded files of raw spectra, one processing and
formatting configuration (:class:`ReprocessConfig`) and a
``distributed.Client``, and writes the formatted volumes of every file, in
order, into one Zarr v3 array. The work is split into tasks of whole volumes:
each task replays only its byte range of one file (a
:class:`~vortexgo.acquire.FileAcquisition` with ``offset`` and ``length``)
through vortexgo's own engine -- processor (CUDA on a GPU worker, CPU
otherwise), formatter, an in-memory endpoint -- and writes its volumes as
whole chunks. Chunk writes are atomic and idempotent, so a task retried after
its worker died writes the same bytes again; a rerun skips the chunks already
written (``overwrite=True`` redoes them).

Inputs (every file vortexgo writes raw spectra to, and vortex's): ``SimpleStack``
files of ``uint16`` with the NumPy, MATLAB v5, NRRD or NIfTI-2 header or none,
``SimpleStream`` files and vortex's raw files (headerless: record after
record), and ``HDF5Stack`` files (their dataset ``data``, deflated per A-scan:
a task reads its volumes' chunks only and replays them from a local copy).

What the array's attributes hold (``array.attrs["vortexgo"]``): the
configuration, and per source its path, size, modification time, format,
first volume in the array, and the SHA-256 of each task's byte range with a
digest over them (SHA-256 of the concatenated range digests): a file's
checksum that no single task needs the whole file for.

docs/distributed.md has a runnable example, the fault semantics and the
measured scaling.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import struct
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, Sequence, Union

import numpy as np

__all__ = ["ReprocessConfig", "Source", "Task", "SourceError", "ReprocessError", "Reprocessed",
           "plan_sources", "plan_tasks", "reprocess", "run_task", "open_result"]

_DTYPES = ("int8", "uint16", "float32")
_FORMAT_VERSION = 1
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
        volumes_per_task: volumes of one task (one byte range).
    """

    processor: Any
    ascans_per_bscan: int
    bscans_per_volume: int
    dtype: str = "int8"
    format: Any = None
    records_per_block: int = 0
    chunk: str = "volume"
    volumes_per_task: int = 1

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
        for name in ("ascans_per_bscan", "bscans_per_volume", "volumes_per_task"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise ValueError(f"ReprocessConfig.{name}={v!r}, expected an int >= 1")
        if self.dtype not in _DTYPES:
            raise ValueError(f"ReprocessConfig.dtype={self.dtype!r}, expected one of {_DTYPES}")
        if self.chunk not in ("volume", "bscan"):
            raise ValueError(f"ReprocessConfig.chunk={self.chunk!r}, expected 'volume' or 'bscan'")
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
                "volumes_per_task": int(self.volumes_per_task)}


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


def plan_tasks(sources: Sequence[Source], config: ReprocessConfig) -> list[Task]:
    """Split every source into tasks of ``config.volumes_per_task`` whole volumes (byte ranges)."""
    vb, rec, n = config.volume_bytes, config.record_bytes, config.volumes_per_task
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


def _engine(cfg: ReprocessConfig, acquisition: Any, device: str) -> tuple[Any, Any]:
    """The single-machine pipeline of one range: acquisition -> processor -> formatter -> host tensor."""
    from .engine import Engine, EngineConfig
    from .format import FormatPlanner, FormatPlannerConfig, StackFormatExecutor, StackFormatExecutorConfig
    from .process import CPUProcessor, CUDAProcessor

    proc = (CUDAProcessor if _use_cuda(device) else CPUProcessor)(cfg.processor)
    planner = FormatPlanner(FormatPlannerConfig(cfg.bscans_per_volume, cfg.ascans_per_bscan))
    endpoint = _endpoint_class(cfg.dtype)(StackFormatExecutor(cfg.format or StackFormatExecutorConfig()))
    ec = EngineConfig(records_per_block=cfg.block(), blocks_to_allocate=4, preload_count=2)
    ec.add_acquisition(acquisition, [proc])
    ec.add_processor(proc, [planner])
    ec.add_formatter(planner, [endpoint])
    return Engine(ec), endpoint


def output_shape(config: ReprocessConfig, device: str = "auto") -> tuple[int, int, int]:
    """One volume's formatted shape ``(bscans, ascans, depth)``: an engine prepared on a
    :class:`~vortexgo.acquire.NullAcquisition` (nothing runs)."""
    from .acquire import NullAcquisition

    acq = NullAcquisition(samples_per_record=config.processor.samples_per_record,
                          channels_per_sample=config.processor.channels_per_sample, records=config.block())
    engine, endpoint = _engine(config, acq, device)
    with engine:
        engine.prepare()
        return tuple(int(s) for s in endpoint.tensor.shape)


def _chunk_done(array: Any, root: str, volume: int, cfg: ReprocessConfig) -> bool:
    coords = [(volume, 0, 0, 0)] if cfg.chunk == "volume" else [(volume, b, 0, 0) for b in range(array.shape[1])]
    return all(os.path.exists(os.path.join(root, array.metadata.encode_chunk_key(c))) for c in coords)


def _hash_range(path: str, offset: int, end: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        f.seek(offset)
        left = end - offset
        buf = bytearray(min(left, 8 << 20) or 1)
        view = memoryview(buf)
        while left:
            n = f.readinto(view[:min(left, len(buf))])
            if not n:
                break
            h.update(view[:n])
            left -= n
    return h.hexdigest()


def _stage_hdf5(task: Task, cfg: ReprocessConfig, directory: str) -> tuple[str, int, int, str]:
    """Copy the task's volumes (and its warm-up records) of an HDF5 stack into a raw
    file: (path, offset, length, sha256 of the raw bytes). Reads those chunks only."""
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
        out.write(block.tobytes())
    digest = hashlib.sha256(block[task.warmup:].tobytes()).hexdigest()
    return path, 0, block.nbytes, digest


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
             device: str = "auto", known_sha256: Optional[str] = None) -> dict:
    """Run one task where it is called (a Dask worker, or in-process): the engine over the
    task's byte range, each formatted volume written as whole chunks of the array at ``store``.

    Skips the task when all its chunks exist and ``overwrite`` is false (hashing the range
    only when ``known_sha256`` is None). Raises :class:`SourceError` naming the file and the
    range when the range cannot be replayed. Returns ``{"first", "count", "written",
    "sha256", "seconds", "bytes"}``.
    """
    import zarr

    from .acquire import FileAcquisition
    from .marker import ScanBoundary
    from .acquire import record_raster

    t0 = time.perf_counter()
    src = task.source
    array = zarr.open_array(store, mode="r+", config={"write_empty_chunks": True})
    done = [not overwrite and _chunk_done(array, store, task.first + i, config) for i in range(task.count)]
    result = {"first": task.first, "count": task.count, "written": 0, "sha256": known_sha256,
              "bytes": task.end - task.offset, "seconds": 0.0}
    try:
        st = os.stat(src.path)
    except OSError as e:
        raise SourceError(src.path, task.offset, task.end, f"cannot open ({e.strerror})") from None
    if st.st_size != src.size or st.st_mtime_ns != src.mtime_ns:
        raise SourceError(src.path, task.offset, task.end, f"the file changed since it was planned "
                          f"({src.size} -> {st.st_size} bytes): plan the job again")
    if all(done):
        if result["sha256"] is None and src.format != "hdf5":
            if st.st_size < task.end:
                raise SourceError(src.path, task.offset, task.end, f"the file ends at byte {st.st_size} (truncated?)")
            result["sha256"] = _hash_range(src.path, task.offset, task.end)
        result["seconds"] = time.perf_counter() - t0
        return result

    staged = None
    rec = config.record_bytes
    if src.format == "hdf5":
        try:
            from distributed import get_worker

            directory = get_worker().local_directory
        except (ImportError, ValueError):
            directory = tempfile.gettempdir()
        staged, off, length, digest = _stage_hdf5(task, config, directory)
        path = staged
    else:
        path, off, length = src.path, task.offset - task.warmup * rec, task.end - task.offset + task.warmup * rec
        if st.st_size < task.end:
            raise SourceError(src.path, task.offset, task.end, f"the file ends at byte {st.st_size} (truncated?)")
        digest = None
    try:
        p = config.processor
        acq = FileAcquisition(path=path, samples_per_record=p.samples_per_record,
                              channels_per_sample=p.channels_per_sample, loop=False, pin=False,
                              offset=off, length=length)
        engine, endpoint = _engine(config, acq, device)
        writes: list = []
        # Tests make tasks last long enough to kill their worker in the middle of one.
        delay = float(os.environ.get("VORTEXGO_DISTRIBUTED_TEST_DELAY", "0") or 0)

        def on_volume(sample: int, scan_idx: int, volume_idx: int) -> None:
            if scan_idx >= task.count:  # a warm-up scan: not an output volume
                return
            with endpoint.tensor as v:
                vol = np.array(v.get() if hasattr(v, "get") else v)  # CuPy on a device tensor
            if not done[scan_idx]:
                array[task.first + scan_idx] = vol  # whole chunks: atomic, idempotent
                writes.append(scan_idx)
            if delay:
                time.sleep(delay)

        endpoint.volume_callback = on_volume
        warm_bscans = task.warmup // config.ascans_per_bscan
        while warm_bscans:  # whole B-scans, at most a volume per scan
            n = min(warm_bscans, config.bscans_per_volume)
            engine.scan_queue.append(record_raster(config.ascans_per_bscan, n), marker=ScanBoundary(0, _WARMUP))
            warm_bscans -= n
        scan = record_raster(config.ascans_per_bscan, config.bscans_per_volume)
        for i in range(task.count):
            engine.scan_queue.append(scan, marker=ScanBoundary(0, i))
        with engine:
            try:
                engine.prepare()
            except ValueError as e:  # FileAcquisition.prepare names the range
                raise SourceError(src.path, task.offset, task.end, str(e)) from None
            engine.start()
            engine.wait()
        if len(writes) != task.count - sum(done):
            raise SourceError(src.path, task.offset, task.end, f"{len(writes)} of {task.count - sum(done)} volumes "
                              "came out of the engine (the file ended early?)")
        result["written"] = len(writes)
    except OSError as e:
        raise SourceError(src.path, task.offset, task.end, f"read failed ({e})") from None
    finally:
        if staged:
            os.unlink(staged)
    result["sha256"] = digest or _hash_range(src.path, task.offset, task.end)
    result["seconds"] = time.perf_counter() - t0
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


def _open_or_create(store: str, shape: tuple, chunks: tuple, dtype: str, overwrite: bool, meta: dict) -> Any:
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
                old.get("config") == meta["config"] and
                [(s["path"], s["size"], s["mtime_ns"]) for s in old.get("sources", [])] ==
                [(s["path"], s["size"], s["mtime_ns"]) for s in meta["sources"]])
        if not same:
            raise ValueError(f"{store}: an array of another job (shape {a.shape}, chunks {a.chunks}, or another "
                             "configuration or sources), expected this job's to resume: pass overwrite=True to redo it")
        return zarr.open_array(store, mode="r+"), old
    return zarr.create_array(store, shape=shape, chunks=chunks, dtype=dtype, fill_value=0, overwrite=True,
                             config={"write_empty_chunks": True}), {}


def reprocess(client: Any, files: Iterable[Union[str, os.PathLike]], config: ReprocessConfig,
              store: Union[str, os.PathLike], *, overwrite: bool = False, device: str = "auto",
              progress: bool = False, raise_on_error: bool = True) -> Reprocessed:
    """Reprocess ``files`` with ``config`` on ``client``'s cluster into the Zarr array at ``store``.

    Args:
        client: a ``distributed.Client``. Its workers are processes (Dask's
            default start method, spawn: never fork a process that holds the Go
            runtime); with dask-cuda's ``LocalCUDACluster`` each worker sees its
            own GPU as device 0.
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
    """
    import distributed

    if device not in ("auto", "cuda", "cpu"):
        raise ValueError(f"device={device!r}, expected 'auto', 'cuda' or 'cpu'")
    t0 = time.perf_counter()
    store = os.path.abspath(os.fspath(store))
    sources = plan_sources(files, config)
    tasks = plan_tasks(sources, config)
    total = sum(s.volumes for s in sources)
    shape = client.submit(output_shape, config, device, pure=False, key=f"vortexgo-shape-{time.time_ns()}").result()
    chunks = (1,) + shape if config.chunk == "volume" else (1, 1) + shape[1:]
    meta = {"version": _FORMAT_VERSION, "config": config.to_json(),
            "sources": [{"path": s.path, "format": s.format, "size": s.size, "mtime_ns": s.mtime_ns,
                         "data_offset": s.data_offset, "volumes": s.volumes, "first": s.first} for s in sources]}
    array, old = _open_or_create(store, (total,) + shape, chunks, config.dtype, overwrite, meta)
    known = {}
    for s in old.get("sources", []):
        for r in s.get("ranges", []):
            known[(s["path"], r["offset"], r["end"])] = r["sha256"]
    token = hashlib.sha1(f"{store}{time.time_ns()}".encode()).hexdigest()[:10]
    futures = [client.submit(run_task, t, config, store, overwrite, device,
                             known.get((t.source.path, t.offset, t.end)),
                             key=f"vortexgo-reprocess-{token}-{i}", pure=False, retries=0)
               for i, t in enumerate(tasks)]
    if progress:
        distributed.progress(futures)
    distributed.wait(futures)
    results, failures = [], []
    for t, f in zip(tasks, futures):
        if f.status == "finished":
            results.append(f.result())
        else:
            results.append(None)
            failures.append((t, f.exception()))
    for s, m in zip(sources, meta["sources"]):
        ranges = [{"volume": t.volume, "count": t.count, "offset": t.offset, "end": t.end, "sha256": r["sha256"]}
                  for t, r in zip(tasks, results) if t.source is s and r]
        m["ranges"] = ranges
        m["sha256_of_ranges"] = (hashlib.sha256("".join(r["sha256"] for r in ranges).encode()).hexdigest()
                                 if len(ranges) == sum(1 for t in tasks if t.source is s) else None)
    meta["failed"] = [{"path": t.source.path, "offset": t.offset, "end": t.end, "error": str(e)} for t, e in failures]
    array.attrs["vortexgo"] = json.loads(json.dumps(meta))
    out = Reprocessed(store, sources, tasks, results, time.perf_counter() - t0)
    if failures and raise_on_error:
        raise ReprocessError(failures)
    return out
