"""Where the engine's missing percent goes: one run of variants side by side (issue 10).

Not part of `make bench`; a diagnostic whose findings are written down in docs/bench.md.
Each row changes one thing against the engine row of bench_peers: how throughput is
measured (volume callbacks, which make the engine wait for the handler at every volume
boundary, against status counters with no callbacks), the processing slots, the ceiling's
source (one block against a ring), and for file replay the read path.
"""

from __future__ import annotations

import json
import mmap
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_engine as be  # noqa: E402
import vortexgo as vg  # noqa: E402


def ceiling_ring(g: be.Geometry, nblocks: int, seconds: float = 1.0) -> float:
    import cupy as cp

    nbytes = g.block_bytes
    mems = [cp.cuda.alloc_pinned_memory(nbytes) for _ in range(nblocks)]
    hosts = [np.frombuffer(m, np.uint8, nbytes) for m in mems]
    for h in hosts:
        h[:] = 1
    dev = cp.empty(nbytes, cp.uint8)
    s = cp.cuda.Stream(non_blocking=True)
    kind = cp.cuda.runtime.memcpyHostToDevice
    n = 0
    for h in hosts:
        cp.cuda.runtime.memcpyAsync(dev.data.ptr, h.ctypes.data, nbytes, kind, s.ptr)
    s.synchronize()
    t = time.perf_counter()
    while time.perf_counter() - t < seconds:
        for _ in range(8):
            cp.cuda.runtime.memcpyAsync(dev.data.ptr, hosts[n % nblocks].ctypes.data, nbytes, kind, s.ptr)
            n += 1
        s.synchronize()
    return n * nbytes / (time.perf_counter() - t) / 1e9


def engine_counters(g: be.Geometry, device, seconds: float, warm: float, callback: bool) -> dict:
    from vortexgo.engine import StackDeviceTensorEndpointInt8

    ep = StackDeviceTensorEndpointInt8()
    engine, _, _, proc = be._pipeline(g, device, total_volumes=0, endpoints=[ep])
    if callback:
        ep.volume_callback = lambda *a: None
    try:
        engine.prepare()
        engine.start()
        time.sleep(warm)
        s0, t0 = engine.status(), time.perf_counter()
        time.sleep(seconds)
        s1, t1 = engine.status(), time.perf_counter()
        up = engine.timings.get("upload")
        engine.stop()
    finally:
        engine.close()
        ep.close()
        proc.close()
    rate = (s1.blocks_processed - s0.blocks_processed) * g.rpb / (t1 - t0)
    return {"ascans_per_s": rate, "gbs": rate * g.samples * 2 / 1e9,
            "upload_ms_p50": getattr(up, "p50", None)}


def pread_rate(path: Path, nbytes: int, threads: int, block: int, pinned: bool, seconds: float = 1.0) -> float:
    import cupy as cp

    mem = cp.cuda.alloc_pinned_memory(block) if pinned else bytearray(block)
    buf = memoryview(np.frombuffer(mem, np.uint8, block))
    fd = os.open(path, os.O_RDONLY)
    chunk = block // threads
    total = [0]
    stop = time.perf_counter() + seconds
    nblocks = nbytes // block

    def work(i: int) -> None:
        k = 0
        view = buf[i * chunk:(i + 1) * chunk]
        while time.perf_counter() < stop:
            off = (k % nblocks) * block + i * chunk
            os.preadv(fd, [view], off)
            total[0] += chunk  # racy but close enough for a probe
            k += 1

    t = time.perf_counter()
    ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for x in ts:
        x.start()
    for x in ts:
        x.join()
    os.close(fd)
    return total[0] / (time.perf_counter() - t) / 1e9


def mmap_register(path: Path, nbytes: int, block: int) -> dict:
    """Can the page cache be pinned in place (mmap + cuMemHostRegister) and uploaded from?"""
    import cupy as cp

    out = {}
    fd = os.open(path, os.O_RDONLY)
    for flags_name, prot, mflags, reg in (("private_ro", mmap.PROT_READ, mmap.MAP_PRIVATE, 8),
                                          ("shared_ro", mmap.PROT_READ, mmap.MAP_SHARED, 8),
                                          ("private_ro_flag0", mmap.PROT_READ, mmap.MAP_PRIVATE, 0)):
        try:
            m = mmap.mmap(fd, nbytes, flags=mflags, prot=prot)
            a = np.frombuffer(m, np.uint8)
            ptr = a.ctypes.data
            t = time.perf_counter()
            cp.cuda.runtime.hostRegister(ptr, nbytes, reg)
            treg = time.perf_counter() - t
            dev = cp.empty(block, cp.uint8)
            s = cp.cuda.Stream(non_blocking=True)
            n, t = 0, time.perf_counter()
            while time.perf_counter() - t < 1.0:
                for _ in range(8):
                    cp.cuda.runtime.memcpyAsync(dev.data.ptr, ptr + (n % (nbytes // block)) * block, block,
                                                cp.cuda.runtime.memcpyHostToDevice, s.ptr)
                    n += 1
                s.synchronize()
            gbs = n * block / (time.perf_counter() - t) / 1e9
            ok = bool((cp.asnumpy(dev) == a[((n - 1) % (nbytes // block)) * block:][:block]).all())
            cp.cuda.runtime.hostUnregister(ptr)
            del a
            m.close()
            out[flags_name] = {"register_s": treg, "gbs": gbs, "data_ok": ok}
        except Exception as exc:  # noqa: BLE001
            out[flags_name] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
    os.close(fd)
    return out


def main() -> None:
    device = vg.get_device("cuda:0")
    res: dict = {"device": device.name}
    for samples in ((1024, 2048) if os.environ.get("PROBE_ENGINE", "1") == "1" else ()):
        g = be.Geometry(samples, 512, 128, 8192)
        row: dict = {}
        row["ceiling_one_block"] = be.h2d_ceiling(g, 1.0)["gbs"]
        row["ceiling_ring8"] = ceiling_ring(g, 8)
        row["ceiling_ring32"] = ceiling_ring(g, 32)
        for slots in (2, 4):
            gg = be.Geometry(samples, 512, 128, 8192, slots=slots)
            row[f"engine_nocb_slots{slots}"] = engine_counters(gg, device, 2.0, 0.5, False)
            row[f"engine_cb_slots{slots}"] = engine_counters(gg, device, 2.0, 0.5, True)
        row["engine_stamps"] = be.engine_throughput(g, device, 2.0, 0.5)["gbs"]
        res[samples] = row
        print(samples, json.dumps(row, indent=1), flush=True)
    with tempfile.TemporaryDirectory(dir=os.environ.get("PROBE_TMP")) as tmp:
        path = Path(tmp) / "f.raw"
        nbytes = 16 << 20
        total = 16 * nbytes
        np.random.default_rng(1).integers(0, 65535, total // 2, dtype=np.uint16).tofile(path)
        path.read_bytes()
        fr = {}
        print("file written", flush=True)
        fr["mmap_register"] = mmap_register(path, total, nbytes)
        print(fr, flush=True)
        for threads in (1, 4, 8, 16):
            fr[f"pread_pinned_t{threads}"] = pread_rate(path, total, threads, nbytes, True, 0.5)
            print(threads, fr, flush=True)
        res["file"] = fr
        print(json.dumps(fr, indent=1), flush=True)
    out = os.environ.get("OUT", ".")
    Path(out, "probe_gap.json").write_text(json.dumps(res, indent=1, default=str))


if __name__ == "__main__":
    main()
