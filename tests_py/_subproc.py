"""Run a test case in a fresh interpreter: the one way every test file does it.

A case that could crash the interpreter (a SIGSEGV, a Go fatal error) or
hang runs in a child process, so a crash or a hang fails that case with the
child's output instead of ending the test run. The child imports the same
vortexgo package as this session (the source tree here, the carried build
on the GPU machine), runs in its own process group (killed whole at the
timeout) and prints Python stacks on a fatal signal (faulthandler).

- :func:`run`: run a snippet, fail the test unless it exits with the
  expected status in time; returns the :class:`Outcome`.
- :func:`spawn`: the same without judging (the robustness harness judges).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The folder holding the vortexgo package this session imported.
PYTHON_DIR = str(Path(importlib.util.find_spec("vortexgo").origin).resolve().parents[1])

# What a child started with a clean environment still needs: where its home
# and libraries are, and which driver and devices to use.
# VORTEXGO_ALLOW_MISUSE: make py-test-invariants sets it for every interpreter of the run.
_KEEP = ("HOME", "LD_LIBRARY_PATH", "VORTEXGO_CUDA_DRIVER", "CUDA_VISIBLE_DEVICES", "VORTEXGO_ALLOW_MISUSE")


@dataclass
class Outcome:
    """How a child process ended."""

    rc: Optional[int]  # None only if it could not be reaped
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    @property
    def returncode(self) -> Optional[int]:
        """subprocess.CompletedProcess's name for :attr:`rc`."""
        return self.rc

    def symptom(self) -> str:
        """A short label of how the child misbehaved ("" if it exited 0 in time)."""
        err = self.stderr
        if self.timed_out or "Timeout (0:" in err:
            return "hang"
        go = ("fatal error:" in err or "\npanic:" in err or err.startswith("panic:")
              or "unexpected fault address" in err or "unexpected signal during runtime execution" in err)
        if go and self.rc not in (0, None):
            return "crash (Go fatal error)" if "panic:" not in err else "crash (Go panic)"
        if self.rc is not None and self.rc < 0:
            try:
                return f"crash ({signal.Signals(-self.rc).name})"
            except ValueError:
                return f"crash (signal {-self.rc})"
        if "Fatal Python error" in err:
            return "crash (Python fatal error)"
        if self.rc not in (0, None):
            return f"exit status {self.rc}"
        return ""

    def output(self, n: int = 4000) -> str:
        """The tails of stdout and stderr, for a failure message; for a crash, also the head of
        stderr from its first crash line (Go's "fatal error:", "panic:" or signal line and the
        goroutine that crashed), which a long goroutine dump would push out of the tail."""
        head = ""
        err = self.stderr
        if len(err) > n:
            marks = [i for i in (err.find("fatal error:"), err.find("panic:"), err.find("SIGSEGV"),
                                 err.find("unexpected signal"), err.find("Fatal Python error")) if i >= 0]
            if marks:
                at = min(marks)
                head = f"--- stderr from its first crash line\n{err[at:at + n]}\n"
        return f"--- stdout\n{_tail(self.stdout, n // 2)}\n{head}--- stderr\n{_tail(err, n)}"


def _tail(s: str, n: int) -> str:
    return s if len(s) <= n else "..." + s[-n:]


def child_env(extra: Optional[Mapping[str, str]] = None, *, inherit: bool = True) -> dict:
    """The child's environment: this one (or, with inherit=False, only PATH
    and the few variables in _KEEP) with PYTHON_DIR first on PYTHONPATH,
    faulthandler on, then `extra`."""
    if inherit:
        env = dict(os.environ)
        env["PYTHONPATH"] = PYTHON_DIR + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    else:
        env = {"PYTHONPATH": PYTHON_DIR, "PATH": "/usr/bin:/bin"}
        env.update({k: os.environ[k] for k in _KEEP if k in os.environ})
    env.setdefault("PYTHONFAULTHANDLER", "1")
    env.update(extra or {})
    return env


def spawn(script: str, *, timeout: float, env: Optional[Mapping[str, str]] = None,
          cwd: Optional[str] = None) -> Outcome:
    """Run `script` with this interpreter; at `timeout` seconds kill its
    whole process group (a child's own children too) and report a timeout."""
    t0 = time.monotonic()
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(env) if env is not None else child_env(), cwd=cwd or str(ROOT),
                         start_new_session=True, text=True, errors="replace")
    timed_out = False
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
    return Outcome(p.returncode, out, err, time.monotonic() - t0, timed_out)


def run(code: str, *, prelude: str = "", timeout: float = 120, rc: int = 0,
        env: Optional[Mapping[str, str]] = None, inherit_env: bool = True) -> Outcome:
    """Run `prelude` + dedented `code` in a fresh interpreter (see child_env
    for `env` and `inherit_env`); fail the test if it does not exit with
    status `rc` within `timeout` seconds (a hang, a crash by signal, a Go
    fatal error), with the child's output."""
    o = spawn(prelude + textwrap.dedent(code), timeout=timeout, env=child_env(env, inherit=inherit_env))
    if o.timed_out:
        pytest.fail(f"the case hung (no exit within {timeout} s)\n{o.output()}")
    if o.rc != rc:
        pytest.fail(f"exit status {o.rc}, expected {rc} ({o.symptom() or 'no symptom'})\n{o.output()}")
    return o
