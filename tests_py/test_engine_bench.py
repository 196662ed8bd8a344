"""Keeps the engine benchmark (bench/bench_engine.py) and the soak (scripts/soak.py)
from rotting: their CPU-capable parts run here on the CPU backend at tiny sizes, their
GPU paths on the GPU machine (quick settings); plus the callback-latency hooks they
rely on (Engine.record_callback_latency, start_monotonic_ns, pyapi Goroutines and
MonotonicNs)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import vortexgo as vg
from vortexgo._core import api
from vortexgo.engine import Engine, EngineConfig, StackDeviceTensorEndpointInt8

from _scans import planner, queue_volumes
from conftest import HAS_CUDA, needs_cuda, needs_cupy

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench" / "bench_engine.py"
SOAK = ROOT / "scripts" / "soak.py"


def _load_bench():
    spec = importlib.util.spec_from_file_location("bench_engine_under_test", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def be():
    return _load_bench()


def _env() -> dict:
    env = dict(os.environ)
    pkg = str(Path(vg.__file__).resolve().parents[1])  # the vortexgo under test (python/ or gpu-build/python)
    env["PYTHONPATH"] = pkg + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


# --- hooks ----------------------------------------------------------------------------


def test_monotonic_clock_matches_python():
    for _ in range(100):
        a = time.monotonic_ns()
        b = api.MonotonicNs()
        c = time.monotonic_ns()
        assert a <= b <= c
    assert api.Goroutines() >= 1


def _rig(volumes: int = 3):
    acq = vg.SimulatedAcquisition(samples_per_record=64, ascans_per_bscan=16, bscans_per_volume=8, volumes=1)
    proc = vg.CPUProcessor(vg.ProcessorConfig(samples_per_record=64, ascans_per_block=32, slots=1))
    fmt = planner(16, 8)
    ep = StackDeviceTensorEndpointInt8()
    ec = EngineConfig(records_per_block=32, blocks_to_allocate=4, preload_count=2)
    ec.add_acquisition(acq, [proc])
    ec.add_processor(proc, [fmt])
    ec.add_formatter(fmt, [ep])
    engine = Engine(ec)
    queue_volumes(engine, 16, 8, volumes)  # the scan queue ends the run
    return engine, ep, proc


def test_callback_latency_recorder():
    engine, ep, proc = _rig()
    calls = []
    ep.segment_callback = lambda *a: calls.append(time.monotonic_ns())
    ep.volume_callback = lambda *a: None
    engine.record_callback_latency(capacity=10)
    assert engine.start_monotonic_ns == 0
    engine.prepare()
    before = time.monotonic_ns()
    engine.start()
    after = time.monotonic_ns()
    with pytest.raises(vg.VortexError, match="before start"):
        engine.record_callback_latency()
    engine.wait()
    base = engine.start_monotonic_ns
    assert before <= base <= after
    lat = engine.callback_latencies_ns()
    assert lat.dtype == np.int64 and lat.size == 10  # capped; segment and volume callbacks both count
    assert (lat >= 0).all() and (lat < 10e9).all()
    assert len(calls) == 8 * 3
    engine.close()
    ep.close()
    proc.close()


def test_callback_latency_off_by_default():
    engine, ep, proc = _rig(volumes=1)
    ep.segment_callback = lambda *a: None
    engine.prepare()
    engine.start()
    engine.wait()
    assert engine.callback_latencies_ns().size == 0
    with pytest.raises(ValueError, match="capacity"):
        Engine(EngineConfig()).record_callback_latency(0)
    engine.close()
    ep.close()
    proc.close()


# --- bench/bench_engine.py --------------------------------------------------------------


def test_bench_arguments(be):
    a = be.parse_args([])
    assert a.device == "cuda" and not a.quick and a.sizes == []
    a = be.parse_args(["--quick", "--device", "cpu", "--sizes", "128,256", "--seconds", "0.2"])
    assert a.quick and a.device == "cpu" and a.sizes == [128, 256] and a.seconds == 0.2
    for bad in (["--sizes", "1000"], ["--sizes", "x"], ["--seconds", "0"], ["--device", "tpu"]):
        with pytest.raises(SystemExit) as e:
            be.parse_args(bad)
        assert e.value.code == 2


@pytest.mark.skipif(HAS_CUDA, reason="checks the no-GPU error")
def test_bench_without_gpu_is_a_clear_error(be):
    with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
        be.run({})
    p = subprocess.run([sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, env=_env(),
                       timeout=60)
    assert p.returncode == 2, p.stderr
    assert "needs a CUDA GPU" in p.stderr


def test_bench_chain_matches_cpu_processor(be):
    g = be.Geometry(128, 32, 8, 128, blocks=4, preload=2, slots=1)
    raw, out, pc = be.reference_volume(g, vg.get_device("cpu"))
    assert raw.shape == (256, 128) and raw.dtype == np.uint16 and out.shape == (256, 128)
    chain = be.Chain(np, g.samples, g.rpb, be.AVERAGE_WINDOW, pc.resampling_samples, pc.spectral_filter, be.LEVELS)
    mine = np.concatenate([chain(b) for b in raw.reshape(-1, g.rpb, g.samples)])
    agree = be._agreement(out, mine)
    assert agree["max_abs_diff_levels"] <= 1 and agree["identical_fraction"] > 0.99, agree
    assert len(np.unique(out)) > 20  # a real image, not a constant


def test_bench_cpu_smoke(be, tmp_path):
    results: dict = {}
    r = be.bench(results, vg.get_device("cpu"), quick=True, seconds=0.3)
    assert results["engine"] is r and "## Engine end to end (cpu)" in results["engine_md"]
    json.dumps(results)  # JSON-able
    (c,) = r["configs"]
    assert c["engine"]["ascans_per_s"] > 0 and c["sync"]["ascans_per_s"] > 0 and c["engine"]["blocks_dropped"] == 0
    assert c["agreement"]["max_abs_diff_levels"] <= 1
    cb = r["callbacks"]
    assert cb["events"] > 0 and cb["cost_us_per_event"] > 0
    assert [row["dispatch_spin_us"] for row in cb["latency"]] == ["adaptive", 200, 5000, "adaptive"]
    for row in cb["latency"]:
        assert row["events"] > 0 and 0 <= row["min"] <= row["p50"] <= row["p99"] <= row["max"]
    assert "### Callback dispatch" in results["engine_md"]


@needs_cupy
def test_bench_gpu_quick(be):
    results: dict = {}
    r = be.bench(results, vg.get_device("cuda:0"), quick=True, sizes=[1024], seconds=0.3)
    json.dumps(results)
    (c,) = r["configs"]
    assert c["agreement"]["max_abs_diff_levels"] <= 1, c["agreement"]
    for k in ("engine", "sync", "two_stream", "ceiling"):
        assert c[k]["ascans_per_s"] > 0, k
    assert c["engine"]["memory"]["engine_bytes"] > 0
    assert "vortexgo / ceiling" in results["engine_md"]
    print(results["engine_md"])


# --- scripts/soak.py ----------------------------------------------------------------------


def _soak(tmp_path, *args):
    out = tmp_path / "soak.json"
    p = subprocess.run([sys.executable, str(SOAK), *args, "--out", str(out), "--dir", str(tmp_path)],
                       capture_output=True, text=True, env=_env(), timeout=110)
    return p, (json.loads(out.read_text()) if out.exists() else None)


def test_soak_cpu(tmp_path):
    # Sessions of 4 tiny volumes last a few ms each, mostly start and stop: on a machine
    # shared with other test processes (pytest -n 8 on the GPU machine) their speed halved
    # between the halves with nothing leaking; a leak that slows every session still
    # fails a bound of a quarter.
    p, r = _soak(tmp_path, "--device", "cpu", "--volumes", "200", "--sessions", "20", "--session-bound", "0.25")
    assert p.returncode == 0, p.stdout + p.stderr
    assert r["ok"] and r["volumes"] == 200 and r["backend"] == "cpu"
    ss = r["session_soak"]
    assert ss["ok"] and ss["sessions"] == 20 and len(ss["log"]) == 20
    assert {"sessions: memory flat", "sessions: goroutines flat", "sessions: every volume stored"} <= set(r["checks"])
    assert all(c["ok"] for c in r["checks"].values())
    assert r["file_bytes"] == r["file_bytes_expected"] == 320 + 200 * 8 * 16 * 32  # vortex's .npy 2.0 header: 320 bytes
    assert len(r["samples"]) == 20 and "soak: passed" in p.stdout
    assert not list(tmp_path.glob("*.npy"))  # removed without --keep


def _soak_module():
    spec = importlib.util.spec_from_file_location("vortexgo_soak", SOAK)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("early, late, flat", [
    # The GPU host's false alarm: workers of a block in flight lift the late median by 3.
    ([10, 11, 12, 12, 13, 17], [10, 14, 15, 15, 16, 17], True),
    ([5, 5, 5], [5, 6, 7], True),
    ([5, 5, 5], [7, 7, 7], True),  # GOROUTINE_JITTER of slack
    ([5, 5, 5], [8, 9, 9], False),  # the floor rose by 3: a leak
    (list(range(10, 110)), list(range(110, 210)), False),  # one leaked per volume
])
def test_soak_goroutine_check_compares_the_floors(early, late, flat):
    soak = _soak_module()
    assert soak.GOROUTINE_JITTER == 2
    ok, lo_early, lo_late = soak.goroutine_floors(early, late)
    assert (ok, lo_early, lo_late) == (flat, min(early), min(late))


def test_soak_usage_errors(tmp_path):
    p, r = _soak(tmp_path, "--device", "cpu", "--volumes", "1")
    assert p.returncode == 2 and r is None
    p, r = _soak(tmp_path, "--device", "cpu", "--session-bound", "1.5")
    assert p.returncode == 2 and "--session-bound=1.5, expected 0..1" in p.stderr
    p, r = _soak(tmp_path, "--device", "cpu", "--sessions", "1")
    assert p.returncode == 2 and "--sessions=1" in p.stderr


@needs_cuda
def test_soak_gpu_small(tmp_path):
    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
        # Its leak check reads the device's free memory, which the other test processes on
        # the same GPU move by hundreds of MB (seen: 549 MB between the halves with 8
        # workers); gpu-build/run_gpu_tests.sh runs it in the serial pass.
        pytest.skip("reads the whole device's free memory: run it without pytest-xdist")
    # Sessions of 4 small volumes into a file: the 10% throughput bound is make soak's, over
    # long sessions; here a collapse (a leak slowing every session) fails, as on the CPU. One
    # run on a shared H100 VM measured 0.85x between the halves, its rerun passed at 0.9.
    p, r = _soak(tmp_path, "--device", "cuda", "--volumes", "100", "--ascans", "128", "--bscans", "32",
                 "--session-bound", "0.5")
    assert p.returncode == 0, p.stdout + p.stderr
    assert r["ok"] and r["backend"] == "cuda"


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build bench/hiccup.c")
def test_host_hiccups_runs_the_real_tool(tmp_path, monkeypatch):
    # make gpu-build builds bench/hiccup.c; bench_engine reports its gaps beside the latency.
    exe = tmp_path / "hiccup"
    subprocess.run(["gcc", "-O2", "-pthread", "-o", str(exe), str(ROOT / "bench" / "hiccup.c")], check=True)
    be = _load_bench()
    monkeypatch.setattr(be, "HICCUP", exe)
    r = be.host_hiccups(0.2)
    assert r["seconds"] == pytest.approx(0.2)
    gaps = r["gaps_over_us"]
    assert list(gaps) == ["5", "10", "20", "50", "100", "200"]
    assert all(gaps[a] >= gaps[b] for a, b in zip(list(gaps), list(gaps)[1:])), "each bound counts the gaps above it"
    assert r["max_us"] > 0 and 0 <= r["lost_fraction"] < 1 and r["cpu"] == -1  # one thread: not pinned
    pair = be.host_hiccups(0.2, 2)  # two threads, pinned to two CPUs (the same one on a 1-CPU machine)
    assert len(pair["threads"]) == 2 and pair["seconds"] == pytest.approx(0.2)
    assert all(t["cpu"] in range(os.cpu_count()) and list(t["gaps_over_us"]) == list(gaps) for t in pair["threads"])
    ov = pair["overlap_20us"]
    assert ov["first"] == pair["threads"][0]["gaps_over_us"]["20"] and 0 <= ov["overlapping_second"] <= ov["first"]
    md = "\n".join(be.hiccup_md({"host_hiccups": r, "host_hiccups_cpus": pair}))
    assert "a thread that only spins" in md and "each pinned to its own CPU" in md
    assert be.hiccup_md({"host_hiccups": None}) == []
    bad = subprocess.run([str(exe), "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and "usage: hiccup" in bad.stderr
    monkeypatch.setattr(be, "HICCUP", tmp_path / "absent")
    assert be.host_hiccups(0.1) is None


def test_probe_first_block_runs_each_case_in_a_fresh_process():
    # bench/probe_first_block.py: the time from start() to the first block, JIT cache cold and warm.
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "probe_first_block.py"), "--device", "cpu"],
                       capture_output=True, text=True, env=_env(), timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.strip().splitlines()
    assert [ln.split(" prepare")[0].strip() for ln in lines] == ["cold JIT cache", "warm JIT cache", "warm JIT cache"]
    assert all("start to the first block" in ln for ln in lines)


def test_probe_cold_turn_times_each_case():
    # bench/probe_cold_turn.py: 16 handler calls after the thread slept, spun or did neither.
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "probe_cold_turn.py"), "--rounds", "3"],
                       capture_output=True, text=True, env=_env(), timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    names = [ln.split(" p50")[0].strip() for ln in p.stdout.strip().splitlines()]
    assert names == ["back to back", "slept 47 ms, spun 3 ms", "slept 47 ms", "slept 2 ms",
                     "slept 47 ms, 3 ms calling another no-op"]
