"""The API coverage of vortex's AlazarTech, NI-DAQmx, Teledyne ADQ and NI-IMAQ names through vortexgo.compat.

tests_py/data/vortex_driver_names.json lists every name vortex binds for its
Alazar and DAQmx drivers (modules vortex.acquire.alazar, vortex.io.daqmx,
vortex.io.alazar, their classes in vortex.acquire / vortex.io / vortex.engine /
vortex.memory, enum members, attributes and methods), extracted from vortex's
binding sources by scripts/vortex_driver_names.py. With
``vortexgo.compat.install()`` every one must resolve (100%), except the few
listed below with the reason; :func:`test_every_vortex_driver_name_resolves`
names the missing ones. Beyond resolving: the classes vortex constructs with
no arguments construct so here, and the keyword arguments and defaults of
vortex's constructors are vortexgo's.

When vortex's sources are present (../shared/vortex-reference, or
$VORTEX_REFERENCE), :func:`test_names_match_vortex_sources` regenerates the list
and compares; CI without them uses the stored list.

``python tests_py/test_driver_coverage.py`` prints the coverage figure.
"""

from __future__ import annotations

import enum
import importlib
import json
import sys
from pathlib import Path
from typing import Any, Iterator, NamedTuple, Optional

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data" / "vortex_driver_names.json"
NAMES = json.loads(DATA.read_text())

_GPU = ("vortex's ATS-GPU acquisition (VORTEX_ENABLE_ALAZAR_GPU) is not in vortex 0.5.1's released builds "
        "(doc/getting-started.rst lists their features: alazar, alazar_dac, no alazar_gpu) and its binding does "
        "not compile there (module/alazar.cpp calls bind_cuda_tensor with a module where bind/memory.hpp takes a "
        "class); the ATS-GPU library (ATS_GPU_Setup/PostBuffer/GetBuffer into CUDA memory) has no virtual "
        "stand-in to test against, and AlazarAcquisition into the engine's pinned blocks plus the engine's own "
        "upload covers it (vortex's doc says the two perform comparably)")

#: Names vortex binds that vortexgo leaves out on purpose, with the reason.
NOT_PROVIDED = {
    "vortex.engine._bind": "private: vortex's overload table its Engine calls to adapt a component (bind/engine.cpp); "
                           "vortexgo's engine adapts components itself, and no script calls it",
}


class Name(NamedTuple):
    """One listed name: ``module`` and, for a class's or enum's name, ``owner``."""

    qualname: str
    module: str
    owner: Optional[str]
    member: Optional[str]
    kind: str
    conditions: tuple


def listed(data: dict = NAMES) -> Iterator[Name]:
    """Every name of the list, modules first."""
    for mod, m in data["modules"].items():
        yield Name(mod, mod, None, None, "module", ())
        for kind in ("functions", "attributes"):
            for n, v in m[kind].items():
                yield Name(f"{mod}.{n}", mod, None, n, kind[:-1], tuple(v.get("conditions", ())))
        for n, e in m["enums"].items():
            cond = tuple(e.get("conditions", ()))
            yield Name(f"{mod}.{n}", mod, None, n, "enum", cond)
            for v in e["members"]:
                yield Name(f"{mod}.{n}.{v}", mod, n, v, "enum_member", cond)
                if e["export_values"]:
                    yield Name(f"{mod}.{v}", mod, None, v, "exported_enum_member", cond)
        for n, c in m["classes"].items():
            cond = tuple(c.get("conditions", ()))
            yield Name(f"{mod}.{n}", mod, None, n, "class", cond)
            for k, v in c["members"].items():
                yield Name(f"{mod}.{n}.{k}", mod, n, k, v["kind"], cond + tuple(v.get("conditions", ())))


def expected_missing(name: Name) -> Optional[str]:
    """Why ``name`` may be missing, or None when it must resolve."""
    if any("VORTEX_ENABLE_ALAZAR_GPU" in c for c in name.conditions):
        return _GPU
    if name.qualname in NOT_PROVIDED:
        return NOT_PROVIDED[name.qualname]
    return None


def _instance(cls: Any) -> Any:
    """A default instance of ``cls`` (None when it needs arguments)."""
    try:
        return cls()
    except Exception:  # noqa: BLE001 - a class vortex constructs with arguments only
        return None


_OBJECT_DEFAULTS = {"__eq__": object.__eq__, "__repr__": object.__repr__, "__init__": object.__init__}


def resolve(name: Name) -> Optional[str]:
    """None when ``name`` resolves through vortexgo.compat; else why not."""
    try:
        mod = importlib.import_module(name.module)
    except ImportError as e:
        return f"module: {e}"
    if name.kind == "module":
        return None
    if name.owner is None:
        return None if hasattr(mod, name.member) else f"no {name.member!r} in {name.module}"
    owner = getattr(mod, name.owner, None)
    if owner is None:
        return f"no {name.owner!r} in {name.module}"
    if name.kind == "enum_member":
        return None if name.member in getattr(owner, "__members__", {}) else f"no member {name.member}"
    if name.member in _OBJECT_DEFAULTS:
        own = getattr(owner, name.member, None)
        return None if own is not None and own is not _OBJECT_DEFAULTS[name.member] else f"{name.member} is object's"
    if hasattr(owner, name.member):
        return None
    obj = _instance(owner)
    if obj is not None and hasattr(obj, name.member):
        return None
    return f"{name.owner} has no {name.member!r}"


@pytest.fixture(scope="module")
def compat():
    """vortexgo.compat installed for this module's tests (uninstalled after)."""
    import vortexgo.compat as c

    if c._real_vortex() is not None:
        pytest.skip(f"a real vortex is importable ({c._real_vortex()}): install() would refuse")
    c.install()
    yield c
    c.uninstall()


def coverage() -> tuple[list[Name], dict, dict]:
    """(every name, the missing ones with why, the unexpectedly present expected-missing ones)."""
    names = list(listed())
    missing, present = {}, {}
    for n in names:
        why = resolve(n)
        if why is not None:
            missing[n] = why
        elif expected_missing(n) is not None and not any("ALAZAR_GPU" in c for c in n.conditions):
            present[n] = expected_missing(n)
    return names, missing, present


def test_every_vortex_driver_name_resolves(compat):
    names, missing, present = coverage()
    unexpected = {n.qualname: why for n, why in missing.items() if expected_missing(n) is None}
    assert not unexpected, f"{len(unexpected)} of vortex's driver names do not resolve:\n" + "\n".join(
        f"  {k}: {v}" for k, v in sorted(unexpected.items()))
    # An expected-missing name that now resolves: remove it from the lists above.
    assert not present, "these now resolve; remove them from the expected-missing lists: " + ", ".join(
        sorted(n.qualname for n in present))


def test_the_list_covers_the_driver_modules():
    """The list holds what the issue names (so a broken extraction cannot pass as 100%)."""
    q = {n.qualname for n in listed()}
    for must in ("vortex.acquire.alazar.Board.info", "vortex.acquire.alazar.enumerate", "vortex.acquire.alazar.Channel.P",
                 "vortex.acquire.alazar.InfoDsp.max_trigger_rate_per_fft_length", "vortex.acquire.AlazarConfig.validate",
                 "vortex.acquire.AlazarFFTConfig.spectral_filter", "vortex.io.daqmx.DAQmx.configure_sample_clock",
                 "vortex.io.daqmx.Rising", "vortex.io.DAQmxConfigClock.divisor", "vortex.io.DAQmxIO.stop",
                 "vortex.engine.acquire_alazar_clock", "vortex.io.AlazarIOConfig.divisor",
                 "vortex.acquire.AlazarGPUConfig.gpu_device_index",
                 "vortex.acquire.teledyne.Teledyne.info", "vortex.acquire.teledyne.ADQProductID.ADQ32",
                 "vortex.acquire.TeledyneConfig.fft_mode", "vortex.acquire.TeledyneAcquisition.board_handle",
                 "vortex.acquire.imaq.Imaq.configure_region", "vortex.acquire.imaq.Info.resolution",
                 "vortex.acquire.imaq.Source.Hsync", "vortex.acquire.ImaqAcquisitionConfig.line_trigger",
                 "vortex.acquire.ImaqAcquisition.next_async"):
        assert must in q, must
    assert len(q) > 400
    assert NAMES["vortex_version"] and NAMES["sources"]


def _default(spec: dict) -> Any:
    if "enum" in spec:
        mod, cls = spec["enum"].rsplit(".", 1)
        return getattr(getattr(importlib.import_module(mod), cls), spec["member"])
    return spec["value"]


def _classes() -> Iterator[tuple[str, str, dict]]:
    for mod, m in NAMES["modules"].items():
        for n, c in m["classes"].items():
            if c["kind"] == "class" and expected_missing(Name(f"{mod}.{n}", mod, None, n, "class",
                                                               tuple(c.get("conditions", ())))) is None:
                yield mod, n, c


def _same(a: Any, b: Any) -> bool:
    if isinstance(b, float) or isinstance(a, float):
        return abs(float(a) - float(b)) <= 1e-6 * max(1.0, abs(float(b)))
    if isinstance(b, list):
        return len(list(a)) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(b, enum.Enum):
        return a == b and type(a).__name__ == type(b).__name__
    return a == b


def test_constructors_take_vortexs_arguments_and_defaults(compat):
    """Each class vortex constructs with no arguments constructs so; each keyword argument
    of vortex's constructors is accepted, and its default is the attribute's."""
    problems = []
    for mod, n, c in _classes():
        cls = getattr(importlib.import_module(mod), n, None)
        if cls is None:
            continue  # test_every_vortex_driver_name_resolves names it
        for init in c["inits"]:
            required = [p for p in init["params"] if p["default"] is None]
            if init["arity"] == 0 or (init["params"] and not required and len(init["params"]) == init["arity"]):
                try:
                    obj = cls()
                except Exception as e:  # noqa: BLE001
                    problems.append(f"{mod}.{n}(): {type(e).__name__}: {e}")
                    continue
                for p in init["params"]:
                    if "python_default" in p and hasattr(obj, p["name"]):
                        want = _default(p["python_default"])
                        if not _same(getattr(obj, p["name"]), want):
                            problems.append(f"{mod}.{n}().{p['name']} = {getattr(obj, p['name'])!r}, vortex's {want!r}")
            if init["params"] and all("python_default" in p or p["default"] is None for p in init["params"]):
                kwargs = {p["name"]: (_default(p["python_default"]) if "python_default" in p else "Dev1/ao0")
                          for p in init["params"] if "python_default" in p or p["name"] in ("line_name", "port_name")}
                if len(kwargs) != len(init["params"]):
                    continue
                try:
                    cls(**kwargs)
                except Exception as e:  # noqa: BLE001
                    problems.append(f"{mod}.{n}(**{kwargs}): {type(e).__name__}: {e}")
    assert not problems, "\n".join(problems)


def test_copy_and_attributes_behave_as_vortexs(compat):
    """``copy()`` gives an equal, distinct object of the class; each read-write attribute
    takes its own value back; each read-only one refuses to be set."""
    problems = []
    for mod, n, c in _classes():
        cls = getattr(importlib.import_module(mod), n, None)
        obj = _instance(cls) if cls is not None else None
        if obj is None:
            continue
        if "copy" in c["members"]:
            cp = obj.copy()
            if type(cp) is not cls or cp is obj:
                problems.append(f"{mod}.{n}.copy() gave {cp!r}")
        for k, v in c["members"].items():
            if expected_missing(Name(f"{mod}.{n}.{k}", mod, n, k, v["kind"], ())) is not None:
                continue
            if v["kind"] == "attribute":
                try:
                    setattr(obj, k, getattr(obj, k))
                except Exception as e:  # noqa: BLE001 - an unset attribute may refuse reading (vortex's too)
                    if not isinstance(e, RuntimeError):
                        problems.append(f"{mod}.{n}.{k} = {mod}.{n}.{k}: {type(e).__name__}: {e}")
            elif v["kind"] == "readonly":
                try:
                    val = getattr(obj, k)
                except Exception:  # noqa: BLE001
                    continue
                try:
                    setattr(obj, k, val)
                except AttributeError:
                    pass
                else:
                    problems.append(f"{mod}.{n}.{k} is read-only in vortex, set here")
    assert not problems, "\n".join(problems)


def _reference() -> Optional[Path]:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import vortex_driver_names as vdn
    finally:
        sys.path.pop(0)
    ref = vdn.default_reference()
    # The bindings, not only the folder: the GPU machine's carried reference holds the demos only.
    return Path(ref) if ref and (Path(ref) / "src" / "vortex-python" / "module" / "alazar.cpp").is_file() else None


def test_names_match_vortex_sources():
    """The stored list is what scripts/vortex_driver_names.py extracts from vortex's sources today."""
    ref = _reference()
    if ref is None:
        pytest.skip("vortex's sources are not here (../shared/vortex-reference or $VORTEX_REFERENCE)")
    import vortex_driver_names as vdn

    fresh = json.loads(json.dumps(vdn.extract(str(ref))))
    assert fresh == NAMES, "tests_py/data/vortex_driver_names.json is stale: python scripts/vortex_driver_names.py " \
                           "--out tests_py/data/vortex_driver_names.json"


if __name__ == "__main__":  # the coverage figure, by module
    import vortexgo.compat as _c

    _c.install()
    all_names, miss, _ = coverage()
    counted = [n for n in all_names if not any("ALAZAR_GPU" in c for c in n.conditions)]
    print(f"vortex {NAMES['vortex_version']}: {len(counted) - sum(1 for n in miss if n in counted)} of {len(counted)} "
          f"names resolve (ALAZAR_GPU-only names, {len(all_names) - len(counted)}, not counted)")
    for n, why in sorted(miss.items()):
        print(f"  missing {n.qualname} [{n.kind}]: {why}" + (f"  ({expected_missing(n)[:40]})" if expected_missing(n) else ""))
