"""``python -m vortexgo``: what this machine gives vortexgo.

    python -m vortexgo info     devices, CUDA driver, cuFFT, the C fast path, versions

Exit status 0 when everything needed for the CPU backend works; the GPU
lines say what is missing and how to get it.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from typing import List, Optional


def _cufft_line() -> str:
    """Try cuFFT for real (a one-record CUDA processor plans an FFT), since
    finding a file is not the same as loading it."""
    import vortexgo as vg

    if not vg.is_cuda_available():
        return "not checked (no CUDA device)"
    try:
        pc = vg.ProcessorConfig(samples_per_record=64, ascans_per_block=1)
        vg.CUDAProcessor(pc).close()
    except Exception as e:  # the Go side lists every library name it tried
        return f"NOT loadable: {e}. Install it with `pip install vortexgo[cuda]` (nvidia-cufft) or a CUDA toolkit"
    return f"ok ({os.environ.get('VORTEXGO_CUFFT_PATH') or 'system library'})"


def info() -> int:
    """Print the report; 0 when the CPU backend works."""
    import numpy as np

    import vortexgo as vg
    from vortexgo._core import HAVE_C_FAST_PATH

    print(f"vortexgo     {getattr(vg, '__version__', 'dev')} from {os.path.dirname(vg.__file__)}")
    print(f"python       {platform.python_version()} ({sys.executable}), numpy {np.__version__}")
    print(f"C fast path  {'yes' if HAVE_C_FAST_PATH else 'no (per-call stream/event operations take the Go path)'}")
    devs = vg.devices()
    for d in devs:
        extra = ""
        if d.is_cuda:
            cc = ".".join(map(str, d.compute_capability))
            extra = f", compute {cc}, {d.total_memory / 2**30:.1f} GiB"
        print(f"device       {d.alias}: {d.name}{extra}")
    if not vg.is_cuda_available():
        print(f"CUDA         unavailable: {vg.cuda_unavailable_reason()}")
    print(f"cuFFT        {_cufft_line()}")
    try:
        import cupy  # noqa: F401

        print(f"CuPy         {cupy.__version__}")
    except ImportError:
        print("CuPy         not installed (optional: `pip install vortexgo[cuda]` for zero-copy views on the GPU)")
    return 0 if any(d.is_cpu for d in devs) else 1


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m vortexgo", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="devices, CUDA driver, cuFFT, the C fast path, versions")
    args = p.parse_args(argv)
    if args.command == "info":
        return info()
    return 2  # pragma: no cover (argparse refuses unknown commands)


if __name__ == "__main__":
    sys.exit(main())
