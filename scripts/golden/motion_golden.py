"""Golden plans of vortex's motion planner (vortex::motion::plan, Reflexxes
Type II) for gosrc/motion's tests.

vortex does not bind motion::plan to Python, so the plans are taken through
a FreeformScan, whose pre-scan motion is exactly one call of motion::plan:
``restart(0, position, velocity, include_start)`` followed by ``next`` plans
from the given state to the first segment's entry state (its first row, and
its velocity from the first two rows) with include_initial = include_start,
include_final = False, and, under ``inactive_policy.FixedDynamicLimited``,
fixed_samples = inter_volume_samples. The samples before the ActiveLines
marker are the plan. A few cases also take the inactive segments between two
active segments of a looping scan (scan_buffer), the path vortex's scans
take between segments.

Every start and end state is recorded exactly as vortex used it (floats
round-trip through JSON), so the Go tests rebuild the same call.

Run with vortex importable (see notes/common.md), from the repository root:
    PYTHONPATH=/tmp/vortex_site/vortex LD_LIBRARY_PATH=... python scripts/golden/motion_golden.py
It writes gosrc/motion/testdata/motion_golden.json.
"""

import json
import math
import os
import sys

import numpy as np
import vortex
from vortex import Range
from vortex.marker import MarkerList
from vortex.scan import FreeformScan, FreeformScanConfig, Limits, Segment, inactive_policy

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "gosrc", "motion", "testdata", "motion_golden.json")


def _config(limits, sps, fixed):
    cfg = FreeformScanConfig()
    cfg.channels_per_sample = len(limits)
    cfg.limits = [Limits(Range(l[0], l[1]), l[2], l[3]) for l in limits]
    cfg.samples_per_second = sps
    if fixed:
        cfg.inactive_policy = inactive_policy.FixedDynamicLimited(fixed, fixed)
    else:
        cfg.inactive_policy = inactive_policy.MinimumDynamicLimited()
    return cfg


def _ljson(limits):
    return [[float(x) for x in l] for l in limits]


def pre_scan(name, limits, sps, p0, v0, p1, v1, include_initial=False, fixed=0):
    """One motion::plan call from (p0, v0) to (p1, v1) (v1 rounded through
    the segment's two rows; the recorded v1 is the one vortex used)."""
    dims = len(limits)
    cfg = _config(limits, sps, fixed)
    seg = Segment()
    p1 = np.asarray(p1, dtype=float)
    seg.position = np.stack([p1, p1 + np.asarray(v1, dtype=float) / sps])
    cfg.pattern = [seg]
    cfg.loop = False
    scan = FreeformScan()
    scan.initialize(cfg)
    case = {
        "name": name, "dt": 1.0 / sps, "limits": _ljson(limits),
        "start": {"position": [float(x) for x in p0], "velocity": [float(x) for x in v0]},
        "end": {"position": [float(x) for x in seg.entry_position], "velocity": [float(x) for x in seg.entry_velocity(sps)]},
        "include_initial": include_initial, "include_final": False, "fixed_samples": fixed,
    }
    try:
        scan.restart(0, np.asarray(p0, dtype=float), np.asarray(v0, dtype=float), include_initial)
        buf = np.zeros((200000, dims))
        markers = MarkerList()
        scan.next(markers, buf)
    except Exception as e:  # vortex raises for an infeasible plan
        case["error"] = str(e)
        return case
    active = [m.sample for m in markers if type(m).__name__ == "ActiveLines"]
    inactive = [m.sample for m in markers if type(m).__name__ == "InactiveLines"]
    if not inactive:
        # Start state compatible with the segment: vortex planned nothing.
        case["skipped"] = True
        case["samples"] = []
        return case
    case["samples"] = buf[: active[0]].tolist()
    return case


def between_segments(name, limits, sps, segments, fixed=0):
    """The inactive motions of a looping scan between consecutive segments
    (include_initial = include_final = False), one case each."""
    cfg = _config(limits, sps, fixed)
    segs = []
    for pos in segments:
        s = Segment()
        s.position = np.asarray(pos, dtype=float)
        segs.append(s)
    cfg.pattern = segs
    cfg.loop = True
    scan = FreeformScan()
    scan.initialize(cfg)
    buf = np.asarray(scan.scan_buffer())
    markers = list(scan.scan_markers())
    cases = []
    pos = 0
    for i, s in enumerate(segs):
        pos += s.position.shape[0]
        nxt = segs[(i + 1) % len(segs)]
        starts = [m.sample for m in markers if type(m).__name__ == "InactiveLines" and m.sample == pos]
        if not starts:
            samples = []
        else:
            later = [m.sample for m in markers if type(m).__name__ == "ActiveLines" and m.sample > pos]
            stop = later[0] if later else buf.shape[0]
            samples = buf[pos:stop].tolist()
            pos = stop
        cases.append({
            "name": f"{name}/{i}", "dt": 1.0 / sps, "limits": _ljson(limits),
            "start": {"position": [float(x) for x in s.exit_position], "velocity": [float(x) for x in s.exit_velocity(sps)]},
            "end": {"position": [float(x) for x in nxt.entry_position], "velocity": [float(x) for x in nxt.entry_velocity(sps)]},
            "include_initial": False, "include_final": False, "fixed_samples": fixed,
            "samples": samples,
        })
    return cases


def main():
    rng = np.random.RandomState(20261123)
    L1 = [[-100.0, 100.0, 100.0, 1e4]]
    L2 = [[-100.0, 100.0, 100.0, 1e4], [-100.0, 100.0, 60.0, 2e4]]
    L3 = L2 + [[-100.0, 100.0, 150.0, 5e3]]
    cases = []

    # 1-D, rest to rest: triangle, cruise, and the band where vortex's
    # triangle overshoots the velocity limit (V²/A = 1 here).
    for d in [0.05, 0.5, 0.99, 1.2, 1.45, 2.0, -1.3, -3.0]:
        cases.append(pre_scan(f"1d-rest/{d}", L1, 2000, [0.0], [0.0], [d], [0.0]))
    # 1-D, moving start and end, either direction, including starts above
    # the velocity limit and moves that must overshoot and come back.
    for k in range(24):
        d = rng.uniform(-2, 2)
        v0 = rng.uniform(-130, 130) if k % 3 == 0 else rng.uniform(-100, 100)
        v1 = rng.uniform(-100, 100)
        cases.append(pre_scan(f"1d-moving/{k}", L1, 2000, [0.1], [v0], [0.1 + d], [v1]))
    # 1-D reversal: moving away from the target.
    cases.append(pre_scan("1d-reverse/away", L1, 2000, [0.0], [80.0], [-0.5], [0.0]))
    cases.append(pre_scan("1d-reverse/overshoot", L1, 2000, [0.0], [90.0], [0.05], [-20.0]))
    cases.append(pre_scan("1d-reverse/same-dir-short", L1, 2000, [0.0], [90.0], [0.1], [90.0]))
    # include_initial (vortex's restart with include_start).
    cases.append(pre_scan("1d-initial", L1, 2000, [0.3], [10.0], [1.0], [20.0], include_initial=True))
    cases.append(pre_scan("2d-initial", L2, 2000, [0.3, -0.2], [10.0, 5.0], [1.0, 0.4], [20.0, -10.0], include_initial=True))

    # 2-D, time-synchronised: random states.
    for k in range(20):
        p0 = rng.uniform(-1, 1, 2)
        p1 = rng.uniform(-1, 1, 2)
        v0 = rng.uniform(-60, 60, 2)
        v1 = rng.uniform(-55, 55, 2)
        if k % 4 == 0:
            v0[:] = 0
        if k % 4 == 1:
            v1[:] = 0
        cases.append(pre_scan(f"2d-random/{k}", L2, 2000, p0, v0, p1, v1))
    # 2-D, phase-synchronised: displacement and velocities on one line.
    for k in range(8):
        u = rng.uniform(-1, 1, 2)
        u /= np.linalg.norm(u)
        d = rng.uniform(0.2, 2.0)
        a0, a1 = rng.uniform(-40, 40), rng.uniform(-40, 40)
        if k < 2:
            a0 = a1 = 0.0
        cases.append(pre_scan(f"2d-collinear/{k}", L2, 2000, [0.1, 0.2], a0 * u, [0.1 + d * u[0], 0.2 + d * u[1]], a1 * u))
    # Nearly collinear (within Reflexxes' 1 % tolerance).
    cases.append(pre_scan("2d-near-collinear/0", L2, 2000, [0.0, 0.0], [10.0, 10.0], [1.0, 1.005], [20.0, 20.1]))
    cases.append(pre_scan("2d-near-collinear/1", L2, 2000, [0.0, 0.0], [0.0, 0.0], [1.0, 0.5], [10.0, 5.02]))
    # Raster flyback: one axis returns, the other steps.
    for k, (vx, dy) in enumerate([(40.0, 0.02), (90.0, 0.1), (20.0, 0.5)]):
        cases.append(pre_scan(f"2d-flyback/{k}", L2, 2000, [1.0, 0.0], [vx, 0.0], [-1.0, dy], [vx, 0.0]))
    # Tiny moves: an axis at rest within one sample jumps to its target.
    cases.append(pre_scan("2d-tiny/0", L2, 2000, [0.0, 0.0], [0.0, 0.0], [1e-6, 0.5], [0.0, 0.0]))
    cases.append(pre_scan("2d-tiny/1", L2, 2000, [0.0, 0.0], [0.0, 0.0], [2e-5, -1e-5], [0.0, 0.0], include_initial=True))
    # 3-D.
    for k in range(4):
        cases.append(pre_scan(f"3d-random/{k}", L3, 2000, rng.uniform(-1, 1, 3), rng.uniform(-50, 50, 3),
                              rng.uniform(-1, 1, 3), rng.uniform(-50, 50, 3)))
    # Fixed duration (FixedDynamicLimited): feasible, at the edge, infeasible.
    cases.append(pre_scan("fixed/1d-long", L1, 2000, [0.0], [0.0], [0.5], [0.0], fixed=60))
    cases.append(pre_scan("fixed/1d-moving", L1, 2000, [0.0], [30.0], [0.5], [-20.0], fixed=50))
    cases.append(pre_scan("fixed/2d", L2, 2000, [0.0, 0.0], [10.0, 0.0], [0.5, -0.3], [0.0, 20.0], fixed=80))
    cases.append(pre_scan("fixed/2d-collinear", L2, 2000, [0.0, 0.0], [10.0, 5.0], [1.0, 0.5], [20.0, 10.0], fixed=70))
    cases.append(pre_scan("fixed/1d-too-short", L1, 2000, [0.0], [0.0], [1.0], [0.0], fixed=5))
    # Position limits exceeded (the overshoot leaves the range).
    cases.append(pre_scan("limits/overshoot", [[-1.0, 1.0, 100.0, 1e4]], 2000, [0.9], [90.0], [0.95], [0.0]))

    # Time synchronisation landing in an inoperative interval: axis 0 runs
    # fast towards a near target it must pass at speed (it can arrive early
    # or, after turning round, late, but not in between); axis 1 needs a
    # duration in between, so the motion waits for the interval's end.
    for k in range(8):
        sg = 1.0 if k % 2 == 0 else -1.0
        d0 = sg * rng.uniform(0.05, 0.4)
        v0 = sg * rng.uniform(60, 100)
        v1 = sg * rng.uniform(40, 100)
        d1 = rng.uniform(0.2, 1.5) * (1 if k % 3 else -1)
        cases.append(pre_scan(f"2d-inoperative/{k}", L2, 1000, [0.0, 0.0], [v0, rng.uniform(-30, 30)],
                              [d0, d1], [v1, 0.0 if k % 2 else rng.uniform(-30, 30)]))
    # Fixed durations of moving states (some infeasible: vortex's error).
    for k in range(8):
        cases.append(pre_scan(f"fixed/random/{k}", L2, 1000, rng.uniform(-1, 1, 2), rng.uniform(-60, 60, 2),
                              rng.uniform(-1, 1, 2), rng.uniform(-55, 55, 2), fixed=int(rng.uniform(8, 60))))
    # Phase synchronisation entering against the displacement (the leading
    # axis passes the target and comes back), and starting at the limit.
    for k in range(6):
        u = rng.uniform(-1, 1, 2)
        u /= np.linalg.norm(u)
        d = rng.uniform(0.05, 3.0)
        a0, a1 = rng.uniform(-50, 50), -rng.uniform(5, 50)
        cases.append(pre_scan(f"2d-collinear-back/{k}", L2, 1000, [0.0, 0.0], a0 * u, d * u, a1 * u))
    cases.append(pre_scan("1d-at-limit/0", L1, 1000, [0.0], [100.0], [1.0], [-99.0]))
    cases.append(pre_scan("1d-at-limit/1", L1, 1000, [0.0], [-100.0], [1.0], [99.0]))
    for k in range(6):
        cases.append(pre_scan(f"3d-random/b{k}", L3, 1000, rng.uniform(-1, 1, 3), rng.uniform(-60, 60, 3),
                              rng.uniform(-1, 1, 3), rng.uniform(-50, 50, 3), include_initial=bool(k % 2)))

    # Between segments of looping scans (the path scans take).
    line = lambda x0, x1, y, n: np.stack([np.linspace(x0, x1, n), np.full(n, y)], axis=1)
    cases += between_segments("scan-raster", L2, 2000, [line(-1, 1, -0.2, 60), line(-1, 1, 0.0, 60), line(-1, 1, 0.2, 60)])
    cases += between_segments("scan-bidir", L2, 2000, [line(-1, 1, -0.2, 60), line(1, -1, 0.0, 60)])
    cases += between_segments("scan-fixed", L2, 2000, [line(-1, 1, -0.2, 60), line(-1, 1, 0.2, 60)], fixed=120)

    with open(OUT, "w") as f:
        json.dump({"vortex": vortex.__version__ if hasattr(vortex, "__version__") else "0.5.1", "cases": cases}, f,
                  separators=(",", ":"))
    print(f"{len(cases)} cases, {os.path.getsize(OUT)} bytes -> {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
