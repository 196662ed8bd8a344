"""Storage under an engine (issue 24): a stack's seek, advance_volume and
writes while an engine writes to it (InUseError naming the method and
saying to stop the engine; the run and its file unharmed), the same stack
opened twice on one path (a notebook cell run twice: the file ends with
the second run's data and loads), a stack reopened with another shape
between sessions (refused loudly, naming SimpleStackConfig.shape, never
the old layout under the new header), record-then-replay of every file
vortexgo writes that FileAcquisition can replay, and the messages of
storage endpoints given the wrong storage."""

from __future__ import annotations

import textwrap

import pytest

from harness import RIG, Case, check, register

F = "storage-engine"

CASES: list[Case] = []


def c(id: str, code: str, rig: bool = False, **kw) -> None:
    code = textwrap.dedent(code)
    CASES.append(Case(f"{F}/{id}", (RIG + code) if rig else code, **kw))


# Every user call that moves or writes a stack, refused while the engine runs;
# after stop() they work again, and the file holds whole, untorn volumes.
c("stack_calls_while_running", """
path = os.path.join(TMP, "v.npy")
st = stack(path)
ep = vg.AscanStackEndpoint(st)
eng, acq, proc = started([ep], volumes=0)
vol = np.full((B, A, S), 7, np.int8)
for name, fn in (("seek", lambda: st.seek(0)), ("advance_volume", lambda: st.advance_volume()),
                 ("write_volume", lambda: st.write_volume(vol)),
                 ("write_multi_bscan", lambda: st.write_multi_bscan(0, vol[:1])),
                 ("write_partial_bscan", lambda: st.write_partial_bscan(0, 0, vol[0, :1])),
                 ("open", lambda: st.open(vg.SimpleStackConfig(os.path.join(TMP, "w.npy"), (B, A, S)))),
                 ("close", lambda: st.close())):
    expect(name, fn, "InUseError", name if name not in ("open", "close") else "stop", "stop")
eng.stop()
n = st.volumes_written
st.seek(n)  # after the run: the user's again
st.close()
eng.close()
x = np.load(path)
torn = (x[..., 0] == 7).all(axis=(2, 3)).any()  # a B-scan of the user's 7s
if x.shape[0] < 1 or torn:
    _problems.append(f"file {x.shape}, holds a B-scan the user wrote: {torn}")
report()
""", rig=True, prints="ok", timeout=30, issue="seek/advance_volume/write_volume under a running engine tear volumes")

c("stream_write_while_running", """
path = os.path.join(TMP, "a.bin")
st = vg.storage.SimpleStreamInt8(); st.open(vg.storage.SimpleStreamConfig(path))
ep = vg.engine.AscanStreamEndpoint(st)
eng, acq, proc = started([ep], volumes=0)
expect("write", lambda: st.write(np.ones(S, np.int8)), "InUseError", "write", "stop")
eng.stop(); eng.close()
st.write(np.ones(S, np.int8))  # after the run: fine
st.close()
report()
""", rig=True, prints="ok", timeout=30)

c("hdf5_calls_while_running", """
path = os.path.join(TMP, "v.h5")
st = vg.storage.HDF5StackInt8()
st.open(vg.storage.HDF5StackConfig(path, (B, A, S)))
ep = vg.engine.AscanHDF5StackEndpoint(st)
eng, acq, proc = started([ep], volumes=0)
vol = np.full((B, A, S), 7, np.int8)
expect("write_volume", lambda: st.write_volume(vol), "InUseError", "write_volume", "stop")
expect("advance_volume", lambda: st.advance_volume(), "InUseError", "advance_volume", "stop")
eng.stop(); eng.close(); st.close()
report()
""", rig=True, prints="ok", timeout=30)

# A notebook cell run twice: the first run's stack is still open (and
# finalized later); the file must end as the second run wrote it.
c("notebook_cell_twice", """
import scipy.io, nrrd, nibabel
def load(path, header):
    if header == "NumPy":
        return np.load(path)[..., 0]
    if header == "MATLAB":
        return scipy.io.loadmat(path)["data"].T[..., 0]
    if header == "NRRD":
        return nrrd.read(path, index_order="C")[0][..., 0]
    if header == "NifTI":
        return np.asarray(nibabel.load(path).dataobj).reshape(-1, order="F").reshape(-1, 2, 3, 5)
    return np.fromfile(path, np.uint16).reshape(-1, 2, 3, 5)
for header in ("NumPy", "MATLAB", "NRRD", "NifTI", "Empty"):
    path = os.path.join(TMP, "v." + {"NifTI": "nii"}.get(header, header))
    cell = {}
    def run(value, volumes):
        cell["st"] = vg.SimpleStackUInt16()  # the cell rebinds its name: the old stack is dropped
        cell["st"].open(vg.SimpleStackConfig(path, (2, 3, 5), header=vg.SimpleStackHeader[header]))
        for _ in range(volumes):
            cell["st"].write_volume(np.full((2, 3, 5), value, np.uint16))
            cell["st"].advance_volume()
    run(1, 3)
    old = cell["st"]
    run(2, 1)
    # The older stack lets go of the file: its writes fail, its close and finalizer touch nothing.
    expect(header + " old write", lambda: old.write_volume(np.full((2, 3, 5), 9, np.uint16)), "ClosedError", "another")
    old.close()
    del old
    gc.collect()
    cell["st"].close()
    try:
        x = load(path, header)
    except Exception as e:
        _problems.append(f"{header}: the file no longer loads: {type(e).__name__}: {e}")
        continue
    if x.shape != (1, 2, 3, 5) or not (x == 2).all():
        _problems.append(f"{header}: file {x.shape} holds {np.unique(x).tolist()}, expected the second run's one volume of 2s")
report()
""", prints="ok", needs=("scipy", "nrrd", "nibabel"),
  issue="two stacks on one path: the older one's finalizer rewrites the newer file's header")

c("notebook_cell_twice_stream", """
path = os.path.join(TMP, "s.bin")
a = vg.storage.SimpleStreamUInt16(); a.open(vg.storage.SimpleStreamConfig(path)); a.write(np.full(10, 1, np.uint16))
b = vg.storage.SimpleStreamUInt16(); b.open(vg.storage.SimpleStreamConfig(path)); b.write(np.full(4, 2, np.uint16))
expect("old write", lambda: a.write(np.full(3, 9, np.uint16)), "ClosedError", "another")
del a; gc.collect()
b.close()
x = np.fromfile(path, np.uint16)
if x.tolist() != [2] * 4:
    _problems.append(f"file holds {x.tolist()}")
report()
""", prints="ok")

# While an engine writes through the older stack, opening its file again is refused.
c("open_path_an_engine_writes", """
path = os.path.join(TMP, "v.npy")
st = stack(path)
ep = vg.AscanStackEndpoint(st)
eng, acq, proc = started([ep], volumes=0)
other = vg.SimpleStackInt8()
expect("open", lambda: other.open(vg.SimpleStackConfig(path, (B, A, S))), "InUseError", "engine", "stop")
eng.stop(); eng.close()
n = st.volumes_written
st.close()
x = np.load(path)
if x.shape[0] != n:
    _problems.append(f"file holds {x.shape[0]} volumes, the stack reported {n}")
report()
""", rig=True, prints="ok", timeout=30)

# Reopened with another shape between sessions: start() refuses, naming
# SimpleStackConfig.shape, before anything is written; reopened with the
# prepared shape, the engine runs again.
c("reshape_between_sessions", """
path = os.path.join(TMP, "v.npy")
st = stack(path)
ep = vg.AscanStackEndpoint(st)
eng, acq, proc = rig([ep], volumes=1)
eng.start(); eng.wait_for(10); eng.stop()
st.close()
st.open(vg.SimpleStackConfig(path, (2 * B, A, S)))  # another shape, same bytes per B-scan
try:
    eng.start()
except ValueError as e:
    low = str(e).lower().replace("_", "")
    if "simplestackconfig.shape" not in low:
        _problems.append(f"start() refused without naming SimpleStackConfig.shape: {e}")
else:
    eng.wait_for(10); eng.stop()
    _problems.append("start() accepted a storage reopened with another shape")
st.close()
st.open(vg.SimpleStackConfig(path, (B, A, S)))
eng.start(); eng.wait_for(10); eng.stop(); st.close()
x = np.load(path)
if x.shape[:4] != (1, B, A, S):
    _problems.append(f"after reopening with the prepared shape: the file is {x.shape}")
eng.close()
report()
""", rig=True, prints="ok", timeout=30, issue="a stack reopened with another shape between sessions: old layout, new header")

c("prepare_shape_mismatch_names_field", """
st = stack(os.path.join(TMP, "v.npy"), shape=(B, A, S // 2))
ep = vg.AscanStackEndpoint(st)
eng, acq, proc = rig([ep], volumes=1)
""", rig=True, raises="ValueError", words=("SimpleStackConfig.shape",))

c("spectra_endpoint_int8_stack", """
st = stack(os.path.join(TMP, "v.npy"))
vg.SpectraStackEndpoint(st)
""", rig=True, raises="ValueError|TypeError", words=("SimpleStackUInt16",))

c("config_path_none", """
vg.SimpleStackInt8().open(vg.SimpleStackConfig(path=None, shape=(1, 1, 1)))
""", raises="TypeError|ValueError", words=("path",))

# Record the raw spectra with every storage FileAcquisition can replay
# (NumPy and raw stacks, raw streams) and replay them: the same spectra.
c("record_then_replay", """
from vortexgo.process import hann_window, spectral_filter
from vortexgo.format import FormatPlanner, FormatPlannerConfig
S, A, B = 64, 16, 4
def record(ep_of, volumes=2):
    acq = vg.SimulatedAcquisition(samples_per_record=S, ascans_per_bscan=A, bscans_per_volume=B, volumes=2)
    pc = vg.ProcessorConfig(samples_per_record=S, ascans_per_block=16, resampling_samples=acq.resampling_positions(),
                            spectral_filter=spectral_filter(hann_window(S), acq.dispersion_compensation()))
    proc = vg.CPUProcessor(pc)
    fmt = FormatPlanner(FormatPlannerConfig(B, A))
    ec = vg.EngineConfig(records_per_block=16, blocks_to_allocate=4, preload_count=2)
    ep = ep_of()
    ec.add_acquisition(acq, [proc]); ec.add_processor(proc, [fmt]); ec.add_formatter(fmt, [ep])
    eng = vg.Engine(ec)
    for _ in range(volumes):
        eng.scan_queue.append(vg.acquire.record_raster(A, B, loop=False))
    eng.prepare(); eng.start(); eng.wait_for(20); eng.stop(); eng.close()
def replay(path):
    fa = vg.FileAcquisition(vg.FileAcquisitionConfig(path=path, samples_per_record=S, loop=False))
    fa.prepare(); fa.start()
    out = []
    buf = np.zeros((A, S, 1), np.uint16)
    while True:
        n = fa.next(buf)
        if n == 0:
            break
        out.append(buf[:n, :, 0].copy())
    fa.stop(); fa.close()
    return np.concatenate(out)
ref = None
for name, header in (("npy", vg.SimpleStackHeader.NumPy), ("raw", vg.SimpleStackHeader.Empty)):
    path = os.path.join(TMP, "spectra." + name)
    st = vg.SimpleStackUInt16()
    st.open(vg.SimpleStackConfig(path, (B, A, S), header=header))
    record(lambda: vg.SpectraStackEndpoint(st))
    st.close()
    try:
        got = replay(path)
    except Exception as e:
        _problems.append(f"{name} stack: {type(e).__name__}: {e}")
        continue
    want = (np.load(path) if name == "npy" else np.fromfile(path, np.uint16)).reshape(-1, S)
    if got.shape != want.shape or not (got == want).all() or not want.any():
        _problems.append(f"{name} stack: replayed {got.shape}, recorded {want.shape}")
path = os.path.join(TMP, "spectra.stream")
ss = vg.storage.SimpleStreamUInt16(); ss.open(vg.storage.SimpleStreamConfig(path))
record(lambda: vg.engine.SpectraStreamEndpoint(ss))
ss.close()
try:
    got = replay(path)
    want = np.fromfile(path, np.uint16).reshape(-1, S)
    if got.shape != want.shape or not (got == want).all():
        _problems.append(f"stream: replayed {got.shape}, recorded {want.shape}")
except Exception as e:
    _problems.append(f"stream: {type(e).__name__}: {e}")
report()
""", prints="ok", timeout=60, issue="FileAcquisition refuses the .npy of uint16 spectra SimpleStackUInt16 writes")


@pytest.mark.parametrize("case", register(CASES))
def test_storage_engine(case: Case) -> None:
    check(case)
