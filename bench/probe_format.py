"""Probe (issue 10): does the engine's format stage (a third stream, one stack kernel per
B-scan segment, int8 block -> volume) slow the expert pipeline's uploads the way it slows
the engine's? Expert variants side by side with the ring ceiling."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_engine as be  # noqa: E402
import bench_peers as bp  # noqa: E402
import cupy as cp  # noqa: E402
import vortexgo as vg  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FMT = cp.RawModule(path=str(ROOT / "kernels" / "format.ptx"))


def _stack_fn():
    return FMT.get_function("vortexgo_stack_i8_i8"), ["vortexgo_stack_i8_i8"]


class ExpertFmt(bp.ExpertCuPy):
    def __init__(self, *a, mode: str, segs: int, epwait: bool = False, chain: bool = False, ncomp: int = 2,
                 prio: int = 0, **kw):
        super().__init__(*a, **kw)
        self.mode, self.segs, self.epwait, self.chain = mode, segs, epwait, chain
        self.comp = self.comp[:ncomp]
        self.fmt = cp.cuda.Stream(non_blocking=True, priority=prio) if prio else cp.cuda.Stream(non_blocking=True)
        self.last_fmt = None
        n = len(self.dev)
        self.b8 = [cp.empty((self.g.rpb, self.m), cp.int8) for _ in range(n)]
        self.posted = [cp.cuda.Event(disable_timing=True) for _ in range(n)]
        self.formatted = [cp.cuda.Event(disable_timing=True) for _ in range(n)]
        self.kstack, _ = _stack_fn()

    def step(self, k: int) -> None:
        g = self.g
        d, c = k % len(self.dev), k % len(self.comp)
        comp = self.comp[c]
        self._upload(k, d, comp)
        comp.wait_event(self.formatted[d])
        if self.chain and self.last_fmt is not None:
            comp.wait_event(self.last_fmt)
        self._compute(comp, d, c, self.b8[d])
        self.consumed[d].record(comp)
        self.posted[d].record(comp)
        fs = comp if self.mode == "same" else self.fmt
        if fs is not comp:
            fs.wait_event(self.posted[d])
        j = k % self.per_volume
        per = g.rpb // self.segs
        for s_ in range(self.segs):
            dst = self.vol.data.ptr + (j * g.rpb + s_ * per) * self.m
            src = self.b8[d].data.ptr + s_ * per * self.m
            grid = ((self.m + 255) // 256, min(per, 65535), 1)
            self.kstack(grid, (256, 1, 1), (np.uint64(dst), np.uint64(src), np.int32(per), np.int32(self.m),
                                             np.int32(1), np.int64(0), np.int64(self.m), np.int64(1), np.int64(0),
                                             np.int64(self.m), np.int32(0), np.float32(1), np.float32(0)),
                        stream=fs)
        self.formatted[d].record(fs)
        self.last_fmt = self.formatted[d]
        if self.epwait and fs is comp:
            self.fmt.wait_event(self.formatted[d])

    def finish(self) -> None:
        super().finish()
        self.fmt.synchronize()


def main() -> None:
    dev = vg.get_device("cuda:0")
    _, names = _stack_fn()
    res: dict = {"device": dev.name, "kernels": names}
    for samples in [int(x) for x in os.environ.get("PROBE_SIZES", "1024,1376").split(",")]:
        g = be.Geometry(samples, 512, 128, 8192)
        raw, vol, pc = be.reference_volume(g, dev)
        host = be._pinned_blocks(raw, g, True)
        row: dict = {}
        for rnd in range(2):
            row.setdefault("ceiling", []).append(be.h2d_ceiling(g, 1.0)["gbs"])
            ex = bp.ExpertCuPy(g, host, pc, be.LEVELS, be.AVERAGE_WINDOW)
            row.setdefault("expert", []).append(bp._timed(ex, 2.0)["gbs"])
            del ex
            for name, kw in (("fmt16", dict(mode="fmt", segs=16)), ("same16", dict(mode="same", segs=16)),
                             ("same16_chain", dict(mode="same", segs=16, chain=True)),
                             ("same16_epwait", dict(mode="same", segs=16, epwait=True)),
                             ("same16_chain_epwait", dict(mode="same", segs=16, chain=True, epwait=True)),
                             ("fmt16_hiprio", dict(mode="fmt", segs=16, prio=-5)),
                             ("fmt16_1comp", dict(mode="fmt", segs=16, ncomp=1)),
                             ("same16_1comp", dict(mode="same", segs=16, ncomp=1)),
                             ("fmt16_chain", dict(mode="fmt", segs=16, chain=True))):
                ex = ExpertFmt(g, host, pc, be.LEVELS, be.AVERAGE_WINDOW, **kw)
                if rnd == 0:
                    got = ex.volume().reshape(vol.shape)
                    row["agrees_" + name] = float(np.mean(np.abs(got.astype(int) - vol.astype(int)) <= 1))
                row.setdefault(name, []).append(bp._timed(ex, 2.0)["gbs"])
                del ex
        c = float(np.median(row["ceiling"]))
        row["of_ceiling"] = {k: max(v) / c for k, v in row.items() if isinstance(v, list)}
        res[samples] = row
        print(samples, json.dumps(row["of_ceiling"]), {k: v for k, v in row.items() if k.startswith("agrees")}, flush=True)
    Path(os.environ.get("OUT", "."), "probe_format.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
