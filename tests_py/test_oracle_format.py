"""vortexgo.format against real vortex 0.5.1, live, where vortex computes on the CPU: Hypothesis
draws slices (start, stop, step) and position-executor placements (pitch, offset, angle);
SimpleSlice.count() and PositionFormatExecutorConfig.set()'s transform must equal vortex's.

Formatted volumes are not compared here: vortex 0.5.1 binds its FormatPlanner without ``next``
and its StackFormatExecutor without ``format`` (only its engine drives them, and the engine
needs a GPU: prepare() creates CUDA events), and its Radial, Spiral and Position executors'
``format`` take CUDA arrays only. gosrc/format's golden files (scripts/golden/format_golden.py,
made on a GPU) cover those."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vortexgo.format import PositionFormatExecutorConfig, SimpleSlice

from _oracle import VortexRaised, oracle_fixture

pytestmark = pytest.mark.timeout(300)

SETTINGS = settings(max_examples=int(os.environ.get("ORACLE_EXAMPLES", 25)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

VORTEX = r'''
import numpy as np
import vortex.format as vf


def counts(slices):
    return [int(vf.SimpleSlice(*s).count()) for s in slices]


def position(pitch, offset, angle):
    c = vf.PositionFormatExecutorConfig()
    c.set(tuple(pitch), tuple(offset), angle)
    return np.asarray(c.transform).tolist()
'''

oracle = oracle_fixture(VORTEX)

slice_args = st.integers(0, 500).flatmap(
    lambda start: st.tuples(st.just(start), st.integers(start + 1, start + 600), st.integers(1, 40)))


@SETTINGS
@given(slices=st.lists(slice_args, min_size=1, max_size=20))
def test_slice_count_same_as_vortex(oracle, slices):
    assert [SimpleSlice(*s).count() for s in slices] == oracle("counts", slices=[list(s) for s in slices])


pair = st.tuples(st.floats(-100, 100, allow_nan=False), st.floats(-100, 100, allow_nan=False))


@SETTINGS
@given(pitch=pair, offset=pair, angle=st.floats(-7, 7, allow_nan=False))
def test_position_set_same_as_vortex(oracle, pitch, offset, angle):
    try:
        theirs = oracle("position", pitch=list(pitch), offset=list(offset), angle=angle)
    except VortexRaised:
        with pytest.raises((ValueError, TypeError)):
            PositionFormatExecutorConfig().set(pitch, offset, angle)
        return
    c = PositionFormatExecutorConfig()
    c.set(pitch, offset, angle)
    np.testing.assert_allclose(np.asarray(c.transform), np.asarray(theirs), rtol=1e-12, atol=1e-12)
