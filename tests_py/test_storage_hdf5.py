"""vortexgo.storage's HDF5Stack*: files written through the HDF5 C library
(loaded at run time: the system's or h5py's bundled copy), read back with h5py
and equal to what was written, with vortex's layout (dataset ``data`` of
(volumes, bscans, ascans, samples, channels), chunks of one A-scan, deflate at
compression_level, MATLAB userblock); a crash keeps every volume advanced past;
bad input refused naming the argument."""

import os

import numpy as np
import pytest

import vortexgo as vg
from vortexgo import storage as vs

from _subproc import run

h5py = pytest.importorskip("h5py")

try:
    LIB = vs.hdf5_library()
except vg.VortexError as e:  # pragma: no cover - h5py present means its library is too
    pytest.skip(f"no HDF5 library: {e}", allow_module_level=True)

SHAPE = (2, 3, 4, 2)
CLASSES = {"int8": vs.HDF5StackInt8, "uint16": vs.HDF5StackUInt16, "uint64": vs.HDF5StackUInt64,
           "float32": vs.HDF5StackFloat32, "float64": vs.HDF5StackFloat64}


def data(dtype, seed, shape):
    n = int(np.prod(shape))
    return ((np.arange(n) * 3 + 7 * seed) % 100 + 1).astype(dtype).reshape(shape)


# ops, and an independent model of vortex's hdf5_stack_t: the dataset holds
# volumes 0 .. allocated-1, zero where nothing was written.
SCENARIOS = {
    "clean": [["write_volume", 1], ["advance_volume"], ["write_volume", 2], ["advance_volume", False]],
    "mixed": [["write_volume", 1], ["advance_volume"], ["write_partial_bscan", 1, 1, 2, 2], ["advance_volume"],
              ["write_multi_bscan", 1, 3, 1], ["advance_volume", False], ["advance_volume", False],
              ["write_partial_bscan", 0, 2, 5, 1]],
    "allocated": [["advance_volume"], ["advance_volume"]],
}


def replay(st, ops, dtype):
    b, a, s, c = SHAPE
    vols, cur, allocated = {}, 0, 0
    for name, *args in ops:
        if name == "advance_volume":
            st.advance_volume(*args)
            cur += 1
            if not args or args[0]:
                allocated = max(allocated, cur + 1)
            continue
        v = vols.setdefault(cur, np.zeros(SHAPE, dtype))
        allocated = max(allocated, cur + 1)
        if name == "write_volume":
            d = data(dtype, args[0], SHAPE)
            st.write_volume(d)
            v[:] = d
        elif name == "write_multi_bscan":
            d = data(dtype, args[1], (args[2], a, s, c))
            st.write_multi_bscan(args[0], d)
            v[args[0]:args[0] + args[2]] = d
        elif name == "write_partial_bscan":
            d = data(dtype, args[2], (args[3], s, c))
            st.write_partial_bscan(args[0], args[1], d)
            v[args[0], args[1]:args[1] + args[3]] = d
    return np.stack([vols.get(i, np.zeros(SHAPE, dtype)) for i in range(allocated)]) if allocated else \
        np.zeros((0,) + SHAPE, dtype)


@pytest.mark.parametrize("level", [0, 6])
@pytest.mark.parametrize("header", list(vs.HDF5StackHeader))
@pytest.mark.parametrize("dtype", list(CLASSES))
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_read_back_with_h5py(tmp_path, scenario, dtype, header, level):
    path = tmp_path / "out.h5"
    st = CLASSES[dtype]()
    st.open(vs.HDF5StackConfig(str(path), SHAPE, header, level))
    assert st.ready and st.shape == SHAPE
    want = replay(st, SCENARIOS[scenario], np.dtype(dtype))
    st.close()
    assert not st.ready
    with h5py.File(path, "r") as f:
        d = f["data"]
        assert d.dtype == np.dtype(dtype)
        assert d.maxshape == (None,) + SHAPE
        assert d.chunks == (1, 1, 1) + SHAPE[2:]
        assert d.fillvalue == 0
        # vortex sets deflate at every level, 0 included (a filter that stores).
        assert (d.compression, d.compression_opts) == ("gzip", level)
        np.testing.assert_array_equal(d[...], want)
        if header is vs.HDF5StackHeader.MATLAB:
            cls = {"float32": "single", "float64": "double"}.get(dtype, dtype)
            assert d.attrs["MATLAB_class"] in (cls, cls.encode())
            assert f.userblock_size == 512
    if header is vs.HDF5StackHeader.MATLAB:
        pre = path.read_bytes()[:128]
        assert pre[:6] == b"MATLAB" and pre[6:116] == b" " * 110 and pre[116:124] == bytes(8)
        assert pre[124:] == b"\x00\x02IM"


def test_compression_shrinks(tmp_path):
    sizes = {}
    for level in (0, 9):
        st = vs.HDF5StackUInt16()
        st.open(vs.HDF5StackConfig(str(tmp_path / f"{level}.h5"), (4, 16, 256), compression_level=level))
        st.write_volume(np.zeros((4, 16, 256), np.uint16) + 7)
        st.advance_volume(False)
        st.close()
        sizes[level] = os.path.getsize(tmp_path / f"{level}.h5")
    assert sizes[9] < sizes[0] / 4


def test_crash_keeps_advanced_volumes(tmp_path):
    """A killed process (no close) leaves the volumes advanced past readable."""
    path = tmp_path / "crash.h5"
    run(f"""
        import os
        import numpy as np
        from vortexgo import storage as vs
        st = vs.HDF5StackFloat32()
        st.open(vs.HDF5StackConfig({str(path)!r}, (2, 3, 4)))
        for i in range(3):
            st.write_volume(np.full((2, 3, 4), i + 1, np.float32))
            st.advance_volume(False)
        st.write_partial_bscan(0, 0, np.full((1, 4), 9, np.float32))  # mid-volume
        os._exit(3)
    """, rc=3)
    with h5py.File(path, "r") as f:
        got = f["data"][...]
    assert got.shape[0] >= 3
    for i in range(3):
        np.testing.assert_array_equal(got[i, ..., 0], np.full((2, 3, 4), i + 1, np.float32))


def test_bad_input(tmp_path):
    st = vs.HDF5StackInt8()
    with pytest.raises(vg.ClosedError, match="not open"):
        st.write_volume(np.zeros(SHAPE, np.int8))
    with pytest.raises(OSError, match="path="):
        st.open(vs.HDF5StackConfig(str(tmp_path / "missing" / "x.h5"), SHAPE))
    assert not st.ready
    with pytest.raises(ValueError, match="HDF5StackConfig.compression_level"):
        st.open(vs.HDF5StackConfig(str(tmp_path / "x.h5"), SHAPE, compression_level=10))
    with pytest.raises(ValueError, match="HDF5StackConfig.header"):
        st.open(vs.HDF5StackConfig(str(tmp_path / "x.h5"), SHAPE, header=2))
    with pytest.raises(ValueError, match=r"HDF5StackConfig.shape\[1\]"):
        st.open(vs.HDF5StackConfig(str(tmp_path / "x.h5"), (2, 0, 4)))
    with pytest.raises(TypeError, match="config="):
        st.open(vs.SimpleStackConfig(str(tmp_path / "x.h5"), SHAPE))
    st.open(vs.HDF5StackConfig(str(tmp_path / "x.h5"), SHAPE))
    with pytest.raises(ValueError, match="dtype float32, expected int8"):
        st.write_volume(np.zeros(SHAPE, np.float32))
    with pytest.raises(ValueError, match=r"data shape \(2, 3, 5, 2\)"):
        st.write_volume(np.zeros((2, 3, 5, 2), np.int8))
    with pytest.raises(ValueError, match="index=1 with 2 B-scans"):
        st.write_multi_bscan(1, np.zeros(SHAPE, np.int8))
    with pytest.raises(ValueError, match="ascan_index=2 with 2 A-scans"):
        st.write_partial_bscan(0, 2, np.zeros((2, 4, 2), np.int8))
    st.write_volume(np.ones(SHAPE, np.int8))
    st.close()
    with h5py.File(tmp_path / "x.h5", "r") as f:
        np.testing.assert_array_equal(f["data"][...], np.ones((1,) + SHAPE, np.int8))


def test_missing_library_names_what_to_install(tmp_path):
    """Without h5py's copy and no system library: a clear error, no crash."""
    o = run(f"""
        import vortexgo as vg
        from vortexgo import storage as vs
        vs._hdf5_candidates = lambda: []
        try:
            vs.HDF5StackInt8().open(vs.HDF5StackConfig({str(tmp_path / 'x.h5')!r}, (1, 1, 1)))
        except vg.VortexError as e:
            print("ERR", e)
        else:
            print("LOADED")
    """, env={"VORTEXGO_HDF5_LIBRARY": "/nonexistent/libhdf5.so"})
    if "LOADED" in o.stdout:
        pytest.skip("a system HDF5 library is installed")
    assert "pip install h5py" in o.stdout and "VORTEXGO_HDF5_LIBRARY" in o.stdout


def test_library_info():
    assert LIB["Version"].count(".") == 2 and "hdf5" in LIB["Path"]


def test_concurrent_with_h5py(tmp_path):
    """vortexgo writes from one thread while h5py works in another: separate library
    instances (a private copy of h5py's), so neither corrupts the other."""
    o = run(f"""
        import threading
        import numpy as np
        import h5py
        from vortexgo import storage as vs
        d = {str(tmp_path)!r}
        info = vs.hdf5_library()
        def ours():
            for i in range(20):
                st = vs.HDF5StackUInt16()
                st.open(vs.HDF5StackConfig(f"{{d}}/ours{{i}}.h5", (4, 8, 64), compression_level=1))
                for v in range(3):
                    st.write_volume(np.full((4, 8, 64), v, np.uint16))
                    st.advance_volume(False)
                st.close()
        t = threading.Thread(target=ours)
        t.start()
        for i in range(20):
            with h5py.File(f"{{d}}/theirs{{i}}.h5", "w") as f:
                f.create_dataset("x", data=np.arange(4096), compression="gzip")
            with h5py.File(f"{{d}}/theirs{{i}}.h5", "r") as f:
                assert f["x"][-1] == 4095
        t.join()
        for i in range(20):
            with h5py.File(f"{{d}}/ours{{i}}.h5", "r") as f:
                x = f["data"][...]
                assert x.shape == (3, 4, 8, 64, 1) and (x[2] == 2).all()
        print("OK", info["Path"])
    """, timeout=120)
    assert "OK" in o.stdout


def test_peek_while_writing_without_file_locking(tmp_path):
    """An open stack's file is locked; a reader without HDF5's file locking sees the
    volumes flushed so far (each advance_volume flushes)."""
    import subprocess
    import sys

    path = tmp_path / "open.h5"
    st = vs.HDF5StackFloat32()
    st.open(vs.HDF5StackConfig(str(path), (2, 3, 4)))
    for i in range(2):
        st.write_volume(np.full((2, 3, 4), i + 1, np.float32))
        st.advance_volume(False)
    code = ("import h5py, sys; f = h5py.File(sys.argv[1], 'r'); x = f['data'][...]; "
            "print(x.shape, float(x[1].min()))")
    env = dict(os.environ, HDF5_USE_FILE_LOCKING="FALSE")
    out = subprocess.run([sys.executable, "-c", code, str(path)], env=env, capture_output=True, text=True, timeout=60)
    st.close()
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(2, 2, 3, 4, 1) 2.0"
