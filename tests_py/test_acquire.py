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


def test_a_file_that_ends_mid_record_is_refused(tmp_path):
    path, _ = raw_file(tmp_path, 4, extra=b"\x01\x02\x03")
    acq = file_acq(path)
    with pytest.raises(ValueError, match=r"131 data bytes end in a partial record: 3 bytes past the last whole one, "
                                         r"expected a multiple of the record, 32 bytes"):
        acq.prepare()
    with pytest.raises(ValueError, match="no data"):
        file_acq(raw_file(tmp_path, 0, name="empty.raw")[0]).prepare()
    with pytest.raises(ValueError, match="no such file"):
        file_acq(tmp_path / "missing.raw").prepare()


@pytest.mark.parametrize("buffer, exc, text", [
    (np.zeros((2, S, C), np.float32), TypeError, "buffer: dtype <f4, expected uint16"),
    (np.zeros((2, S, C), ">u2"), TypeError, "expected uint16 in native byte order"),
    (np.zeros((2, S * 2, C), np.uint16)[:, ::2], ValueError, "expected a C-contiguous array"),
    (np.zeros((2, S, 3), np.uint16), ValueError, r"shape \(2, 8, 3\), expected \(records, 8, 2\)"),
    (np.zeros((2, 4, C), np.uint16), ValueError, r"expected \(records, 8, 2\)"),
    (np.zeros((), np.uint16), ValueError, "0-d array"),
    ([[0] * S] * 2, TypeError, "expected a NumPy uint16 array"),
])
def test_bad_buffers_are_refused(tmp_path, buffer, exc, text):
    path, _ = raw_file(tmp_path, 4)
    for acq in (file_acq(path), NullAcquisition(samples_per_record=S, channels_per_sample=C)):
        acq.prepare()
        acq.start()
        with pytest.raises(exc, match=text):
            acq.next(buffer)
        got = []
        acq.next_async(buffer, lambda n, e: got.append((n, type(e))))
        assert got == [(0, exc)], "next_async hands the error to the callback, as vortex does"
        acq.stop()


def test_read_only_buffer_and_bad_arguments(tmp_path):
    path, _ = raw_file(tmp_path, 4)
    acq = file_acq(path)
    acq.prepare()
    acq.start()
    ro = np.zeros((2, S, C), np.uint16)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="buffer: read-only"):
        acq.next(ro)
    with pytest.raises(TypeError, match="callback=3, expected a callable"):
        acq.next_async(np.zeros((2, S, C), np.uint16), 3)
    with pytest.raises(ValueError, match="id=-1"):
        acq.next(np.zeros((2, S, C), np.uint16), id=-1)
    with pytest.raises(ValueError, match="FileAcquisitionConfig.channels_per_sample=0, expected"):
        FileAcquisition(path=str(path), channels_per_sample=0)
    with pytest.raises(ValueError, match="NullAcquisitionConfig.records_per_block=0, expected"):
        NullAcquisition(records_per_block=0)
    with pytest.raises(TypeError, match="samples_per_record"):
        NullAcquisition(samples_per_record="8")
    acq.stop()
    acq.close()
    with pytest.raises(vg.ClosedError):
        acq.next(np.zeros((2, S, C), np.uint16))


def _replay_engine(acq, spr: int, a: int, b: int, volumes: int, kind: str):
    """An engine replaying ``acq`` into a raw-spectra endpoint of one volume of ``b`` x ``a``."""
    from vortexgo.endpoint import SpectraStackDeviceTensorEndpointUInt16
    from vortexgo.engine import Engine, EngineConfig

    from _scans import planner, queue_volumes

    spectra = SpectraStackDeviceTensorEndpointUInt16()
    Proc = vg.CPUProcessor if kind == "cpu" else vg.CUDAProcessor
    proc = Proc(samples_per_record=spr, ascans_per_block=a)
    fmt = planner(a, b)
    ec = EngineConfig(records_per_block=a, blocks_to_allocate=3, preload_count=1)
    ec.add_acquisition(acq, [proc])
    ec.add_processor(proc, [fmt])
    ec.add_formatter(fmt, [spectra])
    eng = Engine(ec)
    queue_volumes(eng, a, b, volumes)
    return eng, spectra


@pytest.mark.parametrize("pin", [None, False])
@pytest.mark.parametrize("kind", ["cpu", pytest.param("cuda", marks=needs_cuda)])
def test_engine_replays_a_file_and_lends_zeros(tmp_path, kind, pin):
    """In an engine: the raw spectra equal the file (on a GPU uploaded straight from
    its pinned pages by default, else read into the engine's pinned blocks), and
    NullAcquisition's blocks are zeros; standalone calls are refused while the engine
    holds the source."""
    B, A, SPR = 4, 8, 16
    raw = np.random.default_rng(1).integers(0, 60000, (B, A, SPR), dtype=np.uint16)
    raw.tofile(tmp_path / "r.raw")
    for acq in (FileAcquisition(path=str(tmp_path / "r.raw"), samples_per_record=SPR, loop=False, pin=pin),
                NullAcquisition(samples_per_record=SPR, records=B * A)):
        # one volume: the source ends with it, the planner is finished at its end
        eng, spectra = _replay_engine(acq, SPR, A, B, 1, kind)
        eng.prepare()
        if isinstance(acq, FileAcquisition):
            assert acq.pinned == (kind == "cuda" and pin is None), "pinned in place on a GPU unless pin=False"
        with pytest.raises(vg.InUseError, match="stop the engine first"):
            acq.next(np.zeros((1, SPR, 1), np.uint16))
        eng.start()
        eng.wait()
        with spectra.tensor as v:
            v = v.get() if hasattr(v, "get") else np.asarray(v)  # CuPy on CUDA
            np.testing.assert_array_equal(v, raw if isinstance(acq, FileAcquisition) else np.zeros_like(raw))
        eng.close()
        if isinstance(acq, FileAcquisition):
            assert acq.pinned == (kind == "cuda" and pin is None), "the pin lasts until the source is closed"
        acq.close()


@pytest.mark.parametrize("kind", ["cpu", pytest.param("cuda", marks=needs_cuda)])
def test_engine_loops_a_file_across_its_end(tmp_path, kind):
    """A looped replay whose blocks straddle the end of the file (7 records, blocks of
    4): the volume is the file tiled, the same pinned (GPU: uploaded from the pinned
    pages, through the seam where a block wraps) or read."""
    B, A, SPR, R = 3, 4, 16, 7
    raw = np.random.default_rng(2).integers(0, 60000, (R, SPR), dtype=np.uint16)
    raw.tofile(tmp_path / "r.raw")
    volumes = 3
    want = np.tile(raw, ((volumes * B * A) // R + 1, 1))[(volumes - 1) * B * A:volumes * B * A].reshape(B, A, SPR)
    got = {}
    for pin in (None, False):
        acq = FileAcquisition(path=str(tmp_path / "r.raw"), samples_per_record=SPR, loop=True, pin=pin)
        eng, spectra = _replay_engine(acq, SPR, A, B, volumes, kind)
        eng.prepare()
        assert acq.pinned == (kind == "cuda" and pin is None)
        with pytest.raises(vg.InUseError, match="stop the engine first"):
            acq.close()  # the engine uploads from the pin: closing waits for its run to end
        eng.start()
        eng.wait()
        with spectra.tensor as v:
            got[pin] = v.get() if hasattr(v, "get") else np.asarray(v).copy()
        eng.close()
        acq.close()
        with pytest.raises(vg.ClosedError):
            acq.pinned  # noqa: B018 - a closed source says so, it does not report a stale pin
        np.testing.assert_array_equal(got[pin], want, err_msg=f"pin={pin}")


def test_pin_always_where_it_cannot_pin_is_a_clear_error(tmp_path):
    """pin=True on the CPU backend (whose upload is a copy anyway) fails the engine's
    prepare with a ValueError that says what to do; a bad pin value is refused at once."""
    raw = np.zeros((8, 16), np.uint16)
    raw.tofile(tmp_path / "r.raw")
    with pytest.raises(ValueError, match=r"FileAcquisitionConfig.pin='yes', expected None"):
        FileAcquisition(path=str(tmp_path / "r.raw"), samples_per_record=16, pin="yes")
    acq = FileAcquisition(path=str(tmp_path / "r.raw"), samples_per_record=16, pin=True)
    eng, _ = _replay_engine(acq, 16, 4, 2, 1, "cpu")
    with pytest.raises(ValueError, match=r"pin=True\): the cpu device cannot pin a file in place.*pin=None pins only"):
        eng.prepare()
    eng.close()
    acq.close()


@needs_cuda
def test_a_file_changed_under_its_pin_stops_the_engine(tmp_path):
    """The pinned pages keep the file as it was when pinned: a file truncated while an
    engine replays it stops the engine with an error naming the file, never stale data
    in silence and never a crash."""
    SPR, A, B = 16, 4, 2
    path = tmp_path / "r.raw"
    np.ones((64, SPR), np.uint16).tofile(path)
    acq = FileAcquisition(path=str(path), samples_per_record=SPR, loop=True, rate=2000.0)
    eng, _ = _replay_engine(acq, SPR, A, B, 1000, "cuda")
    eng.prepare()
    assert acq.pinned
    eng.start()
    import os
    import time
    time.sleep(0.05)
    os.truncate(path, 16)
    with pytest.raises(vg.VortexError, match=r"acquisition: block \d+: acquire: .*r\.raw: the file is shorter than "
                                             "when prepared"):
        eng.wait()
    eng.close()
    acq.close()


from _vortex import VORTEX_PY, WHY_NOT, have_vortex, vortex_env  # noqa: E402


@pytest.mark.skipif(not have_vortex(), reason=WHY_NOT)
def test_same_as_vortex(tmp_path):
    """The same calls on vortex's FileAcquisition and ours: counts, data and
    which calls fail (vortex's partial record fails at the end; ours at prepare)."""
    whole, _ = raw_file(tmp_path, 3)
    script = r"""
import json, sys, numpy as np
from vortex.acquire import FileAcquisition, FileAcquisitionConfig, NullAcquisition, NullAcquisitionConfig
out = {}
for name, loop, block in json.loads(sys.argv[1]):
    c = FileAcquisitionConfig(); c.path = sys.argv[2]; c.loop = loop
    c.samples_per_record = 8; c.channels_per_sample = 2; c.records_per_block = block
    f = FileAcquisition(); f.initialize(c); f.prepare(); f.start()
    res = []
    for i in range(5):
        b = np.zeros((block, 8, 2), np.uint16); n = f.next(b); res.append([n, b[:, 0, 0].tolist()])
    f.stop(); out[name] = res
n = NullAcquisitionConfig()
out["null"] = [n.samples_per_record, n.records_per_block, n.channels_per_sample, FileAcquisitionConfig().loop]
print(json.dumps(out))
"""
    cases = [["a", False, 2], ["b", True, 2], ["c", False, 4], ["d", True, 1]]
    env = vortex_env()
    try:
        p = subprocess.run([str(VORTEX_PY), "-c", script, json.dumps(cases), str(whole)], env=env,
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.skip("vortex did not answer in time")
    if p.returncode != 0:
        pytest.skip(f"vortex does not run here: {p.stderr[-300:]}")
    theirs = json.loads(p.stdout.strip().splitlines()[-1])
    for name, loop, block in cases:
        acq = file_acq(whole, loop=loop)
        acq.prepare()
        acq.start()
        ours = []
        for _ in range(5):
            b = np.zeros((block, S, C), np.uint16)
            n = acq.next(b)
            ours.append([n, b[:, 0, 0].tolist()])
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
