"""Golden files of vortex's other storages (BroctStorage, MarkerLog,
SimpleStream, StreamDump) for gosrc/storage's tests and tests_py/test_storage_more.py.

vortex 0.5.1's Python build runs these on the CPU without the engine. For
each scenario below this script replays the operations through vortex and
keeps the file vortex wrote; the tests replay them through vortexgo and
compare byte for byte. vortex's SimpleStream and StreamDump have no write
from Python (only its engine endpoints write them), so their files here are
what open and close leave: empty.

Run (vortex importable; see /work/notes/common.md):
    PYTHONPATH=/tmp/vortex_site/vortex python scripts/golden/storage_more_golden.py gosrc/storage/testdata
It writes OUTDIR/storage_more.json (the scenarios) and OUTDIR/vortex_more/*.
"""

import json
import os
import sys

import numpy as np

BROCT = {
    "shape": [2, 3, 4],  # (bscans, ascans, samples)
    "dimensions": [1.5, 2.5, 3.5],
    "scan_type": 4,  # radial
    "notes": "vortexgo golden",
    # Each op: [name, args...]; data args are [seed, count] with count
    # leading B-scans (write_volume: a whole volume).
    "scenarios": {
        "empty": [],
        "volumes": [["write_volume", 1], ["write_volume", 2]],
        "mixed": [
            ["write_volume", 1], ["advance_volume"],
            ["write_bscan", 1, 2],
            ["advance_volume"],
            ["write_multi_bscan", 0, 3, 2],
            ["seek", 5, 0], ["advance_volume", False],
            ["write_bscan", 0, 4],
        ],
    },
}

# Markers as marker records (python/vortexgo/marker.py's layout:
# kind, sample, sequence, index, count_hint, id, flags, reversed).
U64 = 2**64 - 1
MARKERS = [
    [1, 1, 2, 0, 3, 0, -1, 0],
    [2, 10, 1, 2, 5, 0, -1, 1],
    [3, 20, 3, 4, 7, 0, 5, 0],
    [4, 30, 0, 0, 0, 0, 0, 0],
    [5, 40, 0, 0, 0, 0, 0, 0],
    [6, 50, 0, 0, 0, 9, -1, 0],
    [2, 123456789012, 7, 7, 0, 0, 0, 0],
]
STREAM_DTYPES = ["int8", "uint16", "uint64", "float64"]


def data(seed, shape):
    """The values every replay writes: small int8 values."""
    n = int(np.prod(shape))
    return ((np.arange(n) * 3 + 7 * seed) % 100 + 1).astype(np.int8).reshape(shape)


def vortex_marker(vm, record):
    """vortex's marker for one marker record (the layout of MARKERS; flags as int64 or uint64)."""
    kind, sample, seq, index, hint, id_, flags, rev = record
    if kind == 1:
        m = vm.ScanBoundary(sample, seq, hint)
    elif kind == 2:
        m = vm.VolumeBoundary(sample, seq, index, bool(rev), hint)
    elif kind == 3:
        m = vm.SegmentBoundary(sample, seq, index, bool(rev), hint)
    elif kind == 4:
        m = vm.ActiveLines()
    elif kind == 5:
        m = vm.InactiveLines()
    else:
        m = vm.Event()
        m.id = id_
    m.sample = sample
    if kind in (1, 2, 3, 6):
        m.flags = vm.Flags(flags & U64)
    return m


def vortex_markers(vm, records=MARKERS):
    """vortex's markers for the marker records (MARKERS unless given)."""
    return [vortex_marker(vm, r) for r in records]


def broct_config(vs, path, shape, dimensions, scan_type, notes):
    """vortex's BroctStorageConfig: (B-scans, A-scans, samples), their dimensions, a BroctScan value."""
    return vs.BroctStorageConfig(path, tuple(shape), tuple(dimensions), vs.BroctScan(scan_type), notes)


def main(out):
    import vortex.marker as vm
    import vortex.storage as vs

    d = os.path.join(out, "vortex_more")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(out, "storage_more.json"), "w") as f:
        json.dump({"broct": BROCT, "markers": MARKERS, "stream_dtypes": STREAM_DTYPES}, f, indent=1)

    b, a, s = BROCT["shape"]
    for name, ops in BROCT["scenarios"].items():
        cfg = broct_config(vs, os.path.join(d, f"broct_{name}.broct"), BROCT["shape"], BROCT["dimensions"],
                           BROCT["scan_type"], BROCT["notes"])
        st = vs.BroctStorage()
        st.open(cfg)
        for op in ops:
            n, args = op[0], op[1:]
            if n == "write_volume":
                st.write_volume(data(args[0], (b, s, a)))
            elif n == "write_bscan":
                st.write_bscan(args[0], data(args[1], (s, a)))
            elif n == "write_multi_bscan":
                st.write_multi_bscan(args[0], data(args[1], (args[2], s, a)))
            elif n == "advance_volume":
                st.advance_volume(*args)
            elif n == "seek":
                st.seek(*args)
            else:
                raise ValueError(n)
        st.close()

    for binary in (False, True):
        log = vs.MarkerLog()
        log.open(vs.MarkerLogConfig(os.path.join(d, "markers_" + ("binary.bin" if binary else "text.txt")), binary))
        log.write(vortex_markers(vm))
        log.write([])
        log.close()

    for dt in STREAM_DTYPES:
        name = {"int8": "Int8", "uint16": "UInt16", "uint64": "UInt64", "float64": "Float64"}[dt]
        st = getattr(vs, "SimpleStream" + name)()
        st.open(vs.SimpleStreamConfig(os.path.join(d, f"stream_{dt}.bin")))
        st.close()
    dump = vs.StreamDump()
    dump.open(vs.StreamDumpConfig(os.path.join(d, "dump.bin"), 1, 2))
    dump.close()


if __name__ == "__main__":
    main(sys.argv[1])
