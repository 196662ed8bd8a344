"""vortex's ``clock_channel``: dynamic resampling of every record from a
k-clock recorded in another channel (issue 8), on the CPU processor against
an independent NumPy reference, the CUDA processor against the CPU, and,
where vortex 0.5.1 runs on a GPU, against vortex's CUDAProcessor."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from conftest import needs_cuda
from vortexgo.process import CPUProcessor, CUDAProcessor, ProcessorConfig, hann_window, spectral_filter


# --- the reference --------------------------------------------------------------


def clock_tables(clock: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """vortex's per-record resampling from a clock record, in float64, read
    from src/vortex/process/cuda.hpp and cuda.cu: the clock minus its mean,
    its analytic signal (FFT; bins 0 and n//2 kept, 1..n//2-1 doubled, the
    rest zeroed; inverse FFT), successive phase differences wrapped into
    [-pi, pi] and summed from 0, then for output j the linear phase
    q = max * j / n, the sample b that thrust's lower_bound finds (the
    first whose phase is not below q where the phase ascends; a Hilbert
    transform's edge may make the last samples dip), at most n - 1, and the
    weight r = q - phase[b] (the sample after b weighs r, b itself 1 - r)."""
    n = clock.size
    x = clock.astype(np.float64) - clock.astype(np.int64).sum() / n
    w = np.zeros(n)
    w[0] = 1
    w[1:n // 2] = 2
    w[n // 2] = 1
    z = np.fft.ifft(np.fft.fft(x) * w)
    d = np.diff(np.angle(z))
    d = np.where(d > np.pi, d - 2 * np.pi, np.where(d < -np.pi, d + 2 * np.pi, d))
    phase = np.concatenate([[0.0], np.cumsum(d)])
    q = phase.max() * np.arange(n) / n
    b = np.array([_lower_bound(phase, v) for v in q])
    if np.all(np.diff(phase) >= 0):
        np.testing.assert_array_equal(b, np.searchsorted(phase, q, side="left"))
    b = np.minimum(b, n - 1)
    return b, np.minimum(b + 1, n - 1), q - phase[b]


def _lower_bound(a: np.ndarray, v: float) -> int:
    """thrust's sequential lower_bound: halve [lo, hi) on a[mid] < v."""
    lo, hi = 0, len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


def reference(raw: np.ndarray, c: ProcessorConfig, blocks: list[int]) -> np.ndarray:
    """The processor's float output in NumPy (float64): the signal channel
    minus vortex's rolling mean (the clock is read raw), resampled by each
    record's clock tables, filtered, inverse FFT / n, vortex's output
    expression."""
    dtype = np.int16 if c.interpret_as_signed else np.uint16
    vals = raw.view(dtype).astype(np.float64)
    sig, clk = vals[:, :, c.channel], vals[:, :, c.clock_channel]
    n = c.samples_per_record
    out, start = [], 0
    for b in blocks:
        blk = sig[start:start + b]
        if c.average_window:
            lo = max(0, start + b - c.average_window)
            mean = sig[lo:start + b].mean(axis=0).astype(np.float32)
            blk = (blk.astype(np.float32) - mean).astype(np.float64)
        for r in range(b):
            bi, ai, ratio = clock_tables(clk[start + r])
            y = (1 - ratio) * blk[r, bi] + ratio * blk[r, ai]
            if c.spectral_filter is not None and np.size(c.spectral_filter):
                y = y * np.asarray(c.spectral_filter, np.complex128)
            if c.enable_ifft:
                y = np.fft.ifft(y)
            a = np.abs(y) if c.enable_magnitude else np.real(y)
            if c.enable_log10:
                with np.errstate(divide="ignore", invalid="ignore"):
                    v = (20 if c.enable_square else 10) * np.log10(a)
            elif c.enable_square:
                v = np.abs(y) ** 2
            else:
                v = a
            out.append(v)
        start += b
    return np.array(out)


def chirped(records: int, n: int, *, channels=2, signal=0, clock=1, depth=40.0, step=1.0, bend=0.35,
            signed=False, seed=0) -> np.ndarray:
    """Raw records whose clock channel is a chirped sinusoid (a nonlinear
    k-sweep, about ``step`` radians a sample, bent by ``bend``) and whose
    signal channel is a reflector ``depth`` cycles deep sampled at the same
    wavenumbers (plus a weaker one at depth / 3); other channels noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / (n - 1)
    raw = np.zeros((records, n, channels), np.float64)
    for r in range(records):
        s, bd = step * (1 + 0.05 * rng.random()), bend * (1 + 0.2 * rng.random())
        phi = s * (n - 1) * (t + bd * (t * t - t))
        k = phi / phi[-1]
        raw[r] = rng.integers(0, 10, (n, channels))
        raw[r, :, clock] += 2000 * np.cos(phi)
        raw[r, :, signal] += 1500 * np.cos(2 * np.pi * depth * k) + 300 * np.cos(2 * np.pi * depth / 3 * k)
    if signed:
        return np.round(raw).astype(np.int16).view(np.uint16)
    return np.round(raw + 30000).astype(np.uint16)


def run(proc, raw: np.ndarray, blocks: list[int], dtype=np.float32) -> np.ndarray:
    out, start = [], 0
    m = proc.samples_per_ascan
    for b in blocks:
        y = np.zeros((b, m, 1), dtype)
        proc.next(raw[start:start + b], y)
        out.append(y[:, :, 0])
        start += b
    return np.concatenate(out)


# --- configuration ----------------------------------------------------------------


def test_clock_channel_default_is_vortexs_none():
    c = ProcessorConfig()
    assert c.clock_channel is None
    c2 = ProcessorConfig(channels_per_sample=2, clock_channel=1)
    assert c2.copy().clock_channel == 1
    p = CPUProcessor(c2)
    assert "clock[1]" in repr(p)


@pytest.mark.parametrize("kw, exc, match", [
    (dict(channels_per_sample=2, clock_channel=2), ValueError,
     r"ProcessorConfig.clock_channel=2, expected None or < channels_per_sample=2"),
    (dict(clock_channel=1), ValueError, r"ProcessorConfig.clock_channel=1, expected None or < channels_per_sample=1"),
    (dict(channels_per_sample=2, clock_channel=-1), ValueError, r"ProcessorConfig.clock_channel=-1, expected an int >= 0"),
    (dict(channels_per_sample=2, clock_channel="1"), TypeError, r"ProcessorConfig.clock_channel='1', expected an int"),
    (dict(channels_per_sample=2, clock_channel=1.0), TypeError, r"ProcessorConfig.clock_channel=1.0, expected an int"),
    (dict(channels_per_sample=2, clock_channel=True), TypeError, r"ProcessorConfig.clock_channel=True, expected an int"),
    (dict(samples_per_record=64, channels_per_sample=2, clock_channel=1, resampling_samples=np.arange(64.0)),
     ValueError, r"clock_channel=1 with resampling_samples set, expected one of them.*mutually exclusive"),
])
def test_clock_channel_validation(kw, exc, match):
    with pytest.raises(exc, match=match):
        ProcessorConfig(**kw).validate()
    with pytest.raises(exc, match=match):
        CPUProcessor(**kw)


def test_clock_channel_may_be_the_processed_channel():
    """vortex accepts clock_channel == channel: the clock resampled by its own
    phase is one sharp line, a check that the clock linearises."""
    n = 512
    raw = chirped(2, n)
    p = CPUProcessor(samples_per_record=n, ascans_per_block=2, channels_per_sample=2, channel=1, clock_channel=1,
                     enable_log10=False, enable_square=False, average_window=2)
    a = run(p, raw, [2])[:, :n // 2]
    for rec in a:
        assert (rec > rec.max() / 2).sum() <= 2


# --- CPU against the reference ----------------------------------------------------


@pytest.mark.parametrize("name, kw, blocks", [
    ("db", dict(), [4]),
    ("magnitude-three-channels", dict(channels_per_sample=3, channel=2, clock_channel=0,
                                      enable_log10=False, enable_square=False), [3, 3]),
    ("signed", dict(interpret_as_signed=True, enable_log10=False), [4]),
    ("average-across-blocks", dict(average_window=3, enable_log10=False, enable_square=False), [4, 4, 2]),
    ("filter", dict(spectral_filter="hann"), [3]),
    ("no-ifft", dict(enable_ifft=False, enable_magnitude=False, enable_log10=False, enable_square=False), [3]),
    ("odd-length", dict(samples_per_record=1375, enable_log10=False), [2]),
])
def test_cpu_equals_numpy_reference(name, kw, blocks):
    kw = dict(kw)
    n = kw.pop("samples_per_record", 1376)
    if kw.get("spectral_filter") == "hann":
        x = np.linspace(-0.5, 0.5, n)
        kw["spectral_filter"] = spectral_filter(hann_window(n), np.exp(3j * x * x))
    kw = {"channels_per_sample": 2, "channel": 0, "clock_channel": 1, **kw}
    c = ProcessorConfig(samples_per_record=n, ascans_per_block=max(blocks), **kw)
    raw = chirped(sum(blocks), n, channels=c.channels_per_sample, signal=c.channel, clock=c.clock_channel,
                  signed=c.interpret_as_signed, seed=3)
    got = run(CPUProcessor(c), raw, blocks).astype(np.float64)
    want = reference(raw, c, blocks)
    for r, (g, w) in enumerate(zip(got, want)):
        if c.enable_log10:
            top = np.nanmax(w)
            near = w > top - 60
            np.testing.assert_allclose(g[near], w[near], atol=1e-3, err_msg=f"record {r}")
            # 60 dB and more below the peak, the float32 spectra's rounding
            # shows (a window's sidelobes reach -100 dB).
            np.testing.assert_allclose(g[~near], w[~near], atol=0.5, err_msg=f"record {r}")
        else:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-6 * np.abs(w).max(), err_msg=f"record {r}")


def test_int8_output_follows_the_float_output():
    n = 1000
    c = ProcessorConfig(samples_per_record=n, ascans_per_block=3, channels_per_sample=2, clock_channel=1,
                        levels=(20, 100))
    raw = chirped(3, n, seed=4)
    f = run(CPUProcessor(c), raw, [3])
    i8 = run(CPUProcessor(c), raw, [3], np.int8)
    want = np.clip(np.round((f.astype(np.float64) - 20) * 255 / 80 - 128), -128, 127)
    assert np.abs(i8 - want).max() <= 1


def test_clock_sharpens_the_peak():
    """The point of the clock: a reflector recorded at nonlinear wavenumbers
    is one sharp peak at its depth once each record is resampled by its
    clock, and smeared (lower, wider, elsewhere) without."""
    n, depth = 1376, 99
    raw = chirped(4, n, depth=depth, step=1.1, bend=0.35, seed=5)
    kw = dict(samples_per_record=n, ascans_per_block=4, channels_per_sample=2, average_window=4,
              enable_log10=False, enable_square=False)
    clocked = run(CPUProcessor(clock_channel=1, **kw), raw, [4])[:, :n // 2]
    plain = run(CPUProcessor(**kw), raw, [4])[:, :n // 2]
    for a, b in zip(clocked, plain):
        assert abs(int(a.argmax()) - depth) <= 1
        assert (a > a.max() / 2).sum() <= 2, "one sharp peak with the clock"
        assert (b > b.max() / 2).sum() >= 10, "smeared without it"
        assert a.max() > 4 * b.max()
        # The weaker reflector at a third of the depth stands out too
        # (lower than its 1/5 of the amplitude: vortex's weights are phase
        # differences in radians, which blur a little).
        near = a[depth // 3 - 3:depth // 3 + 4]
        assert abs(int(near.argmax()) - 3) <= 1
        assert near.max() > 0.05 * a.max() and near.max() > 5 * np.median(a)


def test_change_to_and_from_a_clock():
    n = 512
    raw = chirped(2, n, seed=6)
    base = ProcessorConfig(samples_per_record=n, ascans_per_block=2, channels_per_sample=2,
                           enable_log10=False, enable_square=False)
    p = CPUProcessor(base)
    plain = run(p, raw, [2])
    p.change(clock_channel=1)
    clocked = run(p, raw, [2])
    want = run(CPUProcessor(base, clock_channel=1), raw, [2])
    np.testing.assert_array_equal(clocked, want)
    p.change(clock_channel=None)
    np.testing.assert_array_equal(run(p, raw, [2]), plain)


# --- CUDA -------------------------------------------------------------------------


def _linear(v: np.ndarray, c: ProcessorConfig) -> np.ndarray:
    v = v.astype(np.float64)
    if c.enable_log10:
        return 10 ** (v / (20 if c.enable_square else 10))
    if c.enable_square:
        return np.sqrt(np.abs(v))
    return np.abs(v)


def _assert_close_ascans(want: np.ndarray, got: np.ndarray, c: ProcessorConfig, frac=0.02):
    """Equal A-scans up to vortex's weight jumps (an output sample that takes
    its neighbour's interval where the query meets a phase sample, which
    float32 and float64 phases decide differently): within ``frac`` of each
    record's strongest depth past the offset (linear amplitude), the peak
    at the same depth."""
    n = want.shape[1]
    lw, lg = _linear(want, c), _linear(got, c)
    for r in range(want.shape[0]):
        peak = lw[r, 3:n // 2].max()
        assert lw[r, 3:n // 2].argmax() == lg[r, 3:n // 2].argmax(), f"record {r}: the peak's depth"
        err = np.abs(lw[r] - lg[r])
        assert np.all(err <= frac * peak + 1e-5 * lw[r]), f"record {r}: worst {err.max() / peak:.3g} of the peak"


@needs_cuda
@pytest.mark.parametrize("kw", [
    dict(), dict(enable_log10=False, enable_square=False), dict(average_window=5, enable_log10=False),
    dict(interpret_as_signed=True, levels=(20, 90), channels_per_sample=3, channel=2, clock_channel=0),
])
def test_cuda_matches_cpu(kw):
    n, blocks = 1376, [16, 11, 16]
    kw = {"channels_per_sample": 2, "channel": 0, "clock_channel": 1, **kw}
    c = ProcessorConfig(samples_per_record=n, ascans_per_block=16, **kw)
    raw = chirped(sum(blocks), n, channels=c.channels_per_sample, signal=c.channel, clock=c.clock_channel,
                  depth=60, step=1.3, signed=c.interpret_as_signed, seed=7)
    want = run(CPUProcessor(c), raw, blocks)
    got = run(CUDAProcessor(c), raw, blocks)
    _assert_close_ascans(want, got, c)


# --- vortex itself (needs vortex 0.5.1 with a GPU) --------------------------------

from _vortex import VORTEX_PY, WHY_NOT, have_vortex, vortex_env  # noqa: E402


@needs_cuda
@pytest.mark.skipif(not have_vortex(), reason=WHY_NOT)
def test_same_as_vortex_cuda_processor(tmp_path):
    """vortex's CUDAProcessor with clock_channel on the same records (levels
    set, so its int8 output spans the decibels): our CPU and CUDA outputs
    agree with it as CPU and CUDA agree with each other, within one int8
    step's width of each value plus 2% of the record's peak. Not compared:
    average_window or interpret_as_signed with a clock, where vortex's
    kernel resamples the clock's phase differences instead of the record
    (its float_records buffer serves both; see gosrc/process/doc.go)."""
    n, R, levels = 1376, 16, (0.0, 100.0)
    raw = chirped(R, n, depth=60, step=1.3, seed=8)
    np.save(tmp_path / "raw.npy", raw)
    script = r"""
import json, sys, numpy as np, cupy
import vortex
from vortex.process import CUDAProcessor, CUDAProcessorConfig
raw = np.load(sys.argv[1])
c = CUDAProcessorConfig(); c.samples_per_record = %d; c.ascans_per_block = %d; c.channels_per_sample = 2
c.channel = 0; c.clock_channel = 1; c.levels = vortex.Range(%r, %r)
p = CUDAProcessor(); p.initialize(c)
y = cupy.zeros((%d, %d, 1), cupy.int8); p.next(cupy.asarray(raw), y); cupy.cuda.runtime.deviceSynchronize()
print(json.dumps(cupy.asnumpy(y).tolist()))
""" % (n, R, *levels, R, n)
    env = vortex_env()
    try:
        p = subprocess.run([str(VORTEX_PY), "-c", script, str(tmp_path / "raw.npy")], env=env,
                           capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        pytest.skip("vortex did not answer in time")
    if p.returncode != 0:
        pytest.skip(f"vortex's CUDAProcessor does not run here: {p.stderr[-300:]}")
    theirs = np.array(json.loads(p.stdout.strip().splitlines()[-1]), np.int8)[:, :, 0]
    c = ProcessorConfig(samples_per_record=n, ascans_per_block=R, channels_per_sample=2, clock_channel=1,
                        levels=levels)
    lo, hi = levels
    as_db = lambda v: lo + (v.astype(np.float64) + 128) * (hi - lo) / 255  # noqa: E731
    for proc in (CPUProcessor(c), CUDAProcessor(c)):
        ours = run(proc, raw, [R], np.int8)
        # One int8 step is 100/255 dB, 4.6% of the amplitude: a tolerance of
        # a step's width on top of the weight jumps' 2% of the peak.
        lw, lg = 10 ** (as_db(theirs) / 20), 10 ** (as_db(ours) / 20)
        for r in range(R):
            peak = lw[r, 3:n // 2].max()
            assert lw[r, 3:n // 2].argmax() == lg[r, 3:n // 2].argmax(), (type(proc).__name__, r)
            assert np.all(np.abs(lw[r] - lg[r]) <= 0.02 * peak + 0.1 * lw[r]), (type(proc).__name__, r)
