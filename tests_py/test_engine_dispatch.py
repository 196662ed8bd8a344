"""The callback dispatcher's hot path (issue 10, callback latency): a stream of events
never triggers a cyclic-GC collection on the dispatcher thread (docs/design.md, "Dispatch
latency"), and handlers see the same arguments, in order, however the events are batched,
and a handler replaced while the engine runs from its next event on."""

from __future__ import annotations

import gc
import threading

import pytest

import vortexgo as vg
from vortexgo.engine import Engine, EngineConfig, StackDeviceTensorEndpointInt8
from vortexgo.process import hann_window, spectral_filter

from _scans import planner, queue_volumes

pytestmark = pytest.mark.timeout(120)

S, A, B = 64, 8, 32  # short B-scans: 32 segment events per 256-record block
RPB = 256


def _rig(blocks: int, **kw) -> tuple[Engine, StackDeviceTensorEndpointInt8, vg.CPUProcessor]:
    """An engine playing a looping raster for `blocks` blocks into one endpoint."""
    ep = StackDeviceTensorEndpointInt8()
    acq = vg.SimulatedAcquisition(samples_per_record=S, ascans_per_bscan=A, bscans_per_volume=B, volumes=1,
                                  total_volumes=0)
    pc = vg.ProcessorConfig(samples_per_record=S, ascans_per_block=RPB, average_window=0,
                            resampling_samples=acq.resampling_positions(),
                            spectral_filter=spectral_filter(hann_window(S), acq.dispersion_compensation()))
    proc = vg.CPUProcessor(pc)
    ec = EngineConfig(records_per_block=RPB, blocks_to_allocate=4, preload_count=2, blocks_to_acquire=blocks, **kw)
    ec.add_acquisition(acq, [proc])
    fmt = planner(A, B)
    ec.add_processor(proc, [fmt])
    ec.add_formatter(fmt, [ep])
    eng = Engine(ec)
    queue_volumes(eng, A, B, 0)
    return eng, ep, proc


def _run(blocks: int, segment_callback, **kw) -> int:
    """Run `blocks` blocks with `segment_callback`; the number of cyclic-GC collections on the
    dispatcher thread while it ran."""
    eng, ep, proc = _rig(blocks, **kw)
    ep.segment_callback = segment_callback
    collections = [0]

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start" and threading.current_thread().name == "vortexgo-engine-dispatcher":
            collections[0] += 1

    threshold = gc.get_threshold()
    try:
        eng.prepare()
        gc.collect()
        gc.callbacks.append(on_gc)
        # A collection as soon as two new containers are alive: anything the dispatcher
        # kept per event (a container left alive) would trigger one every other event.
        # Containers freed at once do not count (CPython 3.12 discounts them, and lists and
        # tuples come from free lists), so only what survives is seen.
        gc.set_threshold(1, 1 << 30, 1 << 30)
        eng.start()
        eng.wait()
    finally:
        gc.set_threshold(*threshold)
        if on_gc in gc.callbacks:
            gc.callbacks.remove(on_gc)
        eng.close()
        proc.close()
        ep.close()
    return collections[0]


def test_a_stream_of_events_triggers_no_collection_on_the_dispatcher():
    blocks = 40
    seen = [0, 0]

    def on_segment(sample: int, scan_idx: int, volume_idx: int, bscan_idx: int) -> None:
        seen[0] += 1
        seen[1] = bscan_idx  # no container: ints only

    collections = _run(blocks, on_segment)
    events = blocks * RPB // A
    assert seen[0] == events
    # The session's own events (lifecycle, the last block's queue events) may keep a few
    # objects; the events of the stream must not (a handler keeping one list per event
    # makes about one collection per two events here).
    assert collections < events // 20, f"{collections} collections on the dispatcher for {events} events"


def test_segment_arguments_and_order_survive_batching():
    got: list = []
    _run(12, lambda *a: got.append(a), dispatch_spin=0)  # no spin: batches of every size
    n = 12 * RPB // A
    assert len(got) == n
    # The run's last segment, cut by blocks_to_acquire, is left out (its sample is the
    # engine's business, not the dispatcher's).
    assert [g[0] for g in got[:-1]] == [(i + 1) * A for i in range(n - 1)]  # sample, in order
    assert [g[3] for g in got] == [i % B for i in range(n)]  # the segment's index in its volume
    assert all(g[2] == 0 for g in got)  # volume_idx: the volume's index in its (looping) scan


def test_a_handler_replaced_while_running_takes_effect_at_its_next_event():
    first: list = []
    second: list = []
    ep_holder: list = []

    def swap(sample: int, *rest: int) -> None:
        first.append(sample)
        if len(first) == 10:
            ep_holder[0].segment_callback = lambda *a: second.append(a[0])

    eng, ep, proc = _rig(4)
    ep_holder.append(ep)
    ep.segment_callback = swap
    try:
        eng.prepare()
        eng.start()
        eng.wait()
    finally:
        eng.close()
        proc.close()
        ep.close()
    # Within one batch too: the event after the swap goes to the new handler.
    assert len(first) == 10
    both = first + second
    assert len(both) == 4 * RPB // A
    assert both[:-1] == [(i + 1) * A for i in range(4 * RPB // A - 1)]
