"""vortexgo.simple: vortex's SimpleEngine / SimpleEngineConfig over simulated hardware,
run on the CPU backend (the GPU machine runs the same tests on its default device)."""

from __future__ import annotations

import numpy as np
import pytest

from vortexgo.marker import Flags
from vortexgo.scan import RadialScan, RadialScanConfig, Range, RasterScan, RasterScanConfig
from vortexgo.simple import SimpleEngine, SimpleEngineConfig
from vortexgo.source import Source, source

pytestmark = pytest.mark.timeout(120)

A, B, S, RPB = 32, 16, 128, 64


def _config(**kw) -> SimpleEngineConfig:
    c = SimpleEngineConfig()
    c.samples_per_ascan, c.ascans_per_bscan, c.bscans_per_volume, c.ascans_per_block = S, A, B, RPB
    c.blocks_to_allocate, c.preload_count, c.simulated_rate, c.device = 16, 4, 0, "cpu"
    for k, v in kw.items():
        setattr(c, k, v)
    return c


def _raster(flags=0x1, loop=True) -> RasterScan:
    rc = RasterScanConfig()
    rc.ascans_per_bscan, rc.bscans_per_volume, rc.loop, rc.flags = A, B, loop, Flags(flags)
    rc.bscan_extent = rc.volume_extent = Range(-1, 1)  # a slow enough galvo for 32 A-scans per B-scan
    s = RasterScan()
    s.initialize(rc)
    return s


def _radial() -> RadialScan:
    rc = RadialScanConfig()
    rc.ascans_per_bscan, rc.bscans_per_volume, rc.loop, rc.flags = A, B, True, Flags(0x2)
    rc.bscan_extent = Range(-1, 1)
    rc.set_half_evenly_spaced(B)
    s = RadialScan()
    s.initialize(rc)
    return s


def test_config_has_vortex_fields_and_defaults():
    c = SimpleEngineConfig()
    # vortex 0.5.1 src/vortex/simple/engine.hpp
    assert (c.samples_per_ascan, c.ascans_per_bscan, c.bscans_per_volume) == (2752, 500, 500)
    assert (c.blocks_to_acquire, c.blocks_to_allocate, c.ascans_per_block) == (0, 128, 500)
    assert (c.preload_count, c.process_slots, c.galvo_delay, tuple(c.dispersion)) == (4, 2, 0.0, (0.0, 0.0))
    assert c.internal_clock is False and c.broct_save_path == "" and c.sample_target_save_path == ""
    assert c.swept_source == Source(100_000, 1376, 0.50)
    d = c.copy()
    d.ascans_per_bscan = 7
    assert c.ascans_per_bscan == 500


def test_runs_a_raster_and_calls_back_with_bscans():
    eng = SimpleEngine()
    eng.initialize(_config(blocks_to_acquire=300))
    eng.append_scan(_raster())
    got = []
    eng.start(lambda radial, bscans: got.append((radial, bscans)))
    eng.wait()
    eng.stop()
    assert got and all(r is False for r, _ in got)
    seen = sorted({b for _, bs in got for b in bs})
    assert seen == list(range(B)), "every B-scan of the first volume arrives"
    with eng.volume() as vol:
        assert vol.shape == (B, A, S // 2) and vol.dtype == np.int8
        assert vol.max() > 20 and vol.std() > 1, "the phantom's layers are in the volume"
    st = eng.engine.status()
    assert st.blocks_processed == 300 and st.error == ""
    eng.close()


def test_interrupt_switches_to_radial_and_volume_follows():
    eng = SimpleEngine("vortex.")
    eng.initialize(_config())
    eng.append_scan(_raster())
    radial_seen = []
    eng.start(lambda radial, bscans: radial and radial_seen.append(bscans))
    eng.interrupt_scan(_radial())
    for _ in range(400):
        if radial_seen:
            break
        assert not eng.wait_for(0.05)
    eng.stop()
    assert radial_seen, "the radial scan's B-scans reached the callback"
    with eng.volume() as vol:
        assert vol.shape == (A, A, S // 2), "volume() is the radial volume once it was written"
    eng.close()


def test_storage_paths_write_files(tmp_path):
    broct, target = tmp_path / "v.broct", tmp_path / "target.bin"
    eng = SimpleEngine()
    eng.initialize(_config(blocks_to_acquire=400, broct_save_path=str(broct), sample_target_save_path=str(target)))
    eng.append_scan(_raster(loop=False))
    eng.start()
    eng.wait()
    eng.stop()
    eng.close()
    assert broct.stat().st_size > B * A * (S // 2), "one whole volume in the BROCT file"
    assert target.stat().st_size > 0


@pytest.mark.parametrize("field,value,exc,words", [
    ("samples_per_ascan", 4, ValueError, "SimpleEngineConfig.samples_per_ascan=4"),
    ("dispersion", (1, 2, 3), ValueError, "SimpleEngineConfig.dispersion"),
    ("swept_source", "Axsun", TypeError, "SimpleEngineConfig.swept_source='Axsun'"),
    ("preload_count", 99, ValueError, "SimpleEngineConfig.preload_count=99"),
    ("broct_save_path", None, TypeError, "broct_save_path=None"),
])
def test_bad_config_names_the_field(field, value, exc, words):
    with pytest.raises(exc, match=words.replace("(", r"\(").replace(")", r"\)")):
        SimpleEngine().initialize(_config(**{field: value}))


def test_misuse_raises_clearly():
    eng = SimpleEngine()
    with pytest.raises(RuntimeError, match="not initialized"):
        eng.volume()
    with pytest.raises(TypeError, match="SimpleEngineConfig"):
        eng.initialize({"samples_per_ascan": 10})
    eng.initialize(_config(blocks_to_acquire=4))
    with pytest.raises(RuntimeError, match="already initialized"):
        eng.initialize(_config())
    with pytest.raises(TypeError, match="callback"):
        eng.start(callback=3)
    eng.close()
    eng.close()


def test_vortex_names_and_presets():
    assert source.Axsun100k.triggers_per_second == 100_000
    import subprocess
    import sys
    from pathlib import Path

    code = ("import vortexgo.compat as c; c.install()\n"
            "from vortex.simple import SimpleEngine, SimpleEngineConfig\n"
            "import vortexgo.simple as s; assert SimpleEngine is s.SimpleEngine; print('ok')")
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**__import__("os").environ, "PYTHONPATH": __import__("os").path.dirname(__import__("os").path.dirname(__import__("vortexgo").__file__))})
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
