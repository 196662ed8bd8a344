"""Real vortex 0.5.1 as a live oracle for the differential tests (tests_py/test_oracle_*.py).

Each test module starts ONE vortex process (:class:`Oracle`, a module-scoped fixture) that
loads the module's vortex-side code and then answers requests on a pipe: one JSON line
in (a handler's name and its arguments), one JSON line out (its result, or the type and
message of the exception it raised). Hypothesis drives the inputs on our side and asks the
oracle for vortex's answer to each generated case, so a run pays for vortex's start once,
Hypothesis still shrinks a failing case, and vortexgo and vortex never share a process.

Arrays travel as ``.npy`` files in the oracle's work folder: the vortex side's ``save(a)``
returns a file name that ``Oracle.load`` reads, and the tests hand vortex inputs with
``Oracle.put(a)``. Where vortex is not installed the fixture skips with ``_vortex.WHY_NOT``.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _vortex import VORTEX_PY, WHY_NOT, have_vortex, vortex_env

TAG = "@@oracle@@ "

# The loop the vortex process runs: the module's handlers are exec'd into its globals.
_SERVER = r'''
import json, os, sys, traceback
import numpy as np
WORK = sys.argv[1]
_n = [0]
def save(a):
    """Write `a` to the work folder; the test side loads it by the returned name."""
    _n[0] += 1
    name = os.path.join(WORK, "v%06d.npy" % _n[0])
    np.save(name, np.asarray(a))
    return name
def load(name):
    return np.load(name)
exec(compile(open(sys.argv[2]).read(), "oracle_handlers", "exec"), globals())
out = sys.stdout
sys.stdout = sys.stderr  # vortex's own prints must not interleave with the replies
out.write("@@oracle@@ " + json.dumps({"ready": True}) + "\n"); out.flush()
for line in sys.stdin:
    req = json.loads(line)
    try:
        rep = {"ok": globals()[req["fn"]](**req["args"])}
    except Exception as e:
        rep = {"error": type(e).__name__, "message": str(e), "trace": traceback.format_exc()[-2000:]}
    out.write("@@oracle@@ " + json.dumps(rep) + "\n"); out.flush()
'''


class VortexRaised(Exception):
    """vortex's handler raised: ``kind`` is its exception's type name, ``message`` its text."""

    def __init__(self, kind: str, message: str, trace: str = "") -> None:
        super().__init__(f"{kind}: {message}")
        self.kind, self.message, self.trace = kind, message, trace


class Oracle:
    """One vortex process serving one test module's handlers (see the module docstring)."""

    def __init__(self, handlers: str, work: Path, timeout: float = 60) -> None:
        self.work = Path(work)
        self.timeout = timeout
        self._names = itertools.count()
        (self.work / "handlers.py").write_text(handlers)
        (self.work / "server.py").write_text(_SERVER)
        self._stderr = open(self.work / "stderr.txt", "w")
        self.proc = subprocess.Popen([str(VORTEX_PY), str(self.work / "server.py"), str(self.work),
                                      str(self.work / "handlers.py")], env=vortex_env(), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._stderr, text=True, bufsize=1)
        self._reply()  # the ready line: vortex imported and the handlers loaded

    def _reply(self) -> dict:
        end = time.monotonic() + self.timeout
        while True:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                raise AssertionError(f"vortex did not answer within {self.timeout} s\n{self.stderr()}")
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"vortex's process ended (rc {self.proc.poll()}):\n{self.stderr()}")
            if line.startswith(TAG):
                return json.loads(line[len(TAG):])

    def stderr(self) -> str:
        self._stderr.flush()
        return (self.work / "stderr.txt").read_text()[-4000:]

    def __call__(self, fn: str, **args: Any) -> Any:
        """vortex's ``fn(**args)``; raises :class:`VortexRaised` where vortex raised."""
        self.proc.stdin.write(json.dumps({"fn": fn, "args": args}) + "\n")
        self.proc.stdin.flush()
        rep = self._reply()
        if "error" in rep:
            raise VortexRaised(rep["error"], rep["message"], rep.get("trace", ""))
        return rep["ok"]

    def put(self, a: np.ndarray) -> str:
        """Save `a` for vortex; returns the name its handlers ``load``."""
        name = str(self.work / f"t{next(self._names):06d}.npy")
        np.save(name, a)
        return name

    def path(self, suffix: str = "") -> str:
        """A fresh file name in the work folder (for files vortex and vortexgo write)."""
        return str(self.work / f"f{next(self._names):06d}{suffix}")

    @staticmethod
    def load(name: str) -> np.ndarray:
        a = np.load(name)
        os.unlink(name)
        return a

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self._stderr.close()


def oracle_fixture(handlers: str):
    """A module-scoped pytest fixture serving `handlers` (vortex-side Python source)."""

    @pytest.fixture(scope="module")
    def oracle(tmp_path_factory):
        if not have_vortex():
            pytest.skip(WHY_NOT)
        o = Oracle(handlers, tmp_path_factory.mktemp("oracle"))
        yield o
        o.close()

    return oracle
