"""``python -m vortexgo``: the command line a new user runs first (info, demo, bench)."""

from __future__ import annotations

import os
import re
import subprocess
import textwrap
import sys
from pathlib import Path

import numpy as np
import pytest

import vortexgo as vg
from vortexgo import cli

from conftest import DEVICES

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(300)


def _run(*args: str, env: dict | None = None, cwd: str | None = None) -> subprocess.CompletedProcess:
    e = dict(os.environ, **(env or {}))
    e["PYTHONPATH"] = os.path.dirname(os.path.dirname(vg.__file__))  # the package under test
    return subprocess.run([sys.executable, "-m", "vortexgo", *args], capture_output=True, text=True,
                          env=e, cwd=cwd, timeout=240)


def test_info_names_devices_and_what_is_missing():
    r = _run("info")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "device       cpu:" in out and "C fast path" in out
    if vg.is_cuda_available():
        assert "device       cuda:0:" in out
        assert "cuFFT        ok" in out, out
    else:
        assert "CUDA         unavailable: " in out and "cuFFT        not checked" in out


def test_unknown_command_is_refused_with_usage():
    r = _run("frobnicate")
    assert r.returncode == 2 and "invalid choice" in r.stderr
    for cmd in ("info", "demo", "bench"):
        assert cmd in r.stderr


def test_bare_command_prints_help_and_version_is_given():
    r = _run()
    assert r.returncode == 0 and "usage: python -m vortexgo" in r.stdout, r.stderr
    for cmd in ("info", "demo", "bench", "run"):
        assert cmd in r.stdout
    r = _run("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"vortexgo {vg.__version__}"


@pytest.mark.parametrize("device", DEVICES)
def test_demo_writes_a_visible_mip_a_bscan_and_the_volumes(device, tmp_path):
    out = tmp_path / "o"
    r = _run("demo", "--device", device, "--out", str(out), "--volumes", "2", "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    s, a, b, _ = cli.DEMO_GPU if device.startswith("cuda") else cli.DEMO_CPU
    assert f"writing to   {out}" in r.stdout and "M A-scans/s" in r.stdout
    proc = next(line for line in r.stdout.splitlines() if line.startswith("processor"))
    assert "closed" not in proc and "samples" in proc, proc  # described while it runs, not after its close
    for name in ("mip.png", "bscan.png", "volumes.npy"):
        assert str(out / name) in r.stdout, f"the output names {name}"
    vols = np.load(out / "volumes.npy")
    assert vols.shape == (2, b, a, s // 2, 1) and vols.dtype == np.int8
    from PIL import Image

    for name in ("mip.png", "bscan.png"):
        img = np.asarray(Image.open(out / name))
        assert img.shape == (512, 512), f"{name}: a size a person can see, whatever the volume's"
        assert img.std() > 20, f"{name} shows structure, not a flat field"
    # The MIP is the stored last volume's, so the file and the picture agree.
    mip, _ = cli.enface_images(vols[-1])
    np.testing.assert_array_equal(np.asarray(mip), np.asarray(Image.open(out / "mip.png")))


def test_demo_default_output_is_named_and_outside_the_current_folder(tmp_path):
    data, cwd = tmp_path / "data", tmp_path / "cwd"
    cwd.mkdir()
    r = _run("demo", "--device", "cpu", "--volumes", "1", "--no-progress",
             env={"XDG_DATA_HOME": str(data)}, cwd=str(cwd))
    assert r.returncode == 0, r.stdout + r.stderr
    where = data / "vortexgo" / "demo"
    assert f"writing to   {where}" in r.stdout
    assert (where / "mip.png").is_file() and list(cwd.iterdir()) == []


@pytest.mark.parametrize("progress", [False, True], ids=["no-progress", "progress"])
def test_demo_counts_the_progress_bar_only_when_it_drew_one(progress, tmp_path):
    """The throughput line says what it includes: the progress bar only where one was drawn
    (not with --no-progress, nor without tqdm, where the demo says so)."""
    r = _run("demo", "--device", "cpu", "--volumes", "1", "--out", str(tmp_path),
             *([] if progress else ["--no-progress"]))
    assert r.returncode == 0, r.stdout + r.stderr
    drawn = progress and "(no progress bar: pip install tqdm)" not in r.stdout
    if progress:
        try:
            import tqdm  # noqa: F401
        except ImportError:
            assert not drawn
        else:
            assert drawn, r.stdout
    line = next(ln for ln in r.stdout.splitlines() if "with every volume written to disk" in ln)
    assert ("progress bar" in line) == drawn, line


def test_default_out_dir_per_platform(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert cli.default_out_dir("bench") == str(tmp_path / "vortexgo" / "bench")
    monkeypatch.delenv("XDG_DATA_HOME")
    assert cli.default_out_dir().endswith(os.path.join(".local", "share", "vortexgo", "demo"))
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path))
    assert cli.default_out_dir() == str(tmp_path / "vortexgo" / "demo")
    monkeypatch.setattr(sys, "platform", "darwin")
    assert "Application Support" in cli.default_out_dir()


@pytest.mark.parametrize("args, words", [
    (("demo", "--device", "tpu:0", "--volumes", "1"), "device"),
    (("demo", "--device", "cpu", "--volumes", "0"), "volumes"),
    (("bench", "--device", "nonsense"), "device"),
])
def test_bad_arguments_exit_1_naming_them(args, words, tmp_path):
    r = _run(*args, "--out", str(tmp_path)) if args[0] == "demo" else _run(*args)
    assert r.returncode == 1, r.stdout + r.stderr
    assert words in r.stderr and "Traceback" not in r.stderr


def _run_without_pillow(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """The CLI in a process where `import PIL` fails, as in a venv with the
    bare wheel (no [demo])."""
    hide = tmp_path / "hide"
    (hide / "PIL").mkdir(parents=True, exist_ok=True)
    (hide / "PIL" / "__init__.py").write_text("raise ImportError('No module named PIL (hidden by the test)')\n")
    e = dict(os.environ, PYTHONPATH=os.pathsep.join([str(hide), os.path.dirname(os.path.dirname(vg.__file__))]))
    return subprocess.run([sys.executable, "-m", "vortexgo", *args], capture_output=True, text=True,
                          env=e, timeout=240)


def test_demo_without_pillow_names_the_demo_extra_after_the_device_check(tmp_path):
    """A bad device is reported as such even without Pillow; with a good device
    the missing Pillow is named with the extra that brings it, before any work."""
    out = tmp_path / "out"
    r = _run_without_pillow(tmp_path, "demo", "--device", "tpu:0", "--out", str(out))
    assert r.returncode == 1 and "device" in r.stderr and "Pillow" not in r.stderr, r.stderr
    r = _run_without_pillow(tmp_path, "demo", "--device", "cpu", "--volumes", "1", "--out", str(out))
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert "Pillow" in r.stderr and "pip install 'vortexgo[demo]'" in r.stderr, r.stderr
    assert not out.exists(), "nothing is written before the check"


def test_an_output_folder_that_is_a_file_is_named(tmp_path):
    f = tmp_path / "taken"
    f.write_text("mine")
    r = _run("demo", "--device", "cpu", "--volumes", "1", "--out", str(f))
    assert r.returncode == 1 and str(f) in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert f.read_text() == "mine", "nothing of the user's is overwritten"


@pytest.mark.parametrize("device", DEVICES)
def test_bench_prints_a_table_of_positive_figures(device):
    r = _run("bench", "--device", device, "--quick")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"vortexgo bench on {vg.get_device(device).name}" in r.stdout
    rows = [line for line in r.stdout.splitlines() if line.startswith("| ") and "---" not in line][1:]
    names = [row.split("|")[1].strip() for row in rows]
    assert names == ["engine end to end", "engine end to end, raw input", "copy host -> device",
                     "copy device -> host", "scale_offset kernel", "event record", "event query",
                     "stream synchronize"]
    for row in rows:
        value = float(row.split("|")[2])
        assert value > 0 and np.isfinite(value), row


def test_enface_images_sizes_and_bad_shapes():
    rng = np.random.default_rng(0)
    vol = rng.integers(-128, 127, (8, 16, 32, 1), dtype=np.int8)
    mip, bscan = cli.enface_images(vol, size=64)
    assert mip.size == (64, 64) and bscan.size == (64, 64)
    with pytest.raises(ValueError, match="volume shape"):
        cli.enface_images(vol[0, 0])


def test_make_demo_runs_the_cli():
    """`make demo` is the README's first command: it must run this demo."""
    if not (ROOT / "Makefile").is_file():
        pytest.skip("not a source tree (the tests run against an installed wheel)")
    text = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^demo:.*\n((?:\t.*\n)+)", text, flags=re.M)
    assert recipe and "-m vortexgo demo" in recipe.group(1)


def test_ctrl_c_stops_the_demo_cleanly_and_keeps_a_readable_file(tmp_path):
    """Ctrl-C mid-run: exit 130 without a traceback, the engine stopped and the
    storage closed, so the volumes file reads back (completed volumes kept)."""
    import signal
    import time

    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(vg.__file__)))
    p = subprocess.Popen([sys.executable, "-m", "vortexgo", "demo", "--device", "cpu", "--volumes", "1000",
                          "--no-progress", "--out", str(tmp_path)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    try:
        head = p.stdout.readline() + p.stdout.readline()
        assert "writing to" in head
        time.sleep(3)  # prepared (or nearly) and acquiring
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
        out = head + out
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, out + err
    assert "interrupted" in err and "Traceback" not in err, err
    assert "4.19 GB in volumes.npy)  -- a large file" in out, out  # said before writing it
    vols = np.load(tmp_path / "volumes.npy")
    assert vols.ndim == 5 and vols.shape[1:] == (128, 128, 256, 1)
    # It says how many volumes are complete, and those are in the file; the next is the padded one.
    m = re.search(r"interrupted  after (\d+) complete volumes? of 1000", out)
    assert m, out
    done = int(m.group(1))
    assert vols.shape[0] in (done, done + 1) and all(vols[i].any() for i in range(done))
    if vols.shape[0] == done + 1:
        assert "partial, zero-padded" in out
    # ... and the pictures of the last complete one, as a finished run writes them.
    assert (tmp_path / "mip.png").exists() == (done > 0) == (tmp_path / "bscan.png").exists()


def test_demo_refuses_a_file_larger_than_the_disk(tmp_path):
    """--volumes is bounded by the free space before anything is written."""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(vg.__file__)))
    p = subprocess.run([sys.executable, "-m", "vortexgo", "demo", "--device", "cpu", "--volumes", str(1 << 20),
                        "--no-progress", "--out", str(tmp_path)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 1 and "GB free: ask for fewer volumes" in p.stderr, p.stdout + p.stderr
    assert not (tmp_path / "volumes.npy").exists()


def test_run_a_vortex_script(tmp_path):
    """`python -m vortexgo run script.py` runs a vortex script unchanged: `import vortex`
    imports vortexgo, the script gets its own argv, and its exit status is returned."""
    script = tmp_path / "vortex_script.py"
    script.write_text(textwrap.dedent("""
        import sys
        import vortex
        from vortex.engine import Engine, EngineConfig
        from vortex.scan import RasterScanConfig
        print("engine", Engine.Event.Exit.value, "argv", sys.argv[1:], "vortexgo", vortex.__vortexgo__)
        sys.exit(3)
    """))
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(vg.__file__)))  # the package under test
    p = subprocess.run([sys.executable, "-m", "vortexgo", "run", str(script), "--volumes", "2"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 3, p.stdout + p.stderr
    assert "engine 6 argv ['--volumes', '2'] vortexgo True" in p.stdout
    p = subprocess.run([sys.executable, "-m", "vortexgo", "run", str(tmp_path / "missing.py")], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "is not a file" in p.stderr


def test_examples_are_copied_out_and_never_overwrite(tmp_path):
    """`python -m vortexgo examples DIR`: a wheel user gets the examples and the notebook without the
    repository (setup.py puts them in the wheel; a source tree serves its examples/)."""
    if cli.examples_dir() is None:
        pytest.skip("this installation carries no examples")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(vg.__file__)))
    dest = tmp_path / "ex"
    dest.mkdir()
    (dest / "acquire.py").write_text("# mine\n")
    p = subprocess.run([sys.executable, "-m", "vortexgo", "examples", str(dest)], env=env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "kept your acquire.py" in p.stdout and "jupyter lab acquire.ipynb" in p.stdout
    assert (dest / "acquire.py").read_text() == "# mine\n"  # never overwritten
    names = {f.name for f in dest.iterdir()}
    assert {"acquire.ipynb", "scan_patterns.py", "user_buffering.py"} <= names
    assert not (dest / "__pycache__").exists()


def test_the_wheel_build_carries_the_examples():
    """setup.py's build_py copies examples/*.py and *.ipynb into the package (what the wheel holds)."""
    text = (ROOT / "setup.py").read_text() if (ROOT / "setup.py").is_file() else ""
    if not text:
        pytest.skip("not a source tree")
    assert '"vortexgo" / "examples"' in text and 'f.suffix in (".py", ".ipynb")' in text
    assert "include examples/*.py examples/*.ipynb" in (ROOT / "MANIFEST.in").read_text()  # the sdist too
