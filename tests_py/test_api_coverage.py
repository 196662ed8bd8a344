"""The API coverage of vortex's non-driver Python names through vortexgo.compat.

tests_py/data/vortex_api_names.json lists every name vortex 0.5.1 binds outside its hardware
drivers (modules, classes, enums and their members, module functions and attributes, class
attributes and methods, constructor keyword arguments with the defaults written in the
bindings), extracted from vortex's binding sources (``src/vortex-python/bind/*.cpp``) by
scripts/vortex_api_names.py. With ``vortexgo.compat.install()`` every one must resolve, except
the few listed in :data:`NOT_PROVIDED` with the reason; the drivers' names are
tests_py/test_driver_coverage.py's.

A class member resolves when the class has it (``dir()`` shows it, as vortex's pybind11 classes
do) or, for a name vortexgo sets per object, when an instance built the way vortex builds one
has it. Beyond resolving: classes vortex constructs with no arguments construct so here, the
constructors take vortex's keyword arguments with vortex's defaults, ``copy()`` gives an equal,
distinct object of the same class, and read-only attributes refuse to be set.

When vortex's sources are present (../shared/vortex-reference, or $VORTEX_REFERENCE),
:func:`test_names_match_vortex_sources` regenerates the list and compares; CI without them uses
the stored list. ``python tests_py/test_api_coverage.py`` prints the coverage figure.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any, Iterator, NamedTuple, Optional

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data" / "vortex_api_names.json"
NAMES = json.loads(DATA.read_text())

_ADAPTER = ("private: vortex's shallow binding of an engine adapter type (bind/engine.cpp: 'hidden from the "
            "user'); vortexgo's engine adapts components itself and no script names it")

#: Names vortex binds that vortexgo leaves out on purpose, with the reason.
NOT_PROVIDED = {
    "vortex.engine._bind": "private: vortex's overload table its Engine calls to adapt a component (bind/engine.cpp); "
                           "vortexgo's engine adapts components itself, and no script calls it",
    **{f"vortex.engine.{n}": _ADAPTER for n in ("_AcquisitionAdapter", "_ProcessorAdapter", "_FormatterAdapter",
                                                 "_EndpointAdapter", "_IOAdapter", "_Divide", "_Cycle")},
}


#: Where vortexgo's behaviour still differs from vortex's rules checked by
#: test_copy_and_attributes_behave_as_vortexs, with the reason (each one a gap to close).
KNOWN_DIFFERENCES: dict[str, str] = {}

#: Classes whose every member may be missing with them (a name under one of these).
_PREFIXES = tuple(k + "." for k in NOT_PROVIDED)


class Name(NamedTuple):
    """One listed name: its module, and for a member the owning class path (``owner``)."""

    qualname: str
    module: str
    owner: Optional[tuple]
    member: Optional[str]
    kind: str
    conditions: tuple


def _class_names(mod: str, path: tuple, c: dict, cond: tuple) -> Iterator[Name]:
    q = ".".join((mod,) + path)
    yield Name(q, mod, path[:-1] or None, path[-1], "class", cond)
    for k, v in c["members"].items():
        sub = cond + tuple(v.get("conditions", ()))
        if v.get("kind") in ("class", "vector"):
            yield from _class_names(mod, path + (k,), v, sub)
        elif v.get("kind") == "enum":
            yield Name(f"{q}.{k}", mod, path, k, "enum", sub)
            for e in v["members"]:
                yield Name(f"{q}.{k}.{e}", mod, path + (k,), e, "enum_member", sub)
        else:
            yield Name(f"{q}.{k}", mod, path, k, v["kind"], sub)


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
                yield Name(f"{mod}.{n}.{v}", mod, (n,), v, "enum_member", cond)
                if e["export_values"]:
                    yield Name(f"{mod}.{v}", mod, None, v, "exported_enum_member", cond)
        for n, c in m["classes"].items():
            yield from _class_names(mod, (n,), c, tuple(c.get("conditions", ())))


def expected_missing(name: Name) -> Optional[str]:
    """Why ``name`` may be missing, or None when it must resolve."""
    if name.qualname in NOT_PROVIDED:
        return NOT_PROVIDED[name.qualname]
    if name.qualname.startswith(_PREFIXES):
        return NOT_PROVIDED[next(p for p in _PREFIXES if name.qualname.startswith(p))[:-1]]
    return None


def _executor_for(cls_name: str) -> Any:
    """An initialized executor of the geometry an endpoint's name says (vortex's constructor argument)."""
    import vortexgo.format as f

    if "Radial" in cls_name:
        c = f.RadialFormatExecutorConfig()
        c.volume_xy_extent, c.segment_rt_extent, c.radial_shape = [(-1, 1), (-1, 1)], [(-1, 1), (0, 3)], (2, 2)
        return f.RadialFormatExecutor(c)
    if "Spiral" in cls_name:
        c = f.SpiralFormatExecutorConfig()
        c.volume_xy_extent, c.segment_extent, c.spiral_shape, c.spiral_velocity = [(-1, 1), (-1, 1)], (0, 1), (2, 8), 1.0
        return f.SpiralFormatExecutor(c)
    if "Position" in cls_name:
        return f.PositionFormatExecutor(f.PositionFormatExecutorConfig())
    if "Broct" in cls_name:
        return f.BroctFormatExecutor()
    return f.StackFormatExecutor()


def _instance(cls: Any, spec: Optional[dict] = None) -> Any:
    """An instance of ``cls`` built the way vortex builds one (None when that fails)."""
    try:
        return cls()
    except Exception:  # noqa: BLE001 - a class vortex constructs with arguments only
        pass
    for init in (spec or {}).get("inits", []):
        names = [p["name"] for p in init["params"] if p["default"] is None]
        if names and set(names) <= {"executor", "shape"}:
            try:
                return cls(executor=_executor_for(cls.__name__), shape=(2, 2, 8))
            except Exception:  # noqa: BLE001
                continue
    return None


_OBJECT_DEFAULTS = {"__eq__": object.__eq__, "__repr__": object.__repr__, "__init__": object.__init__}


def _spec(name: Name) -> Optional[dict]:
    """The list's entry of ``name``'s owning class."""
    if not name.owner:
        return None
    c = NAMES["modules"][name.module]["classes"].get(name.owner[0])
    for p in name.owner[1:]:
        c = c["members"].get(p) if c else None
    return c


def _module(path: str) -> Any:
    """The module ``path``: imported, or (``vortex.scan.warp``) an attribute of its parent."""
    try:
        return importlib.import_module(path)
    except ImportError:
        parent, _, leaf = path.rpartition(".")
        if not parent:
            raise
        got = getattr(_module(parent), leaf, None)
        if got is None:
            raise
        return got


def _owner(name: Name) -> Any:
    obj = _module(name.module)
    for p in name.owner:
        obj = getattr(obj, p)
    return obj


def resolve(name: Name) -> Optional[str]:
    """None when ``name`` resolves through vortexgo.compat; else why not."""
    try:
        mod = _module(name.module)
    except ImportError as e:
        return f"module: {e}"
    if name.kind == "module":
        return None
    if name.owner is None:
        return None if hasattr(mod, name.member) else f"no {name.member!r} in {name.module}"
    try:
        owner = _owner(name)
    except AttributeError:
        return f"no {'.'.join(name.owner)!r} in {name.module}"
    if name.kind == "enum_member":
        ok = name.member in getattr(owner, "__members__", {}) or hasattr(owner, name.member)
        return None if ok else f"no member {name.member}"
    if name.member == "__init__":  # every class has one; what it takes is test_constructors_...'s
        return None if isinstance(owner, type) else f"{'.'.join(name.owner)} is not a class"
    if name.member in _OBJECT_DEFAULTS:
        own = getattr(owner, name.member, None)
        return None if own is not None and own is not _OBJECT_DEFAULTS[name.member] else f"{name.member} is object's"
    if hasattr(owner, name.member):
        return None
    obj = _instance(owner, _spec(name))
    if obj is not None and hasattr(obj, name.member):
        return None
    return f"{'.'.join(name.owner)} has no {name.member!r}"


@pytest.fixture(scope="module")
def compat():
    """vortexgo.compat installed for this module's tests (uninstalled after)."""
    import vortexgo.compat as c

    if c._real_vortex() is not None:
        pytest.skip(f"a real vortex is importable ({c._real_vortex()}): install() would refuse")
    c.install()
    yield c
    c.uninstall()


def coverage() -> tuple[list[Name], dict, list]:
    """(every name, the missing ones with why, the expected-missing ones that resolve)."""
    names = list(listed())
    missing, present = {}, []
    for n in names:
        why = resolve(n)
        if why is not None:
            missing[n] = why
        elif expected_missing(n) is not None:
            present.append(n)
    return names, missing, present


def test_every_vortex_api_name_resolves(compat):
    names, missing, present = coverage()
    unexpected = {n.qualname: why for n, why in missing.items() if expected_missing(n) is None}
    assert not unexpected, f"{len(unexpected)} of vortex's {len(names)} non-driver names do not resolve:\n" + "\n".join(
        f"  {k}: {v}" for k, v in sorted(unexpected.items()))
    assert not present, "these now resolve; remove them from NOT_PROVIDED: " + ", ".join(n.qualname for n in present)


def test_the_list_covers_vortexs_modules():
    """The list holds what issue 28 names (so a broken extraction cannot pass as 100%)."""
    q = {n.qualname for n in listed()}
    for must in ("vortex.__feature__", "vortex.__version__", "vortex.Range.symmetric", "vortex.format.FormatPlan.append",
                 "vortex.format.Copy.buffer_record", "vortex.format.Resize.shape", "vortex.format.FinishScan.scan_index",
                 "vortex.format.BroctFormatExecutor.initialize", "vortex.format.RadialFormatExecutor.format",
                 "vortex.format.RadialFormatExecutorConfig.radial_shape", "vortex.format.SpiralFormatExecutorConfig.spiral_shape",
                 "vortex.engine.StackTensorEndpointInt8.executor", "vortex.engine.SpectraStackTensorEndpointUInt16.tensor",
                 "vortex.engine.EngineConfig.copy", "vortex.engine.EngineStatus.copy", "vortex.engine.Engine.Event.Launch",
                 "vortex.engine.ScanQueue.OnlineScanQueue.append", "vortex.engine.source.Axsun100k",
                 "vortex.io.NullConfig.copy", "vortex.io.NullIO.prepare", "vortex.marker.Flags.copy",
                 "vortex.memory.CudaDeviceTensorInt8.device", "vortex.storage.BroctScan.spiral", "vortex.storage.spiral",
                 "vortex.scan.Segment.entry_position", "vortex.scan.warp.Angular", "vortex.log.SinkList.append"):
        assert must in q, must
    assert "vortex.scan.SegmentList.__eq__" not in q  # a list of a class without ==
    assert len(q) > 1800
    assert NAMES["vortex_version"] and NAMES["sources"]


def _classes() -> Iterator[tuple[str, tuple, dict]]:
    def walk(mod: str, path: tuple, c: dict) -> Iterator[tuple[str, tuple, dict]]:
        yield mod, path, c
        for k, v in c["members"].items():
            if v.get("kind") == "class":
                yield from walk(mod, path + (k,), v)

    for mod, m in NAMES["modules"].items():
        for n, c in m["classes"].items():
            if c["kind"] == "class" and expected_missing(Name(f"{mod}.{n}", mod, None, n, "class", ())) is None:
                yield from walk(mod, (n,), c)


def _get(mod: str, path: tuple) -> Any:
    obj = _module(mod)
    for p in path:
        obj = getattr(obj, p, None)
    return obj


def _same(a: Any, b: Any) -> bool:
    if isinstance(b, float) or isinstance(a, float):
        return abs(float(a) - float(b)) <= 1e-6 * max(1.0, abs(float(b)))
    return a == b


def test_constructors_take_vortexs_arguments_and_defaults(compat):
    """Each class vortex constructs with no arguments constructs so; each keyword argument of
    vortex's constructors whose default the bindings spell out is accepted with that default."""
    problems = []
    for mod, path, c in _classes():
        cls = _get(mod, path)
        if cls is None:
            continue  # test_every_vortex_api_name_resolves names it
        q = ".".join((mod,) + path)
        for init in c["inits"]:
            if init["arity"] == 0 and not init["params"]:
                try:
                    cls()
                except Exception as e:  # noqa: BLE001
                    if not ("no CUDA driver" in str(e) and "VORTEX_ENABLE_CUDA" in c.get("conditions", ())):
                        problems.append(f"{q}(): {type(e).__name__}: {e}")
            given = [p for p in init["params"] if "python_default" in p]
            if given and len(given) == len(init["params"]) == init["arity"]:
                kwargs = {p["name"]: p["python_default"]["value"] for p in given}
                try:
                    obj = cls(**kwargs)
                except Exception as e:  # noqa: BLE001
                    problems.append(f"{q}(**{kwargs}): {type(e).__name__}: {e}")
                    continue
                for k, want in kwargs.items():
                    if want is not None and k in c["members"] and not _same(getattr(obj, k), want):
                        problems.append(f"{q}(...).{k} = {getattr(obj, k)!r}, vortex's {want!r}")
    assert not problems, "\n".join(problems)


def test_copy_and_attributes_behave_as_vortexs(compat):
    """``copy()`` gives a distinct object of the same class; each read-write attribute takes its own
    value back; each read-only one refuses to be set (AttributeError)."""
    problems = []
    for mod, path, c in _classes():
        cls = _get(mod, path)
        obj = _instance(cls, c) if cls is not None else None
        if obj is None:
            continue
        q = ".".join((mod,) + path)
        problems_before = len(problems)
        if "copy" in c["members"]:
            cp = obj.copy()
            if type(cp) is not cls or cp is obj:
                problems.append(f"{q}.copy() gave {cp!r}")
        for k, v in c["members"].items():
            if v["kind"] == "attribute":
                try:
                    val = getattr(obj, k)
                except Exception:  # noqa: BLE001 - an unset attribute may refuse reading (vortex's too)
                    continue
                try:
                    setattr(obj, k, val)
                except Exception as e:  # noqa: BLE001
                    problems.append(f"{q}.{k} = {q}.{k}: {type(e).__name__}: {e}")
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
                    problems.append(f"{q}.{k} is read-only in vortex, set here")
        problems[problems_before:] = [p for p in problems[problems_before:]
                                      if p.split(" ")[0] not in KNOWN_DIFFERENCES]
    assert not problems, "\n".join(problems)


def _reference() -> Optional[Path]:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import vortex_api_names as van
    finally:
        sys.path.pop(0)
    ref = van.default_reference()
    return Path(ref) if ref and (Path(ref) / "src" / "vortex-python" / "bind" / "format.cpp").is_file() else None


def test_names_match_vortex_sources():
    """The stored list is what scripts/vortex_api_names.py extracts from vortex's sources today."""
    ref = _reference()
    if ref is None:
        pytest.skip("vortex's sources are not here (../shared/vortex-reference or $VORTEX_REFERENCE)")
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import vortex_api_names as van
    finally:
        sys.path.pop(0)
    fresh = json.loads(json.dumps(van.extract(str(ref))))
    assert fresh == NAMES, "tests_py/data/vortex_api_names.json is stale: python scripts/vortex_api_names.py " \
                           "--out tests_py/data/vortex_api_names.json"


if __name__ == "__main__":  # the coverage figure
    import vortexgo.compat as _c

    _c.install()
    all_names, miss, _ = coverage()
    print(f"vortex {NAMES['vortex_version']}: {len(all_names) - len(miss)} of {len(all_names)} non-driver names resolve "
          f"({sum(1 for n in miss if expected_missing(n))} not provided on purpose)")
    for n, why in sorted(miss.items()):
        print(f"  missing {n.qualname} [{n.kind}]: {why}" + ("  (allowed)" if expected_missing(n) else ""))
