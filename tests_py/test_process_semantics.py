"""The processor's vortex semantics from Python: vortex's defaults, any FFT
length through the engine, levels optional, and channel counts checked
before the engine reads a block (issue 8). The numbers themselves are
compared with vortex 0.5.1's output in gosrc/process (golden files)."""

from __future__ import annotations

import numpy as np
import pytest

import vortexgo as vg
from vortexgo.engine import Engine, EngineConfig, StackDeviceTensorEndpointFloat32
from vortexgo.process import ProcessorConfig, hann_window, spectral_filter

from _scans import planner, queue_volumes


def test_defaults_are_vortex_defaults():
    c = ProcessorConfig()
    assert (c.samples_per_record, c.ascans_per_block, c.channels_per_sample, c.channel) == (1000, 1000, 1, 0)
    assert c.enable_ifft and c.enable_magnitude and c.enable_square and c.enable_log10
    assert c.levels is None and c.average_window == 0 and not c.interpret_as_signed


def _engine(samples: int, *, proc_kw=None, ascans=32, bscans=4):
    acq = vg.SimulatedAcquisition(samples_per_record=samples, ascans_per_bscan=ascans, bscans_per_volume=bscans,
                                  volumes=1)  # endless: the scan queue ends the run
    pc = ProcessorConfig(samples_per_record=samples, ascans_per_block=ascans * 2,
                         resampling_samples=acq.resampling_positions(),
                         spectral_filter=spectral_filter(hann_window(samples), acq.dispersion_compensation()),
                         **(proc_kw or {}))
    proc = vg.CPUProcessor(pc)
    fmt = planner(ascans, bscans)
    ep = StackDeviceTensorEndpointFloat32()
    ec = EngineConfig(records_per_block=ascans * 2, blocks_to_allocate=2, preload_count=1)
    ec.add_acquisition(acq, [proc])
    ec.add_processor(proc, [fmt])
    ec.add_formatter(fmt, [ep])
    eng = Engine(ec)
    queue_volumes(eng, ascans, bscans, 1)
    return eng, acq, ep


@pytest.mark.parametrize("samples", [1376, 2500, 1000])
def test_any_fft_length_through_the_engine(samples):
    """vortex's Axsun100k has 1376 samples: not a power of two, processed
    (before issue 8 our processor refused it)."""
    eng, acq, ep = _engine(samples)
    eng.prepare()
    eng.start()
    eng.wait()
    assert eng.status().volumes == 1
    with ep.tensor as v:
        vol = np.array(v)
    assert vol.shape[-1] == samples and np.isfinite(vol).all()
    # The three strongest reflectors of an A-scan stand out where the
    # simulation put them (by depth, not by height: the simulated source
    # loses sensitivity with depth, as spectral-domain OCT does).
    a = vol[2, 5]
    floor = np.median(a[16: samples // 2])
    for depth, _ in sorted(acq.reflectors(0, 2, 5), key=lambda r: -r[1])[:3]:
        near = a[int(round(depth)) - 2: int(round(depth)) + 3]
        assert near.max() > floor + 20, (depth, near, floor)


def test_channel_mismatch_is_refused_before_reading_a_block():
    eng, _, _ = _engine(256, proc_kw=dict(channels_per_sample=2, channel=1))
    with pytest.raises(ValueError, match="reads 512 raw values per record"):
        eng.prepare()


@pytest.mark.parametrize("levels,ok", [(None, True), ((60.0, 0.0), True), ((0.0, 60.0), True),
                                       ((1.0, 1.0), False), ((0.0, float("nan")), False)])
def test_levels_optional_and_checked(levels, ok):
    if ok:
        vg.CPUProcessor(samples_per_record=64, ascans_per_block=8, levels=levels).close()
    else:
        with pytest.raises(ValueError, match="levels"):
            vg.CPUProcessor(samples_per_record=64, ascans_per_block=8, levels=levels)
