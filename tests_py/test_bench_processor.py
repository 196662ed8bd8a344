"""Keeps `make bench`'s processor section (bench/bench_processor.py) from rotting: the parser and
the table on a captured output here, and the carried Go benchmark binary for real on the GPU
machine."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from conftest import HAS_CUDA

ROOT = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("bench_processor", ROOT / "bench" / "bench_processor.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_processor"] = mod
    spec.loader.exec_module(mod)
    return mod


# Two lines of BenchmarkCUDAProcessor's output on an H100 (2026-11-24), with the headers around them.
CAPTURED = """goos: linux
pkg: github.com/vortexgo/vortexgo/gosrc/process
BenchmarkCUDAProcessor/n=1376-16  \t       3\t   1386825 ns/op\t16256.12 MB/s\t      2491 GB/s_moved\t  46418825 ascans/s\t     53664 bytes/ascan\t      2970 d2d_GB/s\t         0.3889 fft_share\t         8.379 ns/ascan_fft\t         0.8388 of_d2d_bw\t         0.8836 of_fft_roofline
BenchmarkCUDAProcessor/n=1376/cufft-16         \t       3\t   2437318 ns/op\t9249.67 MB/s\t      1428 GB/s_moved\t  26603067 ascans/s\t     53664 bytes/ascan\t      2970 d2d_GB/s\t         0.6681 fft_share\t        25.12 ns/ascan_fft\t         0.4807 of_d2d_bw\t         0.9517 of_fft_roofline
BenchmarkCUDAProcessorClock-16                 \t       3\t   7325640 ns/op\t   8895016 ascans/s
PASS
"""


def test_parse_reads_each_sub_benchmark_and_its_metrics():
    rows = _module().parse(CAPTURED)
    assert [r["name"] for r in rows] == ["n=1376", "n=1376/cufft"]
    one, cu = rows
    assert one["samples"] == cu["samples"] == 1376
    assert one["fft"] == "as chosen" and cu["fft"] == "cuFFT (forced)"
    assert one["ascans/s"] == pytest.approx(46418825)
    assert one["of_d2d_bw"] == pytest.approx(0.8388)
    assert cu["ns/ascan_fft"] == pytest.approx(25.12)
    assert one["d2d_GB/s"] == pytest.approx(2970)


def test_markdown_names_every_row_with_its_roofline_fraction():
    mod = _module()
    text = mod.md(mod.parse(CAPTURED))
    assert "| 1376 | as chosen | 46.4 | 53,664 | 2,491 | **0.84** |" in text
    assert "| 1376 | cuFFT (forced) | 26.6 |" in text
    assert "2,970 GB/s" in text


def test_a_missing_binary_is_a_note_not_a_crash(monkeypatch, tmp_path):
    mod = _module()
    monkeypatch.setattr(mod, "BINARY", tmp_path / "absent.test.gz")
    out: dict = {}
    mod.run(out)
    assert "processor" not in out
    assert "make gpu-build" in out["processor_md"]


@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
@pytest.mark.skipif(not (ROOT / "gpu-build" / "bin" / "process.test.gz").exists(), reason="needs the carried Go test binary")
@pytest.mark.timeout(600)
def test_the_carried_benchmark_runs_and_parses():
    mod = _module()
    rows = mod.parse(mod.run_binary(benchtime="1x"))
    names = {r["name"] for r in rows}
    assert {"n=1024", "n=1376", "n=1376/cufft", "n=2048", "n=2752", "n=2752/cufft"} <= names
    for r in rows:
        assert 0 < r["of_d2d_bw"] < 1.2 and r["ascans/s"] > 0
