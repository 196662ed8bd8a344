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
