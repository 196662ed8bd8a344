"""The harness judges outcomes correctly: a crash, a Go-style fatal error, a
hang, a wrong class, a message not naming the argument, a wrong value and an
error-free run of a case that expects an error all fail, each with its
symptom; the right error and the right value pass. (These run directly, not
through the pool.)"""

from __future__ import annotations

import pytest

import harness
from harness import Case

CASES = [
    # (case, expected judgement prefix; "" means pass)
    (Case("h/right_error", "raise vg.ClosedError('stream closed')", raises="ClosedError", words=("closed",)), ""),
    (Case("h/subclass", "raise vg.ClosedError('x')", raises="ValueError"), ""),
    (Case("h/either", "raise MemoryError('shape too big')", raises="ValueError|MemoryError", words=("SHAPE",)), ""),
    (Case("h/go_spelling", "raise ValueError('Config.SamplesPerRecord=1')", raises="ValueError",
          words=("samples_per_record",)), ""),
    (Case("h/value", "print(1 + 1)", prints="2"), ""),
    (Case("h/expect_ok", "expect('x', lambda: vg.Stream('cpu', priority='a'), 'TypeError', 'priority'); report()",
          prints="ok"), ""),
    (Case("h/expect_none_ok", "expect('x', lambda: 1, 'ValueError|none'); report()", prints="ok"), ""),
    (Case("h/wrong_class", "raise OverflowError('int too big to convert')", raises="ValueError"), "wrong error"),
    (Case("h/unnamed", "raise ValueError('int too big')", raises="ValueError", words=("shape",)), "unhelpful message"),
    (Case("h/no_error", "pass", raises="ClosedError"), "no error"),
    (Case("h/wrong_value", "print(3)", prints="2"), "wrong value"),
    (Case("h/expect_bad", "expect('x', lambda: 1, 'ValueError'); report()", prints="ok"), "wrong value"),
    (Case("h/unexpected", "raise KeyError('k')", prints="ok"), "unexpected error"),
    (Case("h/segv", "import ctypes; ctypes.string_at(0)", prints="ok"), "crash (SIGSEGV)"),
    (Case("h/abort_with_go_text", "sys.stderr.write('fatal error: unexpected signal\\n'); sys.stderr.flush(); os.abort()",
          prints="ok"), "crash (Go fatal error)"),
    # 12 s, not 4: the result line must come out before the hang watchdog
    # (timeout - 1.5 s), and importing vortexgo on a loaded 2-core machine
    # took longer than 2.5 s once. The sleeps (60 s) stay far beyond it.
    (Case("h/hang", "time.sleep(60)", prints="ok", timeout=12), "hang"),
    (Case("h/exit_hang", "threading.Thread(target=time.sleep, args=(60,)).start(); print('ok')", prints="ok",
          timeout=12), "hang after the case ran"),
    (Case("h/sys_exit", "sys.exit(0)", prints="ok"), "unexpected error: SystemExit"),
]


@pytest.mark.parametrize("case,want", [pytest.param(c, w, id=c.id) for c, w in CASES])
def test_judgement(case: Case, want: str) -> None:
    o = harness._run(case)
    got = harness.judge(case, o)
    if want:
        assert got.startswith(want), f"{case.id}: judged {got!r}, expected {want!r}"
    else:
        assert got == "", f"{case.id}: judged {got!r}, expected a pass\n{o.stderr[-1500:]}"


def test_a_hang_shows_go_stacks() -> None:
    """A case that hangs with the Go core running shows Go's goroutines (VORTEXGO_HANG_STACKS,
    set by the harness a second before faulthandler fires), apart from Python's tail."""
    case = Case("h/go_hang", harness.RIG + "eng, acq, proc = started([vg.NullEndpoint()])\neng.wait()\n",
                prints="ok", timeout=12)
    o = harness._run(case)
    assert harness.judge(case, o).startswith("hang")
    assert "vortexgo: goroutine stacks" in o.stderr, o.stderr[-1500:]
    assert "engine.(*Engine)." in o.stderr, o.stderr[-3000:]  # the running engine's stages
