"""vortexgo.storage against real vortex 0.5.1, live and byte for byte: Hypothesis draws shapes,
headers, data and sequences of writes, seeks and volume advances for SimpleStack (int8 and
uint16: vortex 0.5.1's wider stacks take no NumPy array) and BroctStorage, and marker lists for
MarkerLog (text and binary); vortex (its own process, tests_py/_oracle.py) and vortexgo replay
them and the files they leave must be equal, as must the first operation each refuses.
(vortex's SimpleStream and StreamDump have no write from Python: only its engine, which needs a
GPU, writes them; test_storage_more.py compares what open and close leave.)"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from vortexgo import marker as vm
from vortexgo import storage as vs

from _oracle import oracle_fixture
from test_storage import MAT_DATA_TAG, MI, MX

pytestmark = pytest.mark.timeout(300)

SETTINGS = settings(max_examples=int(os.environ.get("ORACLE_EXAMPLES", 25)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
U64 = (1 << 64) - 1
NAMES = {"int8": "Int8", "uint16": "UInt16"}
HEADERS = ["Empty", "NumPy", "MATLAB", "NRRD", "NifTI"]

# vortex's side: the marker and BroctStorage set-ups of scripts/golden/storage_more_golden.py, imported
# there, and one handler per storage.
GOLDEN = Path(__file__).resolve().parents[1] / "scripts" / "golden"
VORTEX = f"import sys\nsys.path.insert(0, {str(GOLDEN)!r})\n" + r'''
import vortex.marker as vm
import vortex.storage as vs

from storage_more_golden import broct_config, vortex_markers

NAMES = {"int8": "Int8", "uint16": "UInt16"}


def replay(st, ops):
    """Run ops ([name, *args], arrays by file name); the index of the first that raised, or None."""
    for i, op in enumerate(ops):
        name, args = op[0], [load(a) if isinstance(a, str) else a for a in op[1:]]
        try:
            getattr(st, name)(*args)
        except Exception:
            return i
    return None


def stack(path, shape, header, dtype, ops):
    cfg = vs.SimpleStackConfig()
    cfg.path = path
    cfg.shape = tuple(shape)
    cfg.header = getattr(vs.SimpleStackHeader, header)
    st = getattr(vs, "SimpleStack" + NAMES[dtype])()
    st.open(cfg)
    failed = replay(st, ops)
    st.close()
    return failed


def broct(path, shape, dimensions, scan_type, notes, ops):
    st = vs.BroctStorage()
    st.open(broct_config(vs, path, shape, dimensions, scan_type, notes))
    failed = replay(st, ops)
    st.close()
    return failed


def markers(path, binary, batches):
    log = vs.MarkerLog()
    log.open(vs.MarkerLogConfig(path, binary))
    for batch in batches:
        log.write(vortex_markers(vm, batch))
    log.close()
'''

oracle = oracle_fixture(VORTEX)


def values(dtype: str, shape: tuple, seed: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max, shape, endpoint=True, dtype=dtype)


@st.composite
def stack_case(draw):
    b, a, s, c = (draw(st.integers(1, 4)), draw(st.integers(1, 5)), draw(st.integers(1, 6)), draw(st.integers(1, 2)))
    dtype = draw(st.sampled_from(sorted(NAMES)))
    seed = st.integers(0, 2**32 - 1)
    ops = []
    for _ in range(draw(st.integers(0, 7))):
        kind = draw(st.sampled_from(["write_volume", "write_multi_bscan", "write_partial_bscan", "advance_volume",
                                     "seek"]))
        if kind == "write_volume":
            ops.append([kind, ("data", (b, a, s, c), draw(seed))])
        elif kind == "write_multi_bscan":
            i = draw(st.integers(0, b - 1))
            ops.append([kind, i, ("data", (draw(st.integers(1, b - i + 1)), a, s, c), draw(seed))])  # up to one B-scan past the end
        elif kind == "write_partial_bscan":
            j = draw(st.integers(0, a - 1))
            ops.append([kind, draw(st.integers(0, b - 1)), j, ("data", (draw(st.integers(1, a - j + 1)), s, c), draw(seed))])
        elif kind == "advance_volume":
            ops.append([kind, draw(st.booleans())])
        else:
            ops.append([kind, draw(st.integers(0, 3)), draw(st.integers(0, b - 1))])
    return (b, a, s, c), dtype, draw(st.sampled_from(HEADERS)), ops


def materialise(oracle, ops: list, dtype: str) -> tuple[list, list]:
    """The ops with their arrays: (ours, vortex's with file names)."""
    mine, theirs = [], []
    for op in ops:
        args = [values(dtype, a[1], a[2]) if isinstance(a, tuple) else a for a in op[1:]]
        mine.append([op[0], *args])
        theirs.append([op[0], *[oracle.put(a) if isinstance(a, np.ndarray) else a for a in args]])
    return mine, theirs


def replay(st, ops: list):
    for i, op in enumerate(ops):
        try:
            getattr(st, op[0])(*op[1:])
        except (ValueError, TypeError, IndexError) as e:
            event(f"refused: {op[0]}")
            return i
    return None


@SETTINGS
@given(case=stack_case())
def test_simple_stack_file_same_as_vortex(oracle, case):
    shape, dtype, header, ops = case
    mine, theirs = materialise(oracle, ops, dtype)
    path = Path(oracle.path(".bin"))
    failed = oracle("stack", path=str(path), shape=list(shape), header=header, dtype=dtype, ops=theirs)
    want = bytearray(path.read_bytes())
    if header == "MATLAB":
        # The two known differences (gosrc/storage/headers.go, matHeader): vortex types the data
        # element with the array's class (mxINT8_CLASS...), which scipy refuses, vortexgo with
        # miINT8...; vortex's miMATRIX size leaves out the data's padding to 8 bytes, vortexgo's
        # counts it (readers that follow the sizes land on the next element).
        assert int.from_bytes(want[MAT_DATA_TAG:MAT_DATA_TAG + 4], "little") == MX[dtype]
        want[MAT_DATA_TAG:MAT_DATA_TAG + 4] = MI[dtype].to_bytes(4, "little")
        size = int.from_bytes(want[132:136], "little")
        want[132:136] = (72 + (size - 72 + 7) // 8 * 8).to_bytes(4, "little")
    st_ = getattr(vs, "SimpleStack" + NAMES[dtype])()
    st_.open(vs.SimpleStackConfig(str(path), shape, header=getattr(vs.SimpleStackHeader, header)))
    assert replay(st_, mine) == failed
    st_.close()
    assert path.read_bytes() == bytes(want)


@st.composite
def broct_case(draw):
    b, a, s = draw(st.integers(1, 4)), draw(st.integers(1, 5)), draw(st.integers(1, 6))
    seed = st.integers(0, 2**32 - 1)
    ops = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["write_volume", "write_bscan", "write_multi_bscan", "advance_volume", "seek"]))
        if kind == "write_volume":
            ops.append([kind, ("data", (b, s, a), draw(seed))])
        elif kind == "write_bscan":
            ops.append([kind, draw(st.integers(0, b - 1)), ("data", (s, a), draw(seed))])
        elif kind == "write_multi_bscan":
            i = draw(st.integers(0, b - 1))
            ops.append([kind, i, ("data", (draw(st.integers(1, b - i + 1)), s, a), draw(seed))])
        elif kind == "advance_volume":
            ops.append([kind, draw(st.booleans())])
        else:
            ops.append([kind, draw(st.integers(0, 3)), draw(st.integers(0, b - 1))])
    dims = [draw(st.floats(0.001, 100).map(lambda x: round(x, 4))) for _ in range(3)]
    notes = draw(st.text(st.characters(codec="ascii", exclude_categories=["Cc"]), max_size=20))
    return (b, a, s), dims, draw(st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7])), notes, ops


@SETTINGS
@given(case=broct_case())
def test_broct_file_same_as_vortex(oracle, case):
    shape, dims, scan_type, notes, ops = case
    mine, theirs = materialise(oracle, ops, "int8")
    path = Path(oracle.path(".broct"))
    failed = oracle("broct", path=str(path), shape=list(shape), dimensions=dims, scan_type=scan_type, notes=notes,
                    ops=theirs)
    want = path.read_bytes()
    st_ = vs.BroctStorage()
    st_.open(vs.BroctStorageConfig(str(path), shape, tuple(dims), vs.BroctScan(scan_type), notes))
    assert replay(st_, mine) == failed
    st_.close()
    assert path.read_bytes() == want


big = st.integers(0, 2**40)
marker_record = st.one_of(
    st.builds(lambda s, q, h, f: [1, s, q, 0, h, 0, f, 0], big, st.integers(0, 1000), st.integers(0, 1000),
              st.integers(0, U64)),
    st.builds(lambda s, q, i, h, f, r: [2, s, q, i, h, 0, f, r], big, st.integers(0, 1000), st.integers(0, 1000),
              st.integers(0, 1000), st.integers(0, U64), st.integers(0, 1)),
    st.builds(lambda s, q, i, h, f, r: [3, s, q, i, h, 0, f, r], big, st.integers(0, 1000), st.integers(0, 1000),
              st.integers(0, 1000), st.integers(0, U64), st.integers(0, 1)),
    st.builds(lambda s: [4, s, 0, 0, 0, 0, 0, 0], big),
    st.builds(lambda s: [5, s, 0, 0, 0, 0, 0, 0], big),
    st.builds(lambda s, i, f: [6, s, 0, 0, 0, i, f, 0], big, st.integers(0, 2**32), st.integers(0, U64)),
)


def to_signed(r: list) -> list:
    """A marker record with its flags as int64 (vortexgo.marker's record layout)."""
    return r[:6] + [r[6] - (1 << 64) if r[6] >= 1 << 63 else r[6]] + r[7:]


@SETTINGS
@given(batches=st.lists(st.lists(marker_record, max_size=6), max_size=4), binary=st.booleans())
def test_marker_log_file_same_as_vortex(oracle, batches, binary):
    path = Path(oracle.path(".log"))
    oracle("markers", path=str(path), binary=binary, batches=batches)
    want = path.read_bytes()
    log = vs.MarkerLog()
    log.open(vs.MarkerLogConfig(str(path), binary))
    for batch in batches:
        log.write(vm._from_records(np.array([to_signed(r) for r in batch], np.int64).reshape(-1, 8)))
    log.close()
    assert path.read_bytes() == want
