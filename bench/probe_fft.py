"""The one-pass inverse FFTs of kernels/fft.cu against cuFFT (issue 10: the processor at 1376
samples). For each length: the kernel's error against cupy.fft.ifft (unnormalised), then the
median time of 20 in-place transforms of 8192 records beside cuFFT's in-place C2C inverse on the
same data, with CUDA events, and each one's bandwidth (one read and one write of the records)
against the device-to-device copy bandwidth measured in the same run. Errors are relative to the
largest value of NumPy's float64 transform."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import cupy as cp
import numpy as np
from cupy.cuda import cufft

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _event_timing import timed  # noqa: E402

# (P, R) -> (records per block, threads per block) of the entry points fft_inverse_<P>x<R>, as
# FFT_ENTRY in kernels/fft.cu.
SHAPES = {(43, 16): (4, 64), (43, 32): (2, 64), (43, 64): (2, 128)}

# Geometries tried beside the entry points (--variants): (P, R, S, T, min blocks per SM), built
# from kernels/fft.cu with NVRTC.
VARIANTS = [
    (43, 16, 8, 128, 1), (43, 16, 8, 128, 3), (43, 16, 4, 64, 6), (43, 16, 8, 192, 2),
    (43, 32, 4, 192, 1), (43, 32, 4, 192, 2), (43, 32, 4, 128, 1), (43, 32, 4, 128, 3),
    (43, 32, 4, 128, 4), (43, 32, 2, 64, 6), (43, 32, 2, 96, 4),
    (43, 64, 2, 128, 1), (43, 64, 2, 128, 3), (43, 64, 1, 64, 5),
]
PROBE_KERNEL = """
template <int P, int R, int S, int T, int B>
__global__ void __launch_bounds__(T, B) probe_fft(float2 *data, const float2 *tw, int records) {
    fft_pr<P, R, S, T>(data, tw, records);
}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--records", type=int, default=8192)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--variants", action="store_true", help="also time the geometries in VARIANTS")
    args = ap.parse_args()
    mod = cp.RawModule(path=str(HERE.parent / "kernels" / "fft.ptx"))
    t0 = time.perf_counter()
    mod.get_function("fft_inverse_43x32")  # the driver JIT-compiles the module here
    load_s = time.perf_counter() - t0
    print(json.dumps({"module_load_s": load_s}), flush=True)
    src = cp.empty(512 << 20, cp.uint8)
    dst = cp.empty_like(src)
    t = timed(lambda: cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, src.nbytes, 3, 0))
    d2d = 2 * src.nbytes / t
    src = dst = None  # free the 1 GiB before the transforms
    rows = []
    rng = np.random.default_rng(1)
    lengths = [(p * r, (p, r)) for p, r in SHAPES] + [(512, None), (1024, None), (2048, None)]
    variants = None
    if args.variants:
        names = [f"probe_fft<{p},{r},{s},{t},{mb}>" for p, r, s, t, mb in VARIANTS]
        code = (HERE.parent / "kernels" / "fft.cu").read_text() + PROBE_KERNEL
        variants = cp.RawModule(code=code, options=("-std=c++17",), name_expressions=names)
    for n, shape in lengths:
        b = args.records
        host = (rng.standard_normal((b, n)) + 1j * rng.standard_normal((b, n))).astype(np.complex64)
        x = cp.asarray(host)
        # The reference: NumPy's float64 transform of the first records.
        want = np.fft.ifft(host[:256].astype(np.complex128), axis=1, norm="forward")
        scale = np.abs(want).max()

        def error(y: cp.ndarray) -> float:
            return float(np.abs(cp.asnumpy(y[:256]) - want).max() / scale)
        plan = cufft.Plan1d(n, cufft.CUFFT_C2C, b)
        work = x.copy()
        t_cufft = timed(lambda: plan.fft(work, work, cufft.CUFFT_INVERSE))
        row = {"n": n, "records": b, "cufft_us": t_cufft * 1e6, "cufft_of_copy": 16 * n * b / t_cufft / d2d}
        if shape is not None:
            p, r = shape
            s, threads = SHAPES[(p, r)]
            fn = mod.get_function(f"fft_inverse_{p}x{r}")
            j = np.arange(n)
            tw = cp.asarray(np.exp(2j * np.pi * j / n).astype(np.complex64))
            grid = ((b + s - 1) // s,)
            got = x.copy()
            fn(grid, (threads,), (got, tw, np.int32(b)))
            err = error(got)
            ref = cp.empty_like(x)
            plan.fft(x, ref, cufft.CUFFT_INVERSE)
            err_cufft = error(ref)
            work2 = x.copy()
            t_k = timed(lambda: fn(grid, (threads,), (work2, tw, np.int32(b))))
            row.update(kernel_us=t_k * 1e6, kernel_of_copy=16 * n * b / t_k / d2d, rel_err=err,
                       rel_err_cufft=err_cufft, speedup=t_cufft / t_k)
            for vp, vr, vs, vt, vb in VARIANTS if variants is not None else []:
                if (vp, vr) != (p, r):
                    continue
                vfn = variants.get_function(f"probe_fft<{vp},{vr},{vs},{vt},{vb}>")
                vgrid = ((b + vs - 1) // vs,)
                got = x.copy()
                vfn(vgrid, (vt,), (got, tw, np.int32(b)))
                verr = error(got)
                tv = timed(lambda: vfn(vgrid, (vt,), (work2, tw, np.int32(b))))
                row.setdefault("variants", []).append(
                    {"S": vs, "T": vt, "min_blocks": vb, "us": tv * 1e6, "of_copy": 16 * n * b / tv / d2d,
                     "regs": vfn.num_regs, "rel_err": verr})
        rows.append(row)
        print(json.dumps(row), flush=True)
    out = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "d2d_GBps": d2d / 1e9,
           "module_load_s": load_s, "rows": rows}
    print(json.dumps({"device": out["device"], "d2d_GBps": out["d2d_GBps"]}))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "probe_fft.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
