"""Two GPUs reading one host: pinned upload bandwidth from each GPU alone, from both at once out of
separate pinned buffers, and from both at once out of one shared pinned buffer (as the engine's
one acquisition ring feeds both processors in cycle([a, b])). Prints GB/s per GPU and in total;
`nvidia-smi topo -m` says which CPU socket (NUMA node) each GPU hangs off."""

from __future__ import annotations

import json
import threading
import time

import cupy as cp
import cupyx

SIZE = 256 << 20
REPS = 12


def upload(dev: int, src, out: list, i: int, start: threading.Barrier) -> None:
    with cp.cuda.Device(dev):
        dst = cp.empty(SIZE, cp.uint8)
        s = cp.cuda.Stream(non_blocking=True)
        dst.set(src, stream=s)  # warm-up
        s.synchronize()
        start.wait()
        t = time.perf_counter()
        for _ in range(REPS):
            dst.set(src, stream=s)
        s.synchronize()
        out[i] = REPS * SIZE / (time.perf_counter() - t) / 1e9


def run(pairs: list) -> list:
    out = [0.0] * len(pairs)
    start = threading.Barrier(len(pairs))
    ts = [threading.Thread(target=upload, args=(d, b, out, i, start)) for i, (d, b) in enumerate(pairs)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out


def main() -> None:
    n = cp.cuda.runtime.getDeviceCount()
    bufs = [cupyx.empty_pinned(SIZE, cp.uint8) for _ in range(n)]
    for b in bufs:
        b[:] = 1
    res = {"alone": [run([(d, bufs[d])])[0] for d in range(n)],
           "both_separate": run([(d, bufs[d]) for d in range(n)]),
           "both_shared": run([(d, bufs[0]) for d in range(n)])}
    res = {k: [round(x, 1) for x in v] for k, v in res.items()}
    res["totals"] = {k: round(sum(v), 1) for k, v in res.items()}
    print(json.dumps(res))


if __name__ == "__main__":
    main()
