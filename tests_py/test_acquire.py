"""vortex's FileAcquisition and NullAcquisition: config fields and defaults,
standalone prepare/start/next/stop, the bytes delivered equal the file's,
bad input refused with errors naming the argument; and, where vortex 0.5.1
runs here, the same calls on vortex give the same results."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

import vortexgo as vg
from conftest import needs_cuda
from vortexgo.acquire import (FileAcquisition, FileAcquisitionConfig, NullAcquisition,
                              NullAcquisitionConfig)

S, C = 8, 2  # samples per record, channels per sample


def raw_file(tmp_path: Path, records: int, extra: bytes = b"", name: str = "spectra.raw") -> tuple[Path, np.ndarray]:
    data = (np.arange(records * S * C, dtype=np.uint64) * 7919 % 65536).astype(np.uint16).reshape(records, S, C)
    p = tmp_path / name
    p.write_bytes(data.tobytes() + extra)
    return p, data


def file_acq(path, **fields) -> FileAcquisition:
    cfg = FileAcquisitionConfig(path=str(path), samples_per_record=S, channels_per_sample=C, records_per_block=2)
    for k, v in fields.items():
        setattr(cfg, k, v)
    return FileAcquisition(cfg)


def test_defaults_are_vortexs():
    n = NullAcquisitionConfig()
    assert (n.samples_per_record, n.records_per_block, n.channels_per_sample) == (1024, 1000, 1)
    assert n.shape == [1000, 1024, 1]
    f = FileAcquisitionConfig()
    assert f.loop is True and f.path == "" and f.shape == [1000, 1024, 1]
    assert NullAcquisition().config.shape == [1000, 1024, 1]
    c = f.copy()
    c.path = "x"
    assert f.path == "" and c.path == "x"


def test_null_next_leaves_the_buffer_and_counts():
    a = NullAcquisition(NullAcquisitionConfig(samples_per_record=S, channels_per_sample=C, records=5))
    buf = np.full((3, S, C), 7, np.uint16)
    assert [a.next(buf) for _ in range(3)] == [3, 2, 0]
    assert (buf == 7).all(), "vortex's NullAcquisition.next touches nothing"
    got = []
    a.next_async(np.zeros((2, S, C), np.uint16), lambda n, e: got.append((n, e)))
    assert got == [(0, None)]
    endless = NullAcquisition(samples_per_record=S)
    assert endless.next(np.zeros((4, S), np.uint16)) == 4, "a 2-D buffer is (records, samples, 1)"


@pytest.mark.parametrize("block", [1, 2, 3, 7])
def test_file_next_bytes_equal_the_file(tmp_path, block):
    path, data = raw_file(tmp_path, 7)
    acq = file_acq(path, loop=False)
    acq.prepare()
    acq.start()
    got, counts = [], []
    while True:
        buf = np.zeros((block, S, C), np.uint16)
        n = acq.next(buf, id=len(counts))
        counts.append(n)
        if n == 0:
            break
        got.append(buf[:n].copy())
    acq.stop()
    assert np.concatenate(got).tobytes() == path.read_bytes()
    assert sum(counts) == 7 and counts[-1] == 0


def test_file_loops_and_restarts_like_vortex(tmp_path):
    path, data = raw_file(tmp_path, 3)
    acq = file_acq(path)  # loop=True by default
    acq.prepare()
    acq.start()
    buf = np.zeros((2, S, C), np.uint16)
    seen = []
    for _ in range(3):
        assert acq.next(buf) == 2
        seen.append(buf.copy())
    np.testing.assert_array_equal(np.concatenate(seen), data[[0, 1, 2, 0, 1, 2]])
    acq.stop()
    acq.start()
    acq.next(buf)
    np.testing.assert_array_equal(buf, data[:2], "stop closes the file; start replays from the first record")
    acq.stop()
    with pytest.raises(vg.VortexError, match="not open, expected start"):
        acq.next(buf)


def test_npy_shapes_and_channels(tmp_path):
    data = np.arange(5 * S * C, dtype=np.uint16).reshape(5, S, C)
    np.save(tmp_path / "a.npy", data)
    acq = FileAcquisition(path=str(tmp_path / "a.npy"), samples_per_record=0, channels_per_sample=C, loop=False)
    acq.prepare()
    assert acq.samples_per_record == S
    acq.start()
    buf = np.zeros((5, S, C), np.uint16)
    assert acq.next(buf) == 5
    np.testing.assert_array_equal(buf, data)
    with pytest.raises(ValueError, match=r"SamplesPerRecord=4 x ChannelsPerSample=2, expected the shape \[5 8 2\]"):
        FileAcquisition(path=str(tmp_path / "a.npy"), samples_per_record=4, channels_per_sample=C).prepare()


def test_a_file_that_ends_mid_record_is_a_stream_of_values(tmp_path):
    """As vortex's (its offline test_file_acquire): a file is a stream of uint16 values. Looped,
    records straddle the file's end; not looped, the block that reaches the partial record
    fails (a RuntimeError, as vortex's); an odd number of bytes is no uint16 file at all."""
    path, data = raw_file(tmp_path, 4, extra=b"\x01\x02")  # 4 records of 16 values and one value
    stream = np.concatenate([data.ravel(), np.frombuffer(b"\x01\x02", np.uint16)])
    looped = file_acq(path, loop=True)
    looped.start()  # start before prepare prepares, as vortex's
    got = []
    for _ in range(7):  # 7 blocks of 2 records: 224 values, the file's 65 three times and more
        b = np.zeros((2, S, C), np.uint16)
        assert looped.next(b) == 2
        got.append(b.ravel())
    looped.stop()
    got = np.concatenate(got)
    np.testing.assert_array_equal(got, np.resize(stream, got.size))
    once = file_acq(path, loop=False)
    once.start()
    b = np.zeros((2, S, C), np.uint16)
    assert once.next(b) == 2 and once.next(b) == 2
    with pytest.raises(RuntimeError, match=r"ends in a partial record \(2 bytes past record 4\)"):
        once.next(b)
    once.stop()
    odd, _ = raw_file(tmp_path, 4, extra=b"\x01\x02\x03", name="odd.raw")
    with pytest.raises(ValueError, match=r"131 data bytes, expected uint16 values \(an even number of bytes\)"):
        file_acq(odd).prepare()
    with pytest.raises(ValueError, match="no data"):
        file_acq(raw_file(tmp_path, 0, name="empty.raw")[0]).prepare()
    with pytest.raises(ValueError, match="no such file"):
        file_acq(tmp_path / "missing.raw").prepare()


from _vortex import VORTEX_PY, WHY_NOT, have_vortex, vortex_env  # noqa: E402


@pytest.mark.skipif(not have_vortex(), reason=WHY_NOT)
def test_same_as_vortex(tmp_path):
    """The same calls on vortex's FileAcquisition and ours: counts, data and
    which calls fail, for a file of whole records and one that ends mid-record."""
    whole, _ = raw_file(tmp_path, 3)
    partial, _ = raw_file(tmp_path, 3, extra=b"\x05\x06" * 5, name="partial.raw")
    script = r"""
import json, sys, numpy as np
from vortex.acquire import FileAcquisition, FileAcquisitionConfig, NullAcquisition, NullAcquisitionConfig
out = {}
for name, loop, block, path in json.loads(sys.argv[1]):
    c = FileAcquisitionConfig(); c.path = path; c.loop = loop
    c.samples_per_record = 8; c.channels_per_sample = 2; c.records_per_block = block
    f = FileAcquisition(); f.initialize(c); f.prepare(); f.start()
    res = []
    for i in range(5):
        b = np.zeros((block, 8, 2), np.uint16)
        try:
            n = f.next(b)
        except RuntimeError:
            res.append("RuntimeError"); break
        res.append([n, b[:, 0, 0].tolist(), b[:, -1, -1].tolist()])
    f.stop(); out[name] = res
n = NullAcquisitionConfig()
out["null"] = [n.samples_per_record, n.records_per_block, n.channels_per_sample, FileAcquisitionConfig().loop]
print(json.dumps(out))
"""
    cases = [[name + tag, loop, block, str(path)] for tag, path in (("", whole), ("-partial", partial))
             for name, loop, block in (("a", False, 2), ("b", True, 2), ("c", False, 4), ("d", True, 1))]
    env = vortex_env()
    try:
        p = subprocess.run([str(VORTEX_PY), "-c", script, json.dumps(cases)], env=env,
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.skip("vortex did not answer in time")
    if p.returncode != 0:
        pytest.skip(f"vortex does not run here: {p.stderr[-300:]}")
    theirs = json.loads(p.stdout.strip().splitlines()[-1])
    for name, loop, block, path in cases:
        acq = file_acq(path, loop=loop)
        acq.prepare()
        acq.start()
        ours = []
        for _ in range(5):
            b = np.zeros((block, S, C), np.uint16)
            try:
                n = acq.next(b)
            except RuntimeError:
                ours.append("RuntimeError")
                break
            ours.append([n, b[:, 0, 0].tolist(), b[:, -1, -1].tolist()])
        acq.stop()
        assert ours == theirs[name], name
    n = NullAcquisitionConfig()
    assert [n.samples_per_record, n.records_per_block, n.channels_per_sample,
            FileAcquisitionConfig().loop] == theirs["null"]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(pin=st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=4),
                     st.lists(st.booleans(), max_size=2)))
def test_pin_accepts_none_and_bools_only(tmp_path_factory, pin):
    """Any value of ``pin``: None and bools make a source; anything else is a ValueError
    naming the field and the values expected, never another error."""
    path = tmp_path_factory.mktemp("pin") / "r.raw"
    np.zeros((4, 8), np.uint16).tofile(path)
    if pin is None or isinstance(pin, bool):
        acq = FileAcquisition(path=str(path), samples_per_record=8, pin=pin)
        acq.prepare()
        assert acq.pinned is False, "nothing is pinned before an engine on a GPU prepares"
        acq.close()
    else:
        with pytest.raises(ValueError, match=r"FileAcquisitionConfig\.pin=.*expected None .*True .*False"):
            FileAcquisition(path=str(path), samples_per_record=8, pin=pin)
