"""Property-based tests of EngineConfig's scalar fields (Hypothesis): any value of any
type either passes validation or raises ValueError / TypeError naming the field, before
anything is allocated; valid ones reach the Go core unchanged."""

from __future__ import annotations

import json
import math

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from vortexgo.engine import EngineConfig  # noqa: E402

PROFILE = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Values users pass by mistake next to good ones: huge and negative ints, floats (NaN,
# infinities), bools, strings, None, containers.
anything = st.one_of(st.integers(min_value=-2**70, max_value=2**70), st.floats(allow_nan=True),
                     st.booleans(), st.text(max_size=4), st.none(), st.lists(st.integers(), max_size=2))
FIELDS = {
    "records_per_block": st.one_of(st.integers(1, 4096), anything),
    "blocks_to_allocate": st.one_of(st.integers(1, 16), anything),
    "preload_count": st.one_of(st.integers(0, 16), anything),
    "blocks_to_acquire": st.one_of(st.integers(0, 100), anything),
    "event_queue_size": st.one_of(st.integers(0, 4096), anything),
    "dispatch_spin": st.one_of(st.none(), st.floats(0.0, 1.0), anything),
    "device_timings": st.one_of(st.booleans(), anything),
    "event_policy": st.one_of(st.sampled_from(["block", "drop"]), anything),
}


@PROFILE
@given(st.fixed_dictionaries({}, optional=FIELDS))
def test_scalar_fields_raise_naming_the_field(fields):
    ec = EngineConfig(**fields)
    with pytest.raises((ValueError, TypeError)) as info:
        ec.validate()  # no acquisition: even a valid configuration stops there
    msg = str(info.value)
    named = [f for f in FIELDS if f in msg]
    if not named:
        # every field valid: the missing acquisition is the error
        assert "add_acquisition" in msg, msg
    else:
        assert any(f in fields or f == "preload_count" for f in named), (fields, msg)


@PROFILE
@given(timings=st.booleans(), spin=st.one_of(st.none(), st.floats(0.0, 1.0)),
       rpb=st.integers(1, 1 << 16), blocks=st.integers(1, 64))
def test_valid_fields_reach_the_core(timings, spin, rpb, blocks):
    ec = EngineConfig(records_per_block=rpb, blocks_to_allocate=blocks, preload_count=min(2, blocks),
                      dispatch_spin=spin, device_timings=timings)
    text, spin_s, spin_set = _record(ec)
    rec = json.loads(text)
    assert rec["DeviceTimings"] is timings
    assert rec["RecordsPerBlock"] == rpb and rec["BlocksToAllocate"] == blocks
    assert "DispatchSpin" not in rec  # seconds, beside the record (engine.SpinSeconds)
    if spin is None:
        assert not spin_set  # the adaptive default
    else:
        assert spin_set and spin_s == float(spin) and not math.isnan(spin)


def _record(ec: EngineConfig) -> tuple[str, float, bool]:
    """The JSON record EngineConfig._native hands the Go core, with the dispatch spin beside it."""
    import vortexgo.engine.config as ve

    captured = {}
    real = ve.api.NewEngineConfig

    def capture(s: str, spin: float, spin_set: bool):
        captured["s"] = (s, spin, spin_set)
        raise _Captured

    ve.api.NewEngineConfig = capture
    try:
        ec._native()
    except _Captured:
        pass
    finally:
        ve.api.NewEngineConfig = real
    return captured["s"]


class _Captured(Exception):
    pass
