"""vortex 0.5.1's own offline test suite on vortexgo, judged against real vortex on the same machine.

scripts/vortex_offline.py runs vortex's ``test/offline`` (never copied into this repository:
../shared/vortex-reference beside the checkout, or ``$VORTEX_REFERENCE``) unchanged but for a
conftest that calls ``vortexgo.compat.install()``, and the same folder under real vortex
(tests_py/_vortex.py says where it is). What the suite's CuPy tests need runs where CuPy imports
(the GPU machine); elsewhere they skip, on both, as vortex's suite says.

The rule: every test that passes on vortex passes on vortexgo, and one that vortex skips is not
a failure on vortexgo, except the tests tests_py/data/vortex_offline_known.json lists, each with
its reason (docs/vortex-compat.md's table "vortex's offline suite"). Each listed test must still
behave as listed on both, vortex included, so the list cannot outlive its reason.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from _vortex import WHY_NOT, have_vortex, vortex_imports

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import vortex_offline  # noqa: E402

SUITE = vortex_offline.find_suite()
KNOWN = json.loads((ROOT / "tests_py" / "data" / "vortex_offline_known.json").read_text())["tests"]
NO_SUITE = ("vortex's offline suite is not here (../shared/vortex-reference/test/offline beside the checkout, "
            "or $VORTEX_REFERENCE/test/offline)")
#: vortex 0.5.1's suite collects 458 tests (most parametrized); far fewer means it did not run.
PLAUSIBLE = 400
RANK = {"passed": 2, "skipped": 1, "failed": 0, "error": 0}

pytestmark = pytest.mark.timeout(1800)


@pytest.fixture(scope="module")
def on_vortexgo() -> dict:
    if SUITE is None:
        pytest.skip(NO_SUITE)
    return vortex_offline.run("vortexgo", SUITE, [], timeout=1500)


@pytest.fixture(scope="module")
def on_vortex() -> dict:
    if SUITE is None:
        pytest.skip(NO_SUITE)
    if not have_vortex() or not vortex_imports("vortex"):
        pytest.skip(WHY_NOT)
    return vortex_offline.run("vortex", SUITE, [], timeout=1500)


def test_counts(on_vortexgo, on_vortex, capsys):
    """Both runs' counts, side by side (printed for closing notes: pytest -s, or -rA's captured output)."""
    with capsys.disabled():
        for res in (on_vortexgo, on_vortex):
            print(f"\nvortex offline suite on {res['against']}: {res['counts']} ({res['pytest_summary']})")
    # Under pytest-xdist (the GPU machine's run_gpu_tests.sh) a worker's printout is lost: the
    # counts also go to $OUT, the folder the device tool brings back.
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "vortex_offline_counts.json").write_text(json.dumps(
            {r["against"]: {"counts": r["counts"], "summary": r["pytest_summary"]} for r in (on_vortexgo, on_vortex)},
            indent=1))
    assert on_vortexgo["counts"] and on_vortex["counts"]


def _summary(res: dict) -> str:
    return f"{res['against']}: {res['counts']} (pytest: {res['pytest_summary']!r})\n{res['output_tail'][-3000:]}"


def _plausible(res: dict) -> None:
    assert res["returncode"] in (0, 1), f"pytest did not complete: {_summary(res)}"
    assert len(res["tests"]) >= PLAUSIBLE, f"only {len(res['tests'])} tests: {_summary(res)}"
    broken = {k: v["message"][:300] for k, v in res["tests"].items() if "::" not in k}
    assert not broken, f"test files that did not import on {res['against']}: {broken}"


def _known(nodeid: str) -> dict | None:
    return next((k for k in KNOWN if re.fullmatch(k["test"], nodeid)), None)


def test_the_suite_runs_on_vortexgo(on_vortexgo):
    """Every file of vortex's suite imports through vortexgo.compat and the suite collects its tests."""
    _plausible(on_vortexgo)


def test_the_suite_runs_on_vortex(on_vortex):
    """The oracle's own run: every file imports, and vortex fails only what the list says it fails."""
    _plausible(on_vortex)
    bad = {k: v["message"][:300] for k, v in on_vortex["tests"].items()
           if v["outcome"] in ("failed", "error") and (_known(k) or {}).get("vortex") != v["outcome"]}
    assert not bad, f"real vortex fails its own tests here: {bad}"


def test_vortexgo_passes_what_vortex_passes(on_vortexgo, on_vortex):
    """The same tests on both, and none doing worse on vortexgo (passed > skipped > failed) unless listed."""
    assert on_vortexgo["tests"].keys() == on_vortex["tests"].keys(), \
        f"different tests collected: {sorted(on_vortexgo['tests'].keys() ^ on_vortex['tests'].keys())[:20]}"
    worse = {}
    for nid, theirs in on_vortex["tests"].items():
        ours = on_vortexgo["tests"][nid]
        if RANK[ours["outcome"]] < RANK[theirs["outcome"]] and _known(nid) is None:
            worse[nid] = f"vortex {theirs['outcome']}, vortexgo {ours['outcome']}: {ours['message'][:200]}"
    assert not worse, f"{len(worse)} tests do worse on vortexgo than on vortex:\n" + \
        "\n".join(f"  {k}: {v}" for k, v in sorted(worse.items()))


def test_the_known_list_is_current(on_vortexgo, on_vortex):
    """Each listed test exists and still behaves as listed on vortexgo and on vortex (the reason shows on
    vortex too); each is in docs/vortex-compat.md's table."""
    docs = (ROOT / "docs" / "vortex-compat.md").read_text()
    for k in KNOWN:
        ids = [n for n in on_vortex["tests"] if re.fullmatch(k["test"], n)]
        assert ids, f"{k['test']!r} matches no test of vortex's suite: remove it from vortex_offline_known.json"
        # in the Markdown table, as written there: a | of the expression escaped
        assert k["test"].replace("|", "\\|") in docs, f"{k['test']!r} is not in docs/vortex-compat.md's table"
        for nid in ids:
            theirs, ours = on_vortex["tests"][nid], on_vortexgo["tests"][nid]
            if k.get("gpu_only") and theirs["outcome"] == ours["outcome"] == "skipped":
                continue  # a test of vortex's that needs CUDA: skipped on both here, checked on the GPU
            assert theirs["outcome"] == k["vortex"], \
                f"{nid}: vortex {theirs['outcome']} ({theirs['message'][:200]}), listed as {k['vortex']}"
            if "vortex_message" in k:
                assert re.search(k["vortex_message"], theirs["message"]), f"{nid}: vortex says {theirs['message'][:300]}"
            assert ours["outcome"] == k["vortexgo"], \
                f"{nid}: vortexgo {ours['outcome']} ({ours['message'][:200]}), listed as {k['vortexgo']}: " \
                "update or remove the entry"
            assert re.search(k["vortexgo_message"], ours["message"]), f"{nid}: vortexgo says {ours['message'][:300]}"


def test_junit_node_ids():
    """The runner's reading of pytest's JUnit report: node ids of module, class and collection-error cases."""
    import xml.etree.ElementTree as ET

    mk = lambda **a: ET.Element("testcase", a)  # noqa: E731
    assert vortex_offline._nodeid(mk(classname="test_engine", name="test_x[a-b]")) == "test_engine.py::test_x[a-b]"
    assert vortex_offline._nodeid(mk(classname="test_engine.TestK", name="test_y")) == "test_engine.py::TestK::test_y"
    assert vortex_offline._nodeid(mk(classname="", name="test_formatter")) == "test_formatter.py"
