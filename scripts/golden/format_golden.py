"""Golden outputs of vortex's Format stage for gosrc/format's tests.

vortex binds its FormatPlanner without `next` (only the engine drives it), and
its radial, spiral and position executors' `format` only on CUDA, so this
script has three parts:

- `cpu`: what vortex's CPU side exposes: config defaults, SimpleSlice.count(),
  PositionFormatExecutorConfig.set()'s matrix, and the per-block markers a
  ScanQueue generates for the engine scenarios below (the planner's input).
- `engine` (needs a GPU: vortex's engine creates CUDA events even for CPU
  endpoints): runs vortex's engine on each scenario with a FileAcquisition whose
  record r holds r+1 in every sample, a CopyProcessor and a
  SpectraStackTensorEndpointUInt16, and stores the endpoint callbacks
  (FinishSegment/Volume/Scan as the planner emitted them) and the formatted
  volume at each volume callback: where every record landed.
- `executors` (needs a GPU and CuPy): calls vortex's Radial, Spiral and
  Position executors' `format` on small CuPy buffers and stores the volumes.

Run (vortex importable; see ../shared/vortex-build/README.md):
    python scripts/golden/format_golden.py OUTDIR [cpu] [engine] [executors]
Each part writes OUTDIR/format_<part>.json; gosrc/format/testdata holds
the three. The cpu part ran here; the engine and executors parts ran on the
lent H100 with the unpacked wheel (/tmp/vortex_site/vortex) carried along:
    PYTHONPATH=<site>/vortex LD_LIBRARY_PATH=<dir of libcufft.so.12>:<site>/vortex \
        python3 format_golden.py OUT engine executors
"""

import json
import math
import os
import sys
import tempfile

import numpy as np

import vortex
import vortex.engine as ve
import vortex.format as vf
import vortex.scan as vs

U64 = 2**64 - 1


def idx(v):
    """vortex reports an unset index as a size_t -1; store it as -1."""
    return -1 if v == U64 else int(v)


def marker_json(m):
    name = type(m).__name__
    d = {"kind": name, "sample": int(m.sample)}
    for f in ("sequence", "index_in_scan", "index_in_volume", "reversed", "volume_count_hint",
              "segment_count_hint", "record_count_hint", "id"):
        if hasattr(m, f):
            v = getattr(m, f)
            d[f] = bool(v) if isinstance(v, bool) else int(v)
    if hasattr(m, "flags"):
        d["flags"] = int(m.flags.value)
    return d


# Engine scenarios: a raster scan, the planner config, the executor config and
# the block size. Small enough that every volume snapshot fits in the JSON.
SCENARIOS = [
    dict(name="raster_bidir", bscans=3, ascans=5, bidir=True, loop=False, rpb=7, blocks=6,
         planner=dict(), slice=None, transform=None),
    dict(name="raster_bidir_noflip", bscans=3, ascans=5, bidir=True, loop=False, rpb=4, blocks=8,
         planner=dict(flip_reversed=False), slice=None, transform=None),
    dict(name="raster_unidir_loop", bscans=4, ascans=6, bidir=False, loop=True, rpb=9, blocks=40,
         planner=dict(), slice=None, transform=None),
    dict(name="raster_keep_inactive", bscans=3, ascans=5, bidir=False, loop=True, rpb=5, blocks=30,
         planner=dict(strip_inactive=False), slice=None, transform=None),
    dict(name="raster_bidir_loop_slice", bscans=4, ascans=5, bidir=True, loop=True, rpb=11, blocks=30,
         planner=dict(), slice=(1, 7, 2), transform=(2.0, 3.0)),
    dict(name="raster_short_segments", bscans=3, ascans=6, bidir=True, loop=True, rpb=8, blocks=20,
         planner=dict(records_per_segment=4), slice=None, transform=None),
]
SAMPLES = 8


def raster(s):
    sc = vs.RasterScanConfig()
    sc.bscans_per_volume = s["bscans"]
    sc.ascans_per_bscan = s["ascans"]
    sc.bidirectional_segments = s["bidir"]
    sc.loop = s["loop"]
    # Slow enough that the default galvo limits hold for 5-record segments.
    sc.samples_per_second = 1000
    scan = vs.RasterScan()
    scan.initialize(sc)
    return scan


def planner_config(s):
    fc = vf.FormatPlannerConfig()
    fc.segments_per_volume = s["bscans"]
    fc.records_per_segment = s["planner"].get("records_per_segment", s["ascans"])
    for k in ("flip_reversed", "strip_inactive", "adapt_shape"):
        if k in s["planner"]:
            setattr(fc, k, s["planner"][k])
    return fc


def executor_config(s):
    ec = vf.StackFormatExecutorConfig()
    if s["slice"]:
        ec.sample_slice = vf.SimpleSlice(*s["slice"])
    if s["transform"]:
        ec.sample_transform = vf.LinearTransform(*s["transform"])
    return ec


def cpu_part():
    out = {"vortex": vortex.__version__}
    fc = vf.FormatPlannerConfig()
    out["planner_defaults"] = dict(shape=[int(v) for v in fc.shape], mask=int(fc.mask.value),
                                   flip_reversed=fc.flip_reversed, strip_inactive=fc.strip_inactive,
                                   adapt_shape=fc.adapt_shape)
    out["slice_count"] = [dict(start=a, stop=b, step=c, count=int(vf.SimpleSlice(a, b, c).count()))
                          for a, b, c in [(0, 8, 1), (1, 7, 2), (0, 7, 2), (2, 9, 3), (3, 3, 1)]]
    pos = []
    for pitch, offset, angle in [((1, 1), (0, 0), 0.0), ((2, 0.5), (3, -1), 0.3), ((0.1, 0.2), (5, 5), -1.2)]:
        c = vf.PositionFormatExecutorConfig()
        c.set(pitch, offset, angle)
        pos.append(dict(pitch=list(pitch), offset=list(offset), angle=angle,
                        transform=np.asarray(c.transform).tolist()))
    out["position_set"] = pos
    scen = []
    for s in SCENARIOS:
        q = ve.ScanQueue()
        q.append(raster(s))
        # As the engine's scan thread does (engine/detail/session.hpp): each
        # block is as long as what the queue generated; a block of length 0
        # (the queue ran dry) or the last of blocks_to_acquire ends the run,
        # and the engine calls the planner's finish() after planning it.
        blocks = []
        sample = 0
        for b in range(s["blocks"]):
            ml = vortex.marker.MarkerList()
            buf = np.zeros((s["rpb"], 2))
            _, total = q.generate(ml, buf, False)
            blocks.append(dict(sample=sample, length=int(total), markers=[marker_json(m) for m in ml]))
            sample += int(total)
            if total == 0:
                break
        d = {k: v for k, v in s.items()}
        d["samples"] = SAMPLES
        d["blocks_markers"] = blocks
        scen.append(d)
    out["scenarios"] = scen
    return out


def engine_part():
    import vortex.acquire as va
    import vortex.process as vp

    res = []
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "spectra.bin")
    nrec = 60000
    data = np.empty((nrec, SAMPLES, 1), np.uint16)
    # Record r holds r+1 (0 marks an unwritten place); sample k adds 0, so
    # a slice keeps the value and a transform maps it.
    data[:, :, 0] = ((np.arange(nrec) + 1) % 65536)[:, None]
    data.tofile(path)
    for s in SCENARIOS:
        ac = va.FileAcquisitionConfig()
        ac.path = path
        ac.samples_per_record = SAMPLES
        ac.records_per_block = s["rpb"]
        ac.loop = True
        acq = va.FileAcquisition()
        acq.initialize(ac)
        pc = vp.CopyProcessorConfig()
        pc.samples_per_record = SAMPLES
        pc.ascans_per_block = s["rpb"]
        proc = vp.CopyProcessor()
        proc.initialize(pc)
        fp = vf.FormatPlanner()
        fp.initialize(planner_config(s))
        ex = vf.StackFormatExecutor()
        ex.initialize(executor_config(s))
        depth = vf.SimpleSlice(*s["slice"]).count() if s["slice"] else SAMPLES
        rps = s["planner"].get("records_per_segment", s["ascans"])
        ep = ve.SpectraStackTensorEndpointUInt16(ex, [s["bscans"], rps, depth])
        log = []

        n = s["bscans"] * rps * depth

        def snap():
            # The volume is complete when volume_callback runs.
            with ep.tensor as x:
                return np.array(x).reshape(s["bscans"], rps, depth).astype(int).tolist()

        ep.segment_callback = lambda sample, scan, vol, seg: log.append(
            ["segment", int(sample), idx(scan), idx(vol), idx(seg)])
        ep.volume_callback = lambda sample, scan, vol: log.append(
            ["volume", int(sample), idx(scan), idx(vol), snap()])
        ep.scan_callback = lambda sample, scan: log.append(["scan", int(sample), idx(scan)])
        cfg = ve.EngineConfig()
        cfg.add_acquisition(acq, [proc])
        cfg.add_processor(proc, [fp])
        cfg.add_formatter(fp, [ep])
        cfg.records_per_block = s["rpb"]
        cfg.blocks_to_allocate = 4
        cfg.preload_count = 2
        cfg.blocks_to_acquire = s["blocks"]
        eng = ve.Engine()
        eng.initialize(cfg)
        eng.prepare()
        print(f"format_golden: engine {s['name']} prepared", flush=True)
        eng.scan_queue.append(raster(s))
        eng.start()
        eng.wait()
        eng.stop()
        res.append(dict(name=s["name"], callbacks=log, final=snap()))
    return {"vortex": vortex.__version__, "scenarios": res}


def executors_part():
    import cupy as cp

    out = {"vortex": vortex.__version__}
    X, Y, Z = 12, 10, 3

    def seg_data(nrec, base, dtype):
        a = np.empty((nrec, Z), dtype)
        for r in range(nrec):
            for z in range(Z):
                a[r, z] = base + 7 * r + z
        return a

    # Radial: 4 segments of 9 records over angles [0, pi), radius [-1, 1];
    # one reversed, one in two partial calls.
    rc = vf.RadialFormatExecutorConfig()
    rc.volume_xy_extent = [vortex.Range(-1, 1), vortex.Range(-1.2, 1.2)]
    rc.segment_rt_extent = [vortex.Range(-1, 1), vortex.Range(0, math.pi)]
    rc.radial_shape = [4, 9]
    radial = []
    for dt, vt, tr in [(np.uint16, np.uint16, None), (np.float32, np.int8, (0.5, -3.0))]:
        c = rc.copy()
        if tr:
            c.sample_transform = vf.LinearTransform(*tr)
        ex = vf.RadialFormatExecutor()
        ex.initialize(c)
        vol = cp.zeros((X, Y, Z), vt)
        calls = []
        for seg in range(4):
            data = seg_data(9, 10 + 60 * seg, dt)
            parts = [(0, 9)] if seg != 2 else [(0, 4), (4, 9)]
            for lo, hi in parts:
                rev = seg == 1
                ex.format(vol, cp.asarray(data[lo:hi]), seg, lo, rev)
                calls.append(dict(segment=data[lo:hi].tolist(), segment_index=seg, record_index=lo, reverse=rev))
        cp.cuda.Device().synchronize()
        radial.append(dict(in_dtype=np.dtype(dt).name, out_dtype=np.dtype(vt).name, transform=tr,
                           x_extent=[-1, 1], y_extent=[-1.2, 1.2], radial_extent=[-1, 1],
                           angular_extent=[0, math.pi], radial_shape=[4, 9], shape=[X, Y, Z],
                           calls=calls, volume=cp.asnumpy(vol).astype(float).tolist()))
    out["radial"] = radial

    # Spiral: one spiral of 60 samples, 3 rings, radius [0, 1].
    spiral = []
    for velocity in (2 * math.pi, 3.0):
        sc = vf.SpiralFormatExecutorConfig()
        sc.volume_xy_extent = [vortex.Range(-1, 1), vortex.Range(-1, 1)]
        sc.segment_extent = vortex.Range(0, 1)
        sc.spiral_shape = [3, 60]
        sc.spiral_velocity = velocity
        ex = vf.SpiralFormatExecutor()
        ex.initialize(sc)
        vol = cp.zeros((X, Y, Z), np.uint16)
        data = seg_data(60, 5, np.uint16)
        calls = []
        for lo, hi in [(0, 25), (25, 60)]:
            ex.format(vol, cp.asarray(data[lo:hi]), 0, lo, False)
            calls.append(dict(segment=data[lo:hi].tolist(), segment_index=0, record_index=lo, reverse=False))
        cp.cuda.Device().synchronize()
        spiral.append(dict(x_extent=[-1, 1], y_extent=[-1, 1], radial_extent=[0, 1], spiral_shape=[3, 60],
                           spiral_velocity=velocity, shape=[X, Y, Z], calls=calls,
                           volume=cp.asnumpy(vol).astype(float).tolist()))
    out["spiral"] = spiral

    # Position: 40 records at positions on a curve, target vs actual.
    pc = vf.PositionFormatExecutorConfig()
    pc.set((X / 2.2, Y / 2.2), (X / 2, Y / 2), 0.2)
    position = []
    for use_target in (True, False):
        c = pc.copy()
        c.use_target_position = use_target
        ex = vf.PositionFormatExecutor()
        ex.initialize(c)
        vol = cp.zeros((X, Y, Z), np.uint16)
        n = 40
        t = np.linspace(0, 2 * math.pi, n)
        target = np.stack([np.cos(t), np.sin(2 * t)], axis=1)
        actual = target * 0.9 + 0.05
        data = seg_data(n, 3, np.uint16)
        ex.format(vol, cp.asarray(target), cp.asarray(actual), cp.asarray(data), 0, 0, False)
        cp.cuda.Device().synchronize()
        position.append(dict(use_target_position=use_target, transform=np.asarray(c.transform).tolist(),
                             channels=[int(v) for v in c.channels], shape=[X, Y, Z],
                             target=target.tolist(), actual=actual.tolist(), segment=data.tolist(),
                             volume=cp.asnumpy(vol).astype(float).tolist()))
    out["position"] = position
    return out


def main():
    outdir = sys.argv[1]
    parts = sys.argv[2:] or ["cpu", "engine", "executors"]
    os.makedirs(outdir, exist_ok=True)
    fns = {"cpu": cpu_part, "engine": engine_part, "executors": executors_part}
    for p in parts:
        try:
            res = fns[p]()
        except Exception as e:  # report and go on: one part's failure must not hide the others
            print(f"format_golden: part {p} failed: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        path = os.path.join(outdir, f"format_{p}.json")
        with open(path, "w") as f:
            json.dump(res, f, separators=(",", ":"))
        print(f"format_golden: wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
