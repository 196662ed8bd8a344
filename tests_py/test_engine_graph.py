"""vortex's processor graphs and several acquisitions (``add_acquisition(acq,
processors, preload, master)`` with :func:`divide` and :func:`cycle`): the
rotation each graph expands to (checked against vortex's own expansion rules),
ping-pong processing whose volumes equal one processor's, and two
acquisitions each feeding their own processors. CPU backend.
"""

from __future__ import annotations

import numpy as np
import pytest

import vortexgo as vg
from vortexgo.engine import Engine, EngineConfig, NullEndpoint, StackHostTensorEndpointFloat32, cycle, divide
from vortexgo.engine.config import _expand, _rotation

from _scans import planner, queue_volumes
from test_engine import A, B, RPB, RPV, S, make_rig, new_engine

pytestmark = pytest.mark.timeout(60)


def _procs(n):
    return [vg.CPUProcessor(vg.ProcessorConfig(samples_per_record=S, ascans_per_block=RPB)) for _ in range(n)]


def test_graph_expansion_follows_vortex():
    a, b, c, d = _procs(4)
    assert _rotation(divide([a, b])) == [[0, 1]]
    assert _rotation(divide([cycle([a, b])])) == [[0], [1]]
    # cycle of a divide and a single: rows widened to the same width (vortex repeats)
    assert _expand(cycle([divide([a, b]), c])) == [[a, b], [c, c]]
    assert _rotation(divide([cycle([divide([a, b]), c])])) == [[0, 1], [2, 2]]
    # divide of cycles of different lengths: columns lengthened to their lcm
    assert _expand(divide([cycle([a, b]), cycle([c, d, c])])) == [[a, c], [b, d], [a, c], [b, c], [a, d], [b, c]]


def test_bad_graphs_name_the_argument():
    ec = EngineConfig()
    acq = vg.SimulatedAcquisition(samples_per_record=S, ascans_per_bscan=A, bscans_per_volume=B)
    with pytest.raises(TypeError, match=r"processors\[1\]"):
        ec.add_acquisition(acq, [_procs(1)[0], "gpu"])
    with pytest.raises(ValueError, match=r"processors\[0\]=cycle\(\[\]\)"):
        ec.add_acquisition(acq, [cycle([])])
    with pytest.raises(TypeError, match="master"):
        ec.add_acquisition(acq, _procs(1), master="yes")


def _ping_pong_rig(endpoints, rotation):
    rig = make_rig(endpoints, volumes=3)
    other = vg.CPUProcessor(rig.proc.config)
    ec = EngineConfig(records_per_block=RPB, blocks_to_allocate=4, preload_count=2)
    ec.add_acquisition(rig.acq, [rotation(rig.proc, other)])
    ec.add_processor(rig.proc, [rig.fmt])
    ec.add_processor(other, [rig.fmt])  # the formatter sees every block, from either processor
    ec.add_formatter(rig.fmt, endpoints)
    rig.config = ec
    return rig, other


def test_ping_pong_volumes_equal_one_processors():
    ref_ep = StackHostTensorEndpointFloat32()
    ref = make_rig([ref_ep], volumes=3)
    eng = new_engine(ref)
    eng.prepare(); eng.start(); eng.wait(); eng.stop()
    with ref_ep.tensor as v:
        want = np.array(v)

    ep = StackHostTensorEndpointFloat32()
    rig, other = _ping_pong_rig([ep], lambda a, b: cycle([a, b]))
    eng = new_engine(rig)
    vols = []
    ep.volume_callback = lambda *a: vols.append(a)
    eng.prepare(); eng.start(); eng.wait(); eng.stop()
    s = eng.status()
    assert s.volumes == 3 and s.blocks_formatted == 3 * RPV // RPB + 1 and s.error == ""
    assert len(vols) == 3
    with ep.tensor as v:
        np.testing.assert_array_equal(v, want)


def test_a_formatter_must_see_every_block():
    ep = NullEndpoint()
    rig = make_rig([ep], volumes=1)
    other = vg.CPUProcessor(rig.proc.config)
    ec = EngineConfig(records_per_block=RPB)
    ec.add_acquisition(rig.acq, [cycle([rig.proc, other])])
    ec.add_processor(rig.proc, [rig.fmt])  # `other` feeds no formatter: rig.fmt would miss every other block
    ec.add_processor(other, [])
    ec.add_formatter(rig.fmt, [ep])
    with pytest.raises(ValueError, match="0 of its processors process the blocks of rotation set 1"):
        ec.validate()
    ec = EngineConfig(records_per_block=RPB)
    ec.add_acquisition(rig.acq, [rig.proc, other])  # divide: both get every block
    ec.add_processor(rig.proc, [rig.fmt])
    ec.add_processor(other, [rig.fmt])
    ec.add_formatter(rig.fmt, [ep])
    with pytest.raises(ValueError, match="2 of its processors"):
        ec.validate()


def test_two_acquisitions_each_feed_their_processors():
    ep1, ep2 = StackHostTensorEndpointFloat32(), StackHostTensorEndpointFloat32()
    rig = make_rig([ep1], volumes=2)
    acq2 = vg.SimulatedAcquisition(samples_per_record=S, ascans_per_bscan=A, bscans_per_volume=B, volumes=2,
                                   total_volumes=0, seed=7)
    proc2 = vg.CPUProcessor(rig.proc.config)
    fmt2 = planner(A, B)
    ec = rig.config
    ec.add_acquisition(acq2, [proc2], master=False)
    ec.add_processor(proc2, [fmt2])
    ec.add_formatter(fmt2, [ep2])
    eng = new_engine(rig)
    eng.prepare(); eng.start(); eng.wait(); eng.stop()
    assert eng.status().volumes == 2 and eng.status().error == ""
    with ep1.tensor as v1, ep2.tensor as v2:
        assert np.abs(v1).sum() > 0 and np.abs(v2).sum() > 0
        assert not np.array_equal(v1, v2), "each endpoint holds its own acquisition's volume"
    # The same acquisition added twice merges into one graph (vortex's).
    ec2 = EngineConfig()
    p1, p2 = _procs(2)
    ec2.add_acquisition(acq2, [p1])
    ec2.add_acquisition(acq2, [p2])
    assert len(ec2._acquisitions) == 1 and ec2.processors == [p1, p2]
