"""Processing: raw spectra to A-scans (vortex's ``vortex.process``).

One :class:`ProcessorConfig` drives both :class:`CUDAProcessor` (our kernels
plus cuFFT) and :class:`CPUProcessor` (the same math in Go); their outputs
agree within float tolerance. The chain, per A-scan:

1. background subtraction, as vortex does it: the mean of the last
   ``average_window`` records, a rolling history carried across blocks
   (0 disables it);
2. linear-interpolation resampling at ``resampling_samples`` (fractional
   raw positions, e.g. even in wavenumber), or, with ``clock_channel``,
   per record from the phase of a k-clock recorded in another channel
   (vortex's dynamic resampling), then the complex ``spectral_filter``
   (window x dispersion phasor);
3. inverse FFT (``enable_ifft``, scaled by 1/M; any length);
4. ``enable_magnitude`` / ``enable_square`` / ``enable_log10`` (10 log10 of
   the value: with ``enable_square`` that is 20 log10 of the amplitude);
5. the float32 A-scan, and an int8 rendering: ``levels`` = (lo, hi) mapped
   onto -128..127, or, with ``levels`` unset (None), a direct cast
   (rounded, saturated).

Defaults are vortex's (1000 samples and records, square and log10 on, levels
unset), and the outputs equal vortex's on the same input (golden files from
vortex 0.5.1 in gosrc/process/testdata).

Outside an engine, as vortex's: ``initialize(config)``, ``change(config)``
(also while an engine runs: it takes effect at the next block),
``next(input_buffer, output_buffer, id=0, append_history=True)`` and
``next_async(..., callback)`` on NumPy, vortexgo and (CUDAProcessor) CuPy
arrays, int8 output as vortex's or float32. :class:`NullProcessor` processes
nothing; :class:`CopyProcessor` copies raw samples through a slice and a
transform (CPU), both as vortex's.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import threading
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Union

import numpy as np

from ._attrs import NoCopy, StrictAttributes
from ._core import api
from ._device import Device, DeviceLike, get_device
from ._validate import check_callable, check_int
from .log import is_logger
from .scan import Range
from ._errors import ClosedError, native, release_on_collect

__all__ = [
    "ProcessorConfig", "CUDAProcessorConfig", "CPUProcessorConfig",
    "CUDAProcessor", "CPUProcessor", "hann_window", "spectral_filter",
    "NullProcessorConfig", "NullProcessor", "CopyProcessorConfig", "CopyProcessor",
]

ArrayLike = Union[np.ndarray, Sequence[float], None]


@dataclass
class ProcessorConfig(StrictAttributes):
    """Processing parameters shared by :class:`CUDAProcessor` and :class:`CPUProcessor`.

    Attributes:
        samples_per_record: raw spectrum length (>= 2).
        ascans_per_block: the most A-scans per block; at least
            ``records_per_block`` of :class:`~vortexgo.engine.EngineConfig`.
        channels_per_sample: interleaved channels in the raw input.
        channel: the channel processed (< channels_per_sample).
        interpret_as_signed: read the raw uint16 values as int16.
        average_window: records in the rolling background (DC) average,
            carried across blocks; 0 disables it.
        resampling_samples: fractional raw positions (float32, each in
            [0, samples_per_record - 1]), one per output sample; empty (vortex's
            default) or None: no resampling.
        spectral_filter: complex64, one per output sample (window x dispersion
            phasor); empty (vortex's default) or None: no filter.
        enable_ifft: inverse FFT to depth (any length).
        enable_magnitude: \\|y\\| instead of the real part.
        enable_square: square the output.
        enable_log10: 10 log10 of the value (decibels of power when squared).
        levels: a :class:`~vortexgo.scan.Range` (vortex's type) or a (lo, hi) pair
            mapped onto int8 -128..127 for the int8 output; None (vortex's
            unset) casts the values directly.
        slots: blocks processed at once, each with its own scratch. On a GPU each slot
            runs on a stream of its own, except that more than two share two streams
            from 2 MiB of raw spectra a block (``VORTEXGO_SLOT_STREAMS`` sets the count),
            and below 2 MiB an engine uses two of them: there more slots cost the host
            and overlap nothing on the device (``VORTEXGO_ACTIVE_SLOTS`` sets the count).
        clock_channel: vortex's dynamic resampling: the channel holding a
            k-clock (in ``[0, channels_per_sample)``). Each record is
            resampled where the clock's unwrapped phase (from its Hilbert
            transform) is even, so the output is even in wavenumber
            whatever the sweep; None (the default) disables it. Excludes
            ``resampling_samples``, as in vortex. vortex has it on
            CUDAProcessorConfig; here both processors compute it
            (gosrc/process/doc.go defines it, vortex's quirks included).
            With a clock, CPU (float64 phase) and CUDA (float32) agree
            within 2% of each A-scan's peak rather than to rounding:
            vortex's weights jump where the query meets a sample's phase.
        device: vortex's CUDAProcessorConfig.device, the GPU's index a
            ``CUDAProcessor`` runs on when it is not given a ``device`` (0).
    """

    samples_per_record: int = 1000
    ascans_per_block: int = 1000
    channels_per_sample: int = 1
    channel: int = 0
    interpret_as_signed: bool = False
    average_window: int = 0
    resampling_samples: ArrayLike = field(default_factory=lambda: np.empty(0, np.float32))
    spectral_filter: ArrayLike = field(default_factory=lambda: np.empty(0, np.complex64))
    enable_ifft: bool = True
    enable_magnitude: bool = True
    enable_square: bool = True
    enable_log10: bool = True
    levels: Union[Range, tuple[float, float], None] = None
    slots: int = 2
    clock_channel: Optional[int] = None
    device: int = 0

    def __eq__(self, other: object) -> bool:
        # Field by field, the arrays by value: the dataclass's tuple comparison asks an array
        # for its truth value (an error for vortex's empty default arrays).
        if type(other) is not type(self):
            return NotImplemented
        for f in dataclasses.fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                if a is None or b is None or not np.array_equal(np.asarray(a), np.asarray(b)):
                    return False
            elif a != b:
                return False
        return True

    __hash__ = None  # mutable, as vortex's

    @property
    def samples_per_ascan(self) -> int:
        """The processed A-scan length, ``len(resampling_samples)`` or else ``samples_per_record``."""
        r = self.resampling_samples
        if r is None:
            return self.samples_per_record
        try:
            n = len(r)
        except TypeError:  # a scalar or another unsized value: say which field is wrong
            a = _as_1d("ProcessorConfig", "resampling_samples", r, np.float32)
            n = 0 if a is None else a.size
        return n if n > 0 else self.samples_per_record

    @property
    def records_per_block(self) -> int:
        """vortex's other name for ``ascans_per_block``."""
        return self.ascans_per_block

    @records_per_block.setter
    def records_per_block(self, v: int) -> None:
        self.ascans_per_block = v

    @property
    def input_shape(self) -> list[int]:
        """The raw block's shape, ``[ascans_per_block, samples_per_record, channels_per_sample]``."""
        return [self.ascans_per_block, self.samples_per_record, self.channels_per_sample]

    @property
    def output_shape(self) -> list[int]:
        """The processed block's shape, ``[ascans_per_block, samples_per_ascan, 1]``."""
        return [self.ascans_per_block, self.samples_per_ascan, 1]

    def copy(self) -> "ProcessorConfig":
        """An independent copy, arrays copied too (vortex's ``copy()``); ``copy.copy``,
        ``copy.deepcopy`` and pickle work as well."""
        c = dataclasses.replace(self)
        if c.resampling_samples is not None:
            c.resampling_samples = np.array(c.resampling_samples, copy=True)
        if c.spectral_filter is not None:
            c.spectral_filter = np.array(c.spectral_filter, copy=True)
        return c

    def validate(self) -> None:
        """Raise ValueError or TypeError naming the first bad field (the Go core checks again)."""
        o = "ProcessorConfig"
        for name, lo in (("samples_per_record", 2), ("ascans_per_block", 1), ("channels_per_sample", 1),
                         ("channel", 0), ("average_window", 0), ("slots", 1), ("device", 0)):
            check_int(f"{o}.{name}", getattr(self, name), lo)
        if self.channel >= self.channels_per_sample:
            raise ValueError(f"{o}.channel={self.channel}, expected < channels_per_sample={self.channels_per_sample}")
        for name in ("enable_ifft", "enable_magnitude", "enable_square", "enable_log10", "interpret_as_signed"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise TypeError(f"{o}.{name}={getattr(self, name)!r}, expected a bool")
        self._levels()
        res = _as_1d(o, "resampling_samples", self.resampling_samples, np.float32)
        if self.clock_channel is not None:
            k = check_int(f"{o}.clock_channel", self.clock_channel, 0)
            if k >= self.channels_per_sample:
                raise ValueError(f"{o}.clock_channel={k}, expected None or < channels_per_sample="
                                 f"{self.channels_per_sample}")
            if res is not None and res.size > 0:
                raise ValueError(f"{o}.clock_channel={k} with resampling_samples set, expected one of them: "
                                 "dynamic (clock) and static resampling are mutually exclusive, as in vortex")
        if res is not None:
            if not np.all(np.isfinite(res)) or res.min() < 0 or res.max() > self.samples_per_record - 1:
                raise ValueError(f"{o}.resampling_samples: values in [{res.min()}, {res.max()}], "
                                 f"expected within [0, samples_per_record - 1 = {self.samples_per_record - 1}]")
        filt = _as_1d(o, "spectral_filter", self.spectral_filter, np.complex64)
        m = self.samples_per_ascan
        if filt is not None and filt.size != m:
            raise ValueError(f"{o}.spectral_filter: {filt.size} values, expected {m} (one per output sample)")

    def _levels(self) -> tuple[float, float]:
        """(lo, hi), or (0, 0): the Go core's "unset" (a direct cast)."""
        if self.levels is None:
            return 0.0, 0.0
        v = self.levels
        try:
            # vortex's Range (min, max), or a (lo, hi) pair
            lo, hi = (float(v.min), float(v.max)) if isinstance(v, Range) else (float(x) for x in v)
        except (TypeError, ValueError):
            raise TypeError(f"ProcessorConfig.levels={v!r}, expected None, a Range or (lo, hi)") from None
        # vortex accepts inverted levels (a negative image); equal ones
        # would divide by zero.
        if not (math.isfinite(lo) and math.isfinite(hi) and hi != lo):
            raise ValueError(f"ProcessorConfig.levels={self.levels!r}, expected None or finite (lo, hi) with lo != hi")
        return lo, hi


#: vortex's names for the same configuration.
CUDAProcessorConfig = ProcessorConfig
CPUProcessorConfig = ProcessorConfig


def _as_1d(owner: str, name: str, v: ArrayLike, dtype: Any) -> Optional[np.ndarray]:
    if v is None:
        return None
    if hasattr(v, "get") and hasattr(v, "__cuda_array_interface__"):
        v = v.get()  # a CuPy array
    if np.ndim(v) == 0:  # ascontiguousarray would make a scalar a 1-element array
        raise TypeError(f"{owner}.{name}={v!r:.60}, expected a 1-D array of {np.dtype(dtype).name} (or None)")
    try:
        a = np.ascontiguousarray(np.asarray(v), dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{owner}.{name}: {exc}, expected a 1-D array of {np.dtype(dtype).name}") from None
    if a.ndim != 1:
        raise ValueError(f"{owner}.{name}: shape {a.shape}, expected a 1-D array of {np.dtype(dtype).name} (or None)")
    if a.size == 0:
        return None
    return a


def hann_window(n: int) -> np.ndarray:
    """The n-point symmetric Hann window (float32)."""
    return np.hanning(n).astype(np.float32)


def spectral_filter(window: ArrayLike = None, phasor: ArrayLike = None) -> Optional[np.ndarray]:
    """Combine a real window and a complex phasor into a complex64 spectral filter."""
    if window is None and phasor is None:
        return None
    w = None if window is None else np.asarray(window, np.float32)
    p = None if phasor is None else np.asarray(phasor, np.complex64)
    if w is not None and p is not None and w.shape != p.shape:
        raise ValueError(f"window has {w.size} values, expected {p.size} like the phasor")
    out = np.ones((w if w is not None else p).shape, np.complex64)
    if w is not None:
        out *= w
    if p is not None:
        out *= p
    return out


class _Block:
    """An array's address, shape, byte strides and dtype as :meth:`_Processor.next` reads them."""

    __slots__ = ("ptr", "shape", "strides", "dtype", "keep")

    def __init__(self, ptr: int, shape: tuple, strides: tuple, dtype: np.dtype, keep: Any) -> None:
        self.ptr, self.shape, self.strides, self.dtype, self.keep = ptr, shape, strides, dtype, keep


def _block_array(name: str, v: Any, dtypes: tuple, strided: bool = False) -> tuple[_Block, bool]:
    """``v``'s memory as (block, on the host), refusing copies and other dtypes; strides
    other than C order are refused unless ``strided`` (the input: :meth:`_Processor.next`
    decides)."""
    want = " or ".join(np.dtype(d).name for d in dtypes)
    cai = None
    try:
        cai = v.__cuda_array_interface__
    except AttributeError:
        pass
    except Exception as e:  # a closed array
        raise ValueError(f"{name}: {e}") from None
    if cai is not None:
        dt = np.dtype(cai["typestr"])
        shape = tuple(cai["shape"])
        c = _c_strides(shape, dt.itemsize)
        strides = c if cai.get("strides") is None else tuple(cai["strides"])
        if not strided and strides != c:
            raise ValueError(f"{name}: strides {strides}, expected a C-contiguous array")
        if cai["data"][1] and name == "output_buffer":
            raise ValueError(f"{name}: read-only, expected a writable array")
        block, host = _Block(int(cai["data"][0]), shape, strides, dt, v), False
    elif isinstance(v, np.ndarray) or hasattr(v, "__array_interface__"):
        a = np.asarray(v)  # zero-copy: the caller's memory
        if not strided and not a.flags.c_contiguous:
            raise ValueError(f"{name}: strides {a.strides}, expected a C-contiguous array")
        if not a.flags.writeable and name == "output_buffer":
            raise ValueError(f"{name}: read-only, expected a writable array")
        block, host = _Block(a.ctypes.data, a.shape, a.strides, a.dtype, a), True
    else:
        raise TypeError(f"{name}={type(v).__name__}, expected a NumPy, CuPy or vortexgo array of {want}")
    if block.dtype not in [np.dtype(d) for d in dtypes] or not block.dtype.isnative:
        raise TypeError(f"{name}: dtype {block.dtype.str}, expected {want}")
    if len(block.shape) == 0:
        raise ValueError(f"{name}: a 0-d array, expected (records, samples, channels)")
    return block, host


def _strides_match(block: _Block, shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether ``block`` (of a shape compatible with ``shape``) steps through memory as
    ``strides`` (bytes) would on every axis longer than 1 (an axis of 1 is never stepped)."""
    got = [st for n, st in zip(block.shape, block.strides) if n != 1]
    return got == [st for n, st in zip(shape, strides) if n != 1]


def _input_layout(c: "ProcessorConfig", inp: _Block, host: bool, records: int) -> tuple[int, int, Any]:
    """Where the processor reads ``inp``: (address, readable bytes or 0 for the whole
    block, what to keep alive). The block is (records, samples_per_record,
    channels_per_sample) uint16, C order, read in place; other layouts as
    :meth:`_Processor.next` describes."""
    S, C = c.samples_per_record, c.channels_per_sample
    if _compatible(inp.shape[1:], (S, C)):  # the whole block
        if _strides_match(inp, (records, S, C), (S * C * 2, C * 2, 2)):
            return inp.ptr, 0, inp.keep
        if host:  # strided: gathered into C order (a documented copy)
            a = np.ascontiguousarray(np.asarray(inp.keep)).reshape(records, S, C)
            return a.ctypes.data, 0, a
        raise ValueError(f"input_buffer: strides {inp.strides} of a device array, expected C order "
                         f"(cupy.ascontiguousarray(x)) or one channel of an interleaved block")
    # vortex's pre-indexed channel: (records, samples) holding the processed channel alone
    # (spectra[..., c] with channel=0), as vortex's shape check lets through.
    if c.channel != 0 or c.clock_channel is not None:
        raise ValueError(f"input_buffer: shape {inp.shape}, one channel for channels_per_sample={C}: expected "
                         f"channel=0 and no clock_channel (got channel={c.channel}, clock_channel={c.clock_channel})")
    if _strides_match(inp, (records, S), (S * C * 2, C * 2)):
        # One channel of a C-order interleaved block: read where it lies, its bytes staged up to its last sample.
        return inp.ptr, ((records * S - 1) * C + 1) * 2, inp.keep
    if host:
        a = np.zeros((records, S, C), np.uint16)  # gathered into channel 0 (a documented copy)
        a[..., 0] = np.asarray(inp.keep).reshape(records, S)
        return a.ctypes.data, 0, a
    raise ValueError(f"input_buffer: strides {inp.strides} of a one-channel device array, expected one channel "
                     f"of a C-order (records, {S}, {C}) block, or C order (cupy.ascontiguousarray(x))")


def _c_strides(shape: tuple, itemsize: int) -> tuple:
    strides, step = [], itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))


def _compatible(shape: Sequence[int], want: Sequence[int]) -> bool:
    """vortex's shape_is_compatible: equal once the axes of 1 are dropped."""
    return [d for d in shape if d != 1] == [d for d in want if d != 1]


class _Processor(NoCopy, StrictAttributes):
    _config_type: type = ProcessorConfig

    def __init__(self, config: Optional[ProcessorConfig] = None, logger: Optional[logging.Logger] = None, *,
                 device: DeviceLike = None, **fields: Any) -> None:
        self._h = None
        self._closed = False
        self._worker = None  # next_async's thread, made on first use
        self._worker_thread = 0
        if is_logger(config):
            config, logger = None, config
        self.logger = logger
        self._config = self._config_type()
        self._device_spec = device
        self.device: Optional[Device] = None
        if device is not None:
            get_device(device)  # a bad device fails here, not later
        if config is not None or fields:
            self.initialize(config, **fields)

    def _default_device(self, cfg: Any = None) -> Device:
        raise NotImplementedError

    def _follows_engine_device(self) -> bool:
        """Whether an engine moves this processor to its device (one that computes nothing,
        made without a device)."""
        return False

    def _move_to(self, dev: Device) -> None:
        """Remake the processor on ``dev`` (an engine's), keeping its configuration; it still
        follows the next engine's device after."""
        spec = self._device_spec
        self._device_spec = dev.alias
        try:
            self.initialize(self._config)
        finally:
            self._device_spec = spec

    @property
    def config(self) -> Any:
        """The configuration, as a copy (read-only as vortex's, each read a new copy).

        Change it with :meth:`initialize` (or :meth:`change` while an engine runs).
        """
        return self._config.copy()

    @config.setter
    def config(self, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__}.config is read-only: "
                             "initialize(config) adopts a configuration")

    @native
    def initialize(self, config: Optional[ProcessorConfig] = None, **fields: Any) -> None:
        """Validate and adopt ``config`` (copied); ``fields`` override its attributes."""
        if config is not None and not isinstance(config, self._config_type):
            raise TypeError(f"config={config!r}, expected a {self._config_type.__name__}")
        cfg = config.copy() if config is not None else self._config_type()
        for k, v in fields.items():
            if not hasattr(cfg, k) or k in ("samples_per_ascan", "input_shape", "output_shape"):
                raise TypeError(f"{type(self).__name__}: unknown field {k!r}")
            setattr(cfg, k, v)
        cfg.validate()
        dev = self._default_device(cfg)
        h = self._new_handle(cfg, dev)
        if self._h is not None:
            try:
                self._h.Close()
            except BaseException:
                # Re-initialising a processor that an engine uses raises
                # InUseError and changes nothing.
                h.Close()
                raise
            self._fin.detach()
        self._h = h
        # A processor dropped without close() (a notebook cell re-run) releases its
        # device resources when collected.
        self._fin = release_on_collect(self, h.Close, "a processor")
        self._config, self.device = cfg, dev
        self._closed = False  # initialize() after close() makes a new processor

    def _new_handle(self, cfg: Any, dev: Device):
        """A Go processor for ``cfg`` (validated) on ``dev``."""
        res = _as_1d("ProcessorConfig", "resampling_samples", getattr(cfg, "resampling_samples", None), np.float32)
        filt = _as_1d("ProcessorConfig", "spectral_filter", getattr(cfg, "spectral_filter", None), np.complex64)
        rp, rn = (0, 0) if res is None else (res.ctypes.data, res.size)
        fp, fn = (0, 0) if filt is None else (filt.ctypes.data, filt.size)
        # process.Config's fields as one record; the arrays as (address, count).
        return self._new_go(dev._h, json.dumps(self._record(cfg)), rp, rn, fp, fn)

    def _new_go(self, dev: Any, record: str, rp: int, rn: int, fp: int, fn: int) -> Any:  # pragma: no cover - abstract
        """The Go processor of this class on ``dev`` (its handle) from its config record and
        its arrays (address, count)."""
        raise NotImplementedError

    def _record(self, cfg: ProcessorConfig) -> dict:
        lo, hi = cfg._levels()
        return {
            "SamplesPerRecord": int(cfg.samples_per_record), "AscansPerBlock": int(cfg.ascans_per_block),
            "ChannelsPerSample": int(cfg.channels_per_sample), "Channel": int(cfg.channel),
            "InterpretAsSigned": bool(cfg.interpret_as_signed),
            "AverageWindow": int(cfg.average_window), "EnableIFFT": bool(cfg.enable_ifft),
            "EnableMagnitude": bool(cfg.enable_magnitude), "EnableSquare": bool(cfg.enable_square),
            "EnableLog10": bool(cfg.enable_log10), "Levels": [lo, hi], "Slots": int(cfg.slots),
            "ClockChannel": None if cfg.clock_channel is None else int(cfg.clock_channel)}

    @native
    def change(self, config: Optional[ProcessorConfig] = None, **fields: Any) -> None:
        """Adopt ``config`` (copied; ``fields`` override it) from the next block on
        (vortex's ``change``), also while an engine runs the processor: blocks
        already started finish with the old one. The rolling average's history
        is kept when the window, samples and channel are unchanged. While an
        engine runs, a change of the block's shape (samples, channels,
        records, output samples, slots) raises :class:`~vortexgo.InUseError`."""
        if self._h is None and not self._closed:
            return self.initialize(config, **fields)
        h = self._handle()
        if config is not None and not isinstance(config, self._config_type):
            raise TypeError(f"config={config!r}, expected a {self._config_type.__name__}")
        cfg = config.copy() if config is not None else self._config.copy()
        for k, v in fields.items():
            if not hasattr(cfg, k) or k in ("samples_per_ascan", "input_shape", "output_shape"):
                raise TypeError(f"{type(self).__name__}: unknown field {k!r}")
            setattr(cfg, k, v)
        cfg.validate()
        tmp = self._new_handle(cfg, self.device)  # the Go side copies its configuration
        try:
            h.Change(tmp)
        finally:
            tmp.Close()
        self._config = cfg

    def next(self, input_buffer: Any, output_buffer: Any, id: int = 0, append_history: bool = True) -> None:
        """Process one block outside an engine and wait for it (vortex's ``next``).

        ``input_buffer``: uint16 of shape ``(records, samples_per_record,
        channels_per_sample)`` (axes of 1 may be left out, as in vortex),
        1 <= records <= ascans_per_block, read in place when in C order. As
        in vortex it may also be strided: one channel of an interleaved block
        (``spectra[..., c]``, shape ``(records, samples_per_record)``, with
        ``channel=0``: vortex's pre-indexed channel) is read where it lies,
        its bytes up to its last sample staged once into the processor's
        scratch (the upload a host array on a CUDAProcessor has anyway; a
        copy of that size otherwise); any other strided host array is first
        gathered into C order (a NumPy copy); other strided device arrays
        are refused (``cupy.ascontiguousarray``). ``output_buffer``: int8 (vortex's
        output) or float32 (the A-scans before the int8 rendering) of shape
        ``(records, samples_per_ascan, 1)``. Host arrays (NumPy, vortexgo
        host arrays); a CUDAProcessor also takes CUDA arrays (CuPy, vortexgo),
        read after the device's earlier work. ``append_history``: the block
        enters the rolling average (vortex's). ``id`` is for logging. Raises
        :class:`~vortexgo.InUseError` while an engine runs the processor.
        """
        id = check_int("id", id, 0)
        if not isinstance(append_history, (bool, np.bool_)):
            raise TypeError(f"append_history={append_history!r}, expected a bool")
        h = self._handle()
        c = self._config
        inp, in_host = _block_array("input_buffer", input_buffer, (np.uint16,), strided=True)
        out, out_host = _block_array("output_buffer", output_buffer, (np.int8, np.float32))
        if in_host != out_host:
            raise TypeError("input_buffer and output_buffer: one in host and one in device memory, expected both in the same")
        records = inp.shape[0] if inp.shape else 0
        if not 1 <= records <= c.ascans_per_block:
            raise ValueError(f"input_buffer: shape {inp.shape}, expected 1 to ascans_per_block={c.ascans_per_block} records")
        if not (_compatible(inp.shape[1:], (c.samples_per_record, c.channels_per_sample))
                or _compatible(inp.shape[1:], (c.samples_per_record,))):
            raise ValueError(f"input_buffer: shape {inp.shape}, expected (records, {c.samples_per_record}, "
                             f"{c.channels_per_sample}) (records, samples_per_record, channels_per_sample)")
        if not out.shape or out.shape[0] != records or not _compatible(out.shape[1:], (c.samples_per_ascan, 1)):
            raise ValueError(f"output_buffer: shape {out.shape}, expected ({records}, {c.samples_per_ascan}, 1) "
                             "(the input's records, samples_per_ascan, 1)")
        out8 = out.dtype == np.int8
        if self.logger is not None:
            self.logger.debug("processing block %d", id)
        ptr, readable, keep = _input_layout(c, inp, in_host, records)
        native(h.Next)(ptr, readable, 0 if out8 else out.ptr, out.ptr if out8 else 0, records, bool(append_history),
                       in_host)
        del keep  # alive until here: a gathered copy is the memory read

    def next_async(self, input_buffer: Any, output_buffer: Any, callback: Any, id: int = 0,
                   append_history: bool = True) -> None:
        """:meth:`next` on the processor's worker thread, then ``callback(exception)``
        there (None on success), as vortex's ``next_async``. The buffers are
        kept alive until then; calls run in the order they were made."""
        check_callable("callback", callback, allow_none=False)
        self._handle()
        if self._worker is None:
            import concurrent.futures

            self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=type(self).__name__)

        def job() -> None:
            self._worker_thread = threading.get_ident()
            try:
                self.next(input_buffer, output_buffer, id, append_history)
            except Exception as e:  # vortex hands every failure to the callback
                callback(e)
            else:
                callback(None)

        self._worker.submit(job)

    def _handle(self):
        if self._closed:
            # Told apart from never initialized: the object was usable once.
            raise ClosedError(f"{type(self).__name__} is closed, expected an open processor "
                              "(initialize(config) makes a new one)")
        if self._h is None:
            raise ValueError(f"{type(self).__name__} is not initialized, expected initialize(config) first")
        return self._h

    @property
    def samples_per_ascan(self) -> int:
        """The processed A-scan length."""
        return self._handle().OutputSamples()

    @native
    def close(self) -> None:
        """Release the processor's device resources.

        Raises :class:`~vortexgo.InUseError` while an engine that prepared the
        processor has not finished its run: stop the engine first. Afterwards
        every method raises :class:`~vortexgo.ClosedError`; closing again does
        nothing.
        """
        if self._worker is not None:
            # Queued next_async calls finish first; a callback that closes
            # the processor runs on the worker, which cannot wait for itself.
            self._worker.shutdown(wait=threading.get_ident() != self._worker_thread)
            self._worker = None
        if self._h is not None:
            self._h.Close()  # InUseError leaves the processor usable
            self._fin.detach()
            self._h = None
            self._closed = True

    def __repr__(self) -> str:
        if self._h is None:
            return f"<{type(self).__name__} {'closed' if self._closed else '(not initialized)'}>"
        c = self._config
        steps = []
        if c.average_window:
            steps.append(f"dc[{c.average_window}]")
        if c.resampling_samples is not None and np.size(c.resampling_samples):
            steps.append("resample")
        if c.clock_channel is not None:
            steps.append(f"clock[{c.clock_channel}]")
        if c.spectral_filter is not None and np.size(c.spectral_filter):
            steps.append("filter")
        if c.enable_ifft:
            steps.append("ifft")
        if c.enable_magnitude:
            steps.append("abs")
        if c.enable_square:
            steps.append("square")
        if c.enable_log10:
            steps.append("dB")
        return (f"<{type(self).__name__} on {self.device.alias} {c.samples_per_record} -> {self.samples_per_ascan} "
                f"samples, {' > '.join(steps) or 'copy'}, {c.slots} slots>")


class CUDAProcessor(_Processor):
    """The processing chain on a CUDA GPU: our kernels plus cuFFT, enqueued on the
    engine's slot streams. ``device`` defaults to ``"cuda"``.

    The inverse FFT is cuFFT's, except at 688, 1376 and 2752 samples (2^k x 43: 1376 is
    an Axsun 100 kHz source's record), where a one-pass kernel of vortexgo's replaces
    cuFFT's several passes (1.7x the processor's throughput at 1376 on an H100; the
    outputs agree within float32 rounding: docs/design.md)."""

    def _new_go(self, dev: Any, record: str, rp: int, rn: int, fp: int, fn: int) -> Any:
        return api.NewCUDAProcessor(dev, record, rp, rn, fp, fn)

    def _default_device(self, cfg: Any = None) -> Device:
        if self._device_spec is not None:
            return get_device(self._device_spec)
        # vortex's CUDAProcessorConfig.device: the GPU's index
        return get_device(f"cuda:{int(cfg.device)}" if cfg is not None else "cuda")


class CPUProcessor(_Processor):
    """The same chain in Go on the CPU backend (for machines without a GPU, and tests)."""

    def _new_go(self, dev: Any, record: str, rp: int, rn: int, fp: int, fn: int) -> Any:
        return api.NewCPUProcessor(dev, record, rp, rn, fp, fn)

    def _default_device(self, cfg: Any = None) -> Device:
        return get_device("cpu" if self._device_spec is None else self._device_spec)


@dataclass
class _ShapeConfig(StrictAttributes):
    """The block shape every vortex processor config has."""

    samples_per_record: int = 1000
    ascans_per_block: int = 1000
    channels_per_sample: int = 1

    records_per_block = ProcessorConfig.records_per_block
    input_shape = ProcessorConfig.input_shape
    output_shape = ProcessorConfig.output_shape

    @property
    def samples_per_ascan(self) -> int:
        """The processed A-scan length."""
        return self.samples_per_record

    def copy(self):
        """A copy of this configuration."""
        return dataclasses.replace(self)

    def validate(self) -> None:
        """Raise ValueError or TypeError naming the first bad field."""
        o = type(self).__name__
        for name, lo in (("samples_per_record", 1), ("ascans_per_block", 1), ("channels_per_sample", 1)):
            check_int(f"{o}.{name}", getattr(self, name), lo)


@dataclass
class NullProcessorConfig(_ShapeConfig):
    """Configuration of a :class:`NullProcessor`: the block shape only (vortex's)."""

    @property
    def slots(self) -> int:
        """Blocks in flight, 1 (a NullProcessor holds none back)."""
        return 1


class NullProcessor(_Processor):
    """vortex's NullProcessor: processes nothing. In an engine its A-scans are never
    computed (pair it with spectra endpoints, which read the raw block); it has no
    ``next``, as vortex's. Made without ``device``, it follows the engine's device (an
    engine moves it to its own at ``prepare``, as vortex pairs it with a CUDAProcessor)."""

    _config_type = NullProcessorConfig

    def _new_go(self, dev: Any, record: str, *arrays: int) -> Any:
        return api.NewNullProcessor(dev, record)  # its config has no arrays

    def _default_device(self, cfg: Any = None) -> Device:
        return get_device("cpu" if self._device_spec is None else self._device_spec)

    def _follows_engine_device(self) -> bool:
        return self._device_spec is None and self._h is not None

    def _record(self, cfg: NullProcessorConfig) -> dict:
        return {"SamplesPerRecord": int(cfg.samples_per_record), "AscansPerBlock": int(cfg.ascans_per_block),
                "ChannelsPerSample": int(cfg.channels_per_sample), "Slots": 1}

    def next(self, *args: Any, **kwargs: Any) -> None:
        """Not available: a NullProcessor processes nothing (vortex's has no ``next``)."""
        raise TypeError("NullProcessor.next: a NullProcessor processes nothing, expected a CPUProcessor, "
                        "CUDAProcessor or CopyProcessor")

    next_async = next

    def __repr__(self) -> str:
        return f"<NullProcessor {self._config.input_shape}>"


@dataclass
class CopyProcessorConfig(_ShapeConfig):
    """Configuration of a :class:`CopyProcessor` (vortex's fields and defaults).

    Attributes:
        samples_per_record: samples per record of the raw block.
        ascans_per_block: records of the raw block.
        channels_per_sample: channels per sample of the raw block.
        channel: the channel copied.
        slots: blocks in flight in an engine.
        sample_slice: the samples kept (:class:`~vortexgo.format.SampleSlice`;
            vortex's count: ``(stop - start) // step``); default all.
        sample_transform: :class:`~vortexgo.format.NullTransform` or
            :class:`~vortexgo.format.LinearTransform` (``scale * x + offset``).
    """

    channel: int = 0
    slots: int = 2
    sample_slice: Any = None
    sample_transform: Any = None

    def __post_init__(self) -> None:
        from .format import NullSlice, NullTransform

        if self.sample_slice is None:
            self.sample_slice = NullSlice()
        if self.sample_transform is None:
            self.sample_transform = NullTransform()

    @property
    def samples_per_ascan(self) -> int:
        """The slice's sample count (vortex's ``to_simple(slice).count()``)."""
        s = self.sample_slice
        return self.samples_per_record if s.stop is None else s.count()

    def validate(self) -> None:
        """Raise ValueError or TypeError naming the first bad field."""
        from .format import LinearTransform, NullTransform, SampleSlice

        super().validate()
        o = "CopyProcessorConfig"
        check_int(f"{o}.slots", self.slots, 1)
        check_int(f"{o}.channel", self.channel, 0)
        if self.channel >= self.channels_per_sample:
            raise ValueError(f"{o}.channel={self.channel}, expected < channels_per_sample={self.channels_per_sample}")
        if not isinstance(self.sample_slice, SampleSlice):
            raise TypeError(f"{o}.sample_slice={self.sample_slice!r}, expected a SimpleSlice or NullSlice()")
        if not isinstance(self.sample_transform, (NullTransform, LinearTransform)):
            raise TypeError(f"{o}.sample_transform={self.sample_transform!r}, expected a NullTransform or LinearTransform")
        s = self.sample_slice
        s._record()  # a stop-less slice with a start or step is refused there
        if s.stop is not None and (s.stop > self.samples_per_record or s.count() < 1):
            raise ValueError(f"{o}.sample_slice={s!r}, expected stop <= samples_per_record={self.samples_per_record} "
                             "and at least one sample")


class CopyProcessor(_Processor):
    """vortex's CopyProcessor: copies one channel's raw samples through a slice and
    a transform, without OCT processing; the int8 output is the C cast of each
    value (a raw uint16 keeps its low byte). A CPU processor, as vortex's."""

    _config_type = CopyProcessorConfig

    def _new_go(self, dev: Any, record: str, *arrays: int) -> Any:
        return api.NewCopyProcessor(dev, record)  # its config has no arrays

    def _default_device(self, cfg: Any = None) -> Device:
        return get_device("cpu" if self._device_spec is None else self._device_spec)

    def _record(self, cfg: CopyProcessorConfig) -> dict:
        s, t = cfg.sample_slice, cfg.sample_transform._record()
        return {"SamplesPerRecord": int(cfg.samples_per_record), "AscansPerBlock": int(cfg.ascans_per_block),
                "ChannelsPerSample": int(cfg.channels_per_sample), "Channel": int(cfg.channel),
                "Slots": int(cfg.slots),
                "SampleSlice": [0, 0, 0] if s.stop is None else [s.start, s.stop, s.step],
                "SampleTransform": [t["Scale"], t["Offset"]] if t["Linear"] else [0.0, 0.0]}

    def __repr__(self) -> str:
        if self._h is None:
            return f"<CopyProcessor {'closed' if self._closed else '(not initialized)'}>"
        c = self._config
        return f"<CopyProcessor {c.input_shape} -> {c.output_shape}, {c.sample_slice!r}, {c.sample_transform!r}>"
