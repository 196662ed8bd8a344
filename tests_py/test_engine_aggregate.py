"""vortex's aggregated segment callbacks: ``aggregate_segment_callback`` gets a volume's
segments (those the block finished) before its ``volume_callback`` and the open volume's at
the block's end; ``block_segment_callback`` every segment of the block; ``update_callback``
comes last in each block."""

import pytest

from vortexgo.engine import Engine, SpectraStackDeviceTensorEndpointUInt16
from vortexgo.format import StackFormatExecutor, StackFormatExecutorConfig

from test_engine_generate import A, B, S, raster, rig

pytestmark = pytest.mark.timeout(60)


def _run(tmp_path, volumes=3, **callbacks):
    ep = SpectraStackDeviceTensorEndpointUInt16(StackFormatExecutor(StackFormatExecutorConfig()), (B, A, S))
    log: list = []
    for name in ("update", "segment", "volume", "aggregate_segment", "block_segment"):
        if callbacks.get(name, True):
            setattr(ep, f"{name}_callback", (lambda n: lambda *a: log.append((n,) + a))(name))
    _, ec, _ = rig(tmp_path, lambda p: [ep])
    eng = Engine(ec)
    for _ in range(volumes):
        eng.scan_queue.append(raster())
    eng.prepare()
    eng.start()
    eng.wait()
    eng.close()
    return log


def test_aggregates_follow_vortex(tmp_path):
    log = _run(tmp_path)
    segs = [e[4] for e in log if e[0] == "segment"]
    assert len(segs) == 3 * B
    blocks, cur = [], []
    for e in log:  # split the log at the update events: one block each
        cur.append(e)
        if e[0] == "update":
            blocks.append(cur)
            cur = []
    assert cur == [] and len(blocks) >= 2, "update_callback ends every block"
    agg_all, blk_all = [], []
    for blk in blocks:
        in_volume, seen = [], []
        for e in blk:
            if e[0] == "segment":
                in_volume.append(e[4])
                seen.append(e[4])
            elif e[0] == "aggregate_segment":
                assert e[1] == in_volume, "a volume's aggregate holds the segments finished since the last"
                agg_all += e[1]
                in_volume = []
            elif e[0] == "volume":
                assert in_volume == [], "the aggregate comes before its volume_callback"
            elif e[0] == "block_segment":
                assert e[1] == seen and in_volume == [] and blk[-1][0] == "update"
                blk_all += e[1]
        if seen:
            assert any(e[0] == "block_segment" for e in blk)
    assert agg_all == segs and blk_all == segs


def test_aggregates_without_per_segment_callbacks(tmp_path):
    log = _run(tmp_path, segment=False, volume=False, update=False)
    agg = [s for e in log if e[0] == "aggregate_segment" for s in e[1]]
    blk = [s for e in log if e[0] == "block_segment" for s in e[1]]
    assert agg == blk == [i % B for i in range(3 * B)]
    assert {e[0] for e in log} == {"aggregate_segment", "block_segment"}


def test_spectra_host_endpoint_keeps_what_the_device_one_keeps(tmp_path):
    """vortex's SpectraStackHostTensorEndpointUInt16 (and its CPU SpectraStackTensorEndpointUInt16):
    the same raw spectra as the device endpoint, in host memory (NumPy, no copy)."""
    import numpy as np

    from vortexgo.engine import SpectraStackHostTensorEndpointUInt16, SpectraStackTensorEndpointUInt16

    assert SpectraStackTensorEndpointUInt16 is SpectraStackHostTensorEndpointUInt16
    ex = StackFormatExecutor(StackFormatExecutorConfig())
    dev = SpectraStackDeviceTensorEndpointUInt16(ex, (B, A, S))
    host = SpectraStackHostTensorEndpointUInt16(ex, (B, A, S))
    _, ec, _ = rig(tmp_path, lambda p: [dev, host])
    eng = Engine(ec)
    eng.scan_queue.append(raster())
    eng.prepare()
    eng.start()
    eng.wait()
    with host.tensor as h:
        assert isinstance(h, np.ndarray) and h.shape == (B, A, S) and h.any()
        with dev.tensor as d:
            d = d.get() if hasattr(d, "get") else np.asarray(d)
            np.testing.assert_array_equal(h, d)
    eng.close()


def test_a_raising_aggregate_callback_is_counted_and_the_run_goes_on(tmp_path):
    ep = SpectraStackDeviceTensorEndpointUInt16(StackFormatExecutor(StackFormatExecutorConfig()), (B, A, S))
    blocks = []

    def bad(segments):
        raise RuntimeError("boom")

    ep.aggregate_segment_callback = bad
    ep.block_segment_callback = blocks.append
    _, ec, _ = rig(tmp_path, lambda p: [ep])
    eng = Engine(ec)
    for _ in range(2):
        eng.scan_queue.append(raster())
    eng.prepare()
    eng.start()
    eng.wait()
    st = eng.status()
    eng.close()
    assert st.callback_errors >= 2 and st.volumes == 2 and not st.error
    assert [s for b in blocks for s in b] == [i % B for i in range(2 * B)]
