"""Borrowed memory outliving its owner: a DLPack capsule, ``np.from_dlpack``,
``np.asarray``, ``memoryview``, ``.numpy()``, Array reshapes, DeviceTensor
views, readback results, TripleBuffer slots, BufferPool buffers and pipeline
buffers keep reading the right values after the owner is freed or closed
and its memory would have been reused (each case allocates junk of the same
size afterwards); meanwhile the owner's own API raises ClosedError.

On CUDA the same through CuPy and PyTorch (``from_dlpack``) where installed.
"""

from __future__ import annotations

import textwrap

import pytest

from harness import RIG, Case, check, register, variants

F = "borrowed"
N = 1 << 20
JUNK = "junk = [vg.full(N, 9, 'uint8', DEV) for _ in range(8)]; gc.collect()\n"


def after_free(make_view: str, read: str = "int(v.sum())", owner_free: str = "a.free()", expect: int = 1 << 20,
               devices=("cpu",), **kw) -> list[Case]:
    """The array ``a`` (N bytes of 1) is borrowed by ``v``, then freed; ``v`` must still read N ones."""
    code = (f"N = {1 << 20}\na = vg.full(N, 1, 'uint8', DEV)\n{make_view}\n{owner_free}\ngc.collect()\n" + JUNK +
            f"print({read})\n")
    return code, dict(devices=devices, prints=str(expect), **kw)


CASES: list[Case] = []


def add(id: str, code_kw) -> None:
    code, kw = code_kw
    CASES.extend(variants(f"{F}/{id}", code, **kw))


add("np_from_dlpack_after_free", after_free("v = np.from_dlpack(a)",
                                            issue="np.from_dlpack view after a.free(): SIGSEGV"))
add("capsule_then_free", after_free("cap = a.__dlpack__()\nclass H:\n    def __dlpack__(self, **k): return cap\n"
                                    "    def __dlpack_device__(self): return a.__dlpack_device__()\nh = H()",
                                    read="int(np.from_dlpack(h).sum())"))
add("np_asarray_after_free", after_free("v = np.asarray(a)"))
add("memoryview_after_free", after_free("v = memoryview(a)", read="int(np.frombuffer(v, np.uint8).sum())"))
add("numpy_method_after_free", after_free("v = a.numpy()"))
add("reshape_numpy_after_free", after_free("v = a.reshape(1024, 1024).numpy()"))
add("view_of_view_after_free", after_free("v = np.from_dlpack(a.reshape(2, -1 if False else (1 << 19)))[1:]",
                                          expect=1 << 19))
add("pinned_from_dlpack_after_free", after_free("a.free(); a = vg.full(N, 1, 'uint8', DEV, pinned=True)\nv = np.from_dlpack(a)",
                                                devices=("cuda:0",)))
add("numpy_view_owner_api_raises", (
    "a = vg.full(16, 1, 'uint8', DEV)\nv = np.from_dlpack(a)\na.free()\na.numpy()\n",
    dict(devices=("cpu",), raises="ClosedError")))
add("temporary_array_view", (
    "N = 1 << 20\nv = vg.full(N, 1, 'uint8', DEV).numpy()\ngc.collect()\n" + JUNK + "print(int(v.sum()))\n",
    dict(devices=("cpu",), prints=str(1 << 20))))

# --- locked tensors -----------------------------------------------------------------------
add("tensor_view_returned_from_function", (textwrap.dedent("""
    N = 1 << 18
    def f():
        t = vg.DeviceTensor((N,), "float32", DEV)
        with t as v:
            v[:] = 3
        return t.view()
    v = f(); gc.collect()
    junk = [vg.full(N, 9, "float32", DEV) for _ in range(8)]
    print(float(v.sum()))"""), dict(devices=("cpu",), prints=str(3.0 * (1 << 18)),
                                    issue="DeviceTensor.view() outlives its tensor and reads reused memory")))
add("tensor_view_after_close", (textwrap.dedent("""
    N = 1 << 18
    t = vg.DeviceTensor((N,), "float32", DEV)
    with t as v:
        v[:] = 3
    t.close(); gc.collect()
    junk = [vg.full(N, 9, "float32", DEV) for _ in range(8)]
    print(float(v.sum()))"""), dict(devices=("cpu",), prints=str(3.0 * (1 << 18)))))
add("tensor_view_after_resize", (textwrap.dedent("""
    N = 1 << 16
    t = vg.DeviceTensor((N,), "float32", DEV)
    with t as v:
        v[:] = 3
    t.resize((N * 16,)); gc.collect()
    junk = [vg.full(N, 9, "float32", DEV) for _ in range(8)]
    print(float(v.sum()))"""), dict(devices=("cpu",), prints=str(3.0 * (1 << 16)))))

# --- toolkit memory ------------------------------------------------------------------------
add("readback_result_after_pool_close", (textwrap.dedent("""
    N = 1 << 16
    a = vg.full(N, 5, "float32", DEV)
    r = vg.Readback(4 * N, DEV); h = r.readback(a); x = h.get()
    r.close(); del h; gc.collect()
    junk = [vg.full(N, 9, "float32", DEV) for _ in range(8)] + [vg.Readback(4 * N, DEV) for _ in range(4)]
    print(float(x.sum()))"""), dict(devices=("cpu", "cuda:0"), prints=str(5.0 * (1 << 16)),
                                    issue="NumPy view of a Readback result after its owner is closed")))
add("readback_result_after_release_and_reuse", (textwrap.dedent("""
    N = 1 << 16
    r = vg.Readback(4 * N, DEV, buffers=1)
    h = r.readback(vg.full(N, 5, "float32", DEV)); x = h.get(); h.release()
    try:
        for _ in range(4):                      # the pool's one buffer is wanted again: a new one,
            h2 = r.readback(vg.full(N, 9, "float32", DEV)); h2.get(); h2.release()
    except (vg.VortexError, TimeoutError, MemoryError):
        pass                                    # or a refusal while x holds it (never a wait forever)
    print(float(x.sum()))"""), dict(devices=("cpu", "cuda:0"), prints=str(5.0 * (1 << 16)))))
add("readback_function_result", (textwrap.dedent("""
    N = 1 << 16
    x = vg.readback(vg.full(N, 5, "float32", DEV)).get(); gc.collect()
    for _ in range(4):
        vg.readback(vg.full(N, 9, "float32", DEV)).get()
    print(float(x.sum()))"""), dict(devices=("cpu", "cuda:0"), prints=str(5.0 * (1 << 16)))))
add("triple_buffer_slot_numpy_after_close", (textwrap.dedent("""
    N = 1 << 16
    tb = vg.TripleBuffer(DEV, N, "float32"); s = tb.slot(0)
    vg.copy(s, np.full(N, 4, np.float32)); x = s.numpy()
    tb.close(); gc.collect()
    junk = [vg.TripleBuffer(DEV, N, "float32") for _ in range(4)]
    for j in junk:
        for i in range(3):
            vg.copy(j.slot(i), np.full(N, 9, np.float32))
    print(float(x.sum()))"""), dict(devices=("cpu",), prints=str(4.0 * (1 << 16)),
                                    issue="NumPy view of a TripleBuffer slot after close")))
add("triple_buffer_slot_dlpack_after_close", (textwrap.dedent("""
    N = 1 << 16
    tb = vg.TripleBuffer(DEV, N, "float32"); s = tb.slot(1)
    vg.copy(s, np.full(N, 4, np.float32)); x = np.from_dlpack(s)
    tb.close(); gc.collect()
    junk = [vg.full(N, 9, "float32", DEV) for _ in range(8)]
    print(float(x.sum()))"""), dict(devices=("cpu",), prints=str(4.0 * (1 << 16)))))
add("context_triple_buffer_after_context_close", (textwrap.dedent("""
    N = 1 << 16
    ctx = vg.ManagedGpuContext(DEV); tb = ctx.create_triple_buffer(N); s = tb.slot(2)
    vg.copy(s, np.full(N, 4, np.float32)); x = s.numpy()
    ctx.close(); gc.collect()
    junk = [vg.full(N, 9, "float32", DEV) for _ in range(8)]
    print(float(x.sum()))"""), dict(devices=("cpu",), prints=str(4.0 * (1 << 16)))))
add("buffer_pool_buffer_after_close", (textwrap.dedent("""
    N = 1 << 16
    p = vg.BufferPool(N, 1, device=DEV); b = p.get(); x = b.numpy(); x[:] = 7
    p.close(); gc.collect()
    junk = [vg.BufferPool(N, 2, device=DEV) for _ in range(4)]
    for q in junk:
        for _ in range(2):
            q.get().numpy()[:] = 9
    print(int(x.sum()))"""), dict(devices=("cpu", "cuda:0"), prints=str(7 * (1 << 16)),
                                  issue="NumPy view of a BufferPool buffer after the pool is closed")))
add("pipeline_buffer_after_manager_close", (textwrap.dedent("""
    N = 1 << 16
    c = vg.AsyncCoordinator(DEV); m = vg.PipelineStageManager(c); i = m.add_buffer(N, 1)
    b = m.buffer(i, 0, "uint8"); vg.copy(b, np.full(N, 3, np.uint8)); x = b.numpy()
    m.close(); c.close(); gc.collect()
    junk = [vg.full(N, 9, "uint8", DEV) for _ in range(8)]
    print(int(x.sum()))"""), dict(devices=("cpu",), prints=str(3 * (1 << 16)))))

# --- engine endpoints ------------------------------------------------------------------------
CASES.append(Case(f"{F}/endpoint_tensor_view_after_close", RIG + textwrap.dedent("""
    ep = vg.StackHostTensorEndpointFloat32(); eng, acq, proc = rig([ep], volumes=2)
    eng.start(); eng.wait()
    with ep.tensor as v:
        want = float(v.sum())
    eng.close(); ep.close(); gc.collect()
    junk = [vg.full(v.size, 9, "float32", "cpu") for _ in range(8)]
    print(float(v.sum()) == want)"""), prints="True", timeout=12))

# --- CUDA consumers -----------------------------------------------------------------------------
add("cupy_from_dlpack_after_free", (textwrap.dedent("""
    import cupy
    N = 1 << 20
    a = vg.full(N, 1, "uint8", DEV); v = cupy.from_dlpack(a); a.free(); gc.collect()
    junk = [vg.full(N, 9, "uint8", DEV) for _ in range(8)]
    print(int(v.sum()))"""), dict(devices=("cuda:0",), needs=("cupy",), prints=str(1 << 20),
                                  issue="CuPy view sees memory freed and reused (GPU)")))
add("torch_from_dlpack_after_free", (textwrap.dedent("""
    import torch
    N = 1 << 20
    a = vg.full(N, 1, "uint8", DEV); v = torch.from_dlpack(a); a.free(); gc.collect()
    junk = [vg.full(N, 9, "uint8", DEV) for _ in range(8)]
    print(int(v.sum().item()))"""), dict(devices=("cuda:0",), needs=("torch",), prints=str(1 << 20),
                                         issue="PyTorch view sees memory freed and reused (GPU)")))
add("cupy_tensor_view_after_close", (textwrap.dedent("""
    import cupy
    N = 1 << 18
    t = vg.DeviceTensor((N,), "float32", DEV)
    with t as v:
        v[:] = 3
    cupy.cuda.runtime.deviceSynchronize()      # the fill ran on CuPy's stream
    t.close(); gc.collect()
    junk = [vg.full(N, 9, "float32", DEV) for _ in range(8)]
    print(float(v.sum()))"""), dict(devices=("cuda:0",), needs=("cupy",), prints=str(3.0 * (1 << 18)))))
add("cupy_readback_source_freed", (textwrap.dedent("""
    import cupy
    N = 1 << 16
    a = vg.full(N, 5, "float32", DEV); h = vg.readback(a); a.free()
    junk = [vg.full(N, 9, "float32", DEV) for _ in range(8)]
    print(float(h.get().sum()))"""), dict(devices=("cuda:0",), prints=str(5.0 * (1 << 16)))))


@pytest.mark.parametrize("case", register(CASES))
def test_borrowed(case: Case) -> None:
    check(case)
