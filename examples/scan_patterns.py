"""Every scan pattern of vortexgo.scan, drawn: its galvo waveform (x and y against the sample) and
its trajectory (y against x), active samples in colour and inactive ones (flyback, transitions) in
grey, like vortex's doc figures. The last figure is the ScanQueue: a raster interrupted by a radial
scan part way, the queue planning the path from one to the other.

    python examples/scan_patterns.py --out figures/

writes one PNG per pattern (and scan_patterns.png, all of them in one grid) into --out (default: the
user's data folder, as the demo's: ~/.local/share/vortexgo/scan_patterns on Linux; printed).
"""

from __future__ import annotations

import argparse
import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import vortexgo as vg  # noqa: E402
from vortexgo import marker as vm  # noqa: E402
from vortexgo import scan as vs  # noqa: E402

ACTIVE, INACTIVE = "#1f77b4", "#b0b0b0"


def policy():
    """vortex's default (MinimumDynamicLimited) when the Go planner has landed, else straight lines."""
    probe = vs.RasterScanConfig()
    probe.bscans_per_volume = 2
    try:
        s = vs.RasterScan()
        s.initialize(probe)
        s.scan_buffer()
        return vs.inactive_policy.MinimumDynamicLimited()
    except ValueError as e:
        if "not implemented" not in str(e):
            raise
        print("note: gosrc/motion.Plan has not landed; inactive paths drawn as FixedLinear(60, 60)")
        return vs.inactive_policy.FixedLinear(60, 60)


def active_mask(markers, n: int) -> np.ndarray:
    """True for samples between an ActiveLines marker and the next InactiveLines."""
    mask = np.zeros(n, dtype=bool)
    state, start = False, 0
    for m in sorted((m for m in markers if isinstance(m, (vm.ActiveLines, vm.InactiveLines))), key=lambda m: m.sample):
        mask[start:m.sample] = state
        state, start = isinstance(m, vm.ActiveLines), m.sample
    mask[start:] = state
    return mask


def patterns(inactive):
    def cfg(cls, **kw):
        c = cls()
        c.inactive_policy = inactive.copy()
        for k, v in kw.items():
            setattr(c, k, v)
        return c

    out = [
        ("raster", vs.RasterScan, cfg(vs.RasterScanConfig, bscans_per_volume=6, ascans_per_bscan=100,
                                      bscan_extent=vg.Range(-1, 1), volume_extent=vg.Range(-1, 1))),
        ("raster, bidirectional", vs.RasterScan,
         cfg(vs.RasterScanConfig, bscans_per_volume=6, ascans_per_bscan=100, bidirectional_segments=True,
             bscan_extent=vg.Range(-1, 1), volume_extent=vg.Range(-1, 1))),
        ("raster, rotated 30°", vs.RasterScan,
         cfg(vs.RasterScanConfig, bscans_per_volume=6, ascans_per_bscan=100, angle=math.radians(30), offset=(0.5, 0.2),
             bscan_extent=vg.Range(-1, 1), volume_extent=vg.Range(-1, 1))),
        ("repeated raster (3 x pairs)", vs.RepeatedRasterScan,
         cfg(vs.RepeatedRasterScanConfig, bscans_per_volume=4, ascans_per_bscan=100,
             bscan_extent=vg.Range(-1, 1), volume_extent=vg.Range(-1, 1))),
    ]
    radial = cfg(vs.RadialScanConfig, ascans_per_bscan=100, bscan_extent=vg.Range(-1, 1))
    radial.set_half_evenly_spaced(6)
    out.append(("radial", vs.RadialScan, radial))
    rradial = cfg(vs.RepeatedRadialScanConfig, ascans_per_bscan=100, bscan_extent=vg.Range(-1, 1),
                  bidirectional_segments=True)
    rradial.set_half_evenly_spaced(4)
    out.append(("repeated radial, bidirectional", vs.RepeatedRadialScan, rradial))
    spiral = cfg(vs.SpiralScanConfig, volume_extent=vg.Range(0, 1), rings_per_spiral=16, bypass_limits_check=True)
    spiral.set_isotropic(spiral.samples_per_second)
    out.append(("spiral (isotropic)", vs.SpiralScan, spiral))
    t = np.linspace(0, 2 * math.pi, 200)
    free = cfg(vs.FreeformScanConfig, bypass_limits_check=True)
    free.pattern = vs.SequentialPattern().to_pattern([
        np.stack((0.8 * np.cos(t), 0.8 * np.sin(2 * t) / 2), axis=-1),            # a figure eight
        np.stack((np.linspace(-1, 1, 150), 0.5 + 0.2 * np.sin(np.linspace(0, 6 * math.pi, 150))), axis=-1),
    ])
    out.append(("freeform (figure eight + wave)", vs.FreeformScan, free))
    return out


def draw(ax_wave, ax_path, title: str, buf: np.ndarray, mask: np.ndarray, marks=()) -> None:
    n = np.arange(len(buf))
    for ch, (name, ls) in enumerate((("x", "-"), ("y", "--"))):
        inactive = np.where(mask, np.nan, buf[:, ch])
        active = np.where(mask, buf[:, ch], np.nan)
        ax_wave.plot(n, inactive, color=INACTIVE, lw=1, ls=ls)
        ax_wave.plot(n, active, color=ACTIVE if ch == 0 else "#d62728", lw=1.4, ls=ls, label=name)
    labels: dict = {}
    for s, label in marks:  # events at one sample share a line and a label
        labels.setdefault(s, []).append(label)
    top = ax_wave.get_ylim()[1]
    for s, names in labels.items():
        ax_wave.axvline(s, color="k", lw=0.8, ls=":")
        ax_wave.annotate("\n".join(names), (s, top), xytext=(3, -3), textcoords="offset points", fontsize=7,
                         ha="left", va="top", bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="none", alpha=0.8))
    ax_wave.set_title(f"{title}: waveform", fontsize=9)
    ax_wave.set_xlabel("sample", fontsize=8)
    ax_wave.legend(fontsize=7, loc="lower right")
    ax_path.plot(buf[:, 0], buf[:, 1], color=INACTIVE, lw=0.8)
    ax_path.plot(np.where(mask, buf[:, 0], np.nan), np.where(mask, buf[:, 1], np.nan), color=ACTIVE, lw=1.2)
    ax_path.plot(buf[:1, 0], buf[:1, 1], "o", color="k", ms=3)
    ax_path.set_aspect("equal", adjustable="datalim")
    ax_path.set_title("trajectory (y vs x)", fontsize=9)
    ax_path.set_xlabel("x", fontsize=8)
    ax_path.set_ylabel("y", fontsize=8)
    for ax in (ax_wave, ax_path):
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)


def queue_demo(inactive):
    """A looping raster interrupted part way by a radial scan that plays once: one continuous waveform."""
    raster = vs.RasterScan()
    rc = vs.RasterScanConfig()
    rc.bscans_per_volume, rc.ascans_per_bscan, rc.inactive_policy = 6, 100, inactive.copy()
    rc.bscan_extent = rc.volume_extent = vg.Range(-1, 1)
    raster.initialize(rc)
    radial = vs.RadialScan()
    dc = vs.RadialScanConfig()
    dc.ascans_per_bscan, dc.bscan_extent, dc.loop, dc.inactive_policy = 100, vg.Range(-0.6, 0.6), False, inactive.copy()
    dc.offset = (0.4, 0.3)
    dc.set_half_evenly_spaced(4)
    radial.initialize(dc)
    q = vs.ScanQueue()
    events = []
    q.append(raster, lambda sample, e: events.append((sample, f"raster {str(e).split('.')[-1]}")))
    markers = vm.MarkerList()
    first = np.zeros((700, 2))
    q.generate(markers, first)
    q.interrupt(radial, lambda sample, e: events.append((sample, f"radial {str(e).split('.')[-1]}")))
    second = np.zeros((1500, 2))
    q.generate(markers, second)
    buf = np.concatenate([first, second])
    marks = [(s, e) for s, e in events if "Abort" not in e]
    return buf, active_mask(markers, len(buf)), marks


def main(argv=None) -> list[str]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    from vortexgo.cli import default_out_dir

    ap.add_argument("--out", default=default_out_dir("scan_patterns"), help="folder for the PNGs (default: %(default)s)")
    args = ap.parse_args(argv)
    out = args.out
    os.makedirs(out, exist_ok=True)
    inactive = policy()
    rows = []
    for title, scan_cls, cfg in patterns(inactive):
        scan = scan_cls()
        scan.initialize(cfg)
        buf = scan.scan_buffer()
        rows.append((title, buf, active_mask(scan.scan_markers(), len(buf)), ()))
    rows.append(("ScanQueue: raster interrupted by radial",) + queue_demo(inactive))
    written = []
    for title, buf, mask, marks in rows:
        fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.4), gridspec_kw={"width_ratios": [2.2, 1]})
        draw(a, b, title, buf, mask, marks)
        fig.tight_layout()
        slug = "_".join("".join(c if c.isalnum() else " " for c in title.split(":")[0].lower()).split())
        name = os.path.join(out, f"{len(written):02d}_{slug}.png")
        fig.savefig(name, dpi=110)
        plt.close(fig)
        written.append(name)
    fig, axes = plt.subplots(len(rows), 2, figsize=(11, 2.9 * len(rows)), gridspec_kw={"width_ratios": [2.2, 1]})
    for (title, buf, mask, marks), (a, b) in zip(rows, axes):
        draw(a, b, title, buf, mask, marks)
    fig.tight_layout()
    grid = os.path.join(out, "scan_patterns.png")
    fig.savefig(grid, dpi=90)
    plt.close(fig)
    written.append(grid)
    print(f"wrote {len(written)} figures to {out}")
    return written


if __name__ == "__main__":
    main()
