"""Processors outside the engine, as vortex's: initialize, change(config),
next(input, output) and next_async on NumPy, vortexgo and CuPy arrays,
checked against an independent NumPy reference and, where vortex 0.5.1 runs
here, against vortex's CPUProcessor on the same input."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest

import vortexgo as vg
from conftest import needs_cuda, needs_cupy
from vortexgo.process import CPUProcessor, CUDAProcessor, ProcessorConfig

N, R = 48, 6  # samples per record, records per block


def spectra(blocks: int, seed: int = 0, channels: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 4000, (blocks * R, N, channels), dtype=np.uint16)


def reference(raw: np.ndarray, c: ProcessorConfig, blocks: list[int], append=None) -> np.ndarray:
    """The chain in NumPy (float64): vortex's rolling background over the
    last average_window records, inverse FFT / M, |x|^2, 10 log10."""
    x = raw[:, :, c.channel].astype(np.float64)
    out, hist, start = [], [], 0
    for k, b in enumerate(blocks):
        blk = x[start:start + b]
        if c.average_window:
            ok = append is None or append[k]
            base = hist + list(blk) if ok else hist
            mean = np.mean(base[-c.average_window:], axis=0) if base else 0.0
            if ok:
                hist = base[-c.average_window:]
            blk = blk - mean
        y = np.fft.ifft(blk, axis=1)
        v = np.abs(y) if c.enable_magnitude else y.real
        if c.enable_square:
            v = v * v
        if c.enable_log10:
            v = 10 * np.log10(np.maximum(v, 1e-30))
        out.append(v)
        start += b
    return np.concatenate(out)


@pytest.mark.parametrize("window, blocks, append", [
    (0, [R, R], None), (4, [R, 2, R], None), (3, [R, R, R], [True, False, True]), (10, [R, R], None)])
def test_next_float_output_equals_numpy(window, blocks, append):
    c = ProcessorConfig(samples_per_record=N, ascans_per_block=R, average_window=window)
    raw = spectra(3)
    want = reference(raw, c, blocks, append)
    p = CPUProcessor(c)
    got, start = [], 0
    for k, b in enumerate(blocks):
        out = np.zeros((b, N, 1), np.float32)
        p.next(raw[start:start + b], out, id=k, append_history=True if append is None else append[k])
        got.append(out[:, :, 0])
        start += b
    np.testing.assert_allclose(np.concatenate(got), want, rtol=2e-4, atol=2e-3)


def test_int8_output_is_the_float_rendered():
    c = ProcessorConfig(samples_per_record=N, ascans_per_block=R, levels=(-20, 60))
    raw = spectra(1)
    p = CPUProcessor(c)
    f = np.zeros((R, N, 1), np.float32)
    i8 = np.zeros((R, N), np.int8)  # axes of 1 may be left out
    p.next(raw, f, append_history=False)
    p.next(raw[:, :, 0], i8, append_history=False)
    want = np.clip(np.round((f[:, :, 0] + 20) / 80 * 255 - 128), -128, 127)
    assert np.abs(i8.astype(int) - want).max() <= 1


def test_change_takes_effect_on_the_next_block_and_keeps_history():
    c = ProcessorConfig(samples_per_record=N, ascans_per_block=R, average_window=4)
    raw = spectra(2)
    p = CPUProcessor(c)
    a, b = np.zeros((R, N, 1), np.float32), np.zeros((R, N, 1), np.float32)
    p.next(raw[:R], a)
    p.change(enable_log10=False)
    assert p.config.enable_log10 is False and c.enable_log10 is True, "change copies the configuration"
    p.next(raw[R:], b)
    c2 = ProcessorConfig(samples_per_record=N, ascans_per_block=R, average_window=4, enable_log10=False)
    want = reference(raw, c2, [R, R])[R:]
    np.testing.assert_allclose(b[:, :, 0], want, rtol=2e-4, atol=2e-3, err_msg="history carried over the change")
    with pytest.raises(ValueError, match="average_window"):
        p.change(average_window=-1)
    assert p.config.average_window == 4, "a refused change changes nothing"


def test_next_async_runs_in_order_and_reports_errors():
    c = ProcessorConfig(samples_per_record=N, ascans_per_block=R)
    raw = spectra(4)
    p = CPUProcessor(c)
    outs = [np.zeros((R, N, 1), np.float32) for _ in range(4)]
    done, errors = threading.Event(), []

    def cb(k):
        def f(exc):
            errors.append((k, exc, threading.current_thread() is threading.main_thread()))
            if len(errors) == 5:
                done.set()
        return f

    for k in range(4):
        p.next_async(raw[k * R:(k + 1) * R], outs[k], cb(k))
    p.next_async(raw[:R], np.zeros((R, N + 1, 1), np.float32), cb(4))
    assert done.wait(30)
    assert [k for k, _, _ in errors] == [0, 1, 2, 3, 4]
    assert all(e is None for _, e, _ in errors[:4]) and isinstance(errors[4][1], ValueError)
    assert not any(main for _, _, main in errors), "callbacks run on the processor's worker"
    want = reference(raw, c, [R] * 4)
    np.testing.assert_allclose(np.concatenate(outs)[:, :, 0], want, rtol=2e-4, atol=2e-3)
    with pytest.raises(TypeError, match="callback=None, expected a callable"):
        p.next_async(raw[:R], outs[0], None)
    p.close()


def test_vortexgo_host_arrays():
    c = ProcessorConfig(samples_per_record=N, ascans_per_block=R)
    raw = spectra(1)
    dev = vg.get_device("cpu")
    a = vg.empty((R, N, 1), np.uint16, device=dev) if hasattr(vg, "empty") else None
    if a is None:
        pytest.skip("no vortexgo.empty")
    np.asarray(a)[...] = raw
    out = vg.empty((R, N, 1), np.float32, device=dev)
    CPUProcessor(c).next(a, out)
    np.testing.assert_allclose(np.asarray(out)[:, :, 0], reference(raw, c, [R]), rtol=2e-4, atol=2e-3)


@pytest.mark.parametrize("inp, out, exc, text", [
    (np.zeros((R, N, 1), np.float32), np.zeros((R, N, 1), np.int8), TypeError, "input_buffer: dtype <f4, expected uint16"),
    (np.zeros((R, N, 1), np.uint16), np.zeros((R, N, 1), np.int16), TypeError, "output_buffer: dtype <i2, expected int8 or float32"),
    (np.zeros((R, N, 2), np.uint16), np.zeros((R, N, 1), np.int8), ValueError, r"input_buffer: shape \(6, 48, 2\), expected \(records, 48, 1\)"),
    (np.zeros((R + 1, N, 1), np.uint16), np.zeros((R + 1, N, 1), np.int8), ValueError, "expected 1 to ascans_per_block=6 records"),
    (np.zeros((R, N, 1), np.uint16), np.zeros((R - 1, N, 1), np.int8), ValueError, r"output_buffer: shape \(5, 48, 1\), expected \(6, 48, 1\)"),
    ([[0] * N] * R, np.zeros((R, N, 1), np.int8), TypeError, "input_buffer=list, expected a NumPy"),
])
def test_bad_buffers_are_refused(inp, out, exc, text):
    p = CPUProcessor(samples_per_record=N, ascans_per_block=R)
    with pytest.raises(exc, match=text):
        p.next(inp, out)


@pytest.mark.parametrize("window", [0, 3])
@pytest.mark.parametrize("channel", [0, 1])
def test_one_channel_of_an_interleaved_block(channel, window):
    """vortex's pre-indexed channel: spectra[..., c] (a strided (records, samples) view) with channel=0
    processes as channel c of the whole block, block after block (the rolling average carried);
    the other channel's bytes past its last sample are never needed."""
    raw = spectra(3, seed=5, channels=2)
    whole = CPUProcessor(samples_per_record=N, ascans_per_block=R, channels_per_sample=2, channel=channel,
                         average_window=window)
    one = CPUProcessor(samples_per_record=N, ascans_per_block=R, channels_per_sample=2, channel=0,
                       average_window=window)
    for k in range(3):
        blk = raw[k * R:(k + 1) * R]
        want, got = np.zeros((R, N, 1), np.float32), np.zeros((R, N, 1), np.float32)
        whole.next(blk, want)
        view = blk[..., channel]
        assert not view.flags.c_contiguous
        one.next(view, got)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("make", [
    lambda b: b[::-1][::-1],                                   # a view, C order after all
    lambda b: np.asfortranarray(b),                            # Fortran order
    lambda b: np.repeat(b, 2, axis=1)[:, ::2],                 # every other sample of a wider block
    lambda b: np.ascontiguousarray(b[..., 1]),                 # one channel alone, C order (R, N)
], ids=["view", "fortran", "samples-strided", "one-channel-contiguous"])
def test_other_strided_host_inputs_are_gathered(make):
    """Any other strided host input is read as its values say (gathered into C order first)."""
    raw = spectra(1, seed=6, channels=2)
    cfg = dict(samples_per_record=N, ascans_per_block=R, channels_per_sample=2, average_window=2)
    inp = make(raw)
    ref_in = raw if inp.ndim == 3 else raw
    want, got = np.zeros((R, N, 1), np.float32), np.zeros((R, N, 1), np.float32)
    CPUProcessor(channel=1 if inp.ndim == 2 else 0, **cfg).next(ref_in, want)
    CPUProcessor(channel=0, **cfg).next(inp, got)
    np.testing.assert_array_equal(got, want)


def test_one_channel_input_refusals():
    """A (records, samples) input for several channels is the processed channel alone: channel must be 0
    and there is no clock channel to read."""
    raw = spectra(1, channels=2)
    out = np.zeros((R, N, 1), np.float32)
    with pytest.raises(ValueError, match=r"one channel for channels_per_sample=2: expected channel=0"):
        CPUProcessor(samples_per_record=N, ascans_per_block=R, channels_per_sample=2, channel=1).next(raw[..., 0], out)
    with pytest.raises(ValueError, match=r"no clock_channel \(got channel=0, clock_channel=1\)"):
        CPUProcessor(samples_per_record=N, ascans_per_block=R, channels_per_sample=2, clock_channel=1,
                     enable_ifft=False).next(raw[..., 0], out)


def test_levels_take_vortexs_range():
    """ProcessorConfig.levels is vortex's Range (a (lo, hi) pair is the same); the int8 rendering maps it."""
    raw = spectra(1, seed=7)
    outs = []
    for levels in (vg.Range(-21, 99), (-21, 99)):
        out = np.zeros((R, N, 1), np.int8)
        p = CPUProcessor(samples_per_record=N, ascans_per_block=R, levels=levels, enable_ifft=False,
                         enable_log10=False, enable_square=False, enable_magnitude=False)
        assert p.config.levels == levels
        p.next(raw, out)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    ref = np.clip(np.round(raw * (255 / 120) + 21 * 255 / 120 - 128), -128, 127).astype(np.int8)
    np.testing.assert_allclose(outs[0].astype(int), ref.astype(int), atol=1)
    with pytest.raises(TypeError, match="expected None, a Range or"):
        ProcessorConfig(levels="loud").validate()


def test_bad_calls_and_lifecycle():
    p = CPUProcessor(samples_per_record=N, ascans_per_block=R)
    x, y = np.zeros((R, N, 1), np.uint16), np.zeros((R, N, 1), np.int8)
    ro = np.zeros((R, N, 1), np.int8)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="output_buffer: read-only"):
        p.next(x, ro)
    with pytest.raises(ValueError, match="id=-1"):
        p.next(x, y, id=-1)
    with pytest.raises(TypeError, match="append_history=1, expected a bool"):
        p.next(x, y, append_history=1)
    with pytest.raises(TypeError, match="unknown field 'input_shape'"):
        p.change(input_shape=[1, 2, 3])
    with pytest.raises(ValueError, match="not initialized"):
        CPUProcessor().next(x, y)
    p.close()
    with pytest.raises(vg.ClosedError):
        p.next(x, y)
    c = ProcessorConfig()
    assert c.input_shape == [1000, 1000, 1] and c.output_shape == [1000, 1000, 1] and c.records_per_block == 1000
    c.records_per_block = 10
    assert c.ascans_per_block == 10


def test_engine_refuses_standalone_next_and_takes_a_change_while_running(tmp_path):
    from vortexgo.engine import Engine, EngineConfig

    from _scans import planner, queue_volumes

    acq = vg.NullAcquisition(samples_per_record=N)
    proc = CPUProcessor(samples_per_record=N, ascans_per_block=R)
    fmt = planner(R, 2)
    ec = EngineConfig(records_per_block=R, blocks_to_allocate=3, preload_count=1)
    ec.add_acquisition(acq, [proc])
    ec.add_processor(proc, [fmt])
    ec.add_formatter(fmt, [vg.NullEndpoint()] if hasattr(vg, "NullEndpoint") else [])
    eng = Engine(ec)
    queue_volumes(eng, R, 2, 0)  # a looping raster: runs until stopped
    eng.prepare()
    eng.start()
    try:
        with pytest.raises(vg.InUseError, match="stop the engine first"):
            proc.next(np.zeros((R, N, 1), np.uint16), np.zeros((R, N, 1), np.int8))
        proc.change(enable_log10=False)  # a block boundary of the running engine
        assert proc.config.enable_log10 is False
        with pytest.raises(vg.InUseError, match="SamplesPerRecord changes while an engine runs"):
            proc.change(samples_per_record=2 * N)
    finally:
        eng.stop()
        eng.close()
    out = np.zeros((R, N, 1), np.int8)
    proc.next(np.ones((R, N, 1), np.uint16), out)  # free again once the engine is done


@needs_cupy
@pytest.mark.parametrize("outdt", [np.int8, np.float32])
def test_cuda_next_on_cupy_and_numpy(outdt):
    import cupy

    c = ProcessorConfig(samples_per_record=1376, ascans_per_block=R, average_window=2)
    raw = np.random.default_rng(2).integers(0, 4000, (2 * R, 1376, 1), dtype=np.uint16)
    cpu, gpu_host, gpu_dev = (CPUProcessor(c), CUDAProcessor(c), CUDAProcessor(c))
    for k in range(2):
        blk = raw[k * R:(k + 1) * R]
        want = np.zeros((R, 1376, 1), outdt)
        cpu.next(blk, want)
        host = np.zeros_like(want)
        gpu_host.next(blk, host)
        dev_out = cupy.zeros(want.shape, outdt)
        gpu_dev.next(cupy.asarray(blk), dev_out)
        tol = dict(rtol=1e-3, atol=1e-2) if outdt == np.float32 else dict(atol=1)
        np.testing.assert_allclose(host.astype(np.float64), want.astype(np.float64), **tol)
        np.testing.assert_allclose(cupy.asnumpy(dev_out).astype(np.float64), want.astype(np.float64), **tol)
    with pytest.raises(TypeError, match="one in host and one in device memory"):
        gpu_dev.next(cupy.asarray(raw[:R]), np.zeros((R, 1376, 1), outdt))


@needs_cuda
def test_cuda_next_on_numpy_without_cupy():
    c = ProcessorConfig(samples_per_record=N, ascans_per_block=R)
    raw = spectra(1)
    want, got = np.zeros((R, N, 1), np.float32), np.zeros((R, N, 1), np.float32)
    CPUProcessor(c).next(raw, want)
    CUDAProcessor(c).next(raw, got)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-2)


@needs_cuda
@pytest.mark.parametrize("samples", [688, 1376, 2752])
def test_cuda_one_pass_fft_lengths_match_the_cpu(samples):
    """At 2^k x 43 samples the CUDA processor's inverse FFT is vortexgo's one-pass kernel, not
    cuFFT (docs/design.md): through the Python API, with averaging, resampling and int8
    levels, block after block, it agrees with the CPU processor's float64 FFT."""
    rng = np.random.default_rng(samples)
    positions = np.sort(rng.uniform(0, samples - 1, samples)).astype(np.float32)
    # The magnitude, not decibels: float32 FFT error is relative to a record's peak, which
    # decibels would magnify in the deepest bins.
    c = ProcessorConfig(samples_per_record=samples, ascans_per_block=24, average_window=3,
                        resampling_samples=positions, enable_square=False, enable_log10=False)
    cpu, gpu = CPUProcessor(c), CUDAProcessor(c)
    for block in range(3):
        raw = rng.integers(1000, 4000, (24, samples, 1), dtype=np.uint16)
        want, got = np.zeros((24, samples, 1), np.float32), np.zeros((24, samples, 1), np.float32)
        cpu.next(raw, want)
        gpu.next(raw, got)
        peak = want.max(axis=1, keepdims=True)
        assert peak.min() > 0
        worst = float((np.abs(got - want) / peak).max())
        assert worst < 1e-5, f"block {block}: worst error {worst:.3g} of the record's peak"


from _vortex import VORTEX_PY, WHY_NOT, have_vortex, vortex_env  # noqa: E402


@pytest.mark.skipif(not have_vortex(), reason=WHY_NOT)
def test_same_as_vortex_cpu_processor(tmp_path):
    """vortex's CPUProcessor.next and ours on the same blocks: int8 outputs
    equal within 1 (float rounding at a level boundary), for several option
    combinations, history carried over two blocks and a change between them."""
    raw = np.random.default_rng(7).integers(0, 4000, (2 * R, N, 1), dtype=np.uint16)
    np.save(tmp_path / "raw.npy", raw)
    cases = [dict(), dict(average_window=3), dict(enable_log10=False, levels=[0, 4000]),
             dict(enable_square=False), dict(enable_square=False, enable_log10=False, levels=[0, 1000]),
             dict(enable_magnitude=False, enable_log10=False, enable_square=False)]
    # Not compared: levels with enable_log10. vortex's CPUProcessor adds
    # log10(1/M) unscaled there (src/vortex/process/cpu.hpp, the levels +
    # log10 branch: offset + log10(normalization) outside the scale), so its
    # dB are those of the unnormalised FFT; ours keep the 1/M of the
    # no-levels path. Reported for the processor's owner to decide.
    script = r"""
import json, sys, numpy as np
import vortex
from vortex.process import CPUProcessor, CPUProcessorConfig
raw = np.load(sys.argv[2]); out = []
for kw in json.loads(sys.argv[1]):
    c = CPUProcessorConfig(); c.samples_per_record = %d; c.ascans_per_block = %d
    for k, v in kw.items(): setattr(c, k, vortex.Range(*v) if k == 'levels' else v)
    p = CPUProcessor(); p.initialize(c); res = []
    for b in range(2):
        y = np.zeros((%d, %d, 1), np.int8); p.next(raw[b*%d:(b+1)*%d], y); res.append(y.tolist())
    out.append(res)
print(json.dumps(out))
""" % (N, R, R, N, R, R)
    env = vortex_env()
    try:
        p = subprocess.run([str(VORTEX_PY), "-c", script, json.dumps(cases), str(tmp_path / "raw.npy")], env=env,
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.skip("vortex did not answer in time")
    if p.returncode != 0:
        pytest.skip(f"vortex does not run here: {p.stderr[-300:]}")
    theirs = json.loads(p.stdout.strip().splitlines()[-1])
    for kw, want in zip(cases, theirs):
        proc = CPUProcessor(samples_per_record=N, ascans_per_block=R,
                            **{k: tuple(v) if k == "levels" else v for k, v in kw.items()})
        for b in range(2):
            y = np.zeros((R, N, 1), np.int8)
            proc.next(raw[b * R:(b + 1) * R], y)
            diff = np.abs(y.astype(int) - np.array(want[b], dtype=int))
            assert diff.max() <= 1, (kw, b, int(diff.max()))


@needs_cuda
@pytest.mark.skipif(not have_vortex(), reason=WHY_NOT)
def test_same_as_vortex_cuda_processor(tmp_path):
    """vortex's CUDAProcessor (its cuFFT path) and our CUDA and CPU processors on the
    same blocks, for every option combination the processors share, levels with
    log10 included (vortex's CUDAProcessor maps the normalised decibels, as ours
    do), lengths 1376 (Axsun100k, not a power of two) and 2048, history carried
    over two blocks: the int8 outputs agree within one step except for values at a
    rounding boundary where float32 FFT error decides (at most 1 in 1,000)."""
    cases = [dict(), dict(average_window=3), dict(enable_log10=False, levels=[0, 4000]),
             dict(enable_square=False), dict(levels=[-20, 60]), dict(enable_ifft=False, levels=[0, 100]),
             dict(enable_square=False, enable_log10=False, levels=[0, 1000]),
             dict(enable_magnitude=False, enable_log10=False, enable_square=False)]
    for n in (1376, 2048):
        r = 8
        raw = np.random.default_rng(n).integers(0, 4000, (2 * r, n, 1), dtype=np.uint16)
        np.save(tmp_path / "raw.npy", raw)
        script = r"""
import json, sys, numpy as np, cupy
import vortex
from vortex.process import CUDAProcessor, CUDAProcessorConfig
raw = np.load(sys.argv[2]); out = []
for kw in json.loads(sys.argv[1]):
    c = CUDAProcessorConfig(); c.samples_per_record = %d; c.ascans_per_block = %d
    for k, v in kw.items(): setattr(c, k, vortex.Range(*v) if k == 'levels' else v)
    p = CUDAProcessor(); p.initialize(c); res = []
    for b in range(2):
        y = cupy.zeros((%d, %d, 1), cupy.int8); x = cupy.asarray(raw[b*%d:(b+1)*%d])
        # CuPy filled x and y on its stream; vortex's next runs on its own
        cupy.cuda.runtime.deviceSynchronize(); p.next(x, y)
        cupy.cuda.runtime.deviceSynchronize(); res.append(cupy.asnumpy(y).tolist())
    out.append(res)
print(json.dumps(out))
""" % (n, r, r, n, r, r)
        try:
            p = subprocess.run([str(VORTEX_PY), "-c", script, json.dumps(cases), str(tmp_path / "raw.npy")],
                               env=vortex_env(), capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            pytest.skip("vortex did not answer in time")
        if p.returncode != 0:
            pytest.skip(f"vortex's CUDAProcessor does not run here: {p.stderr[-300:]}")
        theirs = json.loads(p.stdout.strip().splitlines()[-1])
        for kw, want in zip(cases, theirs):
            cfg = dict(samples_per_record=n, ascans_per_block=r,
                       **{k: tuple(v) if k == "levels" else v for k, v in kw.items()})
            far = {}
            for proc in (CUDAProcessor(**cfg), CPUProcessor(**cfg)):
                for b in range(2):
                    y = np.zeros((r, n, 1), np.int8)
                    proc.next(raw[b * r:(b + 1) * r], y)
                    diff = np.abs(y.astype(int) - np.array(want[b], dtype=int))
                    far[type(proc).__name__, b] = (float(np.mean(diff > 1)), int(diff.max()))
                proc.close()
            # all four at once, so a failure says whether both of ours or one differs from vortex
            assert all(f <= 1e-3 for f, _ in far.values()), (n, kw, far)


# --- NullProcessor and CopyProcessor -------------------------------------------

from vortexgo.format import LinearTransform, NullSlice, NullTransform, SimpleSlice  # noqa: E402
from vortexgo.process import CopyProcessor, CopyProcessorConfig, NullProcessor, NullProcessorConfig  # noqa: E402


def copy_reference(raw: np.ndarray, c: CopyProcessorConfig) -> tuple[np.ndarray, np.ndarray]:
    s = c.sample_slice
    start, step = (0, 1) if s.stop is None else (s.start, s.step)
    x = raw[:, start::step, c.channel][:, :c.samples_per_ascan].astype(np.float64)
    if isinstance(c.sample_transform, LinearTransform):
        v = c.sample_transform.scale * x + c.sample_transform.offset
        return v.astype(np.float32), np.trunc(v).astype(np.int64).astype(np.int8)
    return x.astype(np.float32), raw[:, start::step, c.channel][:, :c.samples_per_ascan].astype(np.int8)


@pytest.mark.parametrize("kw", [
    dict(), dict(sample_slice=SimpleSlice(2, 40, 3)), dict(channels_per_sample=2, channel=1),
    dict(sample_transform=LinearTransform(0.05, -20)), dict(sample_slice=SimpleSlice(5, 45), sample_transform=LinearTransform(-1.5, 3))])
def test_copy_processor_equals_numpy(kw):
    c = CopyProcessorConfig(samples_per_record=N, ascans_per_block=R, **kw)
    raw = np.random.default_rng(4).integers(0, 65536, (R, N, c.channels_per_sample), dtype=np.uint16)
    p = CopyProcessor(c)
    m = c.samples_per_ascan
    assert c.output_shape == [R, m, 1] and p.samples_per_ascan == m
    f, i8 = np.zeros((R, m, 1), np.float32), np.zeros((R, m), np.int8)
    p.next(raw, f)
    p.next(raw, i8)
    wf, wi = copy_reference(raw, c)
    np.testing.assert_array_equal(f[:, :, 0], wf)
    np.testing.assert_array_equal(i8, wi)


def test_copy_and_null_configs_and_errors():
    c = CopyProcessorConfig()
    assert (c.samples_per_record, c.ascans_per_block, c.channels_per_sample, c.channel, c.slots) == (1000, 1000, 1, 0, 2)
    assert c.sample_slice == NullSlice() and c.sample_transform == NullTransform()
    assert c.input_shape == [1000, 1000, 1] and c.output_shape == [1000, 1000, 1]
    assert NullProcessorConfig().input_shape == [1000, 1000, 1]
    with pytest.raises(ValueError, match=r"sample_slice=.*expected stop <= samples_per_record=48"):
        CopyProcessor(samples_per_record=N, sample_slice=SimpleSlice(0, N + 1))
    with pytest.raises(TypeError, match="sample_transform=3, expected a NullTransform or LinearTransform"):
        CopyProcessor(samples_per_record=N, sample_transform=3)
    with pytest.raises(ValueError, match="channel=1, expected < channels_per_sample=1"):
        CopyProcessor(samples_per_record=N, channel=1)
    if vg.is_cuda_available():
        with pytest.raises(ValueError, match="CopyProcessor on device .*expected the cpu device"):
            CopyProcessor(samples_per_record=N, device="cuda")
    n = NullProcessor(samples_per_record=N)
    with pytest.raises(TypeError, match="processes nothing"):
        n.next(np.zeros((R, N, 1), np.uint16), np.zeros((R, N, 1), np.int8))
    with pytest.raises(TypeError, match="config=.*expected a CopyProcessorConfig"):
        CopyProcessor(ProcessorConfig())


def test_copy_and_null_processors_in_an_engine():
    from vortexgo.endpoint import SpectraStackDeviceTensorEndpointUInt16, StackDeviceTensorEndpointFloat32
    from vortexgo.engine import Engine, EngineConfig

    from _scans import planner, queue_volumes

    B = 3
    raw = np.random.default_rng(5).integers(0, 60000, (B, R, N), dtype=np.uint16)
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"copy_engine_{os.getpid()}.raw"
    raw.tofile(path)
    try:
        for proc in (CopyProcessor(samples_per_record=N, ascans_per_block=R, sample_transform=LinearTransform(2, 1)),
                     NullProcessor(samples_per_record=N, ascans_per_block=R)):
            acq = vg.FileAcquisition(path=str(path), samples_per_record=N, loop=False)
            spectra = SpectraStackDeviceTensorEndpointUInt16()
            ascans = StackDeviceTensorEndpointFloat32()
            fmt = planner(R, B)
            ec = EngineConfig(records_per_block=R, blocks_to_allocate=3, preload_count=1)
            ec.add_acquisition(acq, [proc])
            ec.add_processor(proc, [fmt])
            ec.add_formatter(fmt, [spectra, ascans])
            eng = Engine(ec)
            queue_volumes(eng, R, B, 1)
            eng.prepare()
            eng.start()
            eng.wait()
            with spectra.tensor as v:
                np.testing.assert_array_equal(v, raw)
            if isinstance(proc, CopyProcessor):
                with ascans.tensor as v:
                    np.testing.assert_array_equal(np.asarray(v), (2 * raw.astype(np.float64) + 1).astype(np.float32))
            eng.close()
            acq.close()
    finally:
        path.unlink()


@pytest.mark.skipif(not have_vortex(), reason=WHY_NOT)
def test_copy_same_as_vortex(tmp_path):
    raw = np.random.default_rng(8).integers(0, 65536, (R, N, 1), dtype=np.uint16)
    np.save(tmp_path / "raw.npy", raw)
    script = r"""
import json, sys, numpy as np
from vortex.process import CopyProcessor, CopyProcessorConfig
raw = np.load(sys.argv[1])
c = CopyProcessorConfig(); c.samples_per_record = %d; c.ascans_per_block = %d
p = CopyProcessor(); p.initialize(c); y = np.zeros((%d, %d, 1), np.int8); p.next(raw, y)
print(json.dumps(y.tolist()))
""" % (N, R, R, N)
    env = vortex_env()
    try:
        p = subprocess.run([str(VORTEX_PY), "-c", script, str(tmp_path / "raw.npy")], env=env,
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.skip("vortex did not answer in time")
    if p.returncode != 0:
        pytest.skip(f"vortex does not run here: {p.stderr[-300:]}")
    want = np.array(json.loads(p.stdout.strip().splitlines()[-1]), np.int8)
    y = np.zeros((R, N, 1), np.int8)
    CopyProcessor(samples_per_record=N, ascans_per_block=R).next(raw, y)
    np.testing.assert_array_equal(y, want)


def test_config_device_is_vortexs_field():
    """vortex's CUDAProcessorConfig.device (the GPU's index; vortex's cuda_benchmark demo
    reads it back): validated, kept on copies, used when no device is given."""
    assert ProcessorConfig().device == 0
    with pytest.raises(ValueError, match="ProcessorConfig.device"):
        ProcessorConfig(samples_per_record=N, ascans_per_block=R, device=-1).validate()
    assert ProcessorConfig(device=1).copy().device == 1


@needs_cuda
def test_cuda_processor_runs_on_the_configs_device():
    p = CUDAProcessor(ProcessorConfig(samples_per_record=N, ascans_per_block=R, device=0))
    assert p.config.device == 0 and p.device.is_cuda and p.device.ordinal == 0


def _null_beside(main_proc, device=None):
    """An engine of a FileAcquisition feeding ``main_proc`` and a NullProcessor made
    without a device (vortex's volume_to_disk demo), prepared; returns the NullProcessor."""
    from vortexgo.engine import Engine, EngineConfig, NullEndpoint

    from _scans import planner

    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"null_beside_{os.getpid()}.raw"
    np.zeros((2, R, N), np.uint16).tofile(path)
    null = NullProcessor(samples_per_record=N, ascans_per_block=R)
    acq = vg.FileAcquisition(path=str(path), samples_per_record=N, loop=False)
    fmt = planner(R, 2)
    ec = EngineConfig(records_per_block=R, blocks_to_allocate=3, preload_count=1)
    ec.add_acquisition(acq, [main_proc, null])
    ec.add_processor(main_proc, [fmt])
    ec.add_processor(null, [])
    ec.add_formatter(fmt, [NullEndpoint()])
    eng = Engine(ec, **({} if device is None else {"device": device}))
    eng.prepare()
    eng.close()
    path.unlink()
    return null


def test_null_processor_follows_the_engines_device():
    """A NullProcessor made without a device computes nothing: it follows the engine's
    device instead of choosing it (the engine's is its first other processor's)."""
    null = _null_beside(CPUProcessor(samples_per_record=N, ascans_per_block=R))
    assert null.device == vg.get_device("cpu")
    pinned = NullProcessor(samples_per_record=N, ascans_per_block=R, device="cpu")
    assert not pinned._follows_engine_device()


@needs_cuda
def test_null_processor_beside_a_cuda_processor():
    """vortex's volume_to_disk demo: a NullProcessor beside a CUDAProcessor in a CUDA engine
    (refused before: 'NullProcessor on cpu, expected the engine's device cuda:0')."""
    null = _null_beside(CUDAProcessor(samples_per_record=N, ascans_per_block=R))
    assert null.device == vg.get_device("cuda:0")
