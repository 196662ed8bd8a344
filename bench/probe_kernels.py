"""Per-kernel times of the CUDA processor's chain next to the expert pipeline's kernels
(issue 10: where the processor's time goes). Loads kernels/oct.ptx with CuPy, times each
kernel with CUDA events (median of 20) on 8192-record blocks, and prints the achieved
bandwidth of each against the device-to-device copy bandwidth."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import cupy as cp
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _event_timing import timed  # noqa: E402
from bench_peers import _KERNELS  # noqa: E402


def main() -> None:
    oct_mod = cp.RawModule(path=str(HERE.parent / "kernels" / "oct.ptx"))
    ex = cp.RawModule(code=_KERNELS, options=("-std=c++14",))
    src = cp.empty(512 << 20, cp.uint8)
    dst = cp.empty_like(src)
    peak = 2 * src.nbytes / timed(lambda: cp.copyto(dst, src))
    res = {"d2d_GBs": peak / 1e9}
    R, W = 8192, 64
    for n in (1024, 1376, 2048):
        m = n
        rng = np.random.default_rng(1)
        raw = cp.asarray(rng.integers(0, 4096, (R, n), dtype=np.uint16))
        ring = cp.empty((W, n), cp.int32)
        avg = cp.empty(n, cp.float32)
        pos = np.sort(rng.uniform(0, n - 1, m)).astype(np.float32)
        b0 = np.minimum(np.floor(pos).astype(np.int32), n - 2)
        before, after = cp.asarray(b0), cp.asarray(b0 + 1)
        wa = cp.asarray((pos - b0).astype(np.float32))
        wb = 1 - wa
        filt = cp.asarray(np.exp(1j * rng.uniform(0, 6, m)).astype(np.complex64))
        spec = cp.empty((R, m), cp.complex64)
        out32 = cp.empty((R, m), cp.float32)
        out8 = cp.empty((R, m), cp.int8)
        plan = cp.cuda.cufft.Plan1d(m, cp.cuda.cufft.CUFFT_C2C, R)
        t = 256
        k_avg, k_spec, k_post = (oct_mod.get_function(x) for x in ("oct_history_mean", "oct_spectrum", "oct_post"))
        i32 = np.int32
        row = {}
        # the block's last W records into the ring, then its mean (one launch)
        row["oct_history_mean"] = timed(lambda: k_avg(((n + 31) // 32,), (32, 8), (raw, ring, avg, i32(R), i32(n), i32(1), i32(0), i32(0), i32(W), i32(0), i32(W), i32(W))))
        row["oct_spectrum"] = timed(lambda: k_spec(((m + t - 1) // t, (R + 7) // 8), (t,), (raw, avg, before, after, wb, wa, np.uint64(0), np.uint64(0), filt, spec, i32(n), i32(m), i32(1), i32(0), i32(0), i32(R))))
        row["cufft"] = timed(lambda: plan.fft(spec, spec, cp.cuda.cufft.CUFFT_INVERSE))
        total = R * m
        grid = (min((total + t - 1) // t, 132 * 8 * 4),)
        f32 = np.float32
        row["oct_post_int8"] = timed(lambda: k_post(grid, (t,), (spec, np.uint64(0), out8, i32(total), i32(13), f32(1), f32(0), f32(0.1), f32(-3))))
        row["oct_post_both"] = timed(lambda: k_post(grid, (t,), (spec, out32, out8, i32(total), i32(13), f32(1), f32(0), f32(0.1), f32(-3))))
        e_mean, e_pre, e_post = (ex.get_function(x) for x in ("background_mean", "pre_fft", "post_fft"))
        fb0, ff = cp.asarray(b0), wa
        row["expert_mean"] = timed(lambda: e_mean(((n + 255) // 256,), (256,), (raw, i32(R), i32(n), i32(W), avg)))
        row["expert_pre"] = timed(lambda: e_pre(((total + 255) // 256,), (256,), (raw, avg, fb0, ff, filt, i32(R), i32(n), i32(m), spec)))
        row["expert_post"] = timed(lambda: e_post(((total + 255) // 256,), (256,), (spec, np.uint64(total), f32(1e-6), f32(0), f32(3), out8)))
        # Achieved bandwidth of the streaming kernels (designed bytes over time).
        bw = {"oct_spectrum": (2 * n + 8 * m) * R, "oct_post_int8": 9 * m * R, "oct_post_both": 13 * m * R,
              "cufft": 16 * m * R, "expert_pre": (2 * n + 8 * m) * R, "expert_post": 9 * m * R}
        row = {k: {"us": v * 1e6, **({"of_d2d": bw[k] / v / peak} if k in bw else {})} for k, v in row.items()}
        res[n] = row
        print(n, json.dumps(row), flush=True)
    Path(os.environ.get("OUT", "."), "probe_kernels.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
