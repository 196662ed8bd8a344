"""IO: where the generated waveforms and strobes go (vortex's ``vortex.io``), wired with
``EngineConfig.add_io(io, preload=True, master=False, lead_samples=0)``.

:class:`NullIO` accepts the waveforms and drops them. :class:`SimulatedIO`
is a simulated galvo IO: it records every sample it would output, the galvo
waveform and the digital strobe word (the latest ``record_samples`` of them,
in a bounded ring) and, with ``feedback``, writes
a copy delayed by ``feedback_delay`` samples as the measured position (for
:class:`~vortexgo.format.PositionFormatExecutor` with
``use_target_position=False``). Hardware drivers are not part of vortexgo: a
DAQ driver is one Go package implementing ``engine.IO``.
"""

from __future__ import annotations


import numpy as np

from ._attrs import NoCopy, StrictAttributes
from ._core import api
from ._errors import native
from ._layouts import SIM_IO_STATE, SIM_IO_WINDOW
from ._validate import check_bool, check_int

__all__ = ["NullIO", "SimulatedIO"]


class _IO(NoCopy, StrictAttributes):
    def _handle(self):
        return self._h

    def close(self) -> None:
        """Release the IO (refused with InUseError while an engine uses it)."""
        native(self._h.Close)()


class NullIO(_IO):
    """vortex's ``NullIO``: accepts every block, outputs nothing."""

    def __init__(self) -> None:
        self._h = native(api.NewNullIO)()

    def __repr__(self) -> str:
        return "<NullIO>"


class SimulatedIO(_IO):
    """A simulated galvo IO recording what it would output: the galvo waveform
    (:meth:`recorded`) and the digital strobe words (:meth:`recorded_strobes`).

    Args:
        record_samples: how many of the latest output samples are kept (default 65,536).
        feedback: write the output, delayed, as the measured position.
        feedback_delay: the delay of the measured position, in samples.
    """

    def __init__(self, record_samples: int = 1 << 16, feedback: bool = False, feedback_delay: int = 0) -> None:
        record_samples = check_int("SimulatedIO.record_samples", record_samples, 1, 1 << 24)
        self._h = native(api.NewSimIO)(record_samples, check_bool("SimulatedIO.feedback", feedback),
                                       check_int("SimulatedIO.feedback_delay", feedback_delay, 0, 1 << 24))
        self.record_samples = record_samples

    def _state(self):
        return native(SIM_IO_STATE.read)(self._h.State)

    @property
    def samples(self) -> int:
        """Samples output so far (including those the ring no longer holds)."""
        return self._state().samples

    @property
    def started(self) -> bool:
        return bool(self._state().started)

    @property
    def stopped(self) -> bool:
        return bool(self._state().stopped)

    def recorded(self, channels: int = 2) -> tuple[int, np.ndarray]:
        """The latest recorded samples as ``(first_sample, array (rows, channels))``, oldest first."""
        channels = check_int("channels", channels, 1, 64)
        buf = np.zeros((self.record_samples, channels), np.float64)
        w = native(SIM_IO_WINDOW.read)(self._h.Recorded, buf.ctypes.data, buf.size)
        if w.rows and w.channels != channels:
            raise ValueError(f"channels={channels}, expected {w.channels} (EngineConfig.galvo_output_channels)")
        return w.first, buf[: w.rows].copy()

    def recorded_strobes(self) -> tuple[int, np.ndarray]:
        """The latest recorded strobe words as ``(first_sample, uint32 array (rows,))``, oldest
        first: bit ``line`` of each word is that line's level (``EngineConfig.strobes``)."""
        buf = np.zeros(self.record_samples, np.uint32)
        w = native(SIM_IO_WINDOW.read)(self._h.RecordedStrobes, buf.ctypes.data, buf.size)
        return w.first, buf[: w.rows].copy()

    def __repr__(self) -> str:
        return f"<SimulatedIO {self.samples} samples output>"
