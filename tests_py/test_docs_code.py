"""Every code block of the README and the guides (docs/*.md) works as written.

Python blocks run: each page's blocks in order, in one fresh interpreter per page (a page
is a walk-through: later blocks use what earlier ones made), in a temporary folder, on
this machine's device. A block that cannot run here is marked in the Markdown by a
comment on the line before its fence, which neither GitHub nor the site shows:

    <!-- skip: needs a GPU and CuPy -->

The reason is required. A block whose reason starts with "needs a GPU" runs where a GPU
and CuPy are present (the GPU machine), and is skipped elsewhere. A fragment that uses
names the page made elsewhere (or leaves for the reader to make) gets them from a hidden
setup comment in the same place, run just before it:

    <!-- setup: the endpoint of the engine guide's example
    endpoint = vg.StackDeviceTensorEndpointInt8()
    -->

(the first line says what it stands for; the lines after it are Python). A block with an
``if __name__ == "__main__":`` guard is a script of its own (multiprocessing's spawn
re-imports it) and runs as a file, in a process of its own.

Shell blocks are commands a user types: they are not run (they install packages, build
wheels, acquire from hardware), but what they name must exist: `make` targets in the
Makefile, `python -m vortexgo` subcommands in the CLI, extras in pyproject.toml, scripts
and examples in the repository.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import pytest

ROOT = Path(__file__).resolve().parents[1]
if not (ROOT / "README.md").is_file() or not (ROOT / "docs").is_dir():
    pytest.skip("not a source tree (the tests run against an installed wheel): no README.md and docs/",
                allow_module_level=True)
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))

_FENCE = re.compile(r"^(?P<fence>```+)(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S)
_COMMENT = re.compile(r"<!--\s*(?P<kind>skip|setup):(?P<text>(?:(?!<!--).)*?)-->\s*$", re.S)
SHELL_LANGS = {"bash", "sh", "shell", "console"}
GPU_REASON = "needs a GPU"
# A block of a page about an optional extra runs where the extra is installed (CI installs it).
EXTRA_REASONS = {"needs the [distributed] extra": ("dask", "distributed", "zarr")}


@dataclass
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int  # of the opening fence, from 1
    lang: str
    code: str
    skip: Optional[str]  # the reason given in the page's skip comment, None when it runs
    setup: str = ""  # the hidden setup comment's code, run before the block

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> List[Block]:
    """The fenced blocks of a page, with the skip reason written before each."""
    text = page.read_text()
    out = []
    for m in _FENCE.finditer(text):
        if m.group("info").strip().startswith("{"):
            continue  # a MyST directive (toctree, note): not code
        c = _COMMENT.search(text[:m.start()].rstrip("\n"))
        kind, said = (c.group("kind"), c.group("text")) if c else ("", "")
        setup = said.split("\n", 1)[1] if kind == "setup" and "\n" in said else ""
        out.append(Block(page, text.count("\n", 0, m.start()) + 1, m.group("info").strip().split(" ")[0],
                         m.group("body"), said.strip() if kind == "skip" else None, setup))
    return out


def _gpu_with_cupy() -> bool:
    import importlib.util

    import vortexgo as vg

    return vg.is_cuda_available() and importlib.util.find_spec("cupy") is not None


def _runs_here(b: Block, gpu: bool) -> bool:
    import importlib.util

    if b.skip is None or (gpu and b.skip.startswith(GPU_REASON)):
        return True
    return any(b.skip.startswith(r) and all(importlib.util.find_spec(m) for m in mods)
               for r, mods in EXTRA_REASONS.items())


def _python_pages() -> List[Path]:
    return [p for p in PAGES if any(b.lang == "python" for b in blocks(p))]


# One namespace for a page's blocks; each compiled under its own "page:line" so a
# traceback names the block.
_RUNNER = """
import json, subprocess, sys, traceback
blocks = json.load(open(sys.argv[1]))
ns = {"__name__": "__main__"}
for i, (where, setup, code) in enumerate(blocks):
    print(f"--- {where}", flush=True)
    try:
        if setup:
            exec(compile(setup, where + " (setup)", "exec"), ns)
        if 'if __name__ == "__main__":' in code:
            path = f"block{i}.py"
            open(path, "w").write(f"# {where}\\n" + code)
            subprocess.run([sys.executable, path], check=True, timeout=300)
            continue
        exec(compile(code, where, "exec"), ns)
    except BaseException:
        traceback.print_exc()
        print(f"FAILED {where}", flush=True)
        sys.exit(1)
"""


@pytest.mark.timeout(900)
@pytest.mark.parametrize("page", _python_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_run(page: Path, tmp_path: Path) -> None:
    import json

    import vortexgo as vg

    gpu = _gpu_with_cupy()
    todo = [b for b in blocks(page) if b.lang == "python" and _runs_here(b, gpu)]
    if not todo:
        pytest.skip(f"every Python block of {page.name} is marked: "
                    + "; ".join(sorted({b.skip or '' for b in blocks(page) if b.lang == 'python'})))
    (tmp_path / "blocks.json").write_text(json.dumps([[b.where, b.setup, b.code] for b in todo]))
    (tmp_path / "runner.py").write_text(_RUNNER)
    work = tmp_path / "cwd"
    work.mkdir()
    # The package under test first, then what the caller's path adds (the GPU machine's carried extras).
    path = os.pathsep.join(filter(None, [str(Path(vg.__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path, MPLBACKEND="Agg",
               XDG_DATA_HOME=str(tmp_path / "data"), HOME=os.environ.get("HOME", str(tmp_path)))
    r = subprocess.run([sys.executable, str(tmp_path / "runner.py"), str(tmp_path / "blocks.json")],
                       cwd=work, env=env, capture_output=True, text=True, timeout=850)
    assert r.returncode == 0, f"{page.name}: a block failed\n{r.stdout[-6000:]}\n{r.stderr[-6000:]}"
    assert r.stdout.count("--- ") == len(todo)


def test_every_skipped_block_names_a_reason() -> None:
    """A skip comment must say why; and most blocks run (the count is printed with -s)."""
    all_py = [b for p in PAGES for b in blocks(p) if b.lang == "python"]
    skipped = [b for b in all_py if b.skip is not None]
    for b in skipped:
        assert len(b.skip) >= 10, f"{b.where}: the skip comment needs a reason, e.g. '<!-- skip: needs a GPU -->'"
    print(f"\n{len(all_py)} Python blocks in {len(PAGES)} pages, {len(skipped)} skipped here: "
          + "; ".join(f"{b.where} ({b.skip})" for b in skipped))
    assert len(all_py) >= 30 and len(skipped) <= len(all_py) // 4


def test_skip_comment_is_seen(tmp_path: Path) -> None:
    """The parser reads the comment on the line before a fence, and only there."""
    page = tmp_path / "p.md"
    page.write_text("text\n\n<!-- skip: needs a GPU and CuPy -->\n```python\nimport cupy\n```\n\n"
                    "<!-- skip: far away -->\n\ntext\n\n```python\nx = 1\n```\n\n```{toctree}\nindex\n```\n"
                    "<!-- setup: x from above\nx = 2\ny = 3\n-->\n```python\nprint(x + y)\n```\n")
    found = blocks(page)
    assert [(b.lang, b.skip, b.line, b.setup) for b in found] == [
        ("python", "needs a GPU and CuPy", 4, ""), ("python", None, 12, ""), ("python", None, 23, "x = 2\ny = 3\n")]


# --------------------------------------------------------------------- shell blocks


def _commands(b: Block) -> List[str]:
    """The commands of a shell block: comments dropped, "$ " prompts honoured (a console
    block's other lines are output), continuation lines joined."""
    cmds, prompt = [], b.lang == "console" or any(ln.startswith("$ ") for ln in b.code.splitlines())
    joined = b.code.replace("\\\n", " ")
    for ln in joined.splitlines():
        if prompt:
            if not ln.startswith("$ "):
                continue
            ln = ln[2:]
        ln = ln.split(" #", 1)[0].strip() if not ln.lstrip().startswith("#") else ""
        if ln:
            cmds.append(ln)
    return cmds


def _cli_subcommands() -> set:
    from vortexgo import cli

    r = subprocess.run([sys.executable, "-m", "vortexgo", "--help"], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(Path(cli.__file__).resolve().parents[1])))
    assert r.returncode == 0, r.stderr
    m = re.search(r"\{([a-z,-]+)\}", r.stdout)
    assert m, r.stdout
    return set(m.group(1).split(","))


def _extras() -> set:
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([a-z0-9_-]+)\s*=", section, flags=re.M))


def _shell_blocks() -> List[Block]:
    return [b for p in PAGES for b in blocks(p) if b.lang in SHELL_LANGS and b.skip is None]


def test_shell_commands_name_what_exists() -> None:
    """`make X`, `python -m vortexgo X`, `pip install "vortexgo[X]"`, `python path.py` and
    `bash path.sh` in the pages name targets, subcommands, extras and files that exist."""
    if not (ROOT / "Makefile").is_file():
        pytest.skip("not a source tree (the tests run against an installed wheel)")
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([A-Za-z0-9_.-]+):", makefile, flags=re.M))
    subs, extras = _cli_subcommands(), _extras()
    seen = {"make": 0, "cli": 0, "extra": 0, "file": 0}
    problems = []
    for b in _shell_blocks():
        for cmd in _commands(b):
            try:
                argv = shlex.split(cmd)
            except ValueError:
                continue
            while argv and re.match(r"^[A-Z_][A-Z0-9_]*=", argv[0]):  # VAR=value prefixes
                argv = argv[1:]
            if not argv:
                continue
            if argv[0] == "make":
                for t in (a for a in argv[1:] if not a.startswith("-") and "=" not in a):
                    seen["make"] += 1
                    if t not in targets:
                        problems.append(f"{b.where}: make {t}: no such target")
            elif argv[:3] == ["python", "-m", "vortexgo"] and len(argv) > 3 and not argv[3].startswith("-"):
                seen["cli"] += 1
                if argv[3] not in subs:
                    problems.append(f"{b.where}: python -m vortexgo {argv[3]}: no such subcommand ({sorted(subs)})")
            elif argv[0] in ("python", "python3", "bash") and len(argv) > 1 and re.match(r"^[\w./-]+\.(py|sh)$", argv[1]):
                path = argv[1]
                if "<" in path or path.startswith(("their_", "your_", "/")) or path.startswith("gpu-build/"):
                    continue  # a placeholder, or a file the GPU build makes
                seen["file"] += 1
                if not (ROOT / path).is_file():
                    problems.append(f"{b.where}: {path}: no such file")
            if argv[0] == "pip" or argv[:3] == ["python", "-m", "pip"]:
                for a in argv:
                    m = re.match(r"^vortexgo\[([a-z0-9_,-]+)\]$", a)
                    if m:
                        for e in m.group(1).split(","):
                            seen["extra"] += 1
                            if e not in extras:
                                problems.append(f"{b.where}: vortexgo[{e}]: no such extra ({sorted(extras)})")
    assert not problems, "\n".join(problems)
    assert seen["make"] >= 5 and seen["cli"] >= 5 and seen["extra"] >= 1, seen


def test_shell_parser_reads_prompts_and_comments() -> None:
    b = Block(ROOT, 1, "console", "$ make virtual   # the fake libraries\ngcc -O2 ...\n$ VAR=1 python -m vortexgo info\n", None)
    assert _commands(b) == ["make virtual", "VAR=1 python -m vortexgo info"]
    b = Block(ROOT, 1, "bash", "# a comment\nmake demo   # the main job\nmake \\\n  test\n", None)
    assert _commands(b) == ["make demo", "make    test"]
