"""Golden files of vortex's SimpleStack storages for gosrc/storage's tests.

vortex's SimpleStack{Int8,UInt16,UInt64,Float64} run on the CPU without the
engine (vortex 0.5.1's Python build has no SimpleStackFloat32). For each
scenario below, each dtype and each header this script replays the same
operations through vortex and keeps the file vortex wrote; gosrc/storage's
tests (and tests_py/test_storage.py) replay them through vortexgo and compare
byte for byte.

Run (vortex importable; see /work/notes/common.md):
    PYTHONPATH=/tmp/vortex_site/vortex python scripts/golden/storage_golden.py gosrc/storage/testdata
It writes OUTDIR/storage_ops.json (the scenarios) and OUTDIR/vortex/<scenario>_<dtype>_<header>.bin.
"""

import json
import os
import sys

import numpy as np

SHAPE = (2, 3, 4, 2)  # (bscans, ascans, samples, channels)

# Each op: [name, args...]; data args are [seed, count] where count is the
# number of leading items (volume: B-scans; partial: A-scans).
SCENARIOS = {
    "empty": [],
    "clean": [["write_volume", 1], ["advance_volume"], ["write_volume", 2], ["advance_volume"]],
    "mixed": [
        ["write_volume", 1], ["advance_volume"],
        ["write_partial_bscan", 1, 1, 2, 2],  # bscan, ascan, seed, A-scans
        ["advance_volume"],
        ["write_multi_bscan", 1, 3, 1],  # index, seed, B-scans
        ["seek", 0, 0], ["write_partial_bscan", 0, 0, 4, 1],
        ["seek", 3, 0], ["advance_volume", False],
        ["write_partial_bscan", 0, 2, 5, 1],
    ],
    "unadvanced": [["write_volume", 1], ["advance_volume"], ["write_volume", 2]],
}
DTYPES = ["int8", "uint16", "uint64", "float64"]
# vortex 0.5.1's SimpleStackUInt64 and SimpleStackFloat64 refuse every NumPy
# array (write_volume and the others raise TypeError even for a C-contiguous
# array of their own dtype), so those two have only the "empty" scenario.
WRITABLE = {"int8", "uint16"}
HEADERS = ["Empty", "NumPy", "MATLAB", "NRRD", "NifTI"]


def data(dtype, seed, shape):
    """The values every replay writes: small integers exact in each dtype."""
    n = int(np.prod(shape))
    return ((np.arange(n) * 3 + 7 * seed) % 100 + 1).astype(dtype).reshape(shape)


def replay(stack, ops, dtype):
    b, a, s, c = SHAPE
    for op in ops:
        name, args = op[0], op[1:]
        if name == "write_volume":
            stack.write_volume(data(dtype, args[0], SHAPE))
        elif name == "write_multi_bscan":
            stack.write_multi_bscan(args[0], data(dtype, args[1], (args[2], a, s, c)))
        elif name == "write_partial_bscan":
            stack.write_partial_bscan(args[0], args[1], data(dtype, args[2], (args[3], s, c)))
        elif name == "advance_volume":
            stack.advance_volume(*args)
        elif name == "seek":
            stack.seek(*args)
        else:
            raise ValueError(name)


def main(out):
    import vortex.storage as vs

    os.makedirs(os.path.join(out, "vortex"), exist_ok=True)
    with open(os.path.join(out, "storage_ops.json"), "w") as f:
        json.dump({"shape": SHAPE, "scenarios": SCENARIOS}, f, indent=1)
    for scenario, ops in SCENARIOS.items():
        for dtype in DTYPES:
            if ops and dtype not in WRITABLE:
                continue
            for header in HEADERS:
                path = os.path.join(out, "vortex", f"{scenario}_{dtype}_{header}.bin")
                cfg = vs.SimpleStackConfig()
                cfg.path = path
                cfg.shape = SHAPE
                cfg.header = getattr(vs.SimpleStackHeader, header)
                name = {"int8": "Int8", "uint16": "UInt16", "uint64": "UInt64", "float64": "Float64"}[dtype]
                stack = getattr(vs, "SimpleStack" + name)()
                stack.open(cfg)
                replay(stack, ops, np.dtype(dtype))
                stack.close()


if __name__ == "__main__":
    main(sys.argv[1])
