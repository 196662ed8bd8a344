"""Why does a Dask worker forked from a client that started vortexgo's Go runtime hang on the GPU
machine (issue 30)? Runs the cases that tell the candidate causes apart, each in a fresh
interpreter with a time limit, and prints one line per case: ``ok``, ``ForkError`` (vortexgo's
designed answer) or ``hang`` (with the forked processes' Python stacks in ``--out``).

Candidates: vortexgo's Go runtime in the forked worker (which vortexgo fences off with ForkError),
and NVML, which Dask's diagnostics initialise in the client's scheduler where a GPU is present
(``distributed.diagnostics.nvml``) and which a forked worker inherits. Cases:

- ``fork-twice-no-go``: two fork jobs, the Go runtime never started. A hang here is not vortexgo's.
- ``go-then-fork-nvml-off``: the Go runtime started, then a fork job with Dask's NVML diagnostics
  off. ForkError here and a hang in the next case point at NVML.
- ``go-then-fork``: the case the test xfails on CUDA machines (the control).

Usage (the GPU machine, Dask carried): ``python scripts/fork_hang_probe.py --out /tmp/fork``.

Result on the H200 machine (2026-11-29): ``fork-twice-no-go: first=ok second=hang go_loaded=False``,
``go-then-fork-nvml-off: ForkError``, ``go-then-fork: ForkError``: the hang is a second fork-mode
``LocalCluster`` in one process, with no Go runtime anywhere (Dask's), not vortexgo's; a first
fork-mode cluster from a client with the Go runtime gets vortexgo's ForkError, NVML on or off.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import textwrap
from pathlib import Path

CHILD = r'''
import faulthandler, os, signal, sys, threading, time, warnings
faulthandler.register(signal.SIGUSR1, all_threads=True)
warnings.simplefilter("ignore", DeprecationWarning)
import dask, distributed, numpy as np
import vortexgo as vg
from vortexgo import distributed as vd
tmp, case = sys.argv[1], sys.argv[2]
pc = vg.ProcessorConfig(samples_per_record=64, ascans_per_block=32, levels=(-10.0, 60.0))
cfg = vd.ReprocessConfig(pc, ascans_per_bscan=16, bscans_per_volume=8)
np.save(f"{tmp}/a.npy", np.random.default_rng(0).integers(1000, 3000, (2, 8, 16, 64, 1)).astype(np.uint16))

def job(name, nvml=True):
    settings = {"distributed.worker.multiprocessing-method": "fork", "distributed.diagnostics.nvml": nvml}
    with dask.config.set(settings), distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, dashboard_address=None, silence_logs=50) as cluster, \
            distributed.Client(cluster) as c:
        return vd.reprocess(c, [f"{tmp}/a.npy"], cfg, f"{tmp}/{name}.zarr", device="cpu")

def attempt(name, **kw):
    out = {}
    def run():
        try:
            job(name, **kw)
            out["r"] = "ok"
        except vg.ForkError:
            out["r"] = "ForkError"
        except BaseException as e:
            out["r"] = f"error: {e!r}"[:200]
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    if t.is_alive():
        import psutil
        for child in psutil.Process().children(recursive=True):
            try:
                os.kill(child.pid, signal.SIGUSR1)
            except OSError:
                pass
        time.sleep(2)
        return "hang"
    return out["r"]

if case == "fork-twice-no-go":
    first = attempt("one")
    second = attempt("two") if first != "hang" else "-"
    print(f"RESULT first={first} second={second} go_loaded={vg._core.loaded()}", flush=True)
else:
    vd.output_shape(cfg, "cpu")  # starts the Go runtime in the client
    print(f"RESULT {attempt('one', nvml=case != 'go-then-fork-nvml-off')} go_loaded={vg._core.loaded()}", flush=True)
os._exit(0)
'''

CASES = ("fork-twice-no-go", "go-then-fork-nvml-off", "go-then-fork")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="a folder for the cases' files and stacks")
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    args = ap.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    for c in cases:
        if c not in CASES:
            ap.error(f"--cases: {c!r}, expected one of {', '.join(CASES)}")
    for case in cases:
        d = args.out / case
        d.mkdir(parents=True, exist_ok=True)
        try:
            p = subprocess.run([sys.executable, "-c", textwrap.dedent(CHILD), str(d), case],
                               capture_output=True, text=True, timeout=180)
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")]
            result = lines[-1][len("RESULT "):] if lines else f"no result (exit {p.returncode})"
            (d / "stderr.txt").write_text(p.stderr)
        except subprocess.TimeoutExpired:
            result = "the case itself timed out"
        print(f"{case}: {result}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
