"""vortexgo.storage's SimpleStack against vortex: files byte for byte equal to
vortex's (golden files written by scripts/golden/storage_golden.py), read back by
the field's tools (numpy, scipy.io.loadmat, pynrrd, nibabel), and bad input
refused with errors naming the argument."""

import json
import os
import pathlib

import numpy as np
import pytest

import vortexgo as vg
from vortexgo.storage import (
    SimpleStackConfig,
    SimpleStackFloat32,
    SimpleStackFloat64,
    SimpleStackHeader,
    SimpleStackInt8,
    SimpleStackUInt16,
    SimpleStackUInt64,
)

TESTDATA = pathlib.Path(__file__).resolve().parent.parent / "gosrc" / "storage" / "testdata"
OPS = json.loads((TESTDATA / "storage_ops.json").read_text())
SHAPE = tuple(OPS["shape"])
CLASSES = {"int8": SimpleStackInt8, "uint16": SimpleStackUInt16, "uint64": SimpleStackUInt64,
           "float32": SimpleStackFloat32, "float64": SimpleStackFloat64}
# 128 preamble + 8 matrix tag + 16 flags + 32 dims + 16 name: the data element's
# type, where vortex writes the array class (scipy crashes on it) and vortexgo
# the MATLAB data type.
MAT_DATA_TAG = 200
MX = {"int8": 8, "uint16": 11, "uint64": 15, "float32": 7, "float64": 6}
MI = {"int8": 1, "uint16": 4, "uint64": 13, "float32": 7, "float64": 9}


def data(dtype, seed, shape):
    """The golden script's values."""
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


def expected_volumes(ops, dtype):
    """What the scenario leaves in the file, by an independent NumPy model of
    vortex's semantics: (volumes, bscans, ascans, samples, channels)."""
    b, a, s, c = SHAPE
    vols = {}
    cur, farthest = 0, 0  # farthest: in units of whole volumes touched (model of the padded end)

    def vol(i):
        return vols.setdefault(i, np.zeros(SHAPE, dtype))

    for op in ops:
        name, args = op[0], op[1:]
        if name == "write_volume":
            vol(cur)[:] = data(dtype, args[0], SHAPE)
            farthest = max(farthest, cur + 1)
        elif name == "write_multi_bscan":
            d = data(dtype, args[1], (args[2], a, s, c))
            vol(cur)[args[0]:args[0] + args[2]] = d
            farthest = max(farthest, cur + 1)
        elif name == "write_partial_bscan":
            d = data(dtype, args[2], (args[3], s, c))
            vol(cur)[args[0], args[1]:args[1] + args[3]] = d
            farthest = max(farthest, cur + 1)
        elif name == "advance_volume":
            cur += 1
            if not args or args[0]:
                farthest = max(farthest, cur)
        elif name == "seek":
            cur = args[0]
    return np.stack([vols.get(i, np.zeros(SHAPE, dtype)) for i in range(farthest)]) if farthest else \
        np.zeros((0,) + SHAPE, dtype)


EXT = {SimpleStackHeader.Empty: ".bin", SimpleStackHeader.NumPy: ".npy", SimpleStackHeader.MATLAB: ".mat",
       SimpleStackHeader.NRRD: ".nrrd", SimpleStackHeader.NifTI: ".nii"}  # nibabel goes by the extension

GOLDEN = sorted(p.name for p in (TESTDATA / "vortex").glob("*.bin"))


@pytest.mark.parametrize("name", GOLDEN)
def test_files_equal_vortex(tmp_path, name):
    scenario, dtype, header = name[:-4].split("_")
    st = CLASSES[dtype]()
    cfg = SimpleStackConfig(str(tmp_path / "out"), SHAPE)
    cfg.header = getattr(SimpleStackHeader, header)
    st.open(cfg)
    replay(st, OPS["scenarios"][scenario], np.dtype(dtype))
    st.close()
    got = (tmp_path / "out").read_bytes()
    want = bytearray((TESTDATA / "vortex" / name).read_bytes())
    if header == "MATLAB":
        assert int.from_bytes(want[MAT_DATA_TAG:MAT_DATA_TAG + 4], "little") == MX[dtype]
        want[MAT_DATA_TAG:MAT_DATA_TAG + 4] = MI[dtype].to_bytes(4, "little")
    assert got == bytes(want)


def _read(path, header, dtype):
    """The file read back by the field's tool for the header, as
    (volumes, bscans, ascans, samples, channels)."""
    if header is SimpleStackHeader.NumPy:
        return np.load(path)
    if header is SimpleStackHeader.MATLAB:
        scipy_io = pytest.importorskip("scipy.io")
        return scipy_io.loadmat(path)["data"].T
    if header is SimpleStackHeader.NRRD:
        nrrd = pytest.importorskip("nrrd")
        x, hdr = nrrd.read(path)
        assert hdr["type"] in ("int8", "uint16", "uint64", "float", "double")
        return x.T
    if header is SimpleStackHeader.NifTI:
        nib = pytest.importorskip("nibabel")
        img = nib.load(path)
        x = np.asarray(img.dataobj)
        # vortex's layout: dim[1..] = (volumes, bscans, ...) over C-ordered bytes.
        return x.ravel(order="F").reshape(x.shape)
    raw = np.fromfile(path, dtype)
    return raw.reshape((-1,) + SHAPE)


@pytest.mark.parametrize("header", list(SimpleStackHeader))
@pytest.mark.parametrize("dtype", list(CLASSES))
@pytest.mark.parametrize("scenario", ["clean", "mixed", "unadvanced"])
def test_read_back_with_field_tools(tmp_path, header, dtype, scenario):
    path = str(tmp_path / ("out" + EXT[header]))
    st = CLASSES[dtype]()
    st.open(SimpleStackConfig(path, SHAPE, header=header))
    assert st.ready and st.config.volume_shape == SHAPE
    ops = OPS["scenarios"][scenario]
    replay(st, ops, np.dtype(dtype))
    st.close()
    assert not st.ready
    got = _read(path, header, np.dtype(dtype))
    want = expected_volumes(ops, np.dtype(dtype))
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("header", [h for h in SimpleStackHeader if h is not SimpleStackHeader.Empty])
def test_readable_before_close(tmp_path, header):
    """A crash before close: the header already counts the volumes advanced past."""
    path = str(tmp_path / ("out" + EXT[header]))
    st = SimpleStackFloat32()
    st.open(SimpleStackConfig(path, SHAPE, header=header))
    v = data(np.float32, 1, SHAPE)
    st.write_volume(v)
    st.advance_volume()
    assert st.volumes_written == 1
    np.testing.assert_array_equal(_read(path, header, np.float32), v[None])  # between volumes: every reader
    st.write_partial_bscan(0, 0, data(np.float32, 2, (1,) + SHAPE[2:]))
    if header in (SimpleStackHeader.NumPy, SimpleStackHeader.NifTI):
        # Mid-volume: numpy and nibabel read the counted volumes; scipy and
        # pynrrd insist that the file ends where the header says.
        np.testing.assert_array_equal(_read(path, header, np.float32)[:1], v[None])
    st.close()
    got = _read(path, header, np.float32)
    assert got.shape == (2,) + SHAPE


def test_config_accessors():
    c = SimpleStackConfig()
    assert c.shape == (0, 0, 0, 1) and c.header is SimpleStackHeader.NumPy and c.buffering is False
    c.bscans_per_volume, c.ascans_per_bscan, c.samples_per_ascan = 2, 3, 4
    assert c.volume_shape == (2, 3, 4, 1) and c.bscan_shape == (3, 4, 1)
    assert [int(h) for h in SimpleStackHeader] == [0, 1, 2, 3, 4]
    assert [h.name for h in SimpleStackHeader] == ["Empty", "NumPy", "MATLAB", "NRRD", "NifTI"]


def test_bad_input(tmp_path):
    st = SimpleStackInt8()
    with pytest.raises(vg.ClosedError, match="not open"):
        st.write_volume(np.zeros(SHAPE, np.int8))
    with pytest.raises(ValueError, match="SimpleStackConfig.shape"):
        st.open(SimpleStackConfig(str(tmp_path / "a"), (2, 3)))
    with pytest.raises(ValueError, match=r"SimpleStackConfig.shape\[3\]=0"):
        st.open(SimpleStackConfig(str(tmp_path / "a"), (2, 3, 4, 0)))
    with pytest.raises(ValueError, match="SimpleStackConfig.header"):
        st.open(SimpleStackConfig(str(tmp_path / "a"), SHAPE, header=9))
    with pytest.raises(TypeError, match="SimpleStackConfig.buffering"):
        st.open(SimpleStackConfig(str(tmp_path / "a"), SHAPE, "yes"))
    with pytest.raises(OSError, match="path="):
        st.open(SimpleStackConfig(str(tmp_path / "missing" / "a"), SHAPE))
    with pytest.raises(MemoryError, match="4 GiB"):
        st.open(SimpleStackConfig(str(tmp_path / "a"), (4096, 4096, 512, 1), header=SimpleStackHeader.MATLAB))
    assert not st.ready
    st.open(SimpleStackConfig(str(tmp_path / "a"), SHAPE))
    with pytest.raises(ValueError, match="dtype float32, expected int8"):
        st.write_volume(np.zeros(SHAPE, np.float32))
    with pytest.raises(ValueError, match=r"data shape \(2, 3, 4, 3\), expected \(n, 3, 4, 2\)"):
        st.write_volume(np.zeros((2, 3, 4, 3), np.int8))
    with pytest.raises(ValueError, match="index=0 with 3 B-scans"):
        st.write_volume(np.zeros((3,) + SHAPE[1:], np.int8))
    with pytest.raises(ValueError, match="bscan_index=2"):
        st.write_partial_bscan(2, 0, np.zeros((1, 4, 2), np.int8))
    with pytest.raises(ValueError, match="ascan_index=2 with 2 A-scans"):
        st.write_partial_bscan(0, 2, np.zeros((2, 4, 2), np.int8))
    with pytest.raises(ValueError, match="volume_index"):
        st.seek(-1)
    with pytest.raises(TypeError, match="allocate"):
        st.advance_volume(1)
    st.write_volume(np.ones(SHAPE, np.int8))  # nothing refused above reached the file
    st.close()
    np.testing.assert_array_equal(np.load(tmp_path / "a"), np.ones((1,) + SHAPE, np.int8))


def test_full_disk_refused_at_open():
    """/dev/full refuses every write: open fails loudly (the header), before an engine starts."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    st = SimpleStackInt8()
    with pytest.raises(OSError, match="/dev/full"):
        st.open(SimpleStackConfig("/dev/full", SHAPE))
    assert not st.ready
    st.close()
