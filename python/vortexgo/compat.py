"""Run vortex scripts unchanged: vortexgo under vortex's module names.

vortex (the OCT library vortexgo follows) is imported as ``vortex``,
``vortex.engine``, ``vortex.scan`` and so on. :func:`install` makes those
names import vortexgo's modules, so a script written for vortex runs on
vortexgo without editing a line::

    import vortexgo.compat
    vortexgo.compat.install()

    from vortex.engine import Engine, EngineConfig   # vortexgo's
    ...

or, for a script file, ``python -m vortexgo run script.py [args]``.

It is an explicit opt-in and never shadows a real vortex silently: when
another ``vortex`` is importable (or already imported), :func:`install`
raises :class:`VortexInstalledError` naming where it is; pass
``shadow=True`` to use vortexgo anyway for this process (a warning says
so). :func:`uninstall` removes the names again.

vortex's AlazarTech digitizer (``vortex.acquire.AlazarAcquisition``,
``AlazarConfig`` and the module ``vortex.acquire.alazar``, also reachable as
``vortex.driver.alazar``) is :mod:`vortexgo.alazar`; ``vortex.io``'s NI-DAQmx
IO (``vortex.io.DAQmxIO`` and the module ``vortex.io.daqmx``) is
:mod:`vortexgo.daqmx`; ``vortex.io.AlazarIO``, ``AlazarIOConfig`` and the module
``vortex.io.alazar`` (``AnalogChannel``) are :class:`vortexgo.io.AlazarIO` and
:mod:`vortexgo.alazar`; the Teledyne ADQ digitizer (``vortex.acquire.TeledyneAcquisition``,
``TeledyneConfig`` and the module ``vortex.acquire.teledyne``) is
:mod:`vortexgo.teledyne`; the NI frame grabber (``vortex.acquire.ImaqAcquisition``,
``ImaqAcquisitionConfig`` and the module ``vortex.acquire.imaq``, also reachable as
``vortex.driver.imaq``) is :mod:`vortexgo.imaq`. A name vortexgo lacks raises ImportError or
AttributeError naming what is missing.
"""

from __future__ import annotations

import enum
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings
from typing import Optional

from ._attrs import StrictAttributes

__all__ = ["install", "uninstall", "installed", "VortexInstalledError", "SUBMODULES"]

#: vortex's submodules and the vortexgo modules that stand in for them.
SUBMODULES = {
    "engine": "vortexgo.engine",
    "scan": "vortexgo.scan",
    "format": "vortexgo.format",
    "process": "vortexgo.process",
    "acquire": "vortexgo.acquire",
    "storage": "vortexgo.storage",
    "marker": "vortexgo.marker",
    "memory": "vortexgo.memory",
    "io": "vortexgo.io",
    "log": "vortexgo.log",
    "simple": "vortexgo.simple",
}

#: vortex's nested modules (``vortex.<sub>.<name>``) and the vortexgo modules
#: that stand in for them; a parent missing from SUBMODULES ("driver") is a
#: plain package of them.
NESTED = {
    "acquire.alazar": "vortexgo.alazar",
    "driver.alazar": "vortexgo.alazar",
    "io.daqmx": "vortexgo.daqmx",
    "io.alazar": "vortexgo.alazar",  # vortex.io.alazar.AnalogChannel, for vortex.io.AlazarIO
    "io.machdsp": "vortexgo.machdsp",  # vortex.io.MachDSPIO's channels and driver
    "acquire.imaq": "vortexgo.imaq",
    "driver.imaq": "vortexgo.imaq",
    "acquire.teledyne": "vortexgo.teledyne",
    # vortex's submodules that vortexgo keeps as namespaces in a module ("module:name"):
    # `import vortex.scan.warp` as well as `from vortex.scan import warp`
    "scan.warp": "vortexgo.scan:warp",
    "scan.limits": "vortexgo.scan:limits",
    "scan.inactive_policy": "vortexgo.scan:inactive_policy",
    "engine.source": "vortexgo.source:source",
}

_ROOT_NAMES = ("Range", "get_console_logger", "get_file_logger", "get_python_logger")


class VortexInstalledError(ImportError):
    """A real vortex is importable: :func:`install` would hide it."""


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves ``vortex`` and ``vortex.<sub>`` to vortexgo's modules. First on
    sys.meta_path while installed, so it wins over a vortex on sys.path only
    after :func:`install` checked there is none (or was told to shadow it)."""

    def find_spec(self, fullname: str, path=None, target=None):  # noqa: ANN001 - the finder protocol
        if fullname == "vortex" or (fullname.startswith("vortex.") and fullname.count(".") == 1):
            parent = fullname == "vortex" or any(k.split(".")[0] == fullname[7:] for k in NESTED)
            return importlib.machinery.ModuleSpec(fullname, self, is_package=parent)
        if fullname.startswith("vortex.") and fullname[7:] in NESTED:
            return importlib.machinery.ModuleSpec(fullname, self)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if spec.name == "vortex":
            return _root_module()
        sub = spec.name.split(".", 1)[1]
        if sub in NESTED:
            module, _, name = NESTED[sub].partition(":")
            target = importlib.import_module(module)
            return _Forward(spec.name, getattr(target, name) if name else target, {})
        if sub not in SUBMODULES and any(k.split(".")[0] == sub for k in NESTED):
            pkg = types.ModuleType(spec.name, f"vortexgo standing in for {spec.name} (vortexgo.compat.install())")
            pkg.__path__ = []
            return pkg
        target = SUBMODULES.get(sub)
        if target is None:
            raise ModuleNotFoundError(
                f"vortexgo has no stand-in for {spec.name!r} (vortexgo does not drive that hardware; "
                f"stand-ins exist for: {', '.join('vortex.' + s for s in SUBMODULES)})", name=spec.name)
        try:
            mod = importlib.import_module(target)
        except ModuleNotFoundError as exc:
            if exc.name != target:
                raise
            raise ModuleNotFoundError(f"{spec.name!r}: vortexgo does not provide {target} yet",
                                      name=spec.name) from None
        fwd = _Forward(spec.name, mod, _extras(sub))
        if any(k.split(".")[0] == sub for k in NESTED):
            fwd.__path__ = []  # a package: vortex.io.daqmx imports through the finder
        return fwd

    def exec_module(self, module: types.ModuleType) -> None:
        pass  # the module is vortexgo's, already executed


class _Forward(types.ModuleType):
    """``vortex.<sub>``: a module of its own forwarding every name to the vortexgo module
    (so classes are vortexgo's very objects), plus the few vortex names that live
    elsewhere in vortexgo (:func:`_extras`). Attributes set on it (a test swapping a
    hardware class in) stay on it and never touch the vortexgo module."""

    def __init__(self, name: str, target: types.ModuleType, extras: dict) -> None:
        super().__init__(name, target.__doc__)
        self.__vortexgo_target__ = target
        self.__file__ = getattr(target, "__file__", None)
        self._extras = extras
        self.__all__ = list(getattr(target, "__all__", [n for n in dir(target) if not n.startswith("_")]))
        self.__all__ += [n for n in extras if n not in self.__all__]

    def __getattr__(self, name: str):
        target = self.__dict__["__vortexgo_target__"]
        try:
            return getattr(target, name)
        except AttributeError:
            pass
        extras = self.__dict__["_extras"]
        if name in extras:
            return extras[name]
        hint = _HARDWARE.get(name)
        raise AttributeError(f"module {self.__name__!r} (vortexgo's {target.__name__}) has no attribute {name!r}"
                             + (f": {hint}" if hint else ""))

    def __dir__(self) -> list:
        return sorted(set(dir(self.__dict__["__vortexgo_target__"])) | set(self._extras) | set(self.__dict__))


#: vortex names for hardware vortexgo does not drive, and what stands in for them.
_HARDWARE = {
    **{n: "a Teledyne digitizer; vortexgo.acquire.SimulatedAcquisition stands in for it (docs/vortex-compat.md)"
       for n in ("TeledyneAcquisition", "TeledyneConfig", "teledyne")},
}


class StreamIndex(StrictAttributes, enum.IntEnum):
    """vortex's ``Block.StreamIndex``: the per-sample streams a block carries (IO channels name one)."""

    Counter = 0
    GalvoTarget = 1
    SampleTarget = 2
    GalvoActual = 3
    SampleActual = 4
    Strobes = 5


class Block:
    """vortex's ``vortex.engine.Block``: one block's identity (``id``, ``timestamp``,
    ``sample``, ``length``, ``markers``, read-write) and its per-sample streams (``counter``,
    ``galvo_target``, ``sample_target``, ``galvo_actual``, ``sample_actual``, ``strobes``,
    read-only), with the ``StreamIndex`` values that name those streams (DAQmx channel
    setup). vortexgo's engine keeps its blocks in Go and hands endpoints tensors, not Block
    objects; a Block made here is vortex's empty one (scripts and tests construct it)."""

    __slots__ = ("id", "timestamp", "sample", "length", "_markers", "_streams")
    StreamIndex = StreamIndex

    def __init__(self) -> None:
        import datetime

        self.id = 0
        self.timestamp = datetime.datetime(1970, 1, 1)  # vortex's default: the epoch
        self.sample = 0
        self.length = 0
        self._markers = None
        self._streams: dict = {}

    @property
    def markers(self):
        """The block's markers (a ``MarkerList``)."""
        if self._markers is None:
            from .marker import MarkerList

            self._markers = MarkerList()
        return self._markers

    @markers.setter
    def markers(self, value) -> None:
        from .marker import MarkerList

        self._markers = value if isinstance(value, MarkerList) else MarkerList(value)

    def _stream(self, name: str, make):
        if name not in self._streams:
            self._streams[name] = make()
        return self._streams[name]

    @staticmethod
    def _host_float64():
        # vortex's are pinned (CudaHostTensor); without a CUDA driver the host one stands in.
        from . import memory

        try:
            return memory.CudaHostTensorFloat64()
        except Exception:
            return memory.CpuTensorFloat64()

    @property
    def counter(self):
        """The A-scan counter stream (``CpuTensorUInt64``), read-only."""
        from . import memory

        return self._stream("counter", memory.CpuTensorUInt64)

    @property
    def galvo_target(self) -> dict:
        """vortex binds this stream as an empty ``dict``; so does vortexgo (read-only)."""
        return self._stream("galvo_target", dict)

    @property
    def sample_target(self):
        """The sample-axis target stream (host float64 tensor), read-only."""
        return self._stream("sample_target", self._host_float64)

    @property
    def galvo_actual(self):
        """The galvo position feedback stream (host float64 tensor), read-only."""
        return self._stream("galvo_actual", self._host_float64)

    @property
    def sample_actual(self):
        """The sample-axis feedback stream (host float64 tensor), read-only."""
        return self._stream("sample_actual", self._host_float64)

    @property
    def strobes(self) -> dict:
        """vortex binds the strobe stream as an empty ``dict``; so does vortexgo (read-only)."""
        return self._stream("strobes", dict)

    def __repr__(self) -> str:
        return f"<Block id={self.id} sample={self.sample} length={self.length}>"


class BufferStrategy(StrictAttributes, enum.IntEnum):
    """vortex's storage endpoint buffering (``Block`` none, ``Segment``, ``Volume``). vortexgo's
    storage endpoints write each block as it is formatted; the names exist so scripts import."""

    Block = 0
    Segment = 1
    Volume = 2


def _extras(sub: str) -> dict:
    """vortex names that vortexgo keeps in another module than vortex does."""
    if sub == "engine":
        from . import source

        return {"Source": source.Source, "source": source.source, "find_rising_edges": source.find_rising_edges,
                "compute_resampling": source.compute_resampling, "dispersion_phasor": source.dispersion_phasor,
                "Block": Block, "BufferStrategy": BufferStrategy}
    if sub == "acquire":  # vortexgo.alazar builds on vortexgo.acquire, so acquire cannot name it
        from . import alazar

        from . import imaq, teledyne  # they build on vortexgo.acquire too

        return {"alazar": alazar, **{n: getattr(alazar, n) for n in ("AlazarAcquisition", "AlazarConfig", "AlazarDevice",
                                                                "AlazarFFTAcquisition", "AlazarFFTConfig")},
                "imaq": imaq, "ImaqAcquisition": imaq.ImaqAcquisition, "ImaqAcquisitionConfig": imaq.ImaqAcquisitionConfig,
                "teledyne": teledyne, "TeledyneAcquisition": teledyne.TeledyneAcquisition,
                "TeledyneConfig": teledyne.TeledyneConfig}
    return {}


_finder: Optional[_Finder] = None


def _root_module() -> types.ModuleType:
    import vortexgo

    root = types.ModuleType("vortex", "vortexgo standing in for vortex (vortexgo.compat.install())")
    root.__path__ = []  # a package: submodules resolve through the finder
    root.__vortexgo__ = True
    for name in _ROOT_NAMES:
        setattr(root, name, getattr(vortexgo, name))
    root.__version__ = getattr(vortexgo, "__version__", "0")

    def __getattr__(name: str):  # vortex.engine etc. after `import vortex`
        if name == "__feature__":
            root.__feature__ = _features()
            return root.__feature__
        if name in SUBMODULES:
            return importlib.import_module(f"vortex.{name}")
        raise AttributeError(f"module 'vortex' (vortexgo) has no attribute {name!r}")

    root.__getattr__ = __getattr__
    return root


def _features() -> list:
    """vortex's ``__feature__`` for vortexgo: the vortex features vortexgo provides. 'cuda' (and
    vortex's 'cuda_dynamic_resampling') when a CUDA driver and device are present; 'fftw' (the CPU
    processor); 'hdf5' when h5py imports; the drivers vortexgo binds; 'exception_guards' (a
    callback's exception never ends the process)."""
    feats = ["machdsp", "fftw"]
    try:
        from . import _device

        if _device.get_device().is_cuda:
            feats += ["cuda", "cuda_dynamic_resampling"]
    except Exception:  # noqa: BLE001 - no driver or device: the CPU backend
        pass
    if importlib.util.find_spec("h5py") is not None:
        feats.append("hdf5")
    return feats + ["alazar", "alazar_dac", "daqmx", "imaq", "teledyne", "simple", "exception_guards"]


def installed() -> bool:
    """True while :func:`install` is in effect."""
    return _finder is not None


def _real_vortex() -> Optional[str]:
    """Where another vortex is (a module already imported or importable), or None."""
    mod = sys.modules.get("vortex")
    if mod is not None and not getattr(mod, "__vortexgo__", False):
        return getattr(mod, "__file__", None) or repr(mod)
    if mod is None:
        try:
            spec = importlib.util.find_spec("vortex")
        except (ImportError, ValueError):
            spec = None
        if spec is not None:
            return spec.origin or ", ".join(spec.submodule_search_locations or []) or "an installed vortex"
    return None


def install(shadow: bool = False) -> None:
    """Make ``import vortex`` (and its submodules) import vortexgo.

    Raises :class:`VortexInstalledError` when a real vortex is importable or
    imported, unless ``shadow=True`` (then it warns and vortexgo wins for this
    process). Idempotent.
    """
    global _finder
    if _finder is not None:
        return
    where = _real_vortex()
    if where is not None:
        if not shadow:
            raise VortexInstalledError(
                f"a real vortex is installed ({where}); vortexgo.compat.install() would hide it. "
                "Import vortexgo directly, or call install(shadow=True) to use vortexgo under vortex's names anyway.")
        warnings.warn(f"vortexgo.compat.install(shadow=True): vortexgo now stands in for the vortex at {where} "
                      "in this process", stacklevel=2)
        for name in [n for n in sys.modules if n == "vortex" or n.startswith("vortex.")]:
            del sys.modules[name]
    _finder = _Finder()
    sys.meta_path.insert(0, _finder)


def uninstall() -> None:
    """Undo :func:`install`: ``vortex`` names are no longer vortexgo's."""
    global _finder
    if _finder is None:
        return
    try:
        sys.meta_path.remove(_finder)
    except ValueError:
        pass
    _finder = None
    for name in [n for n in sys.modules if n == "vortex" or n.startswith("vortex.")]:
        mod = sys.modules[name]
        if getattr(mod, "__vortexgo__", False) or isinstance(mod, _Forward):
            del sys.modules[name]
