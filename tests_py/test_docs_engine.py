"""docs/engine.md's latency example runs as written (CPU backend here, a GPU on the device)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "engine.md"


@pytest.mark.timeout(300)
def test_latency_example_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    code = next(b for b in blocks if "record_callback_latency()" in b and "dispatch_spin=spin" in b)
    exec(compile(code, str(DOC), "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out] == ["dispatch_spin=None", "dispatch_spin=0.005"]
    assert all("p99" in line for line in out)
