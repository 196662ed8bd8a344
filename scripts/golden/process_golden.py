"""Golden outputs of vortex's CPUProcessor for gosrc/process's tests.

Runs vortex 0.5.1's CPUProcessor (uint16 in, int8 out, FFTW) on seeded
synthetic spectra for a table of option combinations and writes, under
gosrc/process/testdata/:

- process_golden.json: the cases (config, block sizes, file names);
- <case>.in.u16.gz: the raw input, all blocks, (records, samples, channels)
  uint16 little endian, gzip;
- <case>.out.i8.gz: vortex's int8 output, (records, samples_per_ascan).

Run with vortex importable (see /work/notes/common.md):

    PYTHONPATH=/tmp/vortex_site/vortex \
    LD_LIBRARY_PATH=/work/vx312/lib/python3.12/site-packages/nvidia/cu13/lib \
    /work/vx312/bin/python scripts/golden/process_golden.py

vortexgo never imports vortex; the Go tests only read these files.
"""
import gzip
import json
import pathlib
import sys

import numpy as np

import vortex

from vortex.process import CPUProcessor

OUT = pathlib.Path(__file__).resolve().parents[2] / "gosrc" / "process" / "testdata"


def spectra(rng, records, n, channels, signed):
    """OCT-like raw spectra: a DC level with a smooth envelope, three
    fringes whose amplitude drifts from record to record, and noise."""
    j = np.arange(n)
    env = np.exp(-((j - n / 2) / (n / 3)) ** 2)
    out = np.empty((records, n, channels))
    for c in range(channels):
        for r in range(records):
            s = (12000 if not signed else -4000) + 8000 * env
            for depth, amp in ((n / 23, 900), (n / 7, 400), (n / 3.3, 150)):
                s = s + amp * (1 + 0.2 * np.sin(r + c)) * env * np.cos(2 * np.pi * (depth + 0.37 * c) * j / n + r)
            s = s + rng.normal(0, 12, n)
            out[r, :, c] = s
    v = np.rint(out).astype(np.int64)
    return (v & 0xFFFF).astype(np.uint16)


def resampling(n, m):
    """A monotonic, nonlinear k-clock map onto [0, n-1], both ends exact."""
    t = np.linspace(0, 1, m)
    p = (n - 1) * (t + 0.08 * np.sin(np.pi * t) * (1 - t))
    p[0], p[-1] = 0, n - 1
    return p.astype(np.float32)


def spectral_filter(m, rng):
    w = np.hanning(m)
    k = np.linspace(-1, 1, m)
    phase = 2.5 * k ** 2 + 0.7 * k ** 3
    return (w * np.exp(1j * phase)).astype(np.complex64)


# name, samples, blocks (records each), options
CASES = [
    ("default_1376", 1376, [5, 5], {}),
    ("default_2500", 2500, [4, 4], {}),
    ("default_2048", 2048, [4, 4], {}),
    ("default_1000", 1000, [6, 6], {}),
    ("log10_amplitude_1000", 1000, [6], {"enable_square": False}),
    ("avg3_across_blocks_1376", 1376, [4, 4, 4], {"average_window": 3}),
    ("avg5_across_blocks_2500", 2500, [3, 3, 3], {"average_window": 5}),
    ("avg_window_over_total_2048", 2048, [4, 4, 4], {"average_window": 20}),
    ("avg1_1000", 1000, [3, 3, 3], {"average_window": 1}),
    ("levels_nofft_log10_1000", 1000, [4], {"enable_ifft": False, "levels": (70.0, 100.0)}),
    ("levels_magnitude_2048", 2048, [4, 4], {"enable_log10": False, "enable_square": False, "average_window": 4, "levels": (0.0, 300.0)}),
    ("levels_square_1000", 1000, [4, 4], {"enable_log10": False, "average_window": 4, "levels": (0.0, 40000.0)}),
    ("levels_real_2500", 2500, [4, 4], {"enable_log10": False, "enable_square": False, "enable_magnitude": False, "average_window": 4, "levels": (-200.0, 200.0)}),
    ("levels_inverted_1376", 1376, [4], {"enable_log10": False, "enable_square": False, "levels": (400.0, 0.0)}),
    ("real_noifft_avg_1000", 1000, [5, 5], {"enable_ifft": False, "enable_log10": False, "enable_square": False, "enable_magnitude": False, "average_window": 2}),
    ("magnitude_noifft_avg_1000", 1000, [5, 5], {"enable_ifft": False, "enable_log10": False, "enable_square": False, "average_window": 2}),
    ("log10_real_1000", 1000, [4], {"enable_magnitude": False, "enable_square": False, "average_window": 4}),
    ("resample_1376", 1376, [4, 4], {"resample": 1376}),
    ("resample_2500_to_2048", 2500, [4, 4], {"resample": 2048}),
    ("filter_2048", 2048, [4, 4], {"filter": True}),
    ("full_chain_1376", 1376, [4, 4, 4], {"resample": 1376, "filter": True, "average_window": 6}),
    ("channels_2of2_1000", 1000, [4, 4], {"channels_per_sample": 2, "channel": 1, "average_window": 3}),
    ("channels_0of3_1376", 1376, [4], {"channels_per_sample": 3, "channel": 0}),
    # vortex's CPUProcessor adds log10(1/M) unscaled with levels and log10
    # after the FFT (its CUDAProcessor scales it): recorded to document it.
    ("levels_log10_ifft_cpu_bug_1376", 1376, [4], {"levels": (0.0, 80.0)}),
]


def run(name, n, blocks, opt, seed):
    rng = np.random.default_rng(seed)
    channels = opt.get("channels_per_sample", 1)
    records = max(blocks)
    cfg = CPUProcessor().config
    cfg.samples_per_record = n
    cfg.ascans_per_block = opt.get("ascans_per_block", records)
    cfg.channels_per_sample = channels
    cfg.channel = opt.get("channel", 0)
    cfg.average_window = opt.get("average_window", 0)
    for k in ("enable_ifft", "enable_log10", "enable_square", "enable_magnitude"):
        if k in opt:
            setattr(cfg, k, opt[k])
    if "levels" in opt:
        cfg.levels = vortex.Range(*opt["levels"])
    m = n
    if "resample" in opt:
        m = opt["resample"]
        cfg.resampling_samples = resampling(n, m)
    if opt.get("filter"):
        cfg.spectral_filter = spectral_filter(m, rng)
    proc = CPUProcessor()
    proc.initialize(cfg)
    raw = spectra(rng, sum(blocks), n, channels, False)
    outs, start = [], 0
    for b in blocks:
        out = np.zeros((b, m, 1), np.int8)
        proc.next(np.ascontiguousarray(raw[start:start + b]), out)
        outs.append(out[..., 0])
        start += b
    out = np.concatenate(outs)
    (OUT / f"{name}.in.u16.gz").write_bytes(gzip.compress(raw.astype("<u2").tobytes(), 9, mtime=0))
    (OUT / f"{name}.out.i8.gz").write_bytes(gzip.compress(out.tobytes(), 9, mtime=0))
    case = {
        "name": name,
        "samples_per_record": n,
        "ascans_per_block": int(cfg.ascans_per_block),
        "channels_per_sample": channels,
        "channel": int(cfg.channel),
        "average_window": int(cfg.average_window),
        "enable_ifft": bool(cfg.enable_ifft),
        "enable_log10": bool(cfg.enable_log10),
        "enable_square": bool(cfg.enable_square),
        "enable_magnitude": bool(cfg.enable_magnitude),
        "levels": list(opt["levels"]) if "levels" in opt else None,
        "resampling_samples": [float(x) for x in cfg.resampling_samples] if "resample" in opt else [],
        "spectral_filter": [[float(z.real), float(z.imag)] for z in np.asarray(cfg.spectral_filter)] if opt.get("filter") else [],
        "blocks": blocks,
        "samples_per_ascan": m,
        "input": f"{name}.in.u16.gz",
        "output": f"{name}.out.i8.gz",
        "vortex_cpu_levels_log10_bug": bool(cfg.enable_log10 and cfg.enable_ifft and "levels" in opt),
    }
    return case


def main():

    OUT.mkdir(parents=True, exist_ok=True)
    cases = [run(name, n, blocks, opt, 1000 + i) for i, (name, n, blocks, opt) in enumerate(CASES)]
    doc = {
        "generator": "scripts/golden/process_golden.py",
        "vortex": vortex.__version__,
        "processor": "vortex.process.CPUProcessor (uint16 -> int8, FFTW float32)",
        "cases": cases,
    }
    (OUT / "process_golden.json").write_text(json.dumps(doc, indent=1) + "\n")
    total = sum(p.stat().st_size for p in OUT.glob("*"))
    print(f"{len(cases)} cases, {total} bytes in {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
