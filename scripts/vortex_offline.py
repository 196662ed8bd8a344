#!/usr/bin/env python3
"""Run vortex 0.5.1's own offline test suite against vortexgo or against real vortex.

The suite (``test/offline`` of vortex's sources: ../shared/vortex-reference, or
``$VORTEX_REFERENCE``) is never part of this repository: each run copies it into a
temporary folder, adds a ``conftest.py`` there and runs pytest on it in a subprocess.
Against vortexgo the conftest calls ``vortexgo.compat.install()``, so ``import vortex``
imports vortexgo; against real vortex it is empty and vortex's own interpreter runs
(``VORTEX_PYTHON``, ``VORTEX_SITE_DIR``, ``VORTEX_LD_LIBRARY_PATH``, or the folder
``scripts/vortex_oracle.sh`` makes; see tests_py/_vortex.py). Nothing else in the tests
changes. CuPy's tests run where CuPy imports (the GPU machine) and skip, as vortex's
suite itself says, where it does not.

Usage::

    PYTHONPATH=python .venv/bin/python scripts/vortex_offline.py --against vortexgo --json out.json
    .venv/bin/python scripts/vortex_offline.py --against vortex [-- -k processor]

It prints one line per test (outcome, node id, the first line of the failure or skip
message) and the counts; ``--json`` writes the same as one object
(``{"against", "suite", "counts", "tests": {nodeid: {"outcome", "message"}}, ...}``).
The exit status is 0 when pytest ran (whatever the outcomes), 2 when it could not.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests_py"))
import _vortex  # noqa: E402 - where real vortex is: one definition for the tests and this runner

if str(ROOT / "scripts") not in sys.path:
    sys.path.insert(0, str(ROOT / "scripts"))
from vortex_bind_reader import find_reference  # noqa: E402 - where vortex's sources are: one definition

OUTCOMES = ("passed", "failed", "error", "skipped")

CONFTEST = {
    "vortexgo": ('"""Added by vortexgo\'s scripts/vortex_offline.py: vortex\'s names import vortexgo."""\n'
                 "import vortexgo.compat\n\nvortexgo.compat.install()\n"),
    "vortex": '"""Added by vortexgo\'s scripts/vortex_offline.py: real vortex, nothing redirected."""\n',
}


def find_suite() -> Path | None:
    """vortex's ``test/offline`` folder: ``$VORTEX_REFERENCE/test/offline`` or ../shared beside the checkout."""
    ref = find_reference("test/offline/test_engine.py")
    return Path(ref) / "test" / "offline" if ref else None


def _pythonpath(*first: str) -> str:
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join(list(first) + [p for p in rest if p not in first])


def vortexgo_command() -> tuple[str, dict]:
    """This interpreter, with the vortexgo it imports (the checkout's python/ when none is on the path)."""
    spec = importlib.util.find_spec("vortexgo")
    where = str(Path(spec.origin).parent.parent) if spec and spec.origin else str(ROOT / "python")
    return sys.executable, dict(os.environ, PYTHONPATH=_pythonpath(where))


def vortex_command() -> tuple[str, dict]:
    """vortex's interpreter and environment; raises SystemExit naming what is missing."""
    if not _vortex.have_vortex():
        raise SystemExit(f"vortex_offline.py: {_vortex.WHY_NOT}")
    env = _vortex.vortex_env()
    # vortex's site first; the caller's path after it (vortex-oct-tools, imageio where carried).
    env["PYTHONPATH"] = _pythonpath(str(_vortex.VORTEX_SITE))
    return str(_vortex.VORTEX_PY), env


def _nodeid(case: ET.Element) -> str:
    """pytest's node id from a JUnit testcase (the suite's files are all top-level)."""
    parts = (case.get("classname") or "").split(".")
    name = case.get("name", "")
    if parts == [""]:  # a collection error: the name is the module's dotted path
        return name.replace(".", "/") + ".py"
    return "::".join([parts[0] + ".py", *parts[1:], name])


def parse_junit(path: Path) -> dict:
    """{nodeid: {"outcome", "message"}} from pytest's --junitxml report."""
    tests: dict = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome, message = "passed", ""
        for tag, name in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
            el = case.find(tag)
            if el is not None:
                outcome, message = name, (el.get("message") or (el.text or "")).strip()
                break
        nid = _nodeid(case)
        if nid in tests and tests[nid]["outcome"] != "passed":
            continue  # a teardown error after a failure: keep the first report
        tests[nid] = {"outcome": outcome, "message": message}
    return tests


def run(against: str, suite: Path, pytest_args: list[str], timeout: float) -> dict:
    """Copy the suite, add the conftest, run pytest on it; the outcomes as a dict."""
    python, env = vortexgo_command() if against == "vortexgo" else vortex_command()
    env = dict(env, PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1")
    with tempfile.TemporaryDirectory(prefix=f"vortex-offline-{against}-") as tmp:
        work = Path(tmp) / "offline"
        shutil.copytree(suite, work, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "conftest.py"))
        for f in work.rglob("*"):
            f.chmod(0o755 if f.is_dir() else 0o644)  # the reference is read-only; tests write beside it
        (work / "conftest.py").write_text(CONFTEST[against])
        report = Path(tmp) / "junit.xml"
        cmd = [python, "-m", "pytest", "-o", "addopts=", "-o", "junit_family=xunit2", "-p", "no:cacheprovider",
               "--rootdir", str(work), "--continue-on-collection-errors", "-q", "-rfEs",
               f"--junitxml={report}", *pytest_args]
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
            rc, out = p.returncode, p.stdout + p.stderr
        except subprocess.TimeoutExpired as exc:
            rc, out = None, f"timed out after {timeout:.0f} s\n{exc.stdout or ''}{exc.stderr or ''}"
        took = time.monotonic() - t0
        tests = parse_junit(report) if report.is_file() else {}
    counts = {k: sum(t["outcome"] == k for t in tests.values()) for k in OUTCOMES}
    summary = next((ln.strip() for ln in reversed(out.splitlines()) if " in " in ln and ("passed" in ln or "failed" in ln
                    or "skipped" in ln or "error" in ln or "no tests ran" in ln)), "")
    return {"against": against, "suite": str(suite), "python": python, "returncode": rc, "seconds": round(took, 1),
            "counts": counts, "pytest_summary": summary, "tests": dict(sorted(tests.items())),
            "output_tail": out[-6000:]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", choices=("vortexgo", "vortex"), required=True)
    ap.add_argument("--json", type=Path, help="write the outcomes here as JSON")
    ap.add_argument("--suite", type=Path, help="vortex's test/offline folder (default: found as described above)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds for the whole pytest run")
    ap.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    a = ap.parse_args(argv)
    suite = a.suite or find_suite()
    if suite is None or not suite.is_dir():
        print("vortex_offline.py: vortex's offline suite is not here (../shared/vortex-reference/test/offline "
              "beside the checkout, or $VORTEX_REFERENCE/test/offline)", file=sys.stderr)
        return 2
    res = run(a.against, suite, a.pytest_args, a.timeout)
    for nid, t in res["tests"].items():
        msg = t["message"].splitlines()[0][:160] if t["message"] else ""
        print(f"{t['outcome'].upper():8} {nid}" + (f"  -- {msg}" if msg else ""))
    c = res["counts"]
    print(f"vortex offline suite on {a.against}: " + ", ".join(f"{c[k]} {k}" for k in OUTCOMES)
          + f" ({sum(c.values())} in all, {res['seconds']} s; pytest: {res['pytest_summary'] or 'no summary'})")
    if a.json:
        a.json.write_text(json.dumps(res, indent=1) + "\n")
    if res["returncode"] not in (0, 1) or not res["tests"]:
        print(res["output_tail"], file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
