"""Where the drivers find the virtual instrument (``VORTEXGO_INSTRUMENTS=virtual``).

The ATS-SDK and NI-DAQmx loaders (gosrc/driver/instrument) read, when a library is first
needed: ``VORTEXGO_ATSAPI_LIBRARY`` / ``VORTEXGO_NIDAQMX_LIBRARY`` (a path: used as is), else,
with ``VORTEXGO_INSTRUMENTS=virtual``, the virtual instrument's fake vendor libraries in
``VORTEXGO_VIRTUAL_DIR``. This module gives that folder its default: the ``build/virtual`` of
the checkout this package lives in (``make virtual`` builds it). docs/hardware.md.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The checkout's build folder of the virtual instrument (instruments/virtual/README.md).
VIRTUAL_DIR = Path(__file__).resolve().parents[2] / "build" / "virtual"


def configure() -> None:
    """Set ``VORTEXGO_VIRTUAL_DIR`` to the checkout's ``build/virtual`` when it is unset."""
    if os.environ.get("VORTEXGO_INSTRUMENTS") == "virtual" and not os.environ.get("VORTEXGO_VIRTUAL_DIR"):
        os.environ["VORTEXGO_VIRTUAL_DIR"] = str(VIRTUAL_DIR)


configure()
