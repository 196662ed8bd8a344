"""Huge and odd sizes and numbers: shapes, counts, queue sizes, priorities,
budgets, external handles, timeouts. Expected: ValueError / TypeError /
MemoryError naming the argument (never CPython's "int too big to convert",
never a Go "out of memory" or makeslice panic, never a hang)."""

from __future__ import annotations

import textwrap

import pytest

from harness import RIG, Case, check, register

F = "sizes"

CASES: list[Case] = []


def c(id: str, code: str, raises: str, *words: str, rig: bool = False, **kw) -> None:
    code = textwrap.dedent(code)
    CASES.append(Case(f"{F}/{id}", (RIG + code) if rig else code, raises=raises, words=words, **kw))


def ok(id: str, code: str, prints: str, **kw) -> None:
    CASES.append(Case(f"{F}/{id}", textwrap.dedent(code), prints=prints, **kw))


BIG = "ValueError|MemoryError"


def many(id: str, code: str, **kw) -> None:
    """Several checks with expect(...) in one process (inputs that cannot crash)."""
    CASES.append(Case(f"{F}/{id}", textwrap.dedent(code) + "\nreport()\n", prints="ok", **kw))


# --- arrays and tensors -------------------------------------------------------------------
c("empty_2_40_bytes", "vg.empty(2**40, 'uint8', 'cpu')", BIG)
many("empty_bad_shapes", """
    expect("2**63", lambda: vg.empty(2**63, "uint8", "cpu"), BIG, "shape")
    expect("2**64", lambda: vg.empty(2**64, "uint8", "cpu"), BIG, "shape")
    expect("(2**32, 2**32)", lambda: vg.empty((2**32, 2**32), "uint8", "cpu"), BIG, "shape")
    expect("-1", lambda: vg.empty(-1, "uint8", "cpu"), "ValueError", "shape")
    expect("2.5", lambda: vg.empty(2.5, "uint8", "cpu"), "TypeError", "shape")
    expect("True", lambda: vg.empty(True, "uint8", "cpu"), "TypeError", "shape")
    expect("'4'", lambda: vg.empty("4", "uint8", "cpu"), "TypeError", "shape")
    expect("reshape 2**64", lambda: vg.zeros(4, "uint8", "cpu").reshape(2**64), "ValueError", "shape")
    expect("full 2**64", lambda: vg.full(2**64, 1, "uint8", "cpu"), BIG, "shape")
    """, issue="shapes beyond int64: int too big to convert")
ok("empty_numpy_ints", "a = vg.empty((np.uint64(2), np.int8(3)), 'float32', 'cpu'); print(a.shape, a.nbytes)", "(2, 3) 24")
c("tensor_2_40", "vg.DeviceTensor((2**40,), 'float32', 'cpu')", BIG)
many("tensor_bad_shapes", """
    expect("2**64", lambda: vg.DeviceTensor((2**64,), "float32", "cpu"), BIG, "shape")
    expect("(2**32, 2**32)", lambda: vg.DeviceTensor((2**32, 2**32), "float32", "cpu"), BIG, "shape")
    expect("2.5", lambda: vg.DeviceTensor((2.5,), "float32", "cpu"), "TypeError", "shape")
    t = vg.DeviceTensor((4,), "float32", "cpu")
    expect("resize 2**64", lambda: t.resize((2**64,)), BIG, "shape")
    expect("resize -1", lambda: t.resize((-1,)), "ValueError", "shape")
    """)
c("triple_buffer_2_62", "vg.TripleBuffer('cpu', 2**62)", BIG, "size", issue="2**62 float32 elements: the byte size wraps")

# --- streams, events and handles -------------------------------------------------------------------
many("priorities", """
    expect("Stream 2**63", lambda: vg.Stream("cpu", priority=2**63), "ValueError", "priority")
    expect("Stream -2**64", lambda: vg.Stream("cpu", priority=-2**64), "ValueError", "priority")
    expect("Stream 0.5", lambda: vg.Stream("cpu", priority=0.5), "TypeError", "priority")
    expect("Stream True", lambda: vg.Stream("cpu", priority=True), "TypeError", "priority")
    expect("AsyncCoordinator 2**63", lambda: vg.AsyncCoordinator("cpu", upload_priority=2**63), "ValueError",
           "upload_priority")
    expect("ManagedGpuContext 2**64", lambda: vg.ManagedGpuContext("cpu", compute_priority=2**64), "ValueError",
           "compute_priority")
    expect("Readback 2**63", lambda: vg.Readback(16, "cpu", priority=2**63), "ValueError", "priority")
    """, issue="priorities beyond int64: int too big to convert")
ok("stream_priority_numpy_int", "s = vg.Stream('cpu', priority=np.int32(0)); print(s.priority)", "0")
many("external_handles", """
    expect("2**64", lambda: vg.Stream.from_external(2**64, "cpu"), "ValueError", "stream")
    expect("-5", lambda: vg.Stream.from_external(-5, "cpu"), "ValueError", "stream")
    expect("1.5", lambda: vg.Stream.from_external(1.5, "cpu"), "TypeError", "stream")
    expect("copy(stream=2**64)", lambda: vg.copy(vg.zeros(4, "uint8", "cpu"), np.zeros(4, np.uint8), stream=2**64),
           "ValueError", "stream")
    # a CPU array has no stream to order on: DLPack wants stream=None there
    expect("cpu __dlpack__(stream='x')", lambda: vg.zeros(4, "uint8", "cpu").__dlpack__(stream="x"),
           "TypeError|ValueError|BufferError", "stream")
    expect("cpu __dlpack__(stream=12345)", lambda: vg.zeros(4, "uint8", "cpu").__dlpack__(stream=12345),
           "TypeError|ValueError|BufferError", "stream")
    """, issue="external handles beyond int64: int too big to convert; CPU __dlpack__(stream=...) accepts any value")
c("event_enable_timing_str", "vg.Event('cpu', enable_timing='no')", "TypeError", "enable_timing")

# --- toolkit ----------------------------------------------------------------------------------------
many("budgets", """
    expect("2**64", lambda: vg.set_memory_budget(device_bytes=2**64), "ValueError", "device_bytes")
    expect("-1", lambda: vg.set_memory_budget(pinned_bytes=-1), "ValueError", "pinned_bytes")
    expect("1.5", lambda: vg.set_memory_budget(device_bytes=1.5), "TypeError", "device_bytes")
    """, issue="budgets beyond int64: int too big to convert")
many("toolkit_ints_beyond_int64", """
    co = vg.AsyncCoordinator("cpu")
    expect("BufferPool buffer_size", lambda: vg.BufferPool(2**64, 1, device="cpu"), BIG, "buffer_size")
    expect("BufferPool max_size", lambda: vg.BufferPool(16, 1, max_size=2**64, device="cpu"), BIG, "max_size")
    expect("TripleBuffer size", lambda: vg.TripleBuffer("cpu", 2**64), BIG, "size")
    expect("Readback buffer_size", lambda: vg.Readback(2**64, "cpu"), BIG, "buffer_size")
    expect("queue_upload nbytes", lambda: co.queue_upload(np.zeros(16, np.uint8), vg.empty(16, "uint8", "cpu"),
                                                          nbytes=2**64), "ValueError", "nbytes")
    expect("done op_id", lambda: co.done(2**64), "ValueError", "op_id")
    expect("wait op_id", lambda: co.wait(2**63), "ValueError|KeyError", "op_id")
    expect("deps", lambda: co.queue_compute(vg.SpinOp(0), deps=[2**64]), "ValueError|KeyError")
    a = vg.zeros(16, "float32", "cpu")
    expect("KernelOp grid", lambda: co.queue_compute(vg.KernelOp("scale_offset_float32", 2**64, 1, [a, a, 16, 1.0, 0.0])),
           "ValueError", "grid")
    expect("KernelOp u64 arg", lambda: co.queue_compute(vg.KernelOp("scale_offset_float32", 1, 16,
                                                                     [a, a, vg.toolkit.u64(2**64), 1.0, 0.0])), "ValueError")
    """)
c("pool_buffer_size_2_40", "vg.BufferPool(2**40, 1, device='cpu')", BIG, "buffer_size")
c("pool_size_2_40", "vg.BufferPool(16, 2**40, device='cpu')", BIG, "pool_size")
c("readback_buffers_2_40", "vg.Readback(16, 'cpu', buffers=2**40)", BIG, "buffers")
c("pipeline_buffer_2_62", "m = vg.PipelineStageManager(vg.AsyncCoordinator('cpu')); m.add_buffer(2**62, 3)", BIG, "nbytes")
c("pipeline_versions_2_40", "m = vg.PipelineStageManager(vg.AsyncCoordinator('cpu')); m.add_buffer(16, 2**40)", BIG,
  "versions")
c("kernel_n_beyond_arrays", """
    a = vg.zeros(16, 'float32', 'cpu'); b = vg.zeros(16, 'float32', 'cpu')
    co = vg.AsyncCoordinator('cpu')
    i = co.queue_compute(vg.KernelOp('scale_offset_float32', 1 << 12, 256, [b, a, 1 << 20, 2.0, 0.0]))
    co.wait(i)
    print(b.numpy()[:2])""", "ValueError", issue="KernelOp whose n exceeds its arrays: SIGSEGV")

# --- timeouts --------------------------------------------------------------------------------------------
many("tensor_timeouts", """
    t = vg.DeviceTensor((4,), "float32", "cpu")
    for v in (float("nan"), float("inf"), -1):
        expect(f"acquire({v})", lambda: t.acquire(timeout=v), "ValueError", "timeout")
        expect(f"locked({v})", lambda: t.locked(timeout=v).__enter__(), "ValueError", "timeout")
    # a huge finite timeout: refused naming it, or taken as a long wait (the lock is free)
    expect("acquire(1e300)", lambda: (t.acquire(timeout=1e300), t.release()), "ValueError|none", "timeout")
    expect("acquire('1')", lambda: t.acquire(timeout="1"), "TypeError|ValueError", "timeout")
    """, issue="NaN/inf/str timeouts: Python internals' messages")
many("pool_timeouts", """
    p = vg.BufferPool(16, 1, device="cpu", policy="block"); p.get()
    for v in (float("nan"), -1):
        expect(f"get({v})", lambda: p.get(timeout=v), "ValueError", "timeout")
    expect("get('1')", lambda: p.get(timeout="1"), "TypeError|ValueError", "timeout")
    """)
c("pool_get_timeout_inf", "p = vg.BufferPool(16, 1, device='cpu', policy='block'); p.get(); p.get(timeout=float('inf'))",
  "ValueError", "timeout")
many("readback_and_coordinator_timeouts", """
    h = vg.Readback(64, "cpu").readback(vg.zeros(4, "float32", "cpu"))
    co = vg.AsyncCoordinator("cpu"); i = co.queue_compute(vg.SpinOp(0))
    for v in (float("nan"), float("inf"), -1):
        expect(f"readback wait({v})", lambda: h.wait(v), "ValueError", "timeout")
        expect(f"readback get({v})", lambda: h.get(v), "ValueError", "timeout")
        expect(f"coordinator wait({v})", lambda: co.wait(i, timeout=v), "ValueError", "timeout")
    expect("readback get('soon')", lambda: h.get("soon"), "TypeError|ValueError", "timeout")
    expect("coordinator wait('soon')", lambda: co.wait(i, timeout="soon"), "TypeError|ValueError", "timeout")
    """)
CASES.append(Case(f"{F}/engine_wait_for_timeouts", RIG + textwrap.dedent("""
    eng, acq, proc = rig([vg.NullEndpoint()], volumes=1); eng.start()
    for v in (float("nan"), float("inf"), -1):
        expect(f"wait_for({v})", lambda: eng.wait_for(v), "ValueError", "timeout")
    expect("wait_for('1')", lambda: eng.wait_for("1"), "TypeError|ValueError", "timeout")
    eng.wait()
    report()"""), prints="ok"))

# --- engine configuration ---------------------------------------------------------------------------------
c("event_queue_size_2_40", "rig([vg.NullEndpoint()], event_queue_size=2**40)", BIG, "event_queue_size", rig=True,
  issue="EngineConfig.event_queue_size=2**40: Go fatal error: out of memory")
c("blocks_to_allocate_2_40", "rig([vg.NullEndpoint()], blocks=2**40)", BIG, "blocks_to_allocate", rig=True)
CASES.append(Case(f"{F}/engine_config_fields", RIG + textwrap.dedent("""
    def prep(**fields):
        ec, acq, proc = config([vg.NullEndpoint()], volumes=1)
        for k, v in fields.items():
            setattr(ec, k, v)
        new_engine(ec, 1).prepare()
    expect("event_queue_size 2**64", lambda: prep(event_queue_size=2**64), BIG, "event_queue_size")
    expect("records_per_block 2**63", lambda: prep(records_per_block=2**63), BIG, "records_per_block")
    expect("blocks_to_acquire 2**64", lambda: prep(blocks_to_acquire=2**64), "ValueError", "blocks_to_acquire")
    expect("preload_count 1.5", lambda: prep(preload_count=1.5), "TypeError", "preload_count")
    expect("dispatch_spin nan", lambda: prep(dispatch_spin=float("nan")), "ValueError", "dispatch_spin")
    expect("event_policy 3", lambda: prep(event_policy=3), "ValueError|TypeError", "event_policy")
    report()"""), prints="ok", timeout=12))
SIM = "acq = vg.SimulatedAcquisition(samples_per_record=64, ascans_per_bscan=4, bscans_per_volume=4, {}); acq.prepare()"
c("acq_samples_per_record_2_40", SIM.format("volumes=1").replace("samples_per_record=64", "samples_per_record=2**40"),
  BIG, "samples_per_record", issue="SimulatedAcquisition(samples_per_record=2**40): Go out of memory")
c("acq_volume_2_40_records", SIM.replace("ascans_per_bscan=4, bscans_per_volume=4, {}",
                                         "ascans_per_bscan=2**20, bscans_per_volume=2**20"),
  BIG, "bscan", issue="huge ascans_per_bscan x bscans_per_volume: Go out of memory")
c("acq_volumes_2_40", SIM.format("volumes=2**40"), BIG, "volumes", issue="volumes=2**40: makeslice panic")
many("config_ints_beyond_int64", """
    sim = dict(samples_per_record=64, ascans_per_bscan=4, bscans_per_volume=4)
    expect("SimulatedAcquisition seed", lambda: vg.SimulatedAcquisition(**sim, seed=2**64).prepare(), "ValueError", "seed")
    expect("SimulatedAcquisition total_volumes", lambda: vg.SimulatedAcquisition(**sim, total_volumes=2**64).prepare(),
           "ValueError", "total_volumes")
    expect("NullAcquisition records", lambda: vg.NullAcquisition(samples_per_record=64, records=2**64).prepare(),
           "ValueError", "records")
    expect("FileAcquisition samples_per_record", lambda: vg.FileAcquisition(path="x.raw", samples_per_record=2**64),
           "ValueError", "samples_per_record")
    expect("RasterScanConfig ascans_per_bscan", lambda: vg.RasterScanConfig(ascans_per_bscan=2**64),
           "ValueError", "ascans_per_bscan")
    expect("ProcessorConfig average_window", lambda: vg.CPUProcessor(vg.ProcessorConfig(samples_per_record=64,
           ascans_per_block=16, average_window=2**64)), "ValueError", "average_window")
    """)
PROC = "vg.CPUProcessor(vg.ProcessorConfig(samples_per_record=64, ascans_per_block=16, {}))"
c("processor_ascans_per_block_2_40", PROC.replace("ascans_per_block=16, {}", "ascans_per_block=2**40"), BIG,
  "ascans_per_block")
c("processor_samples_2_40", PROC.replace("samples_per_record=64, ascans_per_block=16, {}",
                                         "samples_per_record=2**40, ascans_per_block=16"), BIG, "samples_per_record")
CASES.append(Case(f"{F}/processor_slots_2_40", RIG + textwrap.dedent("""
    # Refused naming slots, or run (slots beyond what a block needs may be clamped).
    try:
        ec, acq, proc = config([vg.NullEndpoint()], volumes=1)
        proc.initialize(proc.config, slots=2**40)
        eng = new_engine(ec, 1); eng.prepare(); eng.start(); eng.wait()
        print("ok" if eng.status().volumes == 1 else eng.status())
    except (ValueError, MemoryError) as e:
        print("ok" if "slots" in str(e).lower() else e)"""), prints="ok"))


@pytest.mark.parametrize("case", register(CASES))
def test_sizes(case: Case) -> None:
    check(case)
