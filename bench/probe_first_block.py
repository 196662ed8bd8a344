"""How long a fresh process waits for the engine's first block: prepare(), then the time from
start() to the first update_callback, with the driver's JIT cache empty (a fresh machine, a
container, a driver update: CUDA_CACHE_PATH pointed at a new folder) and then warm.

Each case runs in its own process, so every module is loaded afresh; on a GPU the kernels' PTX
is JIT-compiled by the driver (or read from its cache). A kernel whose module loads at its first
launch stalls the first block by the compile's time: a real-time source overflows meanwhile.

    PYTHONPATH=python python bench/probe_first_block.py --device cuda
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def one(device_name: str) -> dict:
    """One engine in this process: prepare()'s time and start() to the first update."""
    import threading

    import bench_engine as be
    import vortexgo as vg

    device = vg.get_device(device_name)
    g = be.Geometry(1024, 256, 64, 2048, blocks=8, preload=4, slots=2) if device.is_cuda else be.Geometry(
        64, 16, 16, 128, blocks=8, preload=4, slots=1)
    ep = be.StackDeviceTensorEndpointInt8()
    first = threading.Event()
    stamp: dict = {}

    def on_update() -> None:
        if not first.is_set():
            stamp["t"] = time.perf_counter()
            first.set()

    ep.update_callback = on_update
    engine, _, _, proc = be._pipeline(g, device, total_volumes=1, endpoints=[ep])
    try:
        t0 = time.perf_counter()
        engine.prepare()
        t1 = time.perf_counter()
        engine.start()
        if not first.wait(60):
            raise RuntimeError("no block in 60 s")
        t2 = stamp["t"]
        engine.wait()
    finally:
        engine.close()
        ep.close()
        proc.close()
    return {"prepare_s": t1 - t0, "first_block_s": t2 - t1}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one(args.device)))
        return 0
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "CUDA_CACHE_PATH": cache}
        for case in ("cold JIT cache", "warm JIT cache", "warm JIT cache"):
            p = subprocess.run([sys.executable, __file__, "--device", args.device, "--child"], env=env,
                               capture_output=True, text=True, timeout=300)
            if p.returncode != 0:
                print(p.stdout, p.stderr, file=sys.stderr)
                return 1
            r = json.loads(p.stdout.strip().splitlines()[-1])
            print(f"{case:15s} prepare {r['prepare_s'] * 1e3:8.1f} ms, start to the first block "
                  f"{r['first_block_s'] * 1e3:8.1f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
