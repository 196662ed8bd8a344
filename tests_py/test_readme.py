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


def test_readme_has_two_python_examples():
    assert len(_blocks()) == 2


def test_ten_line_example_runs(capsys):
    code = _blocks()[0]
    assert len(code.strip().splitlines()) <= 10
    exec(compile(code, "README.md", "exec"), {})
    assert "ms" in capsys.readouterr().out


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUPY, reason="needs CUDA and CuPy")
def test_engine_example_runs():
    ns: dict = {}
    exec(compile(_blocks()[1], "README.md", "exec"), ns)
    st = ns["engine"].status()
    assert st.volumes == 10 and st.blocks_dropped == 0 and st.error == "" and st.callback_errors == 0
