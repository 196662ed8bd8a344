"""Two rules every public class shares: unknown attributes are refused, and
objects that own native resources are never copied.

**Attributes.** vortex's classes (pybind11) raise ``AttributeError`` for an
attribute they do not have, so a misspelt field (``cfg.ascans_per_bscn = 5``)
fails where it is written instead of running with the default. Plain Python
classes would store it and ignore it. :class:`StrictAttributes` restores
vortex's rule for code outside vortexgo: a public name the class does not
declare (as a field, property, slot, method or annotation) and the object
does not already hold is refused, naming the class and the closest field.
Code inside vortexgo sets what it likes (its internal state, set after
``__init__`` too), and a user's subclass of one of our classes is free, as a
Python subclass of a pybind11 class has a ``__dict__``.

**Copies.** An object holding a Go handle must have one owner: a second
Python wrapper of the same handle releases it when collected, and the
original (or the process's default device) is gone. :class:`NoCopy` refuses
``copy.copy``, ``copy.deepcopy`` and pickling with ``TypeError`` before
anything is built, and says what to do instead. Configs, which own nothing,
copy normally (``.copy()``, ``copy.copy``, ``copy.deepcopy``, ``pickle``).
"""

from __future__ import annotations

import difflib
import sys
from typing import Any, FrozenSet, NoReturn

__all__ = ["StrictAttributes", "NoCopy", "Config", "ValueList", "public_names", "unknown_attribute", "refuse_copy"]

_PACKAGE = __name__.rpartition(".")[0]  # "vortexgo"

_names_cache: dict = {}


def public_names(cls: type) -> FrozenSet[str]:
    """The public attribute names ``cls`` declares: its (and its bases')
    attributes, properties, slots and annotations (dataclass fields)."""
    got = _names_cache.get(cls)
    if got is None:
        names = {n for n in dir(cls) if not n.startswith("_")}
        for c in cls.__mro__:
            names.update(n for n in c.__dict__.get("__annotations__", {}) if not n.startswith("_"))
            names.update(n for n in getattr(c, "_extra_attributes", ()))
        got = _names_cache[cls] = frozenset(names)
    return got


def _suggest(name: str, choices: Any) -> str:
    close = difflib.get_close_matches(name, sorted(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown_attribute(obj: Any, name: str) -> AttributeError:
    """The AttributeError for ``obj.name``: the class, the name and the closest field."""
    cls = type(obj)
    known = set(public_names(cls))
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict):
        known.update(k for k in d if not k.startswith("_"))
    try:  # what the object itself lists (an enum member's name and value)
        known.update(n for n in dir(obj) if not n.startswith("_"))
    except Exception:
        pass
    return AttributeError(f"{cls.__name__!r} object has no attribute {name!r}{_suggest(name, known)}")


def _inside_package(depth: int) -> bool:
    """True when the frame ``depth`` levels above the caller runs vortexgo's own code."""
    try:
        g = sys._getframe(depth + 1).f_globals
    except ValueError:  # no such frame (called from C at the top)
        return False
    mod = g.get("__name__", "")
    return mod == _PACKAGE or mod.startswith(_PACKAGE + ".")


class StrictAttributes:
    """Mixin: setting a public attribute the class does not declare raises
    ``AttributeError`` naming the class, the attribute and the closest field
    (vortex's behaviour). See the module's doc for who is exempt."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("_") and name not in public_names(type(self)):
            cls = type(self)
            d = getattr(self, "__dict__", None)
            held = isinstance(d, dict) and name in d
            ours = cls.__module__ == _PACKAGE or cls.__module__.startswith(_PACKAGE + ".")
            if not held and ours and not _inside_package(1):
                raise unknown_attribute(self, name)
        object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup failed: say what was meant. Dunder and
        # private names (copy, pickle and hasattr probes) fail plainly.
        if name.startswith("_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        if name in public_names(type(self)):  # declared, but its getter failed or it is unset
            raise AttributeError(f"{type(self).__name__}.{name} is not available on this object")
        raise unknown_attribute(self, name)


def refuse_copy(obj: Any, how: str) -> NoReturn:
    """Raise the TypeError of :class:`NoCopy` for ``obj`` (``how``: "copied" or "pickled")."""
    cls = type(obj)
    d = getattr(obj, "__dict__", None)
    has_config = "config" in public_names(cls) or (isinstance(d, dict) and "config" in d)
    hint = getattr(cls, "_copy_hint", None) or (
        f"share the object, or build another from its config: {cls.__name__}(obj.config)" if has_config
        else "share the object, or build another the way this one was built")
    reason = getattr(cls, "_copy_reason", None) or "it owns native resources (a Go handle) that one object must own"
    raise TypeError(f"a {cls.__name__} cannot be {how}: {reason}; {hint}")


class NoCopy:
    """Mixin for classes that own a Go handle: ``copy.copy``, ``copy.deepcopy``
    and ``pickle`` raise ``TypeError`` before anything is built, so neither the
    original nor the process is touched. ``_copy_hint`` (a class attribute)
    says what to do instead; ``_copy_reason`` what it owns, where that is not a Go
    handle (a log sink's file and lock)."""

    __slots__ = ()

    def __copy__(self) -> NoReturn:
        refuse_copy(self, "copied")

    def __deepcopy__(self, memo: Any) -> NoReturn:
        refuse_copy(self, "copied")

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        refuse_copy(self, "pickled")

    def __reduce__(self) -> NoReturn:
        refuse_copy(self, "pickled")


class Config(StrictAttributes):
    """Base of the plain configs: strict attributes and vortex's ``copy()``, an
    independent deep copy (``copy.copy``, ``copy.deepcopy`` and pickle work too)."""

    __slots__ = ()

    def copy(self):  # type: ignore[no-untyped-def] - returns the config's own class
        """An independent copy of this config (vortex's ``copy()``)."""
        import copy as _copy

        return _copy.deepcopy(self)


class ValueList(StrictAttributes, list):
    """Base of the list-likes (vortex's ``MarkerList``, ``SegmentList``,
    ``StrobeList``, ``SinkList``...: pybind11 ``bind_vector`` types): a
    Python list with strict attributes whose copies keep the class.

    vortex copies one with its constructor (``MarkerList(other)``) or a slice
    (``markers[:]``, a ``MarkerList`` too); both work here, and so do
    ``.copy()`` (a shallow copy, as :meth:`list.copy`), ``copy.copy``,
    ``copy.deepcopy`` and pickle (vortex's pybind11 lists refuse those three
    only because pybind11 gives no pickling). A list is a value: what it
    holds decides a deep copy (markers and segments copy, processors and
    sinks refuse with their TypeError).
    """

    __slots__ = ()

    def __getitem__(self, i):  # type: ignore[no-untyped-def] - list's overloads
        got = list.__getitem__(self, i)
        if isinstance(i, slice):
            return self._like(got)
        return got

    def _like(self, items):  # type: ignore[no-untyped-def]
        """A list of this class holding ``items`` (already checked: they came from this list)."""
        out = list.__new__(type(self))
        list.extend(out, items)
        return out

    def copy(self):  # type: ignore[no-untyped-def, override] - returns the list's own class
        """A shallow copy of the same class (vortex's ``MarkerList(other)``)."""
        return self._like(self)

    def __bool__(self) -> bool:
        """True when the list holds anything (pybind11's ``bind_vector`` defines it; listed by ``dir()``)."""
        return len(self) > 0
