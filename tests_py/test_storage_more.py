"""vortexgo.storage's SimpleStream, StreamDump, MarkerLog and BroctStorage against
vortex: files byte for byte equal to vortex's (golden files written by
scripts/golden/storage_more_golden.py), read back with NumPy, and bad input
refused with errors naming the argument, nothing written."""

import json
import pathlib

import numpy as np
import pytest

import vortexgo as vg
from vortexgo import marker as vm
from vortexgo import storage as vs

TESTDATA = pathlib.Path(__file__).resolve().parent.parent / "gosrc" / "storage" / "testdata"
MORE = json.loads((TESTDATA / "storage_more.json").read_text())
GOLD = TESTDATA / "vortex_more"
BROCT = MORE["broct"]


def data(seed, shape):
    """The golden script's values (int8)."""
    n = int(np.prod(shape))
    return ((np.arange(n) * 3 + 7 * seed) % 100 + 1).astype(np.int8).reshape(shape)


def broct_config(path):
    return vs.BroctStorageConfig(str(path), tuple(BROCT["shape"]), tuple(BROCT["dimensions"]),
                                 vs.BroctScan(BROCT["scan_type"]), BROCT["notes"])


@pytest.mark.parametrize("scenario", sorted(BROCT["scenarios"]))
def test_broct_equals_vortex(tmp_path, scenario):
    b, a, s = BROCT["shape"]
    st = vs.BroctStorage()
    st.open(broct_config(tmp_path / "out.broct"))
    for op in BROCT["scenarios"][scenario]:
        name, args = op[0], op[1:]
        if name == "write_volume":
            st.write_volume(data(args[0], (b, s, a)))
        elif name == "write_bscan":
            st.write_bscan(args[0], data(args[1], (s, a)))
        elif name == "write_multi_bscan":
            st.write_multi_bscan(args[0], data(args[1], (args[2], s, a)))
        elif name == "advance_volume":
            st.advance_volume(*args)
        elif name == "seek":
            st.seek(*args)
    st.close()
    assert (tmp_path / "out.broct").read_bytes() == (GOLD / f"broct_{scenario}.broct").read_bytes()


def read_broct(path):
    """An independent BROCT reader: header fields and the (volumes, bscans, samples, ascans) data."""
    raw = pathlib.Path(path).read_bytes()
    h = np.frombuffer(raw[:4 * 11], "<i4")
    assert h[0] == 70
    xdim, ydim, zdim = h[1:4]  # ascans, samples, bscans
    off = 4 * 11 + 8 * 3 + 4 * 6 + 4 * zdim
    notes_len = int(np.frombuffer(raw[off:off + 4], "<i4")[0])
    off += 4 + notes_len
    dims = np.frombuffer(raw[44:68], "<f8")
    body = np.frombuffer(raw[off:], np.int8)
    return dims, raw[off - notes_len:off].decode(), body.reshape(-1, zdim, ydim, xdim)


def test_broct_read_back(tmp_path):
    b, a, s = BROCT["shape"]
    st = vs.BroctStorage()
    cfg = broct_config(tmp_path / "x.broct")
    assert cfg.broct_volume_shape == (b, s, a) and cfg.broct_bscan_shape == (s, a)
    st.open(cfg)
    v = [data(i, (b, s, a)) for i in range(3)]
    st.write_volume(v[0])
    st.write_volume(v[1])
    assert st.volumes_written == 2
    st.write_bscan(0, v[2][0])
    st.close()
    dims, notes, got = read_broct(tmp_path / "x.broct")
    assert notes == BROCT["notes"] and tuple(dims) == tuple(BROCT["dimensions"])
    want = np.stack([v[0], v[1], np.concatenate([v[2][:1], np.zeros_like(v[2][1:])])])
    np.testing.assert_array_equal(got, want)


def golden_markers():
    return vm._from_records(np.array(MORE["markers"], np.int64))


@pytest.mark.parametrize("binary", [False, True])
def test_marker_log_equals_vortex(tmp_path, binary):
    ms = golden_markers()
    log = vs.MarkerLog()
    log.open(vs.MarkerLogConfig(str(tmp_path / "m"), binary))
    log.write(ms[:2])
    log.write([])
    log.write(ms[2:])
    log.close()
    want = (GOLD / ("markers_binary.bin" if binary else "markers_text.txt")).read_bytes()
    assert (tmp_path / "m").read_bytes() == want


def test_marker_log_binary_read_back(tmp_path):
    ms = golden_markers()
    log = vs.MarkerLog()
    log.open(vs.MarkerLogConfig(str(tmp_path / "m"), binary=True))
    log.write(ms)
    log.close()
    rec = np.dtype([("sample", "<i8"), ("type", "S1"), ("a", "<u8"), ("b", "<u8"), ("dir", "S1"),
                    ("c", "<u8"), ("d", "<u8")])
    assert rec.itemsize == 42
    got = np.fromfile(tmp_path / "m", rec)
    assert [m.sample for m in ms] == got["sample"].tolist()
    assert got["type"].tolist() == [b"C", b"V", b"S", b"A", b"I", b"E", b"V"]
    assert got["dir"].tolist() == [b"-", b"R", b"F", b"-", b"-", b"-", b"F"]
    assert got["a"][5] == 9  # the event's id


@pytest.mark.parametrize("dtype", ["int8", "uint16", "uint64", "float32", "float64"])
def test_simple_stream(tmp_path, dtype):
    cls = getattr(vs, "SimpleStream" + {"int8": "Int8", "uint16": "UInt16", "uint64": "UInt64",
                                        "float32": "Float32", "float64": "Float64"}[dtype])
    st = cls()
    st.open(vs.SimpleStreamConfig(str(tmp_path / "s")))
    assert st.ready and st.dtype == np.dtype(dtype)
    st.close()
    if dtype != "float32":  # vortex 0.5.1's Python build has no SimpleStreamFloat32
        assert (tmp_path / "s").read_bytes() == (GOLD / f"stream_{dtype}.bin").read_bytes()
    with cls() as st:
        st.open(vs.SimpleStreamConfig(str(tmp_path / "s")))
        a = np.arange(12).astype(dtype).reshape(3, 4)
        st.write(a)
        st.write(a[::2])  # not contiguous: copied
        assert st.bytes_written == 20 * np.dtype(dtype).itemsize
    assert not st.ready
    np.testing.assert_array_equal(np.fromfile(tmp_path / "s", dtype), np.concatenate([a.ravel(), a[::2].ravel()]))


def test_stream_dump(tmp_path):
    d = vs.StreamDump()
    d.open(vs.StreamDumpConfig(str(tmp_path / "d"), stream=1, divisor=2))
    assert d.config.divisor == 2
    block = np.arange(10, dtype=np.float64).reshape(5, 2)
    d.write(block)
    d.write(block)
    d.close()
    got = np.fromfile(tmp_path / "d", np.float64).reshape(-1, 2)
    np.testing.assert_array_equal(got, np.concatenate([block[::2], block[::2]]))
    assert (GOLD / "dump.bin").read_bytes() == b""  # vortex's open/close: an empty file
    d2 = vs.StreamDump()
    d2.open(vs.StreamDumpConfig(str(tmp_path / "e")))
    d2.close()
    assert (tmp_path / "e").read_bytes() == b""


def test_bad_input(tmp_path):
    missing = str(tmp_path / "missing" / "x")
    for st, cfg in [(vs.SimpleStreamInt8(), vs.SimpleStreamConfig(missing)),
                    (vs.StreamDump(), vs.StreamDumpConfig(missing)),
                    (vs.MarkerLog(), vs.MarkerLogConfig(missing)),
                    (vs.BroctStorage(), vs.BroctStorageConfig(missing, (1, 1, 1)))]:
        with pytest.raises(OSError, match="path="):
            st.open(cfg)
        assert not st.ready
        with pytest.raises(vg.ClosedError, match="not open"):
            if isinstance(st, vs.MarkerLog):
                st.write([])
            elif isinstance(st, vs.BroctStorage):
                st.write_volume(np.zeros((1, 1, 1), np.int8))
            else:
                st.write(np.zeros(1, np.int8))
        with pytest.raises(TypeError, match="config="):
            st.open(vs.SimpleStackConfig(missing))
    with pytest.raises(ValueError, match="SimpleStreamConfig.path"):
        vs.SimpleStreamInt8().open(vs.SimpleStreamConfig(""))
    with pytest.raises(ValueError, match="SimpleStreamConfig.header"):
        vs.SimpleStreamInt8().open(vs.SimpleStreamConfig(str(tmp_path / "a"), header=1))
    with pytest.raises(ValueError, match="StreamDumpConfig.divisor"):
        vs.StreamDump().open(vs.StreamDumpConfig(str(tmp_path / "a"), divisor=0))
    with pytest.raises(ValueError, match="StreamDumpConfig.stream"):
        vs.StreamDump().open(vs.StreamDumpConfig(str(tmp_path / "a"), stream=6))
    with pytest.raises(ValueError, match=r"BroctStorageConfig.shape\[1\]"):
        vs.BroctStorage().open(vs.BroctStorageConfig(str(tmp_path / "a"), (1, 0, 1)))
    with pytest.raises(ValueError, match="BroctStorageConfig.scan_type"):
        vs.BroctStorage().open(vs.BroctStorageConfig(str(tmp_path / "a"), (1, 1, 1), scan_type=11))
    with pytest.raises(ValueError, match="BroctStorageConfig.dimensions"):
        vs.BroctStorage().open(vs.BroctStorageConfig(str(tmp_path / "a"), (1, 1, 1), dimensions=(1, 2)))

    st = vs.SimpleStreamUInt16()
    st.open(vs.SimpleStreamConfig(str(tmp_path / "s")))
    with pytest.raises(ValueError, match="dtype int8, expected uint16"):
        st.write(np.zeros(3, np.int8))
    st.write(np.ones(2, np.uint16))
    st.close()
    np.testing.assert_array_equal(np.fromfile(tmp_path / "s", np.uint16), [1, 1])

    log = vs.MarkerLog()
    log.open(vs.MarkerLogConfig(str(tmp_path / "m")))
    with pytest.raises(TypeError, match="expected a vortexgo.marker marker"):
        log.write([1, 2])
    log.close()
    assert (tmp_path / "m").read_bytes() == b""

    b = vs.BroctStorage()
    b.open(vs.BroctStorageConfig(str(tmp_path / "b"), (2, 3, 4)))
    with pytest.raises(ValueError, match="dtype uint8, expected int8"):
        b.write_bscan(0, np.zeros((4, 3), np.uint8))
    with pytest.raises(ValueError, match=r"data shape \(3, 4\).*transposed"):
        b.write_bscan(0, np.zeros((3, 4), np.int8))
    with pytest.raises(ValueError, match="index=2"):
        b.write_bscan(2, np.zeros((4, 3), np.int8))
    with pytest.raises(ValueError, match=r"data shape \(2, 3, 4\)"):
        b.write_volume(np.zeros((2, 3, 4), np.int8))
    b.close()
    _, _, got = read_broct(tmp_path / "b")
    assert got.size == 0  # nothing refused reached the file


def test_config_reprs_and_enums():
    assert [s.value for s in vs.BroctScan] == list(range(11))
    assert vs.radial is vs.BroctScan.radial
    c = vs.BroctStorageConfig()
    c.bscans_per_volume, c.ascans_per_bscan, c.samples_per_ascan = 2, 3, 4
    assert c.shape == (2, 3, 4) and c.broct_volume_shape == (2, 4, 3)
    assert vs.StreamDumpConfig().divisor == 1 and vs.MarkerLogConfig().binary is False
    assert list(vs.SimpleStreamHeader) == [vs.SimpleStreamHeader.Empty]


def _vortex_python():
    """vortex 0.5.1's interpreter and environment (tests_py/_vortex.py), or (None, None)."""
    from _vortex import VORTEX_PY, vortex_env, vortex_imports

    return (str(VORTEX_PY), vortex_env()) if vortex_imports("vortex.storage") else (None, None)


@pytest.mark.timeout(300)
def test_golden_files_are_vortex_s_live(tmp_path):
    """Live: vortex itself, run now, writes the committed golden files byte for byte
    (skips where vortex is not installed)."""
    import subprocess

    py, env = _vortex_python()
    if py is None:
        from _vortex import WHY_NOT
        pytest.skip(WHY_NOT)
    scripts = pathlib.Path(__file__).resolve().parent.parent / "scripts" / "golden"
    for script, sub in (("storage_more_golden.py", "vortex_more"), ("storage_golden.py", "vortex")):
        subprocess.run([py, str(scripts / script), str(tmp_path)], env=env, check=True, timeout=240)
        names = sorted(p.name for p in (TESTDATA / sub).iterdir())
        assert names == sorted(p.name for p in (tmp_path / sub).iterdir())
        for n in names:
            assert (tmp_path / sub / n).read_bytes() == (TESTDATA / sub / n).read_bytes(), n


def test_sizes_and_byte_order(tmp_path):
    """Sizes are bounded before anything is allocated (MemoryError naming the shape);
    big-endian data is the same values, stored little-endian as the files say."""
    with pytest.raises(MemoryError, match=r"BroctStorageConfig.Shape\[0\]"):
        vs.BroctStorage().open(vs.BroctStorageConfig(str(tmp_path / "b"), (2**31 - 1, 1, 1)))
    with pytest.raises((MemoryError, ValueError), match="(?i)shape"):
        vs.BroctStorage().open(vs.BroctStorageConfig(str(tmp_path / "b"), (2**20, 2**20, 2**20)))
    with pytest.raises((MemoryError, ValueError), match="(?i)shape"):
        vs.HDF5StackInt8().open(vs.HDF5StackConfig(str(tmp_path / "h"), (2**32, 2**32, 1)))
    st = vs.SimpleStreamUInt16()
    st.open(vs.SimpleStreamConfig(str(tmp_path / "s")))
    st.write(np.array([1, 2, 258], dtype=">u2"))
    st.close()
    np.testing.assert_array_equal(np.fromfile(tmp_path / "s", "<u2"), [1, 2, 258])
    d = vs.StreamDump()
    d.open(vs.StreamDumpConfig(str(tmp_path / "d")))
    d.write(np.arange(6, dtype=">f8").reshape(3, 2)[:, ::-1])  # strided and byte-swapped
    d.close()
    np.testing.assert_array_equal(np.fromfile(tmp_path / "d", "<f8"), [1, 0, 3, 2, 5, 4])


def test_crash_keeps_what_was_written(tmp_path):
    """A killed process (no close): streams, logs and BROCT volumes written so far are
    in the files (every write lands before it returns; BROCT's header counts nothing)."""
    from _subproc import run

    run(f"""
        import os
        import numpy as np
        from vortexgo import marker as vm, storage as vs
        d = {str(tmp_path)!r}
        s = vs.SimpleStreamFloat64(); s.open(vs.SimpleStreamConfig(d + "/s.bin")); s.write(np.arange(5.0))
        l = vs.MarkerLog(); l.open(vs.MarkerLogConfig(d + "/m.txt")); l.write([vm.Event(7, 3)])
        b = vs.BroctStorage(); b.open(vs.BroctStorageConfig(d + "/b.broct", (2, 3, 4)))
        b.write_volume(np.ones((2, 4, 3), np.int8))
        b.write_bscan(0, np.full((4, 3), 2, np.int8))  # an unfinished second volume
        os._exit(5)
    """, rc=5)
    np.testing.assert_array_equal(np.fromfile(tmp_path / "s.bin"), np.arange(5.0))
    assert (tmp_path / "m.txt").read_text() == "           7 E 3 0 - 0 0\n"
    _, _, got = read_broct_prefix(tmp_path / "b.broct", 24)
    np.testing.assert_array_equal(got[0], np.ones((2, 4, 3), np.int8))


def read_broct_prefix(path, volume_bytes):
    """read_broct for a file whose last volume may be unfinished: whole volumes only."""
    raw = pathlib.Path(path).read_bytes()
    h = np.frombuffer(raw[:4 * 11], "<i4")
    xdim, ydim, zdim = h[1:4]
    off = 4 * 11 + 8 * 3 + 4 * 6 + 4 * zdim
    off += 4 + int(np.frombuffer(raw[off:off + 4], "<i4")[0])
    body = np.frombuffer(raw[off:], np.int8)
    n = body.size // volume_bytes
    return h, off, body[:n * volume_bytes].reshape(n, zdim, ydim, xdim)
