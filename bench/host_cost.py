"""The engine's host cost per block, and the CUDA driver calls it makes per block.

Issue 29: at 256-record blocks the engine on an H200 spends about 35 us of host work per
block, more than the block's copy takes. This benchmark separates the two parts of that cost:

- **with the fake driver** (``--driver fake``, any machine, no GPU): vortexgo's real CUDA
  path (the engine, ``CUDAProcessor``, the formatter, ``StackDeviceTensorEndpointInt8``) runs
  against ``gosrc/cuda/testdata/fakecuda.c`` and ``fakecufft.c``, stand-ins whose calls cost
  nothing and move no bytes (``FAKECUDA_NOCOPY``). What is left is vortexgo's own host work:
  Go's bookkeeping, the goroutines' hand-offs, the launches' argument packing, the Python
  dispatcher. The fakes count every call, so the table also says how many driver calls each
  block makes, by entry point: the other part of the cost, paid at the real driver's price;
- **with the real driver** (``--driver real``, the GPU machine): the same pipeline's CPU time per
  block (all threads of the process), beside the block's own duration on the device.

CPU time per block is the process's user + system time over the blocks formatted in a steady
window: it does not depend on how fast the device is, only on what the host does per block.

Run::

    make bench-host                                  # CPU machine: the fake driver, JSON + markdown
    python bench/host_cost.py --driver real --quick  # GPU machine

Writes ``host_cost.json`` and ``host_cost.md`` into ``--out``.

A/B runs (how every engine change of issue 29 was judged on the VM, whose speed drifts between
leases and within one): ``--variant NAME:VAR=VALUE,...`` two or more times measures each variant in
a process of its own with those environment variables set, the variants interleaved, ``--rounds``
times, and writes ``ab.json`` and ``ab.md``: wall us per block per variant and round, the
medians, and each variant's change against the first::

    python bench/host_cost.py --driver real --quick --samples 1024 2048 --rounds 3 \
        --variant park:VORTEXGO_TURN_SPIN=0 --variant poll:VORTEXGO_TURN_SPIN=30

A variable may be ``PYTHONPATH``: two builds of vortexgo side by side (``make gpu-build-base
BASE=<rev>`` builds another revision's extension into ``gpu-build/base-python``).
``--configs RECORDS/BLOCKS/PRELOAD/SLOTS,...`` measures those configurations instead of the quick
list or the sweep::

    python bench/host_cost.py --driver real --samples 1024 --configs 256/4/2/2,256/8/4/2,256/16/8/2 \
        --variant base:PYTHONPATH=gpu-build/base-python --variant head:PYTHONPATH=gpu-build/python
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FAKES = ROOT / "gosrc" / "cuda" / "testdata"
#: the fakes' sources, and the file names vortexgo loads them under (the cuFFT's name tells
#: vortexgo which CUDA it belongs to: .so.12 under a CUDA 13 driver, which the fake is)
FAKE_LIBS = {"fakecuda.c": "libfakecuda.so", "fakecufft.c": "libcufft.so.12"}
CHILD = "VORTEXGO_HOST_COST_CHILD"

#: (records_per_block, blocks_to_allocate, preload_count, slots); vortex's defaults first
FULL = [(rpb, b, p, s) for rpb in (256, 512, 1024, 2048, 8192) for (b, p) in ((4, 2), (32, 16)) for s in (1, 2, 4)]
QUICK = [(256, 4, 2, 2), (256, 32, 16, 2), (1024, 4, 2, 2), (8192, 4, 2, 2)]
#: the fewest blocks a measurement window holds
MIN_BLOCKS = 2000


def build_fakes(out: Path) -> dict[str, Path]:
    """Compile the fake libcuda and libcufft into ``out`` (once per source change)."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise RuntimeError("the fake driver needs a C compiler (gcc or cc) on PATH")
    out.mkdir(parents=True, exist_ok=True)
    libs = {}
    for src, name in FAKE_LIBS.items():
        lib = out / name
        if not lib.exists() or lib.stat().st_mtime < (FAKES / src).stat().st_mtime:
            subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(lib), str(FAKES / src)], check=True)
        libs[src] = lib
    return libs


def fake_env(libs: dict[str, Path]) -> dict[str, str]:
    """The environment that makes vortexgo load the fakes (read once, at its CUDA's first use)."""
    return {"VORTEXGO_CUDA_DRIVER": str(libs["fakecuda.c"]), "VORTEXGO_CUFFT_PATH": str(libs["fakecufft.c"]),
            "FAKECUDA_NOCOPY": "1"}


class Counters:
    """The fakes' call counters, read through ctypes (the same loaded libraries Go uses:
    dlopen of one path returns one instance)."""

    def __init__(self) -> None:
        drv = ctypes.CDLL(os.environ["VORTEXGO_CUDA_DRIVER"])
        fft = ctypes.CDLL(os.environ["VORTEXGO_CUFFT_PATH"])
        names = []
        arr = ctypes.cast(ctypes.addressof(ctypes.c_void_p.in_dll(drv, "fake_call_names")),
                          ctypes.POINTER(ctypes.c_char_p))
        while arr[len(names)] is not None:
            names.append(arr[len(names)].decode())
        self.names = names
        self._calls = (ctypes.c_long * len(names)).in_dll(drv, "fake_calls")
        self._fft = ctypes.c_long.in_dll(fft, "fake_cufft_execs")

    def read(self) -> dict[str, int]:
        out = dict(zip(self.names, self._calls))
        out["cufftExec"] = self._fft.value
        return out


def _cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


#: (name, from mark, to mark) of the per-block intervals --stages reports, from the engine's
#: profiler log (vortex's marks; codes in vortexgo.profiler.ProfileCode)
STAGE_INTERVALS = (
    ("acquire (dispatch)", "JOB_ACQUIRE_DISPATCH_BEGIN", "JOB_ACQUIRE_DISPATCH_END"),
    ("acquired -> submitter starts", "JOB_ACQUIRE_JOIN", "JOB_PROCESS_DISPATCH_BEGIN"),
    ("submit (upload, processors)", "JOB_PROCESS_DISPATCH_BEGIN", "JOB_PROCESS_DISPATCH_END"),
    ("submitted -> format starts", "JOB_PROCESS_DISPATCH_END", "TASK_FORMAT_BEGIN"),
    ("format (plan, endpoints)", "TASK_FORMAT_BEGIN", "TASK_FORMAT_END"),
    ("format ends -> device done", "TASK_FORMAT_END", "JOB_FORMAT_JOIN"),
    ("device done -> recycled", "JOB_FORMAT_JOIN", "JOB_RECYCLE"),
)


def stage_times(path: Path) -> dict:
    """Per-block intervals between the engine's marks (median and p90, us) over the second half
    of the run, and how busy the single-goroutine stages were (the fraction of the window inside
    a block's acquire dispatch, or its format): a stage near 1.0 is the one that limits the rate."""
    from vortexgo.profiler import ProfileCode, read_profiler_log

    recs = read_profiler_log(path)
    jobs = np.unique(recs["job"][(recs["code"] >= 0x100) & (recs["code"] < 0x10000)])
    jobs = jobs[jobs.size // 2:]
    index = {int(j): i for i, j in enumerate(jobs)}
    marks = {}
    for name in {m for _, a, b in STAGE_INTERVALS for m in (a, b)}:
        t = np.full(jobs.size, np.nan)
        sel = recs[recs["code"] == int(ProfileCode[name])]
        for job, ts in zip(sel["job"].tolist(), sel["timestamp"].tolist()):
            i = index.get(job)
            if i is not None and np.isnan(t[i]):
                t[i] = ts
        marks[name] = t
    out: dict[str, Any] = {"blocks": int(jobs.size), "intervals_us": {}}
    for name, a, b in STAGE_INTERVALS:
        d = (marks[b] - marks[a]) / 1e3
        d = d[np.isfinite(d)]
        if d.size:
            out["intervals_us"][name] = {"p50": float(np.median(d)), "p90": float(np.percentile(d, 90))}
    t0, t1 = np.nanmin(marks["JOB_ACQUIRE_DISPATCH_BEGIN"]), np.nanmax(marks["TASK_FORMAT_END"])
    for stage, a, b in (("acquire", "JOB_ACQUIRE_DISPATCH_BEGIN", "JOB_ACQUIRE_DISPATCH_END"),
                        ("format", "TASK_FORMAT_BEGIN", "TASK_FORMAT_END")):
        out[f"{stage}_busy"] = float(np.nansum(marks[b] - marks[a]) / (t1 - t0))
    out["period_us"] = float((t1 - t0) / 1e3 / jobs.size)
    return out


def measure(device: Any, samples: int, rpb: int, blocks: int, preload: int, slots: int, seconds: float,
            counters: Optional[Counters], stages: Optional[Path] = None) -> dict:
    """One configuration in steady state: blocks per second, CPU and wall time per block, and
    (fake driver) driver calls per block."""
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_engine as be

    ascans = max(rpb, 512)
    g = be.Geometry(samples, ascans, max(1, 8192 // ascans), rpb, blocks=blocks, preload=preload, slots=slots)
    ep = be.StackDeviceTensorEndpointInt8()
    engine, _, _, proc = be._pipeline(g, device, total_volumes=0, endpoints=[ep])
    if stages is not None:
        stages.unlink(missing_ok=True)
        engine.profiler_log = str(stages)
    try:
        engine.prepare()
        engine.start()
        time.sleep(min(1.0, seconds))  # warm: the pool fills, first-use costs pass
        # Each end reads the engine's counter, then the driver's, back to back and in the same
        # order at both ends, so the calls made between the two reads (status() takes a while)
        # cancel. They cancel only as far as the reading thread is not preempted between them at
        # one end: the per-block call ratios are therefore also given per upload (one a block,
        # read in the same instant as the others: "calls_per_upload").
        s0 = engine.status()
        c0 = counters.read() if counters else None
        cpu0, t0 = _cpu_seconds(), time.perf_counter()
        time.sleep(seconds)
        # At least MIN_BLOCKS in the window (a stalled host may have let few through): the
        # blocks in flight at either end, counted on one side only, then skew the ratios
        # by less than blocks_to_allocate / MIN_BLOCKS.
        deadline = t0 + 10 * seconds + 5
        while engine.status().blocks_formatted - s0.blocks_formatted < MIN_BLOCKS and time.perf_counter() < deadline:
            time.sleep(0.05)
        s1 = engine.status()
        c1 = counters.read() if counters else None
        cpu1, t1 = _cpu_seconds(), time.perf_counter()
        engine.stop()
        status = engine.status()
    finally:
        engine.close()
        ep.close()
        proc.close()
    if status.error:
        raise RuntimeError(f"the engine failed: {status.error}")
    n = s1.blocks_formatted - s0.blocks_formatted
    if n <= 0:
        raise RuntimeError(f"no block formatted in {seconds} s ({g.describe()})")
    row = {**g.describe(), "blocks": n, "blocks_per_s": n / (t1 - t0), "ascans_per_s": n * rpb / (t1 - t0),
           "wall_us_per_block": 1e6 * (t1 - t0) / n, "cpu_us_per_block": 1e6 * (cpu1 - cpu0) / n,
           # the blocks the engine cycled: blocks_to_allocate, or its deeper device ring
           "blocks_allocated": status.blocks_allocated}
    if counters:
        calls = {k: (c1[k] - c0[k]) / n for k in c1 if c1[k] != c0[k]}
        row["calls_per_block"] = calls
        uploads = c1.get("cuMemcpyAsync", 0) - c0.get("cuMemcpyAsync", 0)
        if uploads:
            row["calls_per_upload"] = {k: (c1[k] - c0[k]) / uploads for k in c1 if c1[k] != c0[k]}
        row["driver_calls_per_block"] = sum(v for k, v in calls.items() if k != "cuCtxSetCurrent")
    if stages is not None:
        row["stages"] = stage_times(stages)
    return row


def markdown(result: dict) -> str:
    fake = result["driver"] == "fake"
    lines = [f"### Host cost per block ({result['device']}, {result['driver']} driver, {result['host']})", ""]
    if fake:
        lines += ["The CUDA path against the fake driver (calls cost nothing, no bytes move): vortexgo's own "
                  "host work per block, and the driver calls each block makes.", ""]
    head = "| samples | records/block | blocks / preload | slots | blocks/s | CPU us/block | wall us/block |"
    sep = "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    if fake:
        head += " driver calls/block |"
        sep += " ---: |"
    lines += [head, sep]
    staged = [r for r in result["rows"] if "stages" in r]
    for r in result["rows"]:
        line = (f"| {r['samples']} | {r['records_per_block']} | {r['blocks_to_allocate']} / {r['preload_count']} | "
                f"{r['slots']} | {r['blocks_per_s']:,.0f} | {r['cpu_us_per_block']:.1f} | {r['wall_us_per_block']:.1f} |")
        if fake:
            line += f" {r['driver_calls_per_block']:.1f} |"
        lines.append(line)
    if fake and result["rows"]:
        r = result["rows"][0]
        lines += ["", f"Calls per block at {r['samples']} samples x {r['records_per_block']} records "
                  f"({r['blocks_to_allocate']} / {r['preload_count']}, {r['slots']} slots):", ""]
        lines += [f"- `{k}`: {v:.2f}" for k, v in sorted(r["calls_per_block"].items(), key=lambda kv: -kv[1])]
    if staged:
        names = list(staged[0]["stages"]["intervals_us"])
        lines += ["", "Per block, from the engine's profiler marks (median / p90 us), and the fraction of the "
                  "time the single-goroutine stages were busy:", "",
                  "| records/block | blocks / preload | slots | period | " + " | ".join(names) +
                  " | acquire busy | format busy |",
                  "| ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in names) + " | ---: | ---: |"]
        for r in staged:
            st = r["stages"]
            cells = [f"{st['intervals_us'][n]['p50']:.1f} / {st['intervals_us'][n]['p90']:.1f}"
                     if n in st["intervals_us"] else "-" for n in names]
            lines.append(f"| {r['records_per_block']} | {r['blocks_to_allocate']} / {r['preload_count']} | "
                         f"{r['slots']} | {st['period_us']:.1f} | " + " | ".join(cells) +
                         f" | {st['acquire_busy']:.2f} | {st['format_busy']:.2f} |")
    return "\n".join(lines) + "\n"


def parse_configs(text: str) -> list[tuple[int, int, int, int]]:
    """``RECORDS/BLOCKS/PRELOAD/SLOTS,...`` (e.g. ``256/8/4/2,8192/32/16/2``); ValueError saying
    what is expected."""
    configs = []
    for item in filter(None, text.split(",")):
        parts = item.split("/")
        if len(parts) != 4 or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise ValueError(f"--configs {text!r}: {item!r} is not RECORDS/BLOCKS/PRELOAD/SLOTS (four positive integers)")
        rpb, blocks, preload, slots = map(int, parts)
        if preload > blocks:
            raise ValueError(f"--configs {text!r}: {item!r} preloads {preload} of {blocks} blocks, expected PRELOAD <= BLOCKS")
        configs.append((rpb, blocks, preload, slots))
    if not configs:
        raise ValueError(f"--configs {text!r}: expected at least one RECORDS/BLOCKS/PRELOAD/SLOTS")
    return configs


def run(driver: str, quick: bool, seconds: float, samples_list: list[int], stages: Optional[Path] = None,
        configs: Optional[list[tuple[int, int, int, int]]] = None) -> dict:
    """Measure every configuration on ``cuda:0`` (the fake or the real driver, already chosen by
    the environment)."""
    import vortexgo as vg

    device = vg.get_device("cuda:0")
    counters = Counters() if driver == "fake" else None
    rows = []
    configs = configs or (QUICK if quick else FULL)
    for samples in samples_list:
        for rpb, blocks, preload, slots in configs:
            rows.append(measure(device, samples, rpb, blocks, preload, slots, seconds, counters, stages))
            r = rows[-1]
            print(f"  {samples} x {rpb} ({blocks}/{preload}, {slots} slots): {r['blocks_per_s']:,.0f} blocks/s, "
                  f"{r['cpu_us_per_block']:.1f} us CPU per block", file=sys.stderr, flush=True)
    return {"benchmark": "host_cost", "driver": driver, "device": device.name, "host": platform.node(),
            "cpus": os.cpu_count(), "python": platform.python_version(), "rows": rows}


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    """``NAME`` or ``NAME:VAR=VALUE,VAR=VALUE``; ValueError saying what is expected."""
    name, _, spec = text.partition(":")
    if not name or not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"--variant {text!r}: expected NAME[:VAR=VALUE,...] with a NAME of letters, digits, - and _")
    env: dict[str, str] = {}
    for item in filter(None, spec.split(",")):
        var, eq, value = item.partition("=")
        if not eq or not var or not (var[0].isalpha() or var[0] == "_") or not var.replace("_", "").isalnum():
            raise ValueError(f"--variant {text!r}: {item!r} is not VAR=VALUE (an environment variable's name, '=', its value)")
        env[var] = value
    return name, env


def ab(variants: list[tuple[str, dict[str, str]]], rounds: int, child_args: list[str], out: Path) -> dict:
    """Each variant in a child process of its own, interleaved round by round; the rows of every
    configuration side by side."""
    runs: dict[str, list[dict]] = {name: [] for name, _ in variants}
    for r in range(1, rounds + 1):
        for name, env in variants:
            dest = out / f"{name}_{r}"
            print(f"round {r}/{rounds}: {name} {env or ''}", file=sys.stderr, flush=True)
            code = subprocess.call([sys.executable, __file__, *child_args, "--out", str(dest)],
                                   env={**os.environ, **env}, stdout=subprocess.DEVNULL)
            if code != 0:
                raise RuntimeError(f"variant {name} (round {r}) exited with status {code}")
            runs[name].append(json.loads((dest / "host_cost.json").read_text()))
    first = runs[variants[0][0]][0]
    rows = []
    for i, row in enumerate(first["rows"]):
        config = {k: row[k] for k in ("samples", "records_per_block", "blocks_to_allocate", "preload_count", "slots")}
        wall = {name: [run["rows"][i]["wall_us_per_block"] for run in runs[name]] for name, _ in variants}
        median = {name: float(np.median(v)) for name, v in wall.items()}
        base = median[variants[0][0]]
        rows.append({**config, "wall_us_per_block": wall, "median": median,
                     "change": {name: m / base - 1 for name, m in median.items()}})
    return {"benchmark": "host_cost A/B", "driver": first["driver"], "device": first["device"], "host": first["host"],
            "rounds": rounds, "variants": {name: env for name, env in variants}, "rows": rows}


def ab_markdown(result: dict) -> str:
    names = list(result["variants"])
    lines = [f"### Host cost per block, A/B ({result['device']}, {result['driver']} driver, {result['rounds']} "
             "interleaved rounds)", "", "Wall us per block (lower is better), every round, the median in bold; "
             f"changes against `{names[0]}`. Variants: " +
             "; ".join(f"`{n}`: " + (", ".join(f"{k}={v}" for k, v in env.items()) or "the environment as it is")
                       for n, env in result["variants"].items()), "",
             "| samples x records | blocks / preload | slots | " + " | ".join(names) + " | " +
             " | ".join(f"{n} vs {names[0]}" for n in names[1:]) + " |",
             "| --- | --- | ---: | " + " | ".join("---:" for _ in names) + " | " + " | ".join("---:" for _ in names[1:]) + " |"]
    for r in result["rows"]:
        cells = [", ".join(f"{v:.1f}" for v in r["wall_us_per_block"][n]) + f" (**{r['median'][n]:.1f}**)" for n in names]
        changes = [f"{100 * r['change'][n]:+.0f}%" for n in names[1:]]
        lines.append(f"| {r['samples']} x {r['records_per_block']} | {r['blocks_to_allocate']} / {r['preload_count']} | "
                     f"{r['slots']} | " + " | ".join(cells) + " | " + " | ".join(changes) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--driver", choices=["fake", "real"], default="fake")
    ap.add_argument("--quick", action="store_true", help="four configurations instead of the sweep")
    ap.add_argument("--configs", default="", metavar="RECORDS/BLOCKS/PRELOAD/SLOTS,...",
                    help="these configurations instead of the sweep (e.g. 256/8/4/2,256/16/8/2)")
    ap.add_argument("--seconds", type=float, default=1.0, help="steady window per configuration")
    ap.add_argument("--samples", type=int, nargs="+", default=[1024, 2048])
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "bench-host")
    ap.add_argument("--stages", action="store_true",
                    help="also write the engine's profiler log and report where each block's time goes, per stage")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME[:VAR=VALUE,...]",
                    help="an A/B variant: these environment variables set (give two or more; see --rounds)")
    ap.add_argument("--rounds", type=int, default=2, help="A/B: how many times each variant runs, interleaved")
    args = ap.parse_args(argv)
    if args.seconds <= 0:
        ap.error(f"--seconds={args.seconds}, expected > 0")
    configs = None
    if args.configs:
        try:
            configs = parse_configs(args.configs)
        except ValueError as e:
            ap.error(str(e))
    if args.variant:
        if len(args.variant) < 2:
            ap.error(f"--variant given {len(args.variant)} time, expected two or more (the first is the baseline)")
        if not 1 <= args.rounds <= 100:
            ap.error(f"--rounds={args.rounds}, expected 1 to 100")
        try:
            variants = [parse_variant(v) for v in args.variant]
        except ValueError as e:
            ap.error(str(e))
        names = [n for n, _ in variants]
        if len(set(names)) != len(names):
            ap.error(f"--variant names {names}: expected each once")
        child = ["--driver", args.driver, "--seconds", str(args.seconds), "--samples", *map(str, args.samples)]
        child += ["--quick"] * args.quick + ["--stages"] * args.stages + ["--configs", args.configs] * bool(args.configs)
        args.out.mkdir(parents=True, exist_ok=True)
        result = ab(variants, args.rounds, child, args.out)
        (args.out / "ab.json").write_text(json.dumps(result, indent=1))
        md = ab_markdown(result)
        (args.out / "ab.md").write_text(md)
        print(md)
        return 0
    if args.driver == "fake" and os.environ.get(CHILD) is None:
        # The driver is chosen at vortexgo's first CUDA use, once per process: a child
        # process with the fakes in its environment.
        env = {**os.environ, **fake_env(build_fakes(ROOT / "build" / "fakecuda")), CHILD: "1"}
        return subprocess.call([sys.executable, __file__, *(argv if argv is not None else sys.argv[1:])], env=env)
    args.out.mkdir(parents=True, exist_ok=True)
    result = run(args.driver, args.quick, args.seconds, args.samples, args.out / "profile.bin" if args.stages else None,
                 configs)
    (args.out / "host_cost.json").write_text(json.dumps(result, indent=1))
    md = markdown(result)
    (args.out / "host_cost.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
