"""The crash report of the subprocess harness (tests_py/_subproc.py): a Go crash's cause stays in
the failure message however long the goroutine dump after it."""

from __future__ import annotations

from _subproc import Outcome


def test_a_long_go_crash_keeps_its_first_lines() -> None:
    dump = "".join(f"goroutine {i} [GC worker (idle)]:\nruntime.gopark(...)\n\n" for i in range(2000))
    err = "fatal error: unexpected signal during runtime execution\n[signal SIGSEGV: segmentation violation]\n" + dump
    o = Outcome(rc=-6, stdout="ok\n", stderr=err, seconds=1.0)
    assert o.symptom() == "crash (Go fatal error)"
    text = o.output()
    assert "fatal error: unexpected signal during runtime execution" in text
    assert "SIGSEGV" in text and text.rstrip().endswith("runtime.gopark(...)")


def test_a_short_or_clean_stderr_is_shown_once() -> None:
    o = Outcome(rc=1, stdout="", stderr="fatal error: all goroutines are asleep\n", seconds=0.1)
    assert o.output().count("all goroutines are asleep") == 1
    assert "first crash line" not in Outcome(rc=0, stdout="x", stderr="y" * 10000, seconds=0.1).output()
