"""Probe (issue 10): the engine with a device tensor endpoint, with a NullEndpoint (no
formatting) and with EngineConfig.device_timings (timestamped events), each in its own
process, next to the ring ceiling and the expert pipeline, in interleaved rounds
(PROBE_ROUNDS, PROBE_SIZES, PROBE_VARIANTS).
Usage: python bench/probe_upload.py [child NAME SAMPLES]"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

VARIANTS = {
    "base": {},
    "nullep": {"NULLEP": "1"},
    "timings": {"TIMINGS": "1"},
}


def child(name: str, samples: int) -> dict:
    import bench_engine as be
    import vortexgo as vg

    dev = vg.get_device("cuda:0")
    g = be.Geometry(samples, 512, 128, 8192, slots=int(os.environ.get("SLOTS", "2")))
    if name == "ceiling":
        c = be.h2d_ceiling(g, 1.0)
        return {"gbs": c["gbs"]}
    if name == "expert":
        import bench_peers as bp

        raw, _, pc = be.reference_volume(g, dev)
        ex = bp.ExpertCuPy(g, be._pinned_blocks(raw, g, True), pc, be.LEVELS, be.AVERAGE_WINDOW)
        return {"gbs": bp._timed(ex, 2.0)["gbs"]}
    if os.environ.get("NULLEP"):
        from vortexgo.engine import NullEndpoint

        def make(g, d, eps):
            return be._pipeline(g, d, total_volumes=0, endpoints=[NullEndpoint()])
        r = be.engine_counters(g, dev, 2.0, 0.5, pipeline=make)
    else:
        r = be.engine_counters(g, dev, 2.0, 0.5, timings=bool(os.environ.get("TIMINGS")))
    return {"gbs": r["gbs"], "upload_ms_p50": r["upload_ms_p50"]}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        print(json.dumps(child(sys.argv[2], int(sys.argv[3]))))
        return
    names = ["ceiling", "expert"] + [n for n in VARIANTS if n in os.environ.get("PROBE_VARIANTS", ",".join(VARIANTS))]
    sizes = [int(x) for x in os.environ.get("PROBE_SIZES", "1024,1376").split(",")]
    rounds = int(os.environ.get("PROBE_ROUNDS", "2"))
    res: dict = {}
    for samples in sizes:
        for r in range(rounds):
            for n in names:
                env = dict(os.environ, **VARIANTS.get(n, {}))
                p = subprocess.run([sys.executable, __file__, "child", n, str(samples)], env=env,
                                   capture_output=True, text=True, timeout=120)
                try:
                    v = json.loads(p.stdout.strip().splitlines()[-1])
                except Exception:  # noqa: BLE001 - a probe
                    v = {"error": (p.stderr or p.stdout)[-300:]}
                res.setdefault(str(samples), {}).setdefault(n, []).append(v)
                print(samples, r, n, json.dumps(v), flush=True)
    for s, row in res.items():
        ceil = sorted(x["gbs"] for x in row["ceiling"] if "gbs" in x)
        c = ceil[len(ceil) // 2] if ceil else float("nan")
        print(s, " ".join(f"{n}={max((x.get('gbs', 0) for x in v), default=0) / c:.3f}" for n, v in row.items()))
    Path(os.environ.get("OUT", "."), "probe_upload.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
