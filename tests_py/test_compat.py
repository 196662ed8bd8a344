"""vortexgo.compat: vortex's module names importing vortexgo, opt-in, never hiding a real vortex."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _py(code: str, *, extra_path: str = "") -> subprocess.CompletedProcess:
    import os

    # A built vortexgo already on PYTHONPATH (the GPU machine's) comes before the source tree.
    env_path = ([extra_path] if extra_path else []) + [os.environ.get("PYTHONPATH", ""), str(ROOT / "python")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in env_path if p))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=60)


def test_vortex_names_import_vortexgo_after_install():
    r = _py("""
        import vortexgo.compat as c
        try:
            import vortex
        except ImportError:
            pass
        else:
            raise SystemExit("vortex importable before install")
        c.install()
        import vortex, vortexgo
        from vortex import Range, get_console_logger
        from vortex.engine import Engine, EngineConfig, StackDeviceTensorEndpointInt8, dispersion_phasor
        from vortex.scan import RasterScan, RasterScanConfig, warp
        from vortex.format import FormatPlanner, StackFormatExecutor, SimpleSlice
        from vortex.process import CPUProcessor, CUDAProcessor
        from vortex.acquire import NullAcquisition, FileAcquisition
        from vortex.marker import ScanBoundary
        import vortex.engine as ve
        assert ve.Engine is vortexgo.engine.Engine and vortex.scan.RasterScan is vortexgo.scan.RasterScan and Range is vortexgo.Range
        assert ve.__vortexgo_target__ is vortexgo.engine and ve.source.Axsun100k.triggers_per_second == 100000
        assert ve.Block.StreamIndex.GalvoTarget == 1 and "Source" in ve.__all__ and "Engine" in ve.__all__
        try:
            ve.TeledyneAcquisition
        except AttributeError as e:
            assert "SimulatedAcquisition" in str(e), e
        else:
            raise SystemExit("TeledyneAcquisition should be missing")
        from vortex.io import DAQmxIO, DAQmxConfig, daqmx
        from vortex.io.daqmx import AnalogVoltageOutput, Edge
        import vortex.io.daqmx
        assert DAQmxIO is vortexgo.io.DAQmxIO and daqmx.DigitalOutput is vortexgo.daqmx.DigitalOutput
        assert AnalogVoltageOutput is vortexgo.daqmx.AnalogVoltageOutput and vortex.io.daqmx.Rising == Edge.Rising
        assert SimpleSlice(512).stop == 512
        c.uninstall()
        import sys
        assert "vortex" not in sys.modules and "vortex.engine" not in sys.modules
        try:
            import vortex
        except ImportError:
            print("ok")
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_missing_stand_ins_name_what_is_missing():
    r = _py("""
        import vortexgo.compat as c
        c.install()
        try:
            import vortex.teledyne
        except ImportError as e:
            print(e)
        import vortex.driver.alazar  # vortexgo drives AlazarTech digitizers (vortexgo.alazar)
    """)
    assert r.returncode == 0, r.stderr
    assert "vortex.teledyne" in r.stdout and "hardware" in r.stdout


def test_install_refuses_to_hide_a_real_vortex(tmp_path):
    fake = tmp_path / "vortex"
    fake.mkdir()
    (fake / "__init__.py").write_text("REAL = True\n")
    r = _py("""
        import vortexgo.compat as c
        try:
            c.install()
        except c.VortexInstalledError as e:
            print("refused:", e)
        import vortex
        assert vortex.REAL
        import warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            c.install(shadow=True)
        assert any("shadow" in str(x.message) for x in w)
        import vortex
        assert not hasattr(vortex, "REAL") and vortex.__vortexgo__
        print("shadowed")
    """, extra_path=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "refused:" in r.stdout and str(fake) in r.stdout and "shadowed" in r.stdout


@pytest.mark.timeout(120)
def test_vortex_benchmark_script_runs_under_vortex_names():
    # bench/vortex_peer.py --impl vortex imports `vortex`; with the names installed it runs vortexgo.
    r = _py(f"""
        import sys, runpy
        import vortexgo.compat as c
        c.install()
        sys.argv = ["vortex_peer.py", "--impl", "vortex", "--cpu", "--json", "--runs", "1", "--samples", "64",
                    "--ascans-per-bscan", "32", "--bscans", "8", "--records-per-block", "128", "--blocks", "8",
                    "--preload", "4", "--ascans", "1536"]
        runpy.run_path({str(ROOT / 'bench' / 'vortex_peer.py')!r}, run_name="__main__")
    """)
    assert r.returncode == 0, r.stderr[-2000:]
    assert '"impl": "vortex"' in r.stdout


def test_namespace_submodules_import_as_modules():
    """`import vortex.scan.warp` (and .limits, .inactive_policy, vortex.engine.source) works as vortex's
    does, giving the same names as `from vortex.scan import warp`; a name vortexgo lacks still fails."""
    r = _py("""
        import vortexgo.compat as c, vortexgo.scan, vortexgo.source
        c.install()
        import vortex.scan.warp, vortex.scan.limits, vortex.scan.inactive_policy, vortex.engine.source
        from vortex.scan import warp
        assert vortex.scan.warp.Angular is vortexgo.scan.Angular is warp.Angular
        assert vortex.scan.limits.ScannerMax_Saturn_5B is vortexgo.scan.limits.ScannerMax_Saturn_5B
        assert vortex.scan.inactive_policy.FixedLinear is vortexgo.scan.inactive_policy.FixedLinear
        assert repr(vortex.engine.source.Axsun100k) == repr(vortexgo.source.source.Axsun100k)  # made anew per access
        names = lambda m: sorted(n for n in dir(m) if not n.startswith("_"))
        assert names(vortex.scan.warp) == ["Angular", "NoWarp", "Telecentric"], names(vortex.scan.warp)
        assert names(vortex.engine.source) == ["Axsun100k", "Axsun200k", "ThorlabsVCSEL400k"]
        try:
            import vortex.scan.nowhere
        except ImportError:
            pass
        else:
            raise SystemExit("vortex.scan.nowhere imported")
        print("ok")
    """)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr


def test_block_has_vortexs_fields():
    """vortex.engine.Block(): the identity fields read-write with vortex's defaults, the streams
    read-only and empty, StreamIndex's values (issue 28)."""
    import datetime

    from vortexgo.compat import Block
    from vortexgo.marker import MarkerList

    b = Block()
    assert (b.id, b.sample, b.length) == (0, 0, 0) and b.timestamp == datetime.datetime(1970, 1, 1)
    assert isinstance(b.markers, MarkerList) and len(b.markers) == 0
    b.id, b.sample, b.length = 3, 1024, 256
    assert (b.id, b.sample, b.length) == (3, 1024, 256)
    assert b.counter.shape == [] and b.counter.dtype == "uint64"
    for name in ("sample_target", "galvo_actual", "sample_actual"):
        t = getattr(b, name)
        assert t.shape == [] and t.dtype == "float64" and getattr(b, name) is t
    assert b.galvo_target == {} and b.strobes == {}
    for name in ("counter", "galvo_target", "sample_target", "galvo_actual", "sample_actual", "strobes"):
        with pytest.raises(AttributeError):
            setattr(b, name, None)
    with pytest.raises(AttributeError):
        b.not_a_field = 1
    assert int(Block.StreamIndex.Strobes) == 5
