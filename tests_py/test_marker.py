"""vortexgo.marker: vortex's marker classes (names, defaults, reprs) and the
record layout that carries them to the Go core."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, strategies as st

from vortexgo import marker as m

ALL = 0xFFFFFFFFFFFFFFFF

# Reprs printed by vortex 0.5.1 itself (../shared/vortex-build) for the same
# constructions; vortex's MarkerList repr lacks separators, ours has them.
VORTEX_REPRS = [
    (m.ScanBoundary(), "ScanBoundary(sample=0, sequence=0, volume_count_hint=0, flags=Flags(value=0xffffffffffffffff))"),
    (m.VolumeBoundary(), "VolumeBoundary(sample=0, sequence=0, index_in_scan=0, reversed=False, segment_count_hint=0, flags=Flags(value=0xffffffffffffffff))"),
    (m.SegmentBoundary(), "SegmentBoundary(sample=0, sequence=0, index_in_volume=0, reversed=False, record_count_hint=0, flags=Flags(value=0xffffffffffffffff))"),
    (m.ActiveLines(), "ActiveLines(sample=0)"),
    (m.InactiveLines(), "InactiveLines(sample=0)"),
    (m.Event(), "Event(sample=0, id=0, flags=Flags(value=0xffffffffffffffff))"),
    (m.ScanBoundary(5, 2), "ScanBoundary(sample=5, sequence=2, volume_count_hint=0, flags=Flags(value=0xffffffffffffffff))"),
    (m.VolumeBoundary(1, 2, True), "VolumeBoundary(sample=1, sequence=2, index_in_scan=2, reversed=True, segment_count_hint=0, flags=Flags(value=0xffffffffffffffff))"),
    (m.SegmentBoundary(1, 2, 3, True, 7), "SegmentBoundary(sample=1, sequence=2, index_in_volume=3, reversed=True, record_count_hint=7, flags=Flags(value=0xffffffffffffffff))"),
    (m.Flags(), "Flags(value=0x0)"),
    (m.Flags.all(), "Flags(value=0xffffffffffffffff)"),
]


@pytest.mark.parametrize("obj,text", VORTEX_REPRS, ids=[t.split("(")[0] + str(i) for i, (_, t) in enumerate(VORTEX_REPRS)])
def test_defaults_and_reprs_match_vortex(obj, text):
    assert repr(obj) == text


def test_flags_set_clear_as_vortex():
    f = m.Flags()
    f.set(3)
    assert f.value == 0x8
    f.set()
    assert f.value == ALL
    f.clear(0)
    assert f.value == 0xFFFFFFFFFFFFFFFE
    f.clear()
    assert f == m.Flags.none()
    assert m.Flags(3) == m.Flags(3) and m.Flags(3) != m.Flags(1)
    assert m.Flags(6).matches(m.Flags(2)) and not m.Flags(4).matches(m.Flags(2))
    assert m.Flags.max_unique == 64
    g = copy.copy(m.Flags(7))
    assert g == m.Flags(7)


@pytest.mark.parametrize("call,exc,words", [
    (lambda: m.Flags().set(64), ValueError, "Flags.set(index)=64"),
    (lambda: m.Flags().clear(-1), ValueError, "Flags.clear(index)=-1"),
    (lambda: m.Flags(2**64), ValueError, "Flags.value"),
    (lambda: m.ScanBoundary(-1, 0), ValueError, "ScanBoundary.sample=-1"),
    (lambda: m.VolumeBoundary(0, 0, -3, False), ValueError, "VolumeBoundary.index_in_scan=-3"),
    (lambda: m.SegmentBoundary(0, 0, 0, "yes"), TypeError, "SegmentBoundary.reversed"),
    (lambda: m.Event(0, 1.5), TypeError, "Event.id"),
    (lambda: m.ScanBoundary(0, 0, 0, 5), TypeError, "ScanBoundary.flags"),
    (lambda: m.SegmentBoundary(0, 0, 0, False, 0, m.Flags(), 9), TypeError, "at most 6"),
    (lambda: m.VolumeBoundary(0, 0, bogus=1), TypeError, "bogus"),
    (lambda: m.MarkerList([1]), TypeError, "MarkerList item"),
    (lambda: m.MarkerList().append("x"), TypeError, "MarkerList.append"),
])
def test_bad_values_name_the_field(call, exc, words):
    with pytest.raises(exc, match=words.replace("(", r"\(").replace(")", r"\)")):
        call()


def test_marker_list_is_a_typed_list():
    ml = m.MarkerList([m.ActiveLines(), m.Event()])
    ml.append(m.ScanBoundary())
    ml += [m.InactiveLines(3)]
    assert len(ml) == 4 and isinstance(ml[2], m.ScanBoundary)
    assert repr(ml).startswith("MarkerList[ActiveLines(sample=0), Event(")
    with pytest.raises(TypeError):
        ml[0] = 3
    with pytest.raises(TypeError):
        ml[0:1] = [None]
    assert ml == m.MarkerList(list(ml))


def test_markers_compare_copy_and_hash_by_value():
    a = m.SegmentBoundary(10, 1, 0, True, 5)
    b = a.copy()
    assert a == b and hash(a) == hash(b) and a is not b
    b.reversed = False
    assert a != b
    assert m.ActiveLines(1) != m.InactiveLines(1)
    e = copy.deepcopy(m.Event(1, 2, m.Flags(4)))
    assert e.flags == m.Flags(4)


def test_flags_are_copied_into_a_marker():
    f = m.Flags(1)
    sb = m.ScanBoundary(0, 0, 0, f)
    f.set(5)
    assert sb.flags == m.Flags(1), "a marker keeps its own flags, not the caller's object"


u64 = st.integers(0, 2**64 - 1)
counter = st.integers(0, 2**63 - 1)
markers = st.one_of(
    st.builds(m.ScanBoundary, counter, counter, counter, st.builds(m.Flags, u64)),
    st.builds(m.VolumeBoundary, counter, counter, counter, st.booleans(), counter, st.builds(m.Flags, u64)),
    st.builds(m.SegmentBoundary, counter, counter, counter, st.booleans(), counter, st.builds(m.Flags, u64)),
    st.builds(m.ActiveLines, counter),
    st.builds(m.InactiveLines, counter),
    st.builds(m.Event, counter, u64, st.builds(m.Flags, u64)),
)


@given(st.lists(markers, max_size=20))
def test_records_round_trip(ms):
    rec = m._to_records(ms)
    assert rec.dtype == np.int64 and rec.shape == (len(ms), len(m.RECORD_FIELDS))
    assert list(m._from_records(rec)) == ms


def test_records_layout_matches_go_marker():
    rec = m._to_records([m.SegmentBoundary(7, 3, 2, True, 9, m.Flags(5)), m.Event(8, ALL)])
    row = dict(zip(m.RECORD_FIELDS, rec[0]))
    assert row == {"kind": 3, "sample": 7, "sequence": 3, "index": 2, "count_hint": 9, "id": 0, "flags": 5, "reversed": 1}
    assert rec[1][m.RECORD_FIELDS.index("id")] == -1, "an unsigned id travels as the int64 with the same bits"
    with pytest.raises(ValueError, match="kind=9"):
        m._from_records(np.array([[9, 0, 0, 0, 0, 0, 0, 0]]))
    with pytest.raises(ValueError, match="records.shape"):
        m._from_records(np.zeros((2, 3)))
