"""The README's examples run as written: the ten-line example on every
backend, the engine example on a GPU with CuPy."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import HAS_CUPY

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_three_python_examples():
    assert len(_blocks()) == 3


def test_compat_example_runs():
    # In a subprocess: it installs vortex's module names for the process.
    import subprocess
    import sys

    code = _blocks()[2] + "\nprint(Engine.__module__)\n"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "vortexgo.engine"


def test_ten_line_example_runs(capsys):
    code = _blocks()[0]
    assert len(code.strip().splitlines()) <= 10
    exec(compile(code, "README.md", "exec"), {})
    assert "ms" in capsys.readouterr().out


@pytest.mark.timeout(600)
def test_engine_example_runs():
    """Unchanged on the CPU backend (numpy, CPUProcessor) and on a GPU with CuPy."""
    import vortexgo as vg
    if vg.is_cuda_available() and not HAS_CUPY:
        pytest.skip("a GPU without CuPy: the example uses CuPy there")
    ns: dict = {}
    exec(compile(_blocks()[1], "README.md", "exec"), ns)
    st = ns["engine"].status()
    assert st.volumes == 3 and st.blocks_dropped == 0 and st.error == "" and st.callback_errors == 0


def _shell_lines() -> list[str]:
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.S):
        for line in block.splitlines():
            cmd = line.split("#", 1)[0].strip()
            if cmd:
                lines.append(cmd)
    return lines


def test_readme_make_targets_exist():
    """Every `make X` the README shows is a target of the Makefile (make demo, test, docs)."""
    makefile = (README.parent / "Makefile").read_text()
    targets = {line.split()[1] for line in _shell_lines() if line.startswith("make ")}
    assert {"demo", "test"} <= targets
    for t in targets:
        assert re.search(rf"^{re.escape(t)}:", makefile, flags=re.M), f"make {t}"
    assert "make docs" in README.read_text()


@pytest.mark.timeout(600)
def test_readme_cli_commands_run_as_written(tmp_path):
    """The README's `python -m vortexgo ...` lines, as written, on this machine's
    device (the demo's default output folder redirected through XDG_DATA_HOME)."""
    import os
    import shlex
    import subprocess
    import sys

    import vortexgo as vg

    cmds = [line for line in _shell_lines() if line.startswith("python -m vortexgo ")]
    assert {shlex.split(c)[3] for c in cmds} == {"info", "demo", "bench"}
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path),
               PYTHONPATH=str(Path(vg.__file__).resolve().parents[1]))
    for cmd in cmds:
        argv = [sys.executable] + shlex.split(cmd)[1:]
        r = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=500)
        assert r.returncode == 0, f"{cmd}\n{r.stdout}\n{r.stderr}"
    assert (tmp_path / "vortexgo" / "demo" / "mip.png").is_file(), "the demo wrote where the README says"
