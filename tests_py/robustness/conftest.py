"""The robustness suite's plumbing: the harness module on sys.path, a
per-family summary at the end of the run, and (with ROBUST_REPORT=path) a
JSON report of every case's outcome for the README's failure table."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import harness  # noqa: E402


def pytest_collection_finish(session):
    # Only this suite's cases (objects with an id): other test files in the
    # same session parametrize a plain "case" string.
    harness.selected = [item.callspec.params["case"].id for item in session.items
                        if hasattr(item, "callspec") and hasattr(item.callspec.params.get("case"), "id")]


def pytest_sessionfinish(session, exitstatus):
    harness.shutdown()
    path = os.environ.get("ROBUST_REPORT")
    if not path:
        return
    rows = []
    for cid, (case, o, reason) in sorted(harness.outcomes().items()):
        rows.append({"id": cid, "family": cid.split("/")[0], "ok": not reason, "reason": reason,
                     "symptom": o.symptom(), "rc": o.rc, "seconds": round(o.seconds, 2), "issue": case.issue})
    Path(path).write_text(json.dumps(rows, indent=1))


def pytest_terminal_summary(terminalreporter):
    res = harness.outcomes()
    if not res:
        return
    fams: dict[str, list[int]] = {}
    for cid, (_, _, reason) in res.items():
        f = fams.setdefault(cid.split("/")[0], [0, 0])
        f[0 if not reason else 1] += 1
    terminalreporter.section("robustness cases per family (pass / fail)")
    for fam, (ok, bad) in sorted(fams.items()):
        terminalreporter.write_line(f"{fam:<14} {ok:>4} pass {bad:>4} fail")
