"""Golden outputs of vortex's scan patterns for gosrc/scan's tests.

Runs vortex 0.5.1 (not a dependency of vortexgo) on a table of configs of
every scan type and option and writes gosrc/scan/testdata/scan_golden.json:
for each case the config (as the Go test rebuilds it), scan_buffer(),
scan_markers(), the segments' lengths and markers, a stream of next() calls
of odd chunk sizes (with a change() part way for the change cases), or
vortex's error for a config it refuses.

Run it with vortex importable (see /work/notes/common.md):
  PYTHONPATH=/tmp/vortex_site/vortex \
  LD_LIBRARY_PATH=/work/vx312/lib/python3.12/site-packages/nvidia/cu13/lib \
  /work/vx312/bin/python scripts/golden/scan_golden.py
"""

import json
import math
import os
import sys

import numpy as np

import vortex
from vortex import Range
import vortex.scan as vs
import vortex.marker as vm

OUT = os.path.join(os.path.dirname(__file__), '..', '..', 'gosrc', 'scan', 'testdata', 'scan_golden.json')

CONFIGS = {
    'RasterScan': vs.RasterScanConfig,
    'RepeatedRasterScan': vs.RepeatedRasterScanConfig,
    'RadialScan': vs.RadialScanConfig,
    'RepeatedRadialScan': vs.RepeatedRadialScanConfig,
    'SpiralScan': vs.SpiralScanConfig,
    'FreeformScan': vs.FreeformScanConfig,
}
SCANS = {
    'RasterScan': vs.RasterScan,
    'RepeatedRasterScan': vs.RepeatedRasterScan,
    'RadialScan': vs.RadialScan,
    'RepeatedRadialScan': vs.RepeatedRadialScan,
    'SpiralScan': vs.SpiralScan,
    'FreeformScan': vs.FreeformScan,
}

ALL = (1 << 64) - 1


def flags(v):
    f = vm.Flags()
    f.value = v
    return f


def make_config(scan, fields):
    """The vortex config for a JSON description (the Go test reads the same)."""
    c = CONFIGS[scan]()
    for k, v in fields.items():
        if k in ('volume_extent', 'bscan_extent', 'segment_extent'):
            setattr(c, k, Range(*v))
        elif k == 'offset':
            c.offset = tuple(v)
        elif k == 'limits':
            c.limits = [vs.Limits(Range(l[0], l[1]), l[2], l[3]) for l in v]
        elif k == 'inactive_policy':
            kind = v[0]
            if kind == 'MinimumDynamicLimited':
                c.inactive_policy = vs.inactive_policy.MinimumDynamicLimited()
            elif kind == 'FixedDynamicLimited':
                c.inactive_policy = vs.inactive_policy.FixedDynamicLimited(v[1], v[2])
            else:
                c.inactive_policy = vs.inactive_policy.FixedLinear(v[1], v[2])
        elif k == 'warp':
            if v[0] == 'Angular':
                c.warp = vs.warp.Angular(v[1])
            elif v[0] == 'Telecentric':
                c.warp = vs.warp.Telecentric(v[1], v[2])
            else:
                c.warp = vs.warp.NoWarp()
        elif k == 'flags':
            c.flags = flags(v)
        elif k == 'repeat_strategy':
            if v[0] == 'Order':
                c.repeat_strategy = vs.RepeatOrder(flags(v[1]))
            elif v[0] == 'Pack':
                c.repeat_strategy = vs.RepeatPack(flags(v[1]))
            else:
                c.repeat_strategy = vs.RepeatFlags(vm.FlagsList([flags(x) for x in v[1]]))
        elif k in ('set_isotropic', 'set_hybrid', 'set_half_evenly_spaced', 'set_evenly_spaced'):
            getattr(c, k)(v)
        elif k == 'set_aiming':
            c.set_aiming()
        elif k == 'freeform':
            # {"waypoints": [[[x, y], ...], ...], "bidirectional_segments": bool, ...}
            p = vs.SequentialPattern()
            p.bidirectional_segments = v.get('bidirectional_segments', False)
            p.bidirectional_volumes = v.get('bidirectional_volumes', False)
            c.pattern = p.to_pattern([np.array(w, dtype=np.float64) for w in v['waypoints']])
        else:
            setattr(c, k, v)
    return c


def marker_json(m):
    name = type(m).__name__
    d = {'kind': name, 'sample': int(m.sample)}
    if name == 'ScanBoundary':
        d.update(sequence=m.sequence, count_hint=m.volume_count_hint, flags=str(m.flags.value))
    elif name == 'VolumeBoundary':
        d.update(sequence=m.sequence, index=m.index_in_scan, reversed=m.reversed, count_hint=m.segment_count_hint, flags=str(m.flags.value))
    elif name == 'SegmentBoundary':
        d.update(sequence=m.sequence, index=m.index_in_volume, reversed=m.reversed, count_hint=m.record_count_hint, flags=str(m.flags.value))
    elif name == 'Event':
        d.update(id=m.id, flags=str(m.flags.value))
    return d


def rows(a):
    return [[float(x) for x in r] for r in np.asarray(a)]


def stream(scan, chunks, channels=2):
    out, markers = [], []
    for n in chunks:
        buf = np.zeros((n, channels))
        got, ms = scan.next(buf)
        out.extend(rows(buf[:got]))
        markers.extend(marker_json(m) for m in ms)
    return out, markers


def small_raster(**kw):
    base = dict(bscan_extent=[-0.4, 0.4], volume_extent=[-1, 1], ascans_per_bscan=12, bscans_per_volume=4,
                inactive_policy=['FixedLinear', 5, 7])
    base.update(kw)
    return base


def small_radial(**kw):
    base = dict(bscan_extent=[-0.4, 0.4], ascans_per_bscan=12, set_half_evenly_spaced=4,
                inactive_policy=['FixedLinear', 5, 7])
    base.update(kw)
    return base


def small_spiral(**kw):
    base = dict(volume_extent=[0, 0.2], rings_per_spiral=3, set_isotropic=100000,
                inactive_policy=['FixedLinear', 5, 7], bypass_limits_check=True)
    base.update(kw)
    return base


def freeform_wp():
    t = np.linspace(0, 2 * math.pi, 15)
    a = np.stack((0.3 * np.cos(t), 0.3 * np.sin(t)), axis=-1)
    b = np.stack((np.linspace(-0.4, 0.4, 9), np.linspace(0.1, 0.2, 9)), axis=-1)
    return [rows(a), rows(b)]


# faster scanners keep the planned paths (and the golden file) short
FAST = [[-12.5, 12.5, 8e3, 5e7]] * 2

CASES = [
    # raster: every pattern option with the linear policy
    ('raster_default_small', 'RasterScan', small_raster()),
    ('raster_bidir_segments', 'RasterScan', small_raster(bidirectional_segments=True)),
    ('raster_bidir_volumes', 'RasterScan', small_raster(bidirectional_volumes=True)),
    ('raster_bidir_both', 'RasterScan', small_raster(bidirectional_segments=True, bidirectional_volumes=True)),
    ('raster_offset_angle', 'RasterScan', small_raster(offset=[0.3, -0.2], angle=0.5)),
    ('raster_flipped_extent', 'RasterScan', small_raster(volume_extent=[1, -1], bscan_extent=[0.4, -0.4])),
    ('raster_one_bscan', 'RasterScan', small_raster(bscans_per_volume=1)),
    ('raster_no_loop', 'RasterScan', small_raster(loop=False)),
    ('raster_flags', 'RasterScan', small_raster(flags=0x5)),
    ('raster_zero_inactive', 'RasterScan', small_raster(inactive_policy=['FixedLinear', 0, 0])),
    ('raster_rate', 'RasterScan', small_raster(samples_per_second=50000)),
    ('raster_warp_angular', 'RasterScan', small_raster(warp=['Angular', 3.0])),
    ('raster_warp_telecentric', 'RasterScan', small_raster(warp=['Telecentric', 50.0, 2 * math.pi / 180])),
    ('raster_starts_at_origin', 'RasterScan', small_raster(volume_extent=[0, 1], bscan_extent=[0, 0.4])),
    # repeated raster: strategies, periods, bidirectional
    ('rraster_default', 'RepeatedRasterScan', small_raster()),
    ('rraster_order', 'RepeatedRasterScan', small_raster(repeat_strategy=['Order', ALL])),
    ('rraster_pack_period1', 'RepeatedRasterScan', small_raster(repeat_period=1, repeat_count=2, repeat_strategy=['Pack', 0x3])),
    ('rraster_flags', 'RepeatedRasterScan', small_raster(repeat_count=3, repeat_strategy=['Flags', [1, 2, 4]])),
    ('rraster_bidir_even', 'RepeatedRasterScan', small_raster(repeat_period=2, bidirectional_segments=True)),
    ('rraster_bidir_odd', 'RepeatedRasterScan', small_raster(bscans_per_volume=3, repeat_period=3, repeat_count=2, bidirectional_segments=True)),
    # radial
    ('radial_small', 'RadialScan', small_radial()),
    ('radial_evenly', 'RadialScan', small_radial(set_evenly_spaced=5)),
    ('radial_aiming_bidir', 'RadialScan', small_radial(set_aiming=True, bidirectional_segments=True)),
    ('radial_offset_angle', 'RadialScan', small_radial(offset=[0.1, 0.2], angle=0.3, bidirectional_volumes=True)),
    ('rradial_small', 'RepeatedRadialScan', small_radial()),
    ('rradial_order_bidir', 'RepeatedRadialScan', small_radial(repeat_strategy=['Order', ALL], bidirectional_segments=True)),
    # spiral
    ('spiral_isotropic', 'SpiralScan', small_spiral()),
    ('spiral_cav', 'SpiralScan', small_spiral(set_isotropic=None, angular_velocity=600.0, linear_velocity=0.0, samples_per_segment=300)),
    ('spiral_hybrid', 'SpiralScan', small_spiral(set_isotropic=None, angular_velocity=6000.0, linear_velocity=600.0, set_hybrid=100000)),
    ('spiral_accel', 'SpiralScan', small_spiral(set_isotropic=None, acceleration_limit=2e5, linear_velocity=200.0, angular_velocity=0.0, samples_per_segment=250)),
    ('spiral_two_segments', 'SpiralScan', small_spiral(segments_per_volume=2, offset=[0.1, 0], angle=0.2)),
    # freeform
    ('freeform', 'FreeformScan', dict(freeform={'waypoints': freeform_wp()}, inactive_policy=['FixedLinear', 6, 4], bypass_limits_check=True)),
    ('freeform_bidir', 'FreeformScan', dict(freeform={'waypoints': freeform_wp(), 'bidirectional_segments': True, 'bidirectional_volumes': True}, inactive_policy=['FixedLinear', 6, 4], bypass_limits_check=True)),
    # planner-based policies (compared once motion.Plan lands)
    ('raster_min_dynamic', 'RasterScan', small_raster(inactive_policy=['MinimumDynamicLimited'], limits=FAST)),
    ('raster_min_dynamic_bidir', 'RasterScan', small_raster(inactive_policy=['MinimumDynamicLimited'], bidirectional_segments=True, limits=FAST)),
    ('raster_fixed_dynamic', 'RasterScan', small_raster(inactive_policy=['FixedDynamicLimited', 120, 150], limits=FAST)),
    ('radial_min_dynamic', 'RadialScan', small_radial(inactive_policy=['MinimumDynamicLimited'], limits=FAST)),
    ('spiral_min_dynamic', 'SpiralScan', small_spiral(inactive_policy=['MinimumDynamicLimited'], limits=FAST)),
    ('rraster_min_dynamic', 'RepeatedRasterScan', small_raster(inactive_policy=['MinimumDynamicLimited'], limits=FAST)),
    # vortex refuses these
    ('bad_velocity', 'RasterScan', small_raster(ascans_per_bscan=5, bscan_extent=[-2, 2])),
    ('bad_position', 'RasterScan', small_raster(offset=[12.4, 0])),
    ('bad_acceleration', 'SpiralScan', small_spiral(bypass_limits_check=False)),
    ('bad_repeat_period', 'RepeatedRasterScan', small_raster(repeat_period=3)),
    ('bad_repeat_flags', 'RepeatedRasterScan', small_raster(repeat_count=2, repeat_strategy=['Flags', [1]])),
    ('bad_one_sample', 'RasterScan', small_raster(ascans_per_bscan=1)),
    ('bad_limits_count', 'RasterScan', small_raster(limits=[[-12.5, 12.5, 8e3, 5e6]])),
]

# (name, scan, config A, prepare first, chunks before, config B, restart, event id, chunks after)
CHANGES = [
    ('change_raster_prepared_mid_segment', 'RasterScan', small_raster(), True, [20, 9], small_raster(offset=[0.2, 0.1]), False, 7, [11, 40, 3, 60]),
    ('change_raster_prepared_in_inactive', 'RasterScan', small_raster(), True, [20, 13], small_raster(bscans_per_volume=3), False, 8, [50, 50]),
    ('change_raster_prepared_restart', 'RasterScan', small_raster(), True, [20, 30], small_raster(angle=0.4), True, 9, [50, 70]),
    ('change_raster_lazy', 'RasterScan', small_raster(), False, [10, 5], small_raster(volume_extent=[-0.5, 0.5]), False, 3, [33, 90]),
    ('change_raster_in_prescan', 'RasterScan', small_raster(), True, [3], small_raster(offset=[0.1, 0.1]), False, 4, [40, 40]),
    ('change_raster_second_loop', 'RasterScan', small_raster(), True, [100, 67], small_raster(bidirectional_segments=True), False, 5, [61, 80]),
    ('change_raster_to_fewer', 'RasterScan', small_raster(), True, [20, 45], small_raster(bscans_per_volume=2), False, 6, [60, 60]),
    ('change_radial_to_raster_grid', 'RadialScan', small_radial(), True, [37], small_radial(angle=0.7), False, 11, [77, 30]),
]


def run_case(name, scan_name, fields):
    case = {'name': name, 'scan': scan_name, 'config': fields}
    f = {k: v for k, v in fields.items() if v is not None}
    try:
        cfg = make_config(scan_name, f)
        scan = SCANS[scan_name]()
        scan.initialize(cfg)
        buf = scan.scan_buffer()
    except Exception as e:
        case['error'] = str(e)
        return case
    case['buffer'] = rows(buf)
    case['markers'] = [marker_json(m) for m in scan.scan_markers()]
    case['segments'] = [{'len': int(s.position.shape[0]), 'markers': [marker_json(m) for m in s.markers]} for s in scan.scan_segments()]
    if fields.get('inactive_policy', ['MinimumDynamicLimited'])[0] != 'FixedLinear':
        return case
    # a fresh scan streamed in odd chunks: the path in, then the loop
    scan = SCANS[scan_name]()
    scan.initialize(cfg)
    total = int(1.3 * len(case['buffer'])) + 40
    chunks, n, k = [], 0, 0
    sizes = [7, 1, 13, 64, 2, 31]
    while n < total:
        c = sizes[k % len(sizes)]
        chunks.append(c)
        n += c
        k += 1
    case['chunks'] = chunks
    case['stream'], case['stream_markers'] = stream(scan, chunks)
    return case


def run_change(name, scan_name, a, prepare, before, b, restart, event, after):
    case = {'name': name, 'scan': scan_name, 'config': a, 'change_config': b, 'prepare': prepare,
            'before': before, 'restart': restart, 'event_id': event, 'after': after}
    scan = SCANS[scan_name]()
    scan.initialize(make_config(scan_name, a))
    if prepare:
        scan.prepare()
    s1, m1 = stream(scan, before)
    try:
        scan.change(make_config(scan_name, b), restart, event)
    except Exception as e:
        case['error'] = str(e)
        return case
    s2, m2 = stream(scan, after)
    case['stream'] = s1 + s2
    case['stream_markers'] = m1 + m2
    return case


def run_queue(name, steps, blocks, zero_order_hold=True):
    """A ScanQueue (vortex.engine) driven by steps: before block k, the
    steps listed for k run (append/interrupt/clear/empty callback)."""
    import vortex.engine as ve
    q = ve.ScanQueue()
    events, returns, samples, markers = [], [], [], []
    scans = {}
    refills = {'left': 0}

    def scan_of(spec):
        key = json.dumps(spec, sort_keys=True)
        sc = vs.RasterScan()
        sc.initialize(make_config('RasterScan', spec))
        return sc

    def cb(tag):
        return lambda sample, e: events.append([tag, int(sample), str(e).split('.')[-1]])

    for k, n in enumerate(blocks):
        for st in steps.get(str(k), []):
            op = st['op']
            if op in ('append', 'interrupt'):
                m = vm.ScanBoundary(0, st.get('sequence', 0), st.get('count_hint', 0), flags(st.get('flags', ALL)))
                getattr(q, op)(scan_of(st['config']), cb(st['tag']), m)
            elif op == 'clear':
                q.clear()
            elif op == 'empty':
                refills['left'] = st['count']
                spec, tag = st['config'], st['tag']

                def refill(oq, spec=spec, tag=tag):
                    if refills['left'] > 0:
                        refills['left'] -= 1
                        oq.append(scan_of(spec), cb(tag))
                q.empty_callback = refill
        ms = vm.MarkerList()
        buf = np.zeros((n, 2))
        got, total = q.generate(ms, buf, zero_order_hold)
        returns.append([int(got), int(total)])
        samples.extend(rows(buf[:total]))
        markers.extend(marker_json(m) for m in ms)
    return {'name': name, 'steps': steps, 'blocks': blocks, 'zero_order_hold': zero_order_hold,
            'returns': returns, 'stream': samples, 'stream_markers': markers, 'events': events}


QUEUES = [
    ('queue_two_then_hold', {'0': [{'op': 'append', 'tag': 'a', 'config': small_raster(loop=False)},
                                   {'op': 'append', 'tag': 'b', 'config': small_raster(loop=False, offset=[0.2, 0.3]), 'sequence': 1, 'flags': 3}]},
     [37] * 6),
    ('queue_no_hold', {'0': [{'op': 'append', 'tag': 'a', 'config': small_raster(loop=False)}]}, [50, 50, 50], False),
    ('queue_interrupt_loop', {'0': [{'op': 'append', 'tag': 'loop', 'config': small_raster()},
                                    {'op': 'append', 'tag': 'never', 'config': small_raster(loop=False)}],
                              '3': [{'op': 'interrupt', 'tag': 'b', 'config': small_raster(loop=False, angle=0.5), 'sequence': 7}]},
     [29] * 8),
    ('queue_empty_callback', {'0': [{'op': 'empty', 'tag': 'refill', 'count': 2, 'config': small_raster(loop=False, bscans_per_volume=2)}]},
     [41] * 6),
    ('queue_clear', {'0': [{'op': 'append', 'tag': 'a', 'config': small_raster()}], '2': [{'op': 'clear'}],
                     '3': [{'op': 'append', 'tag': 'b', 'config': small_raster(loop=False, offset=[-0.3, 0])}]},
     [33] * 7),
]


def main():
    out = {'vortex': getattr(vortex, '__version__', '?'), 'cases': [], 'changes': [], 'queues': []}
    for c in CASES:
        out['cases'].append(run_case(*c))
    for c in CHANGES:
        out['changes'].append(run_change(*c))
    for c in QUEUES:
        out['queues'].append(run_queue(*c))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, 'w') as f:
        json.dump(out, f, separators=(',', ':'))
    for c in out['cases'] + out['changes'] + out['queues']:
        status = ('error: ' + c['error']) if 'error' in c else '%d samples' % len(c.get('buffer', c.get('stream', [])))
        print('%-40s %s' % (c['name'], status))
    print('wrote', os.path.normpath(OUT), os.path.getsize(OUT), 'bytes')


if __name__ == '__main__':
    sys.exit(main())
