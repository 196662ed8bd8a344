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

import importlib
from typing import Any, Iterator, Optional

import _names_coverage as nc
from _names_coverage import Name, compat  # noqa: F401 - compat: the fixture

NAMES = nc.load("vortex_driver_names.json")

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


def listed(data: dict = NAMES) -> Iterator[Name]:
    """Every name of the list, modules first."""
    return nc.listed(data)


def _gpu_only(name: Name) -> bool:
    return any("ALAZAR_GPU" in c for c in name.conditions)


def expected_missing(name: Name) -> Optional[str]:
    """Why ``name`` may be missing, or None when it must resolve."""
    if any("VORTEX_ENABLE_ALAZAR_GPU" in c for c in name.conditions):
        return _GPU
    if name.qualname in NOT_PROVIDED:
        return NOT_PROVIDED[name.qualname]
    return None


def coverage() -> nc.Coverage:
    """(every name, the missing ones with why, the expected-missing ones that resolve but
    ALAZAR_GPU's: those vortexgo may share)."""
    return nc.coverage(NAMES, expected_missing, may_resolve=_gpu_only)


def test_every_vortex_driver_name_resolves(compat):
    nc.assert_resolves(coverage(), expected_missing, "driver names")


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
    for mod, path, c in nc.classes(NAMES, expected_missing):
        yield mod, path[0], c


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
                        if not nc.same(getattr(obj, p["name"]), want):
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
        obj = nc.default_instance(cls) if cls is not None else None
        if obj is not None:
            problems += nc.attribute_problems(obj, cls, c, f"{mod}.{n}", lambda q: q in NOT_PROVIDED)
    assert not problems, "\n".join(problems)


def test_names_match_vortex_sources():
    """The stored list is what scripts/vortex_driver_names.py extracts from vortex's sources today."""
    # The bindings, not only the folder: the GPU machine's carried reference holds the demos only.
    nc.assert_current(NAMES, "vortex_driver_names", "src/vortex-python/module/alazar.cpp")


if __name__ == "__main__":  # the coverage figure, by module
    import vortexgo.compat as _c

    _c.install()
    all_names, miss, _ = coverage()
    counted = [n for n in all_names if not _gpu_only(n)]
    print(f"vortex {NAMES['vortex_version']}: {len(counted) - sum(1 for n in miss if n in counted)} of {len(counted)} "
          f"names resolve (ALAZAR_GPU-only names, {len(all_names) - len(counted)}, not counted)")
    for n, why in sorted(miss.items()):
        print(f"  missing {n.qualname} [{n.kind}]: {why}" + (f"  ({expected_missing(n)[:40]})" if expected_missing(n) else ""))
