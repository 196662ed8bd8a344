"""Can a file's pages in the page cache be pinned in place and uploaded from? (FileAcquisition's
pinned replay, docs/design.md "Replaying a file".)

For a 512 MiB file on tmpfs and on the disk's file system, in the page cache: register a shared
read-only mapping with cudaHostRegister under the flags READ_ONLY (8), none (0) and READ_ONLY |
PORTABLE (9), time the registration, check the bytes uploaded and time back-to-back uploads against
a pinned allocation's; then truncate a registered file and upload again (no fault expected).
Prints JSON. Needs CuPy and a GPU::

    python3 bench/probe_register.py
"""
import json
import mmap
import os
import time

import cupy as cp
import numpy as np

rt = cp.cuda.runtime
out = {}
out["attr_readonly"] = rt.deviceGetAttribute(113, 0)  # cudaDevAttrHostRegisterReadOnlySupported
n = 512 << 20
for where in ["/dev/shm/probe.raw", "/tmp/probe.raw"]:
    data = (np.arange(n // 2, dtype=np.uint16) * 7)
    data.tofile(where)
    open(where, "rb").read()
    fd = os.open(where, os.O_RDONLY)
    mm = mmap.mmap(fd, n, mmap.MAP_SHARED, mmap.PROT_READ)
    a = np.frombuffer(mm, dtype=np.uint8)
    ptr = a.ctypes.data
    r = {}
    for flags in (8, 0, 8 | 1):
        try:
            t = time.perf_counter()
            rt.hostRegister(ptr, n, flags)
            r[f"reg{flags}_s"] = time.perf_counter() - t
            d = cp.empty(n // 2, dtype=cp.uint16)
            s = cp.cuda.Stream(non_blocking=True)
            rt.memcpyAsync(d.data.ptr, ptr, n, 1, s.ptr); s.synchronize()
            r[f"ok{flags}"] = bool((d[:1000].get() == data[:1000]).all() and (d[-1000:].get() == data[-1000:]).all())
            ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
            ev0.record(s)
            for _ in range(10):
                rt.memcpyAsync(d.data.ptr, ptr, n, 1, s.ptr)
            ev1.record(s); ev1.synchronize()
            r[f"gbs{flags}"] = 10 * n / cp.cuda.get_elapsed_time(ev0, ev1) / 1e6
            t = time.perf_counter(); rt.hostUnregister(ptr); r[f"unreg{flags}_s"] = time.perf_counter() - t
        except Exception as e:
            r[f"err{flags}"] = repr(e)
    # reference: pinned alloc
    h = cp.cuda.alloc_pinned_memory(n)
    hp = h.ptr
    s = cp.cuda.Stream(non_blocking=True)
    ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
    rt.memcpyAsync(d.data.ptr, hp, n, 1, s.ptr)
    ev0.record(s)
    for _ in range(10):
        rt.memcpyAsync(d.data.ptr, hp, n, 1, s.ptr)
    ev1.record(s); ev1.synchronize()
    r["gbs_pinned"] = 10 * n / cp.cuda.get_elapsed_time(ev0, ev1) / 1e6
    del a; mm.close(); os.close(fd); os.unlink(where)
    out[where] = r
# truncate while registered
where = "/tmp/probe2.raw"
np.ones(n // 2, np.uint16).tofile(where); open(where, "rb").read()
fd = os.open(where, os.O_RDONLY); mm = mmap.mmap(fd, n, mmap.MAP_SHARED, mmap.PROT_READ)
ptr = np.frombuffer(mm, dtype=np.uint8).ctypes.data
rt.hostRegister(ptr, n, 8)
os.truncate(where, 0)
d = cp.empty(n // 2, dtype=cp.uint16)
try:
    rt.memcpy(d.data.ptr, ptr, n, 1); out["after_truncate"] = int(d[-1].get())
except Exception as e:
    out["after_truncate"] = repr(e)
rt.hostUnregister(ptr)
print(json.dumps(out, indent=1))
