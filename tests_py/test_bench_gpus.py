"""bench/bench_gpus.py's control flow without GPUs: settings variants side by side (the engine
reads its VORTEXGO_* settings from the live environment, so they switch in one process), the
environment put back, every variant's ratio in the JSON and the markdown. The measurements
themselves need two GPUs (nvidia-h200-x2)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

bench_gpus = pytest.importorskip("bench_gpus")


def test_environment_sets_and_puts_back(monkeypatch):
    monkeypatch.setenv("VORTEXGO_TEST_KEPT", "before")
    monkeypatch.delenv("VORTEXGO_TEST_NEW", raising=False)
    with bench_gpus.environment({"VORTEXGO_TEST_KEPT": "inside", "VORTEXGO_TEST_NEW": "1"}):
        assert os.environ["VORTEXGO_TEST_KEPT"] == "inside" and os.environ["VORTEXGO_TEST_NEW"] == "1"
    assert os.environ["VORTEXGO_TEST_KEPT"] == "before"
    assert "VORTEXGO_TEST_NEW" not in os.environ
    with pytest.raises(RuntimeError), bench_gpus.environment({"VORTEXGO_TEST_NEW": "2"}):
        raise RuntimeError("a failed run")
    assert "VORTEXGO_TEST_NEW" not in os.environ, "put back after an error too"


class _Dev:
    def __init__(self, i: int) -> None:
        self.name = f"Fake GPU {i}"


def _fake_gpus(monkeypatch, seen: list) -> None:
    import vortexgo._device

    monkeypatch.setattr(vortexgo._device, "cuda_device_count", lambda: 2)
    monkeypatch.setattr(bench_gpus.vg, "get_device", lambda name: _Dev(int(name[-1])))
    monkeypatch.setattr(bench_gpus, "volumes", lambda g, devices, n: np.zeros(3))
    monkeypatch.setattr(bench_gpus, "ceilings", lambda g, n, seconds: {"together_total_gbs": 100.0,
                                                                      "alone_gbs": [50.0, 50.0]})

    def throughput(g, devices, seconds, warm, timings=False, profile=None):
        lanes = os.environ.get("VORTEXGO_REMOTE_LANES", "")
        seen.append((len(devices), lanes))
        rate = 10e6 if len(devices) == 1 else (18e6 if lanes == "slot" else 14e6)
        return {"ascans_per_s": rate, "gbs": rate * g.samples * 2 / 1e9, "volumes": 10, "blocks_dropped": 0}

    monkeypatch.setattr(bench_gpus, "throughput", throughput)
    monkeypatch.delenv("VORTEXGO_REMOTE_LANES", raising=False)


def test_one_setting_as_before(monkeypatch, tmp_path):
    seen: list = []
    _fake_gpus(monkeypatch, seen)
    assert bench_gpus.main(["--out", str(tmp_path), "--sizes", "1024", "--records", "256", "--blocks", "4"]) == 0
    assert seen == [(1, ""), (2, "")]
    row = json.loads((tmp_path / "bench_gpus.json").read_text())["rows"][0]
    assert row["ratio"] == pytest.approx(1.4) and row["variants"] is None
    assert "Variants" not in (tmp_path / "bench_gpus.md").read_text()


def test_variants_side_by_side(monkeypatch, tmp_path):
    seen: list = []
    _fake_gpus(monkeypatch, seen)

    rc = bench_gpus.main(["--out", str(tmp_path), "--sizes", "1024", "--records", "256", "--blocks", "32",
                          "--repeats", "2", "--variant", "lane", "--variant", "slot:VORTEXGO_REMOTE_LANES=slot"])
    assert rc == 0
    # each repeat: one GPU, then each variant, in turn
    assert seen == [(1, ""), (2, ""), (2, "slot")] * 2
    assert "VORTEXGO_REMOTE_LANES" not in os.environ
    data = json.loads((tmp_path / "bench_gpus.json").read_text())
    assert data["variants"] == {"lane": {}, "slot": {"VORTEXGO_REMOTE_LANES": "slot"}}
    row = data["rows"][0]
    assert row["ratio"] == pytest.approx(1.4)  # the first variant is the headline
    assert row["variants"]["slot"]["ratio"] == pytest.approx(1.8)
    assert row["variants"]["slot"]["ratios"] == pytest.approx([1.8, 1.8])
    md = (tmp_path / "bench_gpus.md").read_text()
    assert "| lane: 2 / one | slot: 2 / one |" in md and "| 1.40 (1.40, 1.40) | 1.80 (1.80, 1.80) |" in md


@pytest.mark.parametrize("bad", ["no spaces:X=1", "v:1X=2", "v:X"])
def test_a_bad_variant_is_refused(bad, capsys):
    with pytest.raises(SystemExit):
        bench_gpus.main(["--variant", bad])
    assert "--variant" in capsys.readouterr().err


def test_repeated_variant_names_are_refused(capsys):
    with pytest.raises(SystemExit):
        bench_gpus.main(["--variant", "a", "--variant", "a:X=1"])
    assert "repeat" in capsys.readouterr().err
