"""The acquisition engine on the CPU backend: end to end, callbacks, error
policy, backpressure, stop / Ctrl-C, invalid configurations, storage.

Sizes are small (256-sample spectra, 64 x 16 A-scan volumes) so every test
runs in well under a second on a 2-core CI machine.
"""

from __future__ import annotations

import _thread
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import pytest

import vortexgo as vg
from vortexgo.engine import (
    AscanStackEndpoint,
    Engine,
    EngineConfig,
    EngineEvent,
    EngineStatus,
    NullEndpoint,
    SpectraStackDeviceTensorEndpointUInt16,
    SpectraStackEndpoint,
    StackDeviceTensorEndpointFloat32,
    StackDeviceTensorEndpointInt8,
    StackDeviceTensorEndpointUInt16,
    StackHostTensorEndpointFloat32,
    StackHostTensorEndpointInt8,
    StackHostTensorEndpointUInt16,
)
from vortexgo.format import FormatPlanner
from vortexgo.process import hann_window, spectral_filter
from vortexgo.storage import SimpleStackConfig, SimpleStackHeader, SimpleStackInt8, SimpleStackUInt16

from _scans import planner, queue_volumes

pytestmark = pytest.mark.timeout(60)

S, A, B = 256, 64, 16  # samples per spectrum, A-scans per B-scan, B-scans per volume
RPB = 256  # records per block: 4 B-scans
RPV = A * B  # records per volume


@dataclass
class Rig:
    acq: vg.SimulatedAcquisition
    proc: Any
    fmt: FormatPlanner
    endpoints: list
    config: EngineConfig
    scan_volumes: int = 0
    engine: Optional[Engine] = None
    extra: dict = field(default_factory=dict)


def make_rig(endpoints, *, volumes=3, scan_volumes=None, device="cpu", rpb=RPB, blocks=4, preload=2,
             proc_cls=None, average_window=0, slots=None, **engine_kw) -> Rig:
    """A simulated acquisition -> processor -> format planner -> endpoints pipeline; the
    engine made by :func:`new_engine` plays ``scan_volumes`` (default ``volumes``; 0 forever)
    raster volumes from its scan queue. As in vortex the scan queue, not the source, ends
    the run: the acquisition is endless, and the run takes one block past the scan (the
    block in which the queue runs dry finishes the planner)."""
    acq = vg.SimulatedAcquisition(samples_per_record=S, ascans_per_bscan=A, bscans_per_volume=B, volumes=2,
                                  total_volumes=0)
    pc = vg.ProcessorConfig(samples_per_record=S, ascans_per_block=rpb, average_window=average_window,
                            resampling_samples=acq.resampling_positions(),
                            spectral_filter=spectral_filter(hann_window(S), acq.dispersion_compensation()))
    if slots is not None:
        pc.slots = slots
    if proc_cls is None:
        proc_cls = vg.CPUProcessor if device == "cpu" else vg.CUDAProcessor
    proc = proc_cls(pc)
    fmt = planner(A, B)
    ec = EngineConfig(records_per_block=rpb, blocks_to_allocate=blocks, preload_count=preload, **engine_kw)
    ec.add_acquisition(acq, [proc])
    ec.add_processor(proc, [fmt])
    ec.add_formatter(fmt, endpoints)
    return Rig(acq, proc, fmt, endpoints, ec, scan_volumes=volumes if scan_volumes is None else scan_volumes)


def new_engine(rig: Rig, **kw) -> Engine:
    """The rig's engine, its scan queue holding the rig's volumes."""
    eng = Engine(rig.config, **kw)
    queue_volumes(eng, A, B, rig.scan_volumes)
    return eng


def run(rig: Rig, **kw) -> Engine:
    eng = new_engine(rig, **kw)
    rig.engine = eng
    eng.prepare()
    eng.start()
    eng.wait()
    return eng


def open_stack(tmp_path, name="vol.npy", cls=SimpleStackInt8, shape=(B, A, S), header=SimpleStackHeader.NumPy):
    st = cls()
    st.open(SimpleStackConfig(str(tmp_path / name), shape, header=header))
    return st


# --- end to end ------------------------------------------------------------------------


def test_end_to_end_device_host_and_storage(tmp_path):
    dev_ep = StackDeviceTensorEndpointInt8()
    host_ep = StackHostTensorEndpointFloat32()
    st = open_stack(tmp_path)
    store_ep = AscanStackEndpoint(st)
    rig = make_rig([dev_ep, host_ep, store_ep], volumes=3)
    eng = run(rig)
    s = eng.status()
    assert s.done and not s.running and s.error == ""
    # the block past the scan (the queue runs dry in it) ends the run, as in vortex
    assert s.volumes == 3 and s.blocks_acquired == 3 * RPV // RPB + 1
    assert s.blocks_formatted == s.blocks_acquired and s.blocks_dropped == 0 and s.events_dropped == 0
    assert store_ep.volumes_written == 3
    st.close()
    stored = np.load(tmp_path / "vol.npy")
    assert stored.shape == (3, B, A, S, 1) and stored.dtype == np.int8
    stored = stored[..., 0]  # vortex's channels axis
    # The ring holds 2 distinct volumes, replayed: volume 2 is volume 0 again.
    np.testing.assert_array_equal(stored[2], stored[0])
    assert not np.array_equal(stored[1], stored[0])
    with dev_ep.tensor as vol:
        assert isinstance(vol, np.ndarray) and vol.shape == (B, A, S) and vol.dtype == np.int8
        np.testing.assert_array_equal(vol, stored[2])
    with host_ep.tensor as hv:
        assert hv.shape == (B, A, S) and hv.dtype == np.float32
        # levels unset (vortex's default): the int8 rendering is the float
        # A-scans cast directly, rounded and saturated.
        expect = np.clip(np.rint(hv), -128, 127).astype(np.int8)
        assert np.mean(np.abs(expect.astype(int) - stored[2].astype(int)) <= 1) > 0.999
    assert set(eng.timings) == {"acquire", "process", "format", "upload"}
    assert eng.timings["process"].count == s.blocks_formatted


def numpy_chain(raw: np.ndarray, positions: np.ndarray, filt: np.ndarray) -> np.ndarray:
    """An independent NumPy implementation: background subtraction (the mean of the
    last RPB records, which with average_window=RPB is each block's own mean),
    resample, filter, inverse FFT, 10 log10 |y|^2 (vortex's square + log10 defaults)."""
    shape = raw.shape
    raw = raw.astype(np.float64).reshape(-1, RPB, shape[-1])
    raw = (raw - raw.mean(axis=1, keepdims=True)).reshape(shape)
    lo = np.floor(positions).astype(int)
    hi = np.minimum(lo + 1, raw.shape[-1] - 1)
    frac = positions - lo
    spec = raw[..., lo] * (1 - frac) + raw[..., hi] * frac
    y = np.fft.ifft(spec * filt, axis=-1)
    return 10 * np.log10(np.maximum(np.abs(y) ** 2, 1e-60))


def test_processed_volume_matches_numpy_and_reflectors_at_expected_depth():
    spectra = SpectraStackDeviceTensorEndpointUInt16()
    floats = StackDeviceTensorEndpointFloat32()
    rig = make_rig([spectra, floats], volumes=1, average_window=RPB)
    run(rig)
    with spectra.tensor as raw, floats.tensor as out:
        raw, out = raw.copy(), out.copy()
    assert raw.shape == (B, A, S) and raw.dtype == np.uint16
    pos = rig.acq.resampling_positions()
    filt = spectral_filter(hann_window(S), rig.acq.dispersion_compensation())
    ref = numpy_chain(raw, pos, filt)
    strong = ref > ref.max() - 50  # compare where the signal is meaningful
    np.testing.assert_allclose(out[strong], ref[strong], atol=0.05)
    # The brightest reflector of an A-scan sits at its simulated depth.
    b, a = B // 2, A // 3
    depth, _ = max(rig.acq.reflectors(0, b, a), key=lambda r: r[1])
    peak = int(np.argmax(out[b, a, 2: S // 2])) + 2
    assert abs(peak - depth) <= 1.5


def device_ring_run(tmp_path, monkeypatch, device: str, pin: Optional[bool], rings) -> None:
    """Runs 8 volumes of random spectra from a file through an engine of vortex's 4 blocks /
    preload 2 on ``device`` once per ``(VORTEXGO_DEVICE_BLOCKS, blocks the engine cycles)`` of
    ``rings`` and checks that every spectrum is stored as read (SimpleStack, read back by numpy)."""
    vols = 8
    raw = np.random.default_rng(1).integers(0, 4000, (vols * B, A, S), dtype=np.uint16)
    np.save(tmp_path / "raw.npy", raw)
    for ring, cycled in rings:
        monkeypatch.setenv("VORTEXGO_DEVICE_BLOCKS", ring)  # read at prepare
        acq = vg.FileAcquisition(path=str(tmp_path / "raw.npy"), samples_per_record=S, loop=False, pin=pin)
        proc_cls = vg.CPUProcessor if device == "cpu" else vg.CUDAProcessor
        proc = proc_cls(samples_per_record=S, ascans_per_block=RPB)
        npy = SimpleStackUInt16()
        out = tmp_path / f"out{ring}.npy"
        npy.open(SimpleStackConfig(str(out), (B, A, S)))
        fmt = planner(A, B)
        ec = EngineConfig(records_per_block=RPB, blocks_to_allocate=4, preload_count=2)
        ec.add_acquisition(acq, [proc])
        ec.add_processor(proc, [fmt])
        ec.add_formatter(fmt, [SpectraStackEndpoint(npy)])
        with Engine(ec) as eng:
            queue_volumes(eng, A, B, vols)
            eng.prepare()
            assert eng.status().blocks_allocated == cycled, ring
            eng.start()
            eng.wait()
            st = eng.status()
            assert st.error == "" and st.volumes == vols and st.blocks_dropped == 0, (ring, st)
            assert st.blocks_allocated == cycled and st.inflight_blocks == 0, (ring, st)
            assert acq.pinned == (pin is None and device != "cpu"), "the path asked for"
        npy.close()
        got = np.load(out).reshape(vols * B, A, S)
        np.testing.assert_array_equal(got, raw, err_msg=f"VORTEXGO_DEVICE_BLOCKS={ring!r}, pin={pin}")


def test_device_ring_on_the_cpu(tmp_path, monkeypatch):
    """The CPU backend cycles the blocks to allocate unless ``VORTEXGO_DEVICE_BLOCKS`` asks for
    more (the GPU's deeper ring, its code path tested here): every spectrum is stored as read
    either way, the acquisition's memory still 4 blocks refilled as the uploads complete."""
    device_ring_run(tmp_path, monkeypatch, "cpu", None, (("", 4), ("12", 12), ("2", 4)))


def test_device_ring_env_is_checked(monkeypatch):
    """A ``VORTEXGO_DEVICE_BLOCKS`` that is not a count makes prepare() raise naming it."""
    monkeypatch.setenv("VORTEXGO_DEVICE_BLOCKS", "lots")
    rig = make_rig([NullEndpoint()], volumes=1)
    with new_engine(rig) as eng, pytest.raises(Exception, match="VORTEXGO_DEVICE_BLOCKS"):
        eng.prepare()


def test_file_and_null_acquisitions(tmp_path):
    raw = np.random.default_rng(0).integers(0, 4000, (2 * B, A, S), dtype=np.uint16)
    np.save(tmp_path / "raw.npy", raw)
    acq = vg.FileAcquisition(path=str(tmp_path / "raw.npy"), samples_per_record=S)  # loops: the scan queue ends the run
    spectra = SpectraStackDeviceTensorEndpointUInt16()
    proc = vg.CPUProcessor(samples_per_record=S, ascans_per_block=RPB)
    fmt = planner(A, B)
    ec = EngineConfig(records_per_block=RPB, blocks_to_allocate=4, preload_count=1)
    ec.add_acquisition(acq, [proc])
    ec.add_processor(proc, [fmt])
    ec.add_formatter(fmt, [spectra])
    eng = Engine(ec)
    queue_volumes(eng, A, B, 2)
    eng.prepare()
    eng.start()
    eng.wait()
    assert eng.status().volumes == 2
    with spectra.tensor as v:
        np.testing.assert_array_equal(v, raw[B:])
    assert "FileAcquisition" in repr(acq)

    null = vg.NullAcquisition(samples_per_record=S, records=3 * RPB)
    ep = NullEndpoint()
    updates = []
    ep.update_callback = lambda: updates.append(1)
    proc2 = vg.CPUProcessor(samples_per_record=S, ascans_per_block=RPB)
    fmt2 = planner(A, B)
    ec2 = EngineConfig(records_per_block=RPB, blocks_to_allocate=2, preload_count=1)
    ec2.add_acquisition(null, [proc2])
    ec2.add_processor(proc2, [fmt2])
    ec2.add_formatter(fmt2, [ep])
    with Engine(ec2) as eng2:
        queue_volumes(eng2, A, B, 0)  # endless: the acquisition ends the run
        eng2.prepare()
        eng2.start()
        eng2.wait()
        assert len(updates) == 3 and eng2.status().blocks_acquired == 3


# --- callbacks -------------------------------------------------------------------------------


def test_callbacks_order_and_arguments():
    ep = StackDeviceTensorEndpointInt8()
    log: list = []
    ep.update_callback = lambda: log.append(("update",))
    ep.segment_callback = lambda *a: log.append(("segment",) + a)
    ep.volume_callback = lambda *a: log.append(("volume",) + a)
    ep.scan_callback = lambda *a: log.append(("scan",) + a)
    threads = set()
    ep.volume_callback = (lambda f: lambda *a: (threads.add(threading.current_thread().name), f(*a)))(ep.volume_callback)
    events = []
    rig = make_rig([ep], volumes=2)
    eng = new_engine(rig)
    eng.event_callback = lambda ev, exc: events.append((ev, exc))
    eng.prepare()
    eng.start()
    eng.wait()
    E = vg.engine.Engine.Event
    # vortex's order for a session that runs to the end of its scan.
    assert events == [(E.Launch, None), (E.Run, None), (E.Start, None), (E.Complete, None), (E.Stop, None),
                      (E.Exit, None)]
    assert threads == {"vortexgo-engine-dispatcher"}
    segs = [e for e in log if e[0] == "segment"]
    vols = [e for e in log if e[0] == "volume"]
    scans = [e for e in log if e[0] == "scan"]
    # One update per block, and one more for the block past the scan that ends the run.
    assert len([e for e in log if e[0] == "update"]) == 2 * RPV // RPB + 1
    # vortex's arguments: scan_idx is the ScanBoundary's sequence (one per queued volume here),
    # volume_idx the volume's index in its scan, then the segment's index in its volume.
    assert segs == [("segment", (i + 1) * A, i // B, 0, i % B) for i in range(2 * B)]
    assert vols == [("volume", (v + 1) * RPV, v, 0) for v in range(2)]
    assert scans == [("scan", (v + 1) * RPV, v) for v in range(2)]
    # In order: each volume after its last segment, each scan after its volume, an update last
    # per block (vortex's order).
    i_vol0 = log.index(vols[0])
    assert log[i_vol0 - 1] == segs[B - 1] and i_vol0 < log.index(scans[0]) < log.index(segs[B])
    assert log[-1] == ("update",) and log[-2] == scans[1] and log[0][0] == "segment"


def test_raising_callback_is_logged_counted_and_engine_continues(caplog):
    ep = StackDeviceTensorEndpointInt8()
    calls = []

    def bad(sample, scan_idx, volume_idx):
        calls.append(scan_idx)  # one scan per volume (_scans.queue_volumes)
        raise RuntimeError(f"boom {scan_idx}")

    ep.volume_callback = bad
    rig = make_rig([ep], volumes=3)
    with caplog.at_level(logging.ERROR, logger="vortexgo.engine"):
        eng = run(rig)
    s = eng.status()
    assert calls == [0, 1, 2] and s.callback_errors == 3 and s.volumes == 3 and s.error == ""
    assert isinstance(eng.last_callback_error, RuntimeError)
    recs = [r for r in caplog.records if r.name == "vortexgo.engine"]
    assert len(recs) == 3 and recs[0].exc_info is not None and "volume_callback" in recs[0].getMessage()


def test_raising_callback_with_stop_policy_stops_engine(caplog):
    ep = StackDeviceTensorEndpointInt8()
    ep.volume_callback = lambda *a: 1 / 0
    rig = make_rig([ep], volumes=0, scan_volumes=0)  # endless
    with caplog.at_level(logging.ERROR, logger="vortexgo.engine"):
        eng = new_engine(rig, callback_error_policy="stop")
        eng.prepare()
        eng.start()
        assert eng.wait_for(20), "the stop policy did not stop an endless run"
    s = eng.status()
    assert s.done and s.callback_errors >= 1 and s.error == ""
    assert isinstance(eng.last_callback_error, ZeroDivisionError)


def test_slow_callback_applies_backpressure_without_drops():
    ep = StackDeviceTensorEndpointInt8()
    segs = []

    def slow(sample, scan_idx, volume_idx, bscan_idx):
        time.sleep(0.002)
        segs.append((scan_idx, bscan_idx))

    ep.segment_callback = slow
    rig = make_rig([ep], volumes=3, event_queue_size=4)
    eng = run(rig)
    s = eng.status()
    assert segs == [(i // B, i % B) for i in range(3 * B)]
    assert s.events_dropped == 0 and s.blocks_dropped == 0 and s.volumes == 3


def test_drop_policy_counts_dropped_events():
    ep = StackDeviceTensorEndpointInt8()
    ep.segment_callback = lambda *a: time.sleep(0.01)
    rig = make_rig([ep], volumes=2, event_queue_size=1, event_policy="drop")
    eng = run(rig)
    s = eng.status()
    assert s.events_dropped > 0 and s.blocks_dropped == 0 and s.volumes == 2


def test_holding_the_tensor_lock_makes_the_engine_wait_not_tear():
    ep = StackDeviceTensorEndpointInt8()
    rig = make_rig([ep], volumes=3)
    eng = new_engine(rig)
    eng.prepare()
    with ep.tensor as vol:
        before = vol.copy()
        eng.start()
        time.sleep(0.3)
        mid = eng.status()
        np.testing.assert_array_equal(vol, before)  # nothing written under our lock
        assert mid.blocks_formatted == 0 and not mid.done
    eng.wait()
    s = eng.status()
    assert s.volumes == 3 and s.blocks_dropped == 0


def test_reconfiguring_endpoint_while_holding_lock_raises():
    ep = StackDeviceTensorEndpointInt8()
    rig = make_rig([ep], volumes=1)
    run(rig)
    with ep.tensor:
        with pytest.raises(vg.LockError, match="holds its lock"):
            ep.tensor.resize((1, 2, 3))
        with pytest.raises(vg.LockError, match="holds its tensor's lock"):
            ep.close()
    with pytest.raises(vg.VortexError, match="sized by the engine"):
        ep.tensor.resize((1, 2, 3))
    ep.close()


# --- stopping -----------------------------------------------------------------------------------


def test_stop_mid_volume_keeps_every_completed_volume(tmp_path):
    st = open_stack(tmp_path)
    store = AscanStackEndpoint(st)
    dev_ep = StackDeviceTensorEndpointInt8()
    two = threading.Event()
    volumes: list = []  # a looping scan: volume_idx is its index in the scan, always 0
    dev_ep.volume_callback = lambda s, i, v: (volumes.append(s), len(volumes) >= 2 and two.set())
    rig = make_rig([dev_ep, store], volumes=0, scan_volumes=0, rpb=A * 3)  # blocks straddle B-scans
    eng = new_engine(rig)
    eng.prepare()
    eng.start()
    assert two.wait(20)
    eng.stop()
    s = eng.status()
    assert s.done and not s.running and s.error == ""
    written = store.volumes_written
    assert written >= 2 and written == s.volumes == st.volumes_written
    st.close()
    vols = np.load(tmp_path / "vol.npy")
    assert vols.shape == (written, B, A, S, 1)  # vortex's channels axis
    # The ring of 2 volumes replays. As in vortex the stop finishes the planner, so the volume
    # open at the stop is reported and stored too, partly written: the last one is left out.
    for v in range(2, written - 1):
        np.testing.assert_array_equal(vols[v], vols[v % 2])
    eng.stop()  # a second stop is a no-op


def test_keyboard_interrupt_during_wait_stops_cleanly(tmp_path):
    st = open_stack(tmp_path)
    store = AscanStackEndpoint(st)
    rig = make_rig([store], volumes=0, scan_volumes=0)
    eng = new_engine(rig)
    eng.prepare()
    eng.start()
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt) as ki:
        eng.wait()
    assert time.monotonic() - t0 < 10
    # The traceback a notebook shows ends in Engine.wait, not in the generated binding.
    import traceback
    files = [f.filename for f in traceback.extract_tb(ki.value.__traceback__)]
    assert files[-1].endswith("session.py") and not any("_native" in f for f in files), files
    s = eng.status()
    assert s.done and not s.running
    st.close()
    vols = np.load(tmp_path / "vol.npy")
    assert vols.shape[0] == s.volumes == store.volumes_written


def test_stop_from_a_callback_requests_stop():
    ep = StackDeviceTensorEndpointInt8()
    rig = make_rig([ep], volumes=0, scan_volumes=0)
    eng = new_engine(rig)
    ep.volume_callback = lambda *a: eng.stop()
    eng.prepare()
    eng.start()
    assert eng.wait_for(20)
    assert eng.status().volumes >= 1


# --- invalid configurations ---------------------------------------------------------------------


@pytest.mark.parametrize("field_, value, match", [
    ("records_per_block", 0, "EngineConfig.records_per_block"),
    ("blocks_to_allocate", 0, "EngineConfig.blocks_to_allocate"),
    ("preload_count", 9, "EngineConfig.preload_count"),
    ("blocks_to_acquire", -1, "EngineConfig.blocks_to_acquire"),
    ("event_policy", "sometimes", "EngineConfig.event_policy"),
])
def test_invalid_engine_config_rejected_at_prepare(field_, value, match):
    rig = make_rig([StackDeviceTensorEndpointInt8()])
    setattr(rig.config, field_, value)
    eng = new_engine(rig)  # accepted here: checked by prepare()
    with pytest.raises(ValueError, match=match):
        eng.prepare()
    with pytest.raises(ValueError, match=match):
        rig.config.validate()


def test_invalid_wiring_and_stage_mismatches_name_the_field(tmp_path):
    # processor blocks smaller than the engine's
    rig = make_rig([StackDeviceTensorEndpointInt8()])
    rig.config.records_per_block = RPB * 2
    with pytest.raises(ValueError, match="ProcessorConfig.ascans_per_block"):
        new_engine(rig).prepare()
    # spectrum length differs from the acquisition's
    acq = vg.SimulatedAcquisition(samples_per_record=2 * S, ascans_per_bscan=A, bscans_per_volume=B)
    rig = make_rig([StackDeviceTensorEndpointInt8()])
    rig.config._acquisitions[0] = (acq, vg.engine.divide([rig.proc]), True)
    with pytest.raises(ValueError, match="ProcessorConfig.samples_per_record"):
        new_engine(rig).prepare()
    # storage of the wrong shape, and storage not open
    st = open_stack(tmp_path, shape=(B, A, S // 2))
    with pytest.raises(ValueError, match="storage's volume .* SimpleStackConfig.shape"):
        new_engine(make_rig([AscanStackEndpoint(st)])).prepare()
    st.close()
    with pytest.raises(ValueError, match="not open"):
        new_engine(make_rig([AscanStackEndpoint(SimpleStackInt8())])).prepare()
    # an endpoint built for another shape
    with pytest.raises(ValueError, match="shape"):
        new_engine(make_rig([StackDeviceTensorEndpointInt8(None, (B, A, S + 1))])).prepare()
    # no acquisition; a formatter fed by no processor
    ec = EngineConfig()
    with pytest.raises(ValueError, match="add_acquisition"):
        ec.validate()
    rig = make_rig([StackDeviceTensorEndpointInt8()])
    stray = planner(A, B)
    rig.config.add_formatter(stray, [NullEndpoint()])
    with pytest.raises(ValueError, match="not fed by a processor"):
        rig.config.validate()
    with pytest.raises(ValueError, match="not fed by a processor"):
        new_engine(rig).prepare()


def test_prepare_tried_again_once_the_storage_is_right(tmp_path):
    """A notebook's usual slip: a storage opened with the wrong shape. ``prepare()`` says what to
    do; once the storage is reopened, the same engine prepares (the endpoint prepared before the
    failure starts over rather than refuse a second prepare) and runs into it."""
    host_ep = StackHostTensorEndpointFloat32()
    st = open_stack(tmp_path, shape=(B, A, S // 2))
    rig = make_rig([host_ep, AscanStackEndpoint(st)], volumes=2)
    eng = new_engine(rig)
    with pytest.raises(ValueError, match="open the storage with that shape"):
        eng.prepare()
    st.close()
    st.open(SimpleStackConfig(str(tmp_path / "vol.npy"), (B, A, S), header=SimpleStackHeader.NumPy))
    eng.prepare()
    eng.start()
    eng.wait()
    s = eng.status()
    assert s.volumes == 2 and s.error == "" and s.blocks_dropped == 0, s
    st.close()
    stored = np.load(tmp_path / "vol.npy")[..., 0]
    assert stored.shape == (2, B, A, S)
    with host_ep.tensor as hv:
        np.testing.assert_array_equal(stored[1], np.clip(np.rint(hv), -128, 127).astype(np.int8))


def test_unwritable_storage_path_fails_before_start(tmp_path):
    st = SimpleStackInt8()
    with pytest.raises(OSError, match="cannot be written"):
        st.open(SimpleStackConfig(str(tmp_path / "missing" / "dir" / "x.npy"), (B, A, S)))
    with pytest.raises(ValueError, match="directory"):  # refused before anything is opened
        st.open(SimpleStackConfig(str(tmp_path), (B, A, S)))
    eng = new_engine(make_rig([AscanStackEndpoint(st)]))
    with pytest.raises(ValueError, match="not open"):
        eng.prepare()
    assert not eng.status().running


def test_read_only_directory_fails_at_open(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o500)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as a user that can write anywhere (root)")
        with pytest.raises(OSError):
            SimpleStackInt8().open(SimpleStackConfig(str(ro / "x.npy"), (B, A, S)))
    finally:
        os.chmod(ro, 0o700)


def test_callback_cycles_are_collected_safely():
    """A callback that refers to its endpoint and engine (a reference cycle) must
    not crash the garbage collector when everything is dropped."""
    import gc

    def build():
        ep = StackDeviceTensorEndpointInt8()
        rig = make_rig([ep], volumes=1)
        eng = new_engine(rig)

        def handler(*args):
            with ep.tensor as v:
                with ep.stream:
                    v.max()
            eng.status()

        ep.volume_callback = handler
        eng.prepare()
        eng.start()
        eng.wait()
        assert ep.stream.handle and ep.tensor.shape == (B, A, S)

    for _ in range(3):
        build()
        gc.collect()


@pytest.mark.parametrize("make, exc", [
    (lambda: vg.SimulatedAcquisition(samples_per_record=8), ValueError),
    (lambda: vg.SimulatedAcquisition(samples_per_record="1024"), TypeError),
    (lambda: vg.SimulatedAcquisition(rate=-1.0), ValueError),
    (lambda: vg.SimulatedAcquisition(wavelength_span=1.0), ValueError),
    (lambda: vg.SimulatedAcquisition(no_such_field=1), TypeError),
    (lambda: vg.SimulatedAcquisition(vg.ProcessorConfig()), TypeError),
    (lambda: vg.FileAcquisition(path=""), ValueError),
    (lambda: vg.FileAcquisition(path="x.raw", samples_per_record=-1), ValueError),
    (lambda: vg.NullAcquisition(samples_per_record=0), ValueError),
    (lambda: vg.CPUProcessor(samples_per_record=1), ValueError),
    (lambda: vg.CPUProcessor(channel=1), ValueError),  # channel >= channels_per_sample
    (lambda: vg.CPUProcessor(levels=(1.0, 1.0)), ValueError),
    (lambda: vg.CPUProcessor(slots=0), ValueError),
    (lambda: vg.CPUProcessor(samples_per_record=S, resampling_samples=np.full(S, S + 5.0)), ValueError),
    (lambda: vg.CPUProcessor(samples_per_record=S, spectral_filter=np.ones(S // 2, np.complex64)), ValueError),
    (lambda: vg.CPUProcessor(samples_per_record=S, resampling_samples=np.zeros((2, 2))), ValueError),
    (lambda: vg.CPUProcessor(device="cuda:99"), Exception),
    (lambda: vg.RasterScan().initialize(vg.RasterScanConfig(ascans_per_bscan=0)), ValueError),
    (lambda: vg.StackFormatExecutor(sample_slice=(0, 10)), TypeError),
    (lambda: vg.StackFormatExecutor(scan=vg.RasterScan()), TypeError),  # the index-only wiring is gone
    (lambda: vg.SampleSlice(10, 5), ValueError),
    (lambda: vg.SampleSlice(-1), ValueError),
    (lambda: StackDeviceTensorEndpointInt8(None, (1, 2)), ValueError),
    (lambda: StackDeviceTensorEndpointInt8("fmt"), TypeError),
    (lambda: AscanStackEndpoint(None), TypeError),
    (lambda: AscanStackEndpoint(np.zeros(3)), TypeError),
    (lambda: SpectraStackEndpoint(SimpleStackInt8()), ValueError),
    (lambda: EngineConfig().add_acquisition("acq", []), TypeError),
    (lambda: EngineConfig().add_processor(vg.CPUProcessor(), ["fmt"]), TypeError),
    (lambda: EngineConfig().add_formatter(planner(A, B), [None]), TypeError),
    (lambda: EngineConfig().add_formatter(vg.StackFormatExecutor(), []), TypeError),
    (lambda: Engine("config"), TypeError),
    (lambda: Engine(EngineConfig(), callback_error_policy="ignore"), ValueError),
])
def test_bad_constructor_arguments(make, exc):
    with pytest.raises(exc):
        make()


def test_storage_open_bad_config(tmp_path):
    st = SimpleStackInt8()
    with pytest.raises(ValueError, match="path"):
        st.open(SimpleStackConfig("", (1, 2, 3)))
    with pytest.raises(ValueError, match=r"shape\[1\]"):
        st.open(SimpleStackConfig(str(tmp_path / "a.npy"), (1, 0, 3)))
    with pytest.raises(ValueError, match="shape"):
        st.open(SimpleStackConfig(str(tmp_path / "a.npy"), (1, 2)))
    with pytest.raises(TypeError):
        st.open("a.npy")
    with pytest.raises(ValueError, match="not open"):
        st.write_volume(np.zeros((1, 2, 3), np.int8))


# --- storage --------------------------------------------------------------------------------------


def test_simple_stack_api(tmp_path):
    vol = np.arange(2 * 3 * 4, dtype=np.uint16).reshape(2, 3, 4)
    with SimpleStackUInt16() as st:
        st.open(SimpleStackConfig(tmp_path / "s.npy", (2, 3, 4)))
        assert st.is_open and st.shape == (2, 3, 4) and "SimpleStackUInt16" in repr(st)
        st.write_volume(vol)
        st.advance_volume()  # vortex: write_volume does not advance
        st.write_volume(vg.from_numpy(vol + 1, "cpu"))
        st.advance_volume()
        st.write_partial_bscan(0, 0, vol[0, :2] + 2)
        st.write_partial_bscan(0, 2, vol[0, 2] + 2)
        st.write_partial_bscan(1, 0, vol[1] + 2)
        st.advance_volume()
        st.seek(1)
        st.write_partial_bscan(1, 1, vol[1, 1] + 100)
        with pytest.raises(ValueError, match="dtype"):
            st.write_volume(vol.astype(np.int8))
        with pytest.raises(ValueError, match="shape"):
            st.write_volume(vol[:, :2])
        assert st.volumes_written == 3
    assert not st.is_open
    out = np.load(tmp_path / "s.npy")[..., 0]
    expect = np.stack([vol, vol + 1, vol + 2])
    expect[1, 1, 1] = vol[1, 1] + 100
    np.testing.assert_array_equal(out, expect)

    with SimpleStackInt8() as raw:
        raw.open(SimpleStackConfig(str(tmp_path / "r.bin"), (1, 2, 2), header=SimpleStackHeader.Empty))
        raw.write_volume(np.array([[[1, 2], [3, 4]]], np.int8))
    assert (tmp_path / "r.bin").read_bytes() == bytes([1, 2, 3, 4])


# --- objects and reprs ------------------------------------------------------------------------------


def test_status_timings_and_reprs():
    ep = StackHostTensorEndpointUInt16()
    rig = make_rig([ep, StackHostTensorEndpointInt8(), StackDeviceTensorEndpointUInt16(), NullEndpoint()], volumes=1)
    eng = new_engine(rig)
    # vortex's done: True while no session runs.
    assert eng.status() == EngineStatus() and eng.done
    assert "not prepared" in repr(eng) and "EngineConfig" in repr(rig.config)
    # vortex's: before prepare the tensor is a placeholder, valid False, its dtype known
    assert not ep.tensor.valid and ep.tensor.dtype == np.uint16
    with ep.tensor as empty:
        assert empty.size == 0 and empty.dtype == np.uint16
    eng.prepare()
    assert ep.tensor.valid
    assert "prepared" in repr(eng)
    eng.start()
    eng.wait()
    s = eng.status()
    r = repr(s)
    assert r.startswith("EngineStatus(done)") and "volumes" in r and "callback_errors" in r
    assert "frames_" not in r and "frames_" not in s._repr_html_()  # no camera source: no frame counters
    assert "<table>" in s._repr_html_()
    # vortex's values after a finished run, each with the note that makes it read right (issue 31).
    assert s.active and s.dispatch_completion == 0.0 and s.block_utilization == 0.0
    assert "active              True  (the session stays until stop()" in r
    assert "(unbounded session: blocks_to_acquire is 0)" in r and "(no block in flight)" in r
    assert "done" in repr(eng) and "StageTiming" in repr(eng.timings["format"])
    assert "StackHostTensorEndpointUInt16 prepared" in repr(ep) and "uint16" in repr(ep)
    for obj in (rig.acq, rig.proc, rig.fmt, vg.RasterScan(), vg.SimpleStackFloat32(), NullEndpoint()):
        assert type(obj).__name__ in repr(obj)
    # The endpoint's stream outlives its Python wrapper: dropping it must not close the engine's stream.
    h = ep.stream.handle
    ep._stream = None
    import gc

    gc.collect()
    assert ep.stream.handle == h
    with ep.stream as s:
        # The block binds the endpoint's stream itself (or CuPy's wrapper of it).
        cs = ep.stream.cupy()
        assert s is ep.stream if cs is None else s.ptr == ep.stream.handle
    with pytest.raises(vg.VortexError, match="already prepared"):
        eng.prepare()
    eng.close()
    assert "closed" in repr(eng)
    with pytest.raises(vg.ClosedError):
        eng.start()


def test_wait_before_start_and_wait_for_timeout():
    rig = make_rig([StackDeviceTensorEndpointInt8()], volumes=0, scan_volumes=0)
    eng = new_engine(rig)
    eng.stop()  # never prepared: a no-op
    eng.prepare()
    # vortex's: with no session, wait returns and wait_for is True at once.
    eng.wait()
    assert eng.wait_for(0) is True and eng.done
    eng.start()
    assert eng.wait_for(0.05) is False and not eng.done
    with pytest.raises(ValueError):
        eng.wait_for(-1)
    eng.stop()
    assert eng.wait_for(0) and eng.done


@pytest.mark.parametrize("spin, exc", [(-1e-3, ValueError), (2.0, ValueError), ("fast", TypeError), (True, TypeError),
                                       (float("nan"), ValueError)])
def test_dispatch_spin_is_validated(spin, exc):
    ec = vg.engine.EngineConfig(dispatch_spin=spin)
    with pytest.raises(exc, match="dispatch_spin"):
        ec.validate()


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_device_timings_is_validated(value):
    ec = vg.engine.EngineConfig(device_timings=value)
    with pytest.raises(TypeError, match="device_timings"):
        ec._check_fields()


def test_cpu_times_every_block_without_device_timings():
    """device_timings only concerns CUDA: the CPU backend's events read the host clock."""
    eng = run(make_rig([StackDeviceTensorEndpointInt8()], volumes=2))
    assert eng.config.device_timings is False
    assert eng.timings["process"].count == eng.status().blocks_formatted > 0


def test_volume_callback_sees_its_own_volume():
    """A slow volume_callback still sees the volume it is told about: the engine
    waits for endpoint callbacks at volume boundaries (blocks straddle volumes here)."""
    import time as _time

    ep = StackDeviceTensorEndpointInt8()
    ref = StackDeviceTensorEndpointInt8()  # no callback: runs ahead
    seen = []

    def handler(sample, scan_idx, volume_idx):
        _time.sleep(0.01)
        with ep.tensor as volume:
            seen.append((scan_idx, np.array(volume)))  # one scan per volume (_scans.queue_volumes)

    ep.volume_callback = handler
    rig = make_rig([ep, ref], volumes=4, rpb=A * 3 + 5)
    run(rig)
    assert [v for v, _ in seen] == [0, 1, 2, 3]
    # The ring holds 2 distinct volumes: 0 and 2 are the same, 0 and 1 differ.
    assert np.array_equal(seen[0][1], seen[2][1]) and np.array_equal(seen[1][1], seen[3][1])
    assert not np.array_equal(seen[0][1], seen[1][1])


def test_a_tensor_read_outside_its_lock_is_refused_not_wrapped():
    """np.asarray of an endpoint's tensor (before prepare, or outside its lock) raises a TypeError
    that says how to read it, instead of NumPy's silent 0-d object array."""
    ep = StackHostTensorEndpointInt8()
    with pytest.raises(TypeError, match="Engine.prepare"):
        np.asarray(ep.tensor)
    t = vg.DeviceTensor((2, 3), device="cpu")
    with pytest.raises(TypeError, match="with tensor as view"):
        np.asarray(t)
    with t as v:
        assert np.asarray(v).shape == (2, 3)
    view = vg.TensorView(0, (2,), np.dtype("float32"), vg.get_device("cpu"))
    with pytest.raises(TypeError, match="cupy.asarray"):
        np.asarray(view)


def test_the_package_namespace_has_no_future_import():
    assert "annotations" not in dir(vg)


def test_a_reader_waits_for_the_endpoint_tensor_after_a_run():
    """The endpoint records its tensor's ready event only when a reader asks (issue 29): a
    reader's wait_ready after the run works on every stream, again without new writes, and
    after the endpoint closed it is refused as a closed tensor's."""
    from vortexgo import ClosedError

    ep = StackDeviceTensorEndpointInt8()
    run(make_rig([ep], volumes=1))
    t = ep.tensor
    for s in (vg.Stream(t.device), vg.Stream(t.device), t.stream):
        t.wait_ready(s)
        t.wait_ready(s)
        s.synchronize()
    with t as vol:
        assert vol.any()
    with pytest.raises(TypeError, match="stream="):
        t.wait_ready("not a stream")
    ep.close()
    with pytest.raises(ClosedError):
        t.wait_ready(vg.Stream(t.device))
