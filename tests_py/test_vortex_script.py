"""vortex's own benchmark script (bench/vortex_peer.py: demo/cuda_benchmark.py's
pipeline with vortex's calls) runs on vortexgo with only the imports changed."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import vortexgo as vg

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(120)


def _run(*extra: str) -> list[dict]:
    cmd = [sys.executable, str(ROOT / "bench" / "vortex_peer.py"), "--impl", "vortexgo", "--json", "--runs", "1",
           "--samples", "64", "--ascans-per-bscan", "32", "--bscans", "8", "--records-per-block", "128",
           "--blocks", "8", "--preload", "4", "--ascans", str(128 * 12), *extra]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=110)
    assert r.returncode == 0, r.stderr[-2000:]
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]


def test_vortex_benchmark_script_runs_on_the_cpu_backend():
    (run,) = _run("--cpu")
    assert run["impl"] == "vortexgo" and run["ascans"] == 128 * 12 and run["ascans_per_s"] > 0


@pytest.mark.skipif(not vg.is_cuda_available(), reason="needs a CUDA device")
def test_vortex_benchmark_script_runs_on_cuda():
    (run,) = _run()
    assert run["ascans"] == 128 * 12 and run["ascans_per_s"] > 0
