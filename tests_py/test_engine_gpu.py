"""The engine on CUDA: the seed's two examples (MIP chained on the endpoint
stream; user-managed buffering with cupy.copy, then numpy.save and
SimpleStackInt8.write_volume) and CUDA vs CPU processor agreement.

Every test skips cleanly without CUDA (and CuPy where it needs it).
"""

from __future__ import annotations

import numpy as np
import pytest

import vortexgo as vg
from vortexgo.engine import (
    AscanStackEndpoint,
    SpectraStackDeviceTensorEndpointUInt16,
    StackDeviceTensorEndpointFloat32,
    StackDeviceTensorEndpointInt8,
    StackHostTensorEndpointFloat32,
)
from vortexgo.storage import SimpleStackConfig, SimpleStackInt8

from test_engine import A, B, RPV, S, make_rig, new_engine, numpy_chain, RPB
from vortexgo.process import hann_window, spectral_filter

pytestmark = pytest.mark.timeout(120)


def test_mip_example_on_cuda(gpu, cp):
    endpoint = StackDeviceTensorEndpointInt8()
    rig = make_rig([endpoint], volumes=3, device="cuda")
    mips = []

    def handler(*args):
        with endpoint.tensor as volume:
            assert isinstance(volume, cp.ndarray) and volume.shape == (B, A, S)
            with endpoint.stream as stream:
                mips.append((cp.max(volume, axis=2), stream.record()))

    endpoint.volume_callback = handler
    eng = new_engine(rig)
    eng.prepare()
    eng.start()
    eng.wait()
    assert len(mips) == 3 and eng.status().callback_errors == 0
    mip, done = mips[-1]
    done.synchronize()
    with endpoint.tensor as volume:
        endpoint.stream.synchronize()
        np.testing.assert_array_equal(mip.get(), cp.max(volume, axis=2).get())
    # The ring of 2 volumes replays: volume 2's MIP is volume 0's.
    mips[0][1].synchronize()
    np.testing.assert_array_equal(mips[0][0].get(), mips[2][0].get())
    endpoint.close()


@pytest.mark.parametrize("device_timings", [False, True])
def test_device_timings_on_cuda(gpu, device_timings):
    """On CUDA, timestamped events (engine.timings' device times) only with
    EngineConfig(device_timings=True), over one block of the pool in four."""
    endpoint = StackDeviceTensorEndpointInt8()
    rig = make_rig([endpoint], volumes=3, device="cuda", blocks=8, device_timings=device_timings)
    eng = new_engine(rig)
    eng.prepare()
    eng.start()
    eng.wait()
    formatted = eng.status().blocks_formatted
    t = eng.timings
    if device_timings:
        assert 0 < t["process"].count < formatted and t["upload"].count == t["process"].count
        assert t["upload"].p50 > 0 and t["process"].p50 >= t["upload"].p50
    else:
        assert t["process"].count == t["upload"].count == t["format"].count == 0
    endpoint.close()


def test_user_buffering_example_on_cuda(gpu, cp, tmp_path):
    my_endpoint = StackDeviceTensorEndpointInt8()
    my_buffers = []

    def handler(sample, scan_idx, volume_idx):
        with my_endpoint.tensor as volume:
            with my_endpoint.stream:
                my_buffers.append(cp.copy(volume))

    my_endpoint.volume_callback = handler
    rig = make_rig([my_endpoint], volumes=4, device="cuda")
    eng = new_engine(rig)
    eng.prepare()
    eng.start()
    eng.wait()
    my_endpoint.stream.synchronize()
    assert len(my_buffers) == 4
    host = np.stack([b.get() for b in my_buffers])
    np.testing.assert_array_equal(host[2], host[0])
    assert not np.array_equal(host[1], host[0])
    np.save(tmp_path / "buffers.npy", host)
    st = SimpleStackInt8()
    st.open(SimpleStackConfig(str(tmp_path / "stack.npy"), (B, A, S)))
    for b in my_buffers:
        st.write_volume(b)  # a CuPy array; vortex's SimpleStack writes, then advances on request
        st.advance_volume()
    st.close()
    np.testing.assert_array_equal(np.load(tmp_path / "stack.npy")[..., 0], np.load(tmp_path / "buffers.npy"))
    my_endpoint.close()


def _volume_copies(cp, volumes: int, **rig_kw) -> list[tuple[np.ndarray, np.ndarray]]:
    """Runs a CUDA rig of ``volumes`` volumes into int8 and float32 device tensor endpoints, the
    rolling average on, and returns each volume of both as copied on the endpoints' streams in
    the volume callback (the tensors are overwritten by the next volume), on the host."""
    i8, f32 = StackDeviceTensorEndpointInt8(), StackDeviceTensorEndpointFloat32()
    copies = []

    def handler(*_args):
        with i8.tensor as a, f32.tensor as b:
            with i8.stream:
                ca = cp.copy(a)
            with f32.stream:
                cb = cp.copy(b)
            copies.append((ca, cb))

    i8.volume_callback = handler
    rig = make_rig([i8, f32], volumes=volumes, device="cuda", average_window=2 * RPB, **rig_kw)
    eng = new_engine(rig)
    eng.prepare()
    eng.start()
    eng.wait()
    s = eng.status()
    assert s.volumes == volumes and s.blocks_dropped == 0 and s.error == "", s
    i8.stream.synchronize()
    f32.stream.synchronize()
    assert len(copies) == volumes
    got = [(a.get(), b.get()) for a, b in copies]
    for ep in (i8, f32):
        ep.close()
    return got


def _assert_same_volumes(got, want, what: str) -> None:
    for n, ((a1, b1), (a0, b0)) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(a1, a0, err_msg=f"{what}: volume {n}, int8")
        np.testing.assert_array_equal(b1, b0, err_msg=f"{what}: volume {n}, float32")
    assert np.count_nonzero(want[-1][0]) > 0, "the volumes hold A-scans"


@pytest.mark.parametrize("blocks,preload,ring", [(4, 2, "0"), (4, 2, ""), (16, 8, "")])
def test_graphs_on_and_off_format_the_same_volumes(gpu, cp, monkeypatch, blocks, preload, ring):
    """The CUDA graphs replay exactly the launches they captured: every volume, int8 and float32,
    is the same bit for bit with ``VORTEXGO_CUDA_GRAPHS=0``. With vortex's 4 blocks / preload 2
    cycled as they are (``VORTEXGO_DEVICE_BLOCKS=0``: two a slot) both the processor's work and
    the tensor endpoints' formatting are graphs, the blocks' and the engine's events external
    nodes; with the engine's 32 device blocks (unset) and with 16 / 8 only the processor's. The
    rolling average is on: its wait for the previous update is a node of the processor's graphs."""
    monkeypatch.setenv("VORTEXGO_DEVICE_BLOCKS", ring)  # read at prepare
    got = {}
    for graphs in ("0", "1"):
        monkeypatch.setenv("VORTEXGO_CUDA_GRAPHS", graphs)  # read at the processor's creation and at prepare
        got[graphs] = _volume_copies(cp, 4, blocks=blocks, preload=preload)
    _assert_same_volumes(got["1"], got["0"], "graphs")


def test_slots_sharing_streams_format_the_same_volumes(gpu, cp, monkeypatch):
    """Four processor slots on fewer streams (``VORTEXGO_SLOT_STREAMS``; what the engine picks
    itself from 2 MiB blocks on a GPU: two) format every volume bit for bit as four slots on four
    streams do, the rolling average on (its turn crosses the slots' streams) and the processor's
    graphs replayed."""
    got = {}
    for streams in ("0", "2", "1"):
        monkeypatch.setenv("VORTEXGO_SLOT_STREAMS", streams)  # read at prepare
        # 2048 records: the simulated source lends at most two volumes a block
        got[streams] = _volume_copies(cp, 40, rpb=2048, blocks=8, preload=4, slots=4)
    for streams in ("2", "1"):
        _assert_same_volumes(got[streams], got["0"], f"VORTEXGO_SLOT_STREAMS={streams!r}")


def test_slots_used_format_the_same_volumes(gpu, cp, monkeypatch):
    """Four processor slots of which the engine uses fewer (``VORTEXGO_ACTIVE_SLOTS``; unset,
    what it picks itself below 2 MiB blocks on a GPU: two) format every volume bit for bit as all
    four do, the rolling average on and the processor's graphs replayed."""
    got = {}
    for used in ("0", "", "1"):
        monkeypatch.setenv("VORTEXGO_ACTIVE_SLOTS", used)  # read at prepare
        got[used] = _volume_copies(cp, 12, blocks=16, preload=8, slots=4)  # 256 x 256 blocks
    for used in ("", "1"):
        _assert_same_volumes(got[used], got["0"], f"VORTEXGO_ACTIVE_SLOTS={used!r}")


@pytest.mark.parametrize("pin", [False, None], ids=["filled", "lent"])
def test_device_ring_stores_every_record(gpu, tmp_path, monkeypatch, pin):
    """vortex's 4 blocks / preload 2 with 256-record blocks: on a GPU the engine cycles 32 blocks
    on the device (``VORTEXGO_DEVICE_BLOCKS`` unset) while the acquisition's pinned memory stays 4
    blocks, each filled again once its upload is done. Every spectrum of 8 volumes from a file is
    stored as read, filled into the engine's pinned blocks (``pin=False``) or uploaded from the
    pinned file (``pin=None``), with the ring unset, off (``0``) and deeper (``64``)."""
    from test_engine import device_ring_run

    device_ring_run(tmp_path, monkeypatch, "cuda", pin, (("", 32), ("0", 4), ("64", 64)))


def _float_volume(device: str, proc_cls):
    spectra = SpectraStackDeviceTensorEndpointUInt16()
    out = StackHostTensorEndpointFloat32()
    rig = make_rig([spectra, out], volumes=1, device=device, proc_cls=proc_cls, average_window=RPB)
    eng = new_engine(rig)
    eng.prepare()
    eng.start()
    eng.wait()
    with out.tensor as v:
        vol = np.array(v)
    with spectra.tensor as raw:
        raw = raw.get() if hasattr(raw, "get") else np.array(raw)
    return vol, raw, rig


def test_cuda_and_cpu_processors_agree(gpu, cp):
    cuda_vol, cuda_raw, rig = _float_volume("cuda", vg.CUDAProcessor)
    cpu_vol, cpu_raw, _ = _float_volume("cpu", vg.CPUProcessor)
    np.testing.assert_array_equal(cuda_raw, cpu_raw)  # same simulated input
    strong = cpu_vol > cpu_vol.max() - 50
    np.testing.assert_allclose(cuda_vol[strong], cpu_vol[strong], atol=0.02)
    ref = numpy_chain(cuda_raw, rig.acq.resampling_positions(),
                      spectral_filter(hann_window(S), rig.acq.dispersion_compensation()))
    np.testing.assert_allclose(cuda_vol[strong], ref[strong], atol=0.05)


def test_storage_endpoint_on_cuda(gpu, tmp_path):
    st = SimpleStackInt8()
    st.open(SimpleStackConfig(str(tmp_path / "v.npy"), (B, A, S)))
    dev_ep = StackDeviceTensorEndpointInt8()
    store = AscanStackEndpoint(st)
    rig = make_rig([dev_ep, store], volumes=3, device="cuda")
    eng = new_engine(rig)
    eng.prepare()
    eng.start()
    eng.wait()
    s = eng.status()
    assert s.volumes == 3 and s.blocks_dropped == 0 and store.volumes_written == 3
    st.close()
    vols = np.load(tmp_path / "v.npy")
    assert vols.shape == (3, B, A, S, 1)  # vortex's 4-D volumes: one channel
    np.testing.assert_array_equal(vols[2], vols[0])
    for ep in (dev_ep, store):
        ep.close()


# --- closing what a running engine uses, on CUDA (issue 12) -----------------------------
# Each case in its own interpreter: on the GPU these used to kill the process
# (a Go panic in engine.go) or break the run ("use of closed object").

CUDA_RIG = '''
def cuda_rig(endpoints):
    acq = vg.SimulatedAcquisition(samples_per_record=S, ascans_per_bscan=A, bscans_per_volume=B, volumes=1,
                                  total_volumes=0, rate=200_000.0)
    proc = vg.CUDAProcessor(vg.ProcessorConfig(samples_per_record=S, ascans_per_block=64))
    fmt = planner(A, B)
    ec = EngineConfig(records_per_block=64, blocks_to_allocate=4, preload_count=2)
    ec.add_acquisition(acq, [proc])
    ec.add_processor(proc, [fmt])
    ec.add_formatter(fmt, endpoints)
    eng = Engine(ec)
    queue_volumes(eng, A, B, 0)  # endless
    return eng, acq, proc
'''


def test_close_while_running_on_cuda_raises_in_use(gpu):
    from test_engine_misuse import run_case

    out = run_case(CUDA_RIG + '''
from vortexgo.engine import StackDeviceTensorEndpointInt8
ep = StackDeviceTensorEndpointInt8()
vols = []
ep.volume_callback = lambda *a: vols.append(a)
eng, acq, proc = cuda_rig([ep])
eng.prepare()
cached = ep.stream
eng.start()
while len(vols) < 2:
    time.sleep(0.01)
expect(vg.InUseError, ep.close)
expect(vg.InUseError, acq.close)
expect(vg.InUseError, proc.close)
eng.stop()
assert eng.status().error == "", eng.status()
ep.close()
expect(vg.ClosedError, cached.synchronize)
expect(vg.ClosedError, lambda: ep.stream)
acq.close()
proc.close()
eng.close()
print("OK")
''')
    assert out.count("RAISED InUseError") == 3 and "RAISED ClosedError" in out and "OK" in out


def _fused_volume(samples: int) -> tuple[np.ndarray, np.ndarray]:
    """One volume of the simulated source at ``samples`` a record through a CUDA processor (the
    rolling average on, 256-record blocks), as float32 and int8, read back on the host."""
    from vortexgo.engine import Engine, EngineConfig
    from vortexgo.process import CUDAProcessor, ProcessorConfig
    from _scans import planner, queue_volumes

    ascans, bscans = 128, 8
    acq = vg.SimulatedAcquisition(samples_per_record=samples, ascans_per_bscan=ascans, bscans_per_volume=bscans,
                                  volumes=1)
    pc = ProcessorConfig(samples_per_record=samples, ascans_per_block=256, average_window=64,
                         resampling_samples=acq.resampling_positions(),
                         spectral_filter=spectral_filter(hann_window(samples), acq.dispersion_compensation()),
                         levels=(0.0, 60.0))
    proc = CUDAProcessor(pc, device=vg.get_device("cuda"))
    f32, i8 = StackDeviceTensorEndpointFloat32(), StackDeviceTensorEndpointInt8()
    ec = EngineConfig(records_per_block=256, blocks_to_allocate=4, preload_count=2)
    ec.add_acquisition(acq, [proc])
    fmt = planner(ascans, bscans)
    ec.add_processor(proc, [fmt])
    ec.add_formatter(fmt, [f32, i8])
    with Engine(ec) as eng:
        queue_volumes(eng, ascans, bscans, 1)
        eng.prepare()
        eng.start()
        eng.wait()
        st = eng.status()
        assert st.volumes == 1 and st.blocks_dropped == 0 and st.error == "", st
        with f32.tensor as a, i8.tensor as b:
            return a.get(), b.get()  # CuPy arrays on the device


@pytest.mark.parametrize("samples", [1024, 2048])
def test_fused_kernels_process_as_the_three_kernels(gpu, monkeypatch, samples):
    """``VORTEXGO_FUSED_KERNELS=1`` (a record's spectrum, inverse FFT and output values in one
    kernel) gives the volume the spectrum, cuFFT and output kernels give: the float32 A-scans within
    float32 rounding of the transforms (in dB), the int8 ones equal but for a rounding step at
    a few values."""
    got = {}
    for fused in ("0", "1"):
        monkeypatch.setenv("VORTEXGO_FUSED_KERNELS", fused)  # read at the processor's prepare
        got[fused] = _fused_volume(samples)
    (f0, b0), (f1, b1) = got["0"], got["1"]
    assert np.isfinite(f0).all() and np.isfinite(f1).all()
    far = np.abs(f1 - f0) > 1e-3 * np.maximum(1.0, np.abs(f0))
    assert far.mean() < 1e-4, f"{far.sum()} of {far.size} values apart; largest {np.abs(f1 - f0).max():.3g}"
    step = np.abs(b1.astype(int) - b0.astype(int))
    assert step.max() <= 1 and (step > 0).mean() < 1e-3, (step.max(), int((step > 0).sum()))
