from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import _subproc
import vortexgo as vg
from conftest import needs_cuda


def test_tensor_lock_yields_zero_copy_view(cpu):
    t = vg.DeviceTensor((2, 3), "float32", cpu)
    assert t.shape == (2, 3) and t.dtype == np.float32 and t.nbytes == 24
    with t as v:
        assert isinstance(v, np.ndarray) and v.ctypes.data == t.ptr
        v[:] = 7
    with t.locked(shared=True) as v:
        np.testing.assert_array_equal(v, np.full((2, 3), 7, np.float32))
    assert "DeviceTensor" in repr(t)


def test_tensor_resize_while_holding_lock_raises(device):
    t = vg.DeviceTensor(4, "int8", device)
    with t:
        with pytest.raises(vg.LockError, match="deadlock"):
            t.resize(8)
    t.resize((2, 8), "float32")
    assert t.shape == (2, 8) and t.dtype == np.float32


def test_tensor_resize_waits_for_other_thread(device):
    t = vg.DeviceTensor(4, "int8", device)
    held, release, done = threading.Event(), threading.Event(), threading.Event()

    def holder():
        with t:
            held.set()
            release.wait(10)

    th = threading.Thread(target=holder)
    th.start()
    assert held.wait(10)

    def resizer():
        t.resize(16)
        done.set()

    r = threading.Thread(target=resizer)
    r.start()
    time.sleep(0.1)
    assert not done.is_set()  # waiting for the holder, not failing
    release.set()
    assert done.wait(10)
    th.join(10)
    r.join(10)
    assert t.shape == (16,)


def test_tensor_lock_timeout_and_gil_release(device):
    t = vg.DeviceTensor(4, "int8", device)
    held, release = threading.Event(), threading.Event()

    def holder():
        with t:
            held.set()
            release.wait(10)

    th = threading.Thread(target=holder)
    th.start()
    assert held.wait(10)
    t0 = time.perf_counter()
    with pytest.raises(TimeoutError):
        t.acquire(timeout=0.2)
    assert time.perf_counter() - t0 >= 0.15
    release.set()
    th.join(10)
    with t.locked(timeout=1.0):
        pass


def test_tensor_shared_readers_coexist(device):
    t = vg.DeviceTensor(4, "int8", device)
    inside = threading.Barrier(3, timeout=10)

    def reader():
        with t.locked(shared=True):
            inside.wait()  # all three are inside at once

    ts = [threading.Thread(target=reader) for _ in range(3)]
    [x.start() for x in ts]
    [x.join(10) for x in ts]
    assert not inside.broken


def test_tensor_bad_input(device):
    with pytest.raises(ValueError, match="shape="):
        vg.DeviceTensor((-1, 2), "int8", device)
    with pytest.raises(TypeError, match="dtype="):
        vg.DeviceTensor(2, "bool", device)
    t = vg.DeviceTensor(2, "int8", device)
    with pytest.raises(ValueError, match="timeout="):
        t.acquire(timeout=-1)
    with pytest.raises(RuntimeError, match="without a matching acquire"):
        t.release()
    t.close()
    with pytest.raises(vg.ClosedError):
        t.acquire()


def test_graph_capture_replays_like_eager(device):
    s = vg.Stream(device)
    src = vg.from_numpy(np.arange(1024, dtype=np.float32), device, stream=s)
    dst = vg.zeros(1024, "float32", device, stream=s)
    s.synchronize()
    with vg.ScopedCapture(s) as cap:
        vg.scale_offset(src, 2.0, 1.0, out=dst, stream=s)
        vg.scale_offset(dst, 3.0, 0.0, out=dst, stream=s)
    g = cap.graph
    assert g is not None and g.nodes >= 2
    np.testing.assert_array_equal(dst.numpy(), np.zeros(1024, np.float32))  # captured, not run
    for _ in range(3):
        g.launch(s)
    s.synchronize()
    eager = (np.arange(1024, dtype=np.float32) * 2 + 1) * 3
    np.testing.assert_array_equal(dst.numpy(), eager)
    vg.capture_launch(g, s)
    assert "Graph" in repr(g)
    g.close()


def test_capture_discarded_on_exception(device):
    s = vg.Stream(device)
    with pytest.raises(KeyError):
        with vg.ScopedCapture(s) as cap:
            raise KeyError("boom")
    assert cap.graph is None
    s.synchronize()  # the stream is usable again


# --- what a capture cannot hold -----------------------------------------------------------
#
# Inside a capture the host cannot wait for the capturing stream, and (on
# CUDA) the stream cannot wait on an event recorded outside the capture.
# The errors say what to do; the block's own error propagates (not the
# driver's "capture invalidated" from ending it); the stream works again
# after the block.


def test_capture_refuses_host_waits_on_cpu(cpu):
    s = vg.Stream(cpu)
    x = vg.zeros(16, "float32", cpu, stream=s)
    with pytest.raises(vg.VortexError, match="capturing a graph") as info:
        with vg.ScopedCapture(s):
            vg.scale_offset(x, 2.0, 1.0, out=x, stream=s)
            s.synchronize()
    assert "EndCapture first" in str(info.value)
    with pytest.raises(vg.VortexError, match="capturing a graph"):
        with vg.ScopedCapture(s):
            s.is_complete
    s.synchronize()  # usable again
    np.testing.assert_array_equal(x.numpy(), 0)  # the discarded captures never ran

    # CPU work is done when it is issued, so an event recorded outside the
    # capture is complete: waiting on it inside is accepted and orders
    # nothing (CUDA refuses it: see the tests below).
    outside = s.record_event()
    with vg.ScopedCapture(s) as cap:
        s.wait_event(outside)
        vg.scale_offset(x, 2.0, 1.0, out=x, stream=s)
    cap.graph.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(x.numpy(), 1)
    cap.graph.close()


# Each case: what the block does, and the words the error must hold (the
# error is the refused call's, not cuStreamEndCapture's from leaving). The
# first refused call invalidates the capture; later calls, ending it
# included, fail with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, whose text
# names every cause and the way out.
CUDA_CAPTURE_CASES = {
    "wait on an event recorded outside": ("s.wait_event(outside)", "recorded outside the capture"),
    "synchronize the capturing stream": ("s.synchronize()", "synchronize"),
    "query the capturing stream": ("s.is_complete", "queried"),
}

CUDA_CAPTURE_SCRIPT = """
import vortexgo as vg
dev = vg.get_device("cuda:0")
s = vg.Stream(dev)
x = vg.zeros(16, "float32", dev, stream=s)
outside = s.record_event()
try:
    with vg.ScopedCapture(s):
        vg.scale_offset(x, 2.0, 1.0, out=x, stream=s)
        {call}
except vg.CudaError as exc:
    assert "STREAM_CAPTURE" in str(exc), exc
    # The fields travel with the error (gosrc/pyapi/errors.go), not parsed from its text.
    assert exc.op.startswith("cu") and exc.code > 0 and exc.name.startswith("CUDA_ERROR_STREAM_CAPTURE"), (exc.op, exc.code, exc.name)
    assert f"{{exc.op}}: {{exc.name}} ({{exc.code}})" in str(exc) and "\x1e" not in str(exc), exc
    assert {words!r} in str(exc), exc
    assert "cuStreamEndCapture" not in str(exc), exc
    print("RAISED", exc)
else:
    raise AssertionError("no error")
# A refused call caught inside the block: leaving it raises, saying why.
try:
    with vg.ScopedCapture(s) as cap:
        try:
            {call}
        except vg.CudaError:
            pass
except vg.CudaError as exc:
    assert "CAPTURE_INVALIDATED" in str(exc) and "capture again" in str(exc), exc
    assert cap.graph is None
else:
    raise AssertionError("leaving an invalidated capture did not raise")
s.synchronize()  # usable again, and a new capture works
with vg.ScopedCapture(s) as cap:
    vg.scale_offset(x, 2.0, 1.0, out=x, stream=s)
cap.graph.launch(s)
s.synchronize()
if {real_gpu}:  # the fake driver runs no kernels
    assert x.numpy().tolist() == [1.0] * 16, x.numpy()
print("OK")
"""


@pytest.mark.parametrize("case", sorted(CUDA_CAPTURE_CASES))
def test_capture_refusals_on_a_fake_cuda_driver(fake_cuda_driver, case):
    # The driver's capture rules as gosrc/cuda/testdata/fakecuda.c models
    # them, through the real shim, C fast path and Go core.
    call, words = CUDA_CAPTURE_CASES[case]
    p = _subproc.run(CUDA_CAPTURE_SCRIPT.format(call=call, words=words, real_gpu=False), timeout=120,
                     env={"VORTEXGO_CUDA_DRIVER": fake_cuda_driver})
    assert p.stdout.splitlines()[-1] == "OK", p.stdout


@needs_cuda
@pytest.mark.parametrize("case", sorted(CUDA_CAPTURE_CASES))
def test_capture_refusals_on_cuda(case):
    call, words = CUDA_CAPTURE_CASES[case]
    p = _subproc.run(CUDA_CAPTURE_SCRIPT.format(call=call, words=words, real_gpu=True), timeout=120)
    assert p.stdout.splitlines()[-1] == "OK", p.stdout


def test_capture_launch_type_checked():
    with pytest.raises(TypeError, match="graph="):
        vg.capture_launch("not a graph")


def test_tensor_views_borrow_their_memory(cpu):
    t = vg.DeviceTensor(8, "int16", cpu)
    with t as v:
        v[:] = 5
    kept = t.view()
    t.resize(1 << 16)  # grows: a new buffer; the old view keeps the old one
    with t as v:
        v[:] = 1
    np.testing.assert_array_equal(kept, np.full(8, 5, np.int16))
    t.close()
    np.testing.assert_array_equal(kept, np.full(8, 5, np.int16))
    with pytest.raises(vg.ClosedError):
        t.view()
    with pytest.raises(vg.ClosedError):
        t.ptr
    with pytest.raises(vg.ClosedError):
        t.resize(4)
    assert "closed" in repr(t)


def test_tensor_shapes_and_arguments_are_validated(cpu):
    with pytest.raises(ValueError, match="shape="):
        vg.DeviceTensor((2**40, 2**40), "int8", cpu)
    with pytest.raises(TypeError, match="shape="):
        vg.DeviceTensor((2, 1.5), "int8", cpu)
    with pytest.raises(TypeError, match="pinned="):
        vg.DeviceTensor(2, "int8", cpu, pinned="yes")
    t = vg.DeviceTensor(2, "int8", cpu)
    with pytest.raises(ValueError, match="timeout="):
        t.acquire(timeout=float("nan"))
    with pytest.raises(TypeError, match="stream="):
        t.mark_ready("not a stream")
    empty = vg.DeviceTensor((0, 3), "float32", cpu)
    assert empty.view().shape == (0, 3)
