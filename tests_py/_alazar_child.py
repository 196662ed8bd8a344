"""The child side of the Alazar tests (test_alazar.py, test_instrument_misuse.py).

Every case that drives the virtual board runs in its own interpreter
(_subproc.run): the ATS-SDK library is loaded once per process and the
virtual instrument reads its configuration when it loads. PRELUDE is what
each child runs first: one engine over either source, the simulated
source's processing, a host stack endpoint.
"""

from __future__ import annotations

from pathlib import Path

import _subproc


def env(lib: Path, **extra: str) -> dict:
    """A child's environment: the virtual board, a 100 kHz A-line clock, a
    noiseless 32 x 32 phantom, plus ``extra``."""
    e = {"VORTEXGO_ATSAPI_LIBRARY": str(lib), "VGV_ALINE_RATE_HZ": "100000", "VGV_NOISE_LEVEL": "0",
         "VGV_PHANTOM": "32,32,-1,1,-1,1"}
    e.update(extra)
    return e


# The child's helpers: one engine run (simulated-source processing, a host
# stack endpoint), over either source.
PRELUDE = """
import sys, time, threading
sys.path.insert(0, %r)
import numpy as np
import vortexgo as vg
from vortexgo.engine import Engine, EngineConfig, StackHostTensorEndpointFloat32
from vortexgo.process import hann_window, spectral_filter
from vortexgo import alazar
from vortexgo.alazar import AlazarAcquisition, AlazarConfig
from _scans import planner, queue_volumes

S, A, B, RPB = 256, 32, 32, 128
SIM = vg.SimulatedAcquisition(samples_per_record=S, ascans_per_bscan=A, bscans_per_volume=B, volumes=1, noise_level=0)

def alazar_config(**kw):
    ac = AlazarConfig()
    ac.samples_per_record, ac.records_per_block = S, RPB
    ac.inputs.append(alazar.Input(alazar.Channel.B))
    ac.options.append(alazar.AuxIOTriggerOut())
    for k, v in kw.items():
        setattr(ac, k, v)
    return ac

FORMATTER = {}

def engine(acq, volumes, endpoints=None, **kw):
    pc = vg.ProcessorConfig(samples_per_record=S, ascans_per_block=RPB,
                            resampling_samples=SIM.resampling_positions(),
                            spectral_filter=spectral_filter(hann_window(S), SIM.dispersion_compensation()))
    proc = vg.CPUProcessor(pc)
    fmt = planner(A, B)
    eps = endpoints or [StackHostTensorEndpointFloat32()]
    ec = EngineConfig(records_per_block=RPB, blocks_to_allocate=8, preload_count=4, **kw)
    ec.add_acquisition(acq, [proc]); ec.add_processor(proc, [fmt]); ec.add_formatter(fmt, eps)
    eng = Engine(ec)
    queue_volumes(eng, A, B, volumes)
    FORMATTER[id(eng)] = fmt  # a session after a stop resets it (vortex's rule)
    return eng, eps
""" % str(Path(__file__).resolve().parent)


def run(lib: Path, code: str, **kw) -> _subproc.Outcome:
    extra = kw.pop("env", {})
    return _subproc.run(code, prelude=PRELUDE, env=env(lib, **extra), **kw)
