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

from typing import Any, Iterator, Optional

import _names_coverage as nc
from _names_coverage import Name, compat  # noqa: F401 - compat: the fixture

NAMES = nc.load("vortex_api_names.json")

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


def listed(data: dict = NAMES) -> Iterator[Name]:
    """Every name of the list, modules first."""
    return nc.listed(data)


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
    obj = nc.default_instance(cls)
    if obj is not None:
        return obj
    for init in (spec or {}).get("inits", []):
        names = [p["name"] for p in init["params"] if p["default"] is None]
        if names and set(names) <= {"executor", "shape"}:
            try:
                return cls(executor=_executor_for(cls.__name__), shape=(2, 2, 8))
            except Exception:  # noqa: BLE001
                continue
    return None


def coverage() -> nc.Coverage:
    """(every name, the missing ones with why, the expected-missing ones that resolve)."""
    # A class vortex binds with no constructor of its own (NoWarp, NullConfig) constructs with
    # object's here too: its __init__ need not be the class's.
    return nc.coverage(NAMES, expected_missing, _instance, own_init=False)


def test_every_vortex_api_name_resolves(compat):
    nc.assert_resolves(coverage(), expected_missing, "non-driver names")


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


def test_constructors_take_vortexs_arguments_and_defaults(compat):
    """Each class vortex constructs with no arguments constructs so; each keyword argument of
    vortex's constructors whose default the bindings spell out is accepted with that default."""
    problems = []
    for mod, path, c in nc.classes(NAMES, expected_missing):
        cls = nc.get(mod, path)
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
                    if want is not None and k in c["members"] and not nc.same(getattr(obj, k), want):
                        problems.append(f"{q}(...).{k} = {getattr(obj, k)!r}, vortex's {want!r}")
    assert not problems, "\n".join(problems)


def test_copy_and_attributes_behave_as_vortexs(compat):
    """``copy()`` gives a distinct object of the same class; each read-write attribute takes its own
    value back; each read-only one refuses to be set (AttributeError)."""
    problems = []
    for mod, path, c in nc.classes(NAMES, expected_missing):
        cls = nc.get(mod, path)
        obj = _instance(cls, c) if cls is not None else None
        if obj is None:
            continue
        problems += nc.attribute_problems(obj, cls, c, ".".join((mod,) + path), lambda q: q in KNOWN_DIFFERENCES)
    assert not problems, "\n".join(problems)


def test_names_match_vortex_sources():
    """The stored list is what scripts/vortex_api_names.py extracts from vortex's sources today."""
    nc.assert_current(NAMES, "vortex_api_names", "src/vortex-python/bind/format.cpp")


if __name__ == "__main__":  # the coverage figure
    import vortexgo.compat as _c

    _c.install()
    all_names, miss, _ = coverage()
    print(f"vortex {NAMES['vortex_version']}: {len(all_names) - len(miss)} of {len(all_names)} non-driver names resolve "
          f"({sum(1 for n in miss if expected_missing(n))} not provided on purpose)")
    for n, why in sorted(miss.items()):
        print(f"  missing {n.qualname} [{n.kind}]: {why}" + ("  (allowed)" if expected_missing(n) else ""))
