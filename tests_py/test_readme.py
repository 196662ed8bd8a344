"""The README is a short front page that works as written: its commands exist and run, its
links resolve, and it stays short (one picture, one table). Its code blocks, like every
guide's, are also checked by test_docs_code.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
if not README.is_file():
    pytest.skip("not a source tree (the tests run against an installed wheel): no README.md", allow_module_level=True)


def _shell_lines() -> list[str]:
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.S):
        for line in block.splitlines():
            cmd = line.split("#", 1)[0].strip()
            if cmd:
                lines.append(cmd)
    return lines


def test_readme_is_a_short_front_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 90
    assert len(re.findall(r"!\[[^\]]+\]\(([^)]+)\)", text)) == 1, "one picture"
    assert len(re.findall(r"^\| --- \|", text, flags=re.M)) == 1, "one table"
    assert "```python" not in text, "code examples live in the guides (docs/first-acquisition.md)"


def test_readme_links_resolve():
    """Every relative link and the picture name a file of the repository."""
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text())
    local = [u for u in links if not re.match(r"^[a-z]+:", u)]
    assert len(local) >= 8
    for u in local:
        assert (ROOT / u).is_file(), u


def test_readme_make_targets_exist():
    """Every `make X` the README shows is a target of the Makefile (make demo, test, docs)."""
    makefile = (ROOT / "Makefile").read_text()
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
    assert {shlex.split(c)[3] for c in cmds} == {"info", "demo", "bench", "examples"}
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path),
               PYTHONPATH=str(Path(vg.__file__).resolve().parents[1]))
    for cmd in cmds:
        argv = [sys.executable] + shlex.split(cmd)[1:]
        r = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=500)
        assert r.returncode == 0, f"{cmd}\n{r.stdout}\n{r.stderr}"
    assert (tmp_path / "vortexgo" / "demo" / "mip.png").is_file(), "the demo wrote where the README says"
    assert (tmp_path / "vortexgo-examples" / "acquire.ipynb").is_file(), "examples copied where the README says"
