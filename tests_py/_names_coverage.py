"""What tests_py/test_api_coverage.py and tests_py/test_driver_coverage.py share: walking a list
of vortex's names (tests_py/data/vortex_*_names.json, written by scripts/vortex_api_names.py and
scripts/vortex_driver_names.py), resolving each through ``vortexgo.compat``, checking that
vortex's classes copy and take their attributes back as vortex's do, and comparing a stored list
with what its script extracts from vortex's sources today.

The two lists have the same layout (``{"modules": {path: {"functions", "attributes", "enums",
"classes"}}}``, a class's ``members`` possibly holding nested classes and enums); each test module
keeps its own lists of names left out on purpose and passes them in.
"""

from __future__ import annotations

import enum
import importlib
import json
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple, Optional

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"


def load(file: str) -> dict:
    """The stored list ``tests_py/data/<file>``."""
    return json.loads((DATA / file).read_text())


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


def listed(data: dict) -> Iterator[Name]:
    """Every name of the list ``data``, modules first."""
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


def module(path: str) -> Any:
    """The module ``path``: imported, or (``vortex.scan.warp``) an attribute of its parent."""
    try:
        return importlib.import_module(path)
    except ImportError:
        parent, _, leaf = path.rpartition(".")
        if not parent:
            raise
        got = getattr(module(parent), leaf, None)
        if got is None:
            raise
        return got


def get(mod: str, path: tuple) -> Any:
    """The class ``path`` of module ``mod`` (None where one step is missing)."""
    obj = module(mod)
    for p in path:
        obj = getattr(obj, p, None)
    return obj


def spec(data: dict, name: Name) -> Optional[dict]:
    """The list's entry of ``name``'s owning class."""
    if not name.owner:
        return None
    c = data["modules"][name.module]["classes"].get(name.owner[0])
    for p in name.owner[1:]:
        c = c["members"].get(p) if c else None
    return c


def default_instance(cls: Any, spec: Optional[dict] = None) -> Any:
    """``cls()``, or None when vortex constructs it with arguments only."""
    try:
        return cls()
    except Exception:  # noqa: BLE001 - a class vortex constructs with arguments only
        return None


_OBJECT_DEFAULTS = {"__eq__": object.__eq__, "__repr__": object.__repr__, "__init__": object.__init__}


def resolve(name: Name, data: dict, instance: Callable[[Any, Optional[dict]], Any] = default_instance,
            own_init: bool = True) -> Optional[str]:
    """None when ``name`` of the list ``data`` resolves through vortexgo.compat; else why not.

    A class member resolves when the class has it (``dir()`` shows it, as vortex's pybind11
    classes do) or, for a name vortexgo sets per object, when ``instance(cls, its spec)`` has it;
    ``__eq__``, ``__repr__`` and (with ``own_init``) ``__init__`` must be the class's own, not
    object's. Without ``own_init`` any class has an ``__init__`` (what it takes is the
    constructor tests')."""
    try:
        mod = module(name.module)
    except ImportError as e:
        return f"module: {e}"
    if name.kind == "module":
        return None
    if name.owner is None:
        return None if hasattr(mod, name.member) else f"no {name.member!r} in {name.module}"
    owner = get(name.module, name.owner)
    if owner is None:
        return f"no {'.'.join(name.owner)!r} in {name.module}"
    if name.kind == "enum_member":
        ok = name.member in getattr(owner, "__members__", {}) or hasattr(owner, name.member)
        return None if ok else f"no member {name.member}"
    if name.member == "__init__" and not own_init:
        return None if isinstance(owner, type) else f"{'.'.join(name.owner)} is not a class"
    if name.member in _OBJECT_DEFAULTS:
        own = getattr(owner, name.member, None)
        return None if own is not None and own is not _OBJECT_DEFAULTS[name.member] else f"{name.member} is object's"
    if hasattr(owner, name.member):
        return None
    obj = instance(owner, spec(data, name))
    if obj is not None and hasattr(obj, name.member):
        return None
    return f"{'.'.join(name.owner)} has no {name.member!r}"


@pytest.fixture(scope="module")
def compat():
    """vortexgo.compat installed for the module's tests (uninstalled after)."""
    import vortexgo.compat as c

    if c._real_vortex() is not None:
        pytest.skip(f"a real vortex is importable ({c._real_vortex()}): install() would refuse")
    c.install()
    yield c
    c.uninstall()


class Coverage(NamedTuple):
    """:func:`coverage`'s answer."""

    names: list
    #: The names that do not resolve, with why.
    missing: dict
    #: The names left out on purpose that resolve after all.
    present: list


def coverage(data: dict, expected_missing: Callable[[Name], Optional[str]],
             instance: Callable[[Any, Optional[dict]], Any] = default_instance,
             may_resolve: Callable[[Name], bool] = lambda n: False, own_init: bool = True) -> Coverage:
    """Every name of ``data`` resolved (:func:`resolve`); ``present`` holds the expected-missing
    ones that resolve, but for those ``may_resolve`` lets through."""
    names = list(listed(data))
    missing, present = {}, []
    for n in names:
        why = resolve(n, data, instance, own_init)
        if why is not None:
            missing[n] = why
        elif expected_missing(n) is not None and not may_resolve(n):
            present.append(n)
    return Coverage(names, missing, present)


def assert_resolves(cov: Coverage, expected_missing: Callable[[Name], Optional[str]], what: str) -> None:
    """Every name of ``cov`` resolves but the expected-missing ones, and none of those does."""
    unexpected = {n.qualname: why for n, why in cov.missing.items() if expected_missing(n) is None}
    assert not unexpected, f"{len(unexpected)} of vortex's {len(cov.names)} {what} do not resolve:\n" + "\n".join(
        f"  {k}: {v}" for k, v in sorted(unexpected.items()))
    # An expected-missing name that now resolves: remove it from the test's lists.
    assert not cov.present, "these now resolve; remove them from the expected-missing lists: " + ", ".join(
        sorted(n.qualname for n in cov.present))


def classes(data: dict, expected_missing: Callable[[Name], Optional[str]]) -> Iterator[tuple[str, tuple, dict]]:
    """(module, class path, entry) of each class of ``data`` (nested ones too) that is not
    expected missing."""
    def walk(mod: str, path: tuple, c: dict) -> Iterator[tuple[str, tuple, dict]]:
        yield mod, path, c
        for k, v in c["members"].items():
            if v.get("kind") == "class":
                yield from walk(mod, path + (k,), v)

    for mod, m in data["modules"].items():
        for n, c in m["classes"].items():
            name = Name(f"{mod}.{n}", mod, None, n, "class", tuple(c.get("conditions", ())))
            if c["kind"] == "class" and expected_missing(name) is None:
                yield from walk(mod, (n,), c)


def same(a: Any, b: Any) -> bool:
    """``a`` (vortexgo's value) is vortex's ``b``: floats to 1e-6, lists item by item, an enum
    member by value and by its type's name."""
    if isinstance(b, float) or isinstance(a, float):
        return abs(float(a) - float(b)) <= 1e-6 * max(1.0, abs(float(b)))
    if isinstance(b, list):
        return len(list(a)) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(b, enum.Enum):
        return a == b and type(a).__name__ == type(b).__name__
    return a == b


def attribute_problems(obj: Any, cls: Any, c: dict, q: str, skip: Callable[[str], bool]) -> list[str]:
    """How ``obj`` (an instance of the class ``cls`` listed as ``c``, named ``q``) differs from
    vortex's rules: ``copy()`` gives a distinct object of the same class; each read-write attribute
    takes its own value back; each read-only one refuses to be set (AttributeError). An attribute
    that refuses to be read with a RuntimeError is passed over (vortex's unset ones do too); ``skip(q.member)`` names
    the members left out."""
    problems = []
    if "copy" in c["members"]:
        cp = obj.copy()
        if type(cp) is not cls or cp is obj:
            problems.append(f"{q}.copy() gave {cp!r}")
    for k, v in c["members"].items():
        if v["kind"] not in ("attribute", "readonly") or skip(f"{q}.{k}"):
            continue
        try:
            val = getattr(obj, k)
        except RuntimeError:  # an unset attribute may refuse reading (vortex's too)
            continue
        except Exception as e:  # noqa: BLE001
            if v["kind"] == "attribute":
                problems.append(f"{q}.{k}: {type(e).__name__}: {e}")
            continue
        if v["kind"] == "attribute":
            try:
                setattr(obj, k, val)
            except Exception as e:  # noqa: BLE001
                problems.append(f"{q}.{k} = {q}.{k}: {type(e).__name__}: {e}")
            continue
        try:
            setattr(obj, k, val)
        except AttributeError:
            pass
        else:
            problems.append(f"{q}.{k} is read-only in vortex, set here")
    return problems


def script(name: str) -> Any:
    """The module ``scripts/<name>.py``."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)


def assert_current(data: dict, name: str, probe: str) -> None:
    """``data`` is what ``scripts/<name>.py`` extracts from vortex's sources today (skips where
    the sources holding ``probe``, a path in vortex's tree, are not here)."""
    ref = script("vortex_bind_reader").find_reference(probe)
    if ref is None:
        pytest.skip("vortex's sources are not here (../shared/vortex-reference or $VORTEX_REFERENCE)")
    fresh = json.loads(json.dumps(script(name).extract(ref)))
    assert fresh == data, f"tests_py/data/{name}.json is stale: python scripts/{name}.py --out tests_py/data/{name}.json"
