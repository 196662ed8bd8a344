"""Processing: raw spectra to A-scans (vortex's ``vortex.process``).

One :class:`ProcessorConfig` drives both :class:`CUDAProcessor` (our kernels
plus cuFFT) and :class:`CPUProcessor` (the same math in Go); their outputs
agree within float tolerance. The chain, per A-scan:

1. background subtraction, as vortex does it: the mean of the last
   ``average_window`` records, a rolling history carried across blocks
   (0 disables it);
2. linear-interpolation resampling at ``resampling_samples`` (fractional
   raw positions, e.g. even in wavenumber), then the complex
   ``spectral_filter`` (window x dispersion phasor);
3. inverse FFT (``enable_ifft``, scaled by 1/M; any length);
4. ``enable_magnitude`` / ``enable_square`` / ``enable_log10`` (10 log10 of
   the value: with ``enable_square`` that is 20 log10 of the amplitude);
5. the float32 A-scan, and an int8 rendering: ``levels`` = (lo, hi) mapped
   onto -128..127, or, with ``levels`` unset (None), a direct cast
   (rounded, saturated).

Defaults are vortex's (1000 samples and records, square and log10 on, levels
unset), and the outputs equal vortex's on the same input (golden files from
vortex 0.5.1 in gosrc/process/testdata).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

import numpy as np

from ._core import api
from ._device import Device, DeviceLike, get_device
from ._validate import check_int
from ._errors import ClosedError, native

__all__ = [
    "ProcessorConfig", "CUDAProcessorConfig", "CPUProcessorConfig",
    "CUDAProcessor", "CPUProcessor", "hann_window", "spectral_filter",
]

ArrayLike = Union[np.ndarray, Sequence[float], None]


@dataclass
class ProcessorConfig:
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
            [0, samples_per_record - 1]), one per output sample; None: no resampling.
        spectral_filter: complex64, one per output sample (window x dispersion
            phasor); None: no filter.
        enable_ifft: inverse FFT to depth (any length).
        enable_magnitude: \\|y\\| instead of the real part.
        enable_square: square the output.
        enable_log10: 10 log10 of the value (decibels of power when squared).
        levels: (lo, hi) mapped onto int8 -128..127 for the int8 output;
            None (vortex's unset) casts the values directly.
        slots: concurrent processing streams (each with its own scratch).
    """

    samples_per_record: int = 1000
    ascans_per_block: int = 1000
    channels_per_sample: int = 1
    channel: int = 0
    interpret_as_signed: bool = False
    average_window: int = 0
    resampling_samples: ArrayLike = None
    spectral_filter: ArrayLike = None
    enable_ifft: bool = True
    enable_magnitude: bool = True
    enable_square: bool = True
    enable_log10: bool = True
    levels: Optional[tuple[float, float]] = None
    slots: int = 2

    @property
    def samples_per_ascan(self) -> int:
        """The processed A-scan length, ``len(resampling_samples)`` or else ``samples_per_record``."""
        if self.resampling_samples is not None and len(self.resampling_samples) > 0:
            return len(self.resampling_samples)
        return self.samples_per_record

    def copy(self) -> "ProcessorConfig":
        """A copy (arrays copied too)."""
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
                         ("channel", 0), ("average_window", 0), ("slots", 1)):
            check_int(f"{o}.{name}", getattr(self, name), lo)
        if self.channel >= self.channels_per_sample:
            raise ValueError(f"{o}.channel={self.channel}, expected < channels_per_sample={self.channels_per_sample}")
        for name in ("enable_ifft", "enable_magnitude", "enable_square", "enable_log10", "interpret_as_signed"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise TypeError(f"{o}.{name}={getattr(self, name)!r}, expected a bool")
        self._levels()
        res = _as_1d(o, "resampling_samples", self.resampling_samples, np.float32)
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
        try:
            lo, hi = (float(x) for x in self.levels)
        except (TypeError, ValueError):
            raise TypeError(f"ProcessorConfig.levels={self.levels!r}, expected None or (lo, hi)") from None
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
    try:
        a = np.ascontiguousarray(np.asarray(v), dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{owner}.{name}: {exc}, expected a 1-D array of {np.dtype(dtype).name}") from None
    if a.ndim != 1:
        raise ValueError(f"{owner}.{name}: shape {a.shape}, expected 1-D")
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


class _Processor:
    _kind = ""

    def __init__(self, config: Optional[ProcessorConfig] = None, logger: Optional[logging.Logger] = None, *,
                 device: DeviceLike = None, **fields: Any) -> None:
        self._h = None
        self._closed = False
        if isinstance(config, logging.Logger):
            config, logger = None, config
        self.logger = logger
        self.config = ProcessorConfig()
        self._device_spec = device
        self.device: Optional[Device] = None
        if device is not None:
            get_device(device)  # a bad device fails here, not later
        if config is not None or fields:
            self.initialize(config, **fields)

    def _default_device(self) -> Device:
        raise NotImplementedError

    @native
    def initialize(self, config: Optional[ProcessorConfig] = None, **fields: Any) -> None:
        """Validate and adopt ``config`` (copied); ``fields`` override its attributes."""
        if config is not None and not isinstance(config, ProcessorConfig):
            raise TypeError(f"config={config!r}, expected a ProcessorConfig")
        cfg = config.copy() if config is not None else ProcessorConfig()
        for k, v in fields.items():
            if not hasattr(cfg, k) or k == "samples_per_ascan":
                raise TypeError(f"{type(self).__name__}: unknown field {k!r}")
            setattr(cfg, k, v)
        cfg.validate()
        dev = self._default_device()
        res = _as_1d("ProcessorConfig", "resampling_samples", cfg.resampling_samples, np.float32)
        filt = _as_1d("ProcessorConfig", "spectral_filter", cfg.spectral_filter, np.complex64)
        rp, rn = (0, 0) if res is None else (res.ctypes.data, res.size)
        fp, fn = (0, 0) if filt is None else (filt.ctypes.data, filt.size)
        lo, hi = cfg._levels()
        # process.Config's fields as one record; the arrays as (address, count).
        h = api.NewProcessor(dev._h, self._kind, json.dumps({
            "SamplesPerRecord": int(cfg.samples_per_record), "AscansPerBlock": int(cfg.ascans_per_block),
            "ChannelsPerSample": int(cfg.channels_per_sample), "Channel": int(cfg.channel),
            "InterpretAsSigned": bool(cfg.interpret_as_signed),
            "AverageWindow": int(cfg.average_window), "EnableIFFT": bool(cfg.enable_ifft),
            "EnableMagnitude": bool(cfg.enable_magnitude), "EnableSquare": bool(cfg.enable_square),
            "EnableLog10": bool(cfg.enable_log10), "Levels": [lo, hi], "Slots": int(cfg.slots)}), rp, rn, fp, fn)
        if self._h is not None:
            try:
                self._h.Close()
            except BaseException:
                # Re-initialising a processor that an engine uses raises
                # InUseError and changes nothing.
                h.Close()
                raise
        self._h = h
        self.config, self.device = cfg, dev
        self._closed = False  # initialize() after close() makes a new processor

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
        if self._h is not None:
            self._h.Close()  # InUseError leaves the processor usable
            self._h = None
            self._closed = True

    def __repr__(self) -> str:
        if self._h is None:
            return f"<{type(self).__name__} {'closed' if self._closed else '(not initialized)'}>"
        c = self.config
        steps = []
        if c.average_window:
            steps.append(f"dc[{c.average_window}]")
        if c.resampling_samples is not None:
            steps.append("resample")
        if c.spectral_filter is not None:
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
    engine's slot streams. ``device`` defaults to ``"cuda"``."""

    _kind = "cuda"

    def _default_device(self) -> Device:
        return get_device("cuda" if self._device_spec is None else self._device_spec)


class CPUProcessor(_Processor):
    """The same chain in Go on the CPU backend (for machines without a GPU, and tests)."""

    _kind = "cpu"

    def _default_device(self) -> Device:
        return get_device("cpu" if self._device_spec is None else self._device_spec)
