"""Exception classes, and the mapping from the Go core's tagged error text."""

from __future__ import annotations

import functools
import json
import re
from typing import Callable, TypeVar

__all__ = [
    "VortexError",
    "CudaError",
    "ClosedError",
    "MemoryBudgetError",
    "LockError",
    "InUseError",
    "InternalError",
    "ForkError",
]


from ._attrs import NoCopy, StrictAttributes  # noqa: E402 - _attrs imports nothing of ours


class VortexError(RuntimeError):
    """Base class of vortexgo's runtime errors."""


class CudaError(VortexError):
    """An error reported by the CUDA driver (or cuFFT); the text names the
    driver call, the error name and its code, e.g.
    ``cuda: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory``,
    and the attributes carry them."""

    #: The driver call that failed ("cuMemAlloc_v2"; "" when not known).
    op: str = ""
    #: The ``CUresult`` (the ``cufftResult`` for ``cufft*`` calls).
    code: int = 0
    #: The code's symbolic name ("CUDA_ERROR_OUT_OF_MEMORY").
    name: str = ""


class ClosedError(VortexError, ValueError):
    """Use of a stream, event, buffer, tensor or engine after it was closed."""


class MemoryBudgetError(VortexError, MemoryError):
    """An allocation would exceed the memory budget; the text names the
    requested size, the current usage and the limit, and the attributes
    carry them (bytes)."""

    #: The kind of memory requested ("device" or "pinned").
    kind: str = ""
    #: The label the request was made under ("buffer_pool", "engine" ...).
    purpose: str = ""
    #: Bytes requested.
    requested: int = 0
    #: Bytes of that kind in use when the request was refused.
    current: int = 0
    #: The budget's limit in bytes.
    limit: int = 0


class LockError(VortexError):
    """A tensor operation that would deadlock (e.g. resizing while the same
    thread holds the tensor's lock)."""


class InUseError(VortexError):
    """Closing or changing something that is still in use (an endpoint or
    acquisition of a running engine, memory with work in flight) was
    refused: stop the user first (e.g. ``engine.stop()``), then retry."""


class InternalError(VortexError):
    """A bug in vortexgo's Go core: a Go panic, recovered instead of ending the
    interpreter. The text names the call or the engine stage and the panic;
    :attr:`go_stack` (also shown as a note under the traceback) is the Go
    stack at the panic. Please report it with that stack. The object the call
    was made on may be left in any state: close it (an engine whose stage
    panicked has ended its session and can still be stopped and closed)."""

    #: The Go stack of the panic ("" when none was recorded).
    go_stack: str = ""
    #: The goroutine or call that recovered the panic.
    where: str = ""


class ForkError(VortexError):
    """vortexgo was used in a child of ``fork()`` of a process that had started
    its Go runtime: neither the Go runtime nor the CUDA driver survives a
    fork. Start such workers with multiprocessing's ``spawn`` or
    ``forkserver`` method. Python code in the child that does not use
    vortexgo is not affected."""


# Shown as vortexgo.VortexError (how users catch them), not vortexgo._errors.VortexError.
for _cls in (VortexError, CudaError, ClosedError, MemoryBudgetError, LockError, InUseError, InternalError, ForkError):
    _cls.__module__ = "vortexgo"

#: The Go core's call prefixes ("engine.Prepare: ", "devices.Get: "): context for Go's own
#: logs, noise in a Python message (the traceback already says which call failed).
_GO_CALL = re.compile(r"(?:(?<=^)|(?<=: ))(?:backend|cuda|devices|endpoint|engine|format|memory|motion|ops|pipeline|storage)"
                      r"\.[A-Z][A-Za-z0-9]*(?:\.[A-Z][A-Za-z0-9]*)?: ")


def _plain(msg: str) -> str:
    """`msg` without the Go call prefixes, and without the "invalid argument" sentinel's text
    at its end (backend.ErrInvalid: the ValueError's class says it)."""
    return _GO_CALL.sub("", msg).removesuffix(": invalid argument")


_TAGS: dict[str, type[BaseException]] = {
    "InUseError": InUseError,
    "MemoryError": MemoryError,
    "CudaError": CudaError,
    "ValueError": ValueError,
    "KeyError": KeyError,
    "TimeoutError": TimeoutError,
    "ClosedError": ClosedError,
    "MemoryBudgetError": MemoryBudgetError,
    "OSError": OSError,
    "LockError": LockError,
    "VortexError": VortexError,
    "InternalError": InternalError,
    "ForkError": ForkError,
}


#: Separates an error's message from its fields (gosrc/pyapi/errors.go fieldSep).
_FIELD_SEP = "\x1e"
#: The fields each class takes from Go (gosrc/pyapi/errors.go errorFields).
_FIELDS: dict[type[BaseException], tuple[str, ...]] = {
    CudaError: ("op", "code", "name"),
    MemoryBudgetError: ("kind", "purpose", "requested", "current", "limit"),
    InternalError: ("where", "go_stack"),
}


def translate(exc: BaseException) -> BaseException:
    """Map a RuntimeError raised by the gopy layer to vortexgo's class.

    The Go side writes ``Class: message``, then for a class with fields a
    record separator and the fields as JSON (gosrc/pyapi/errors.go ``tag``):
    they become the exception's attributes (``CudaError.code``,
    ``MemoryBudgetError.limit`` ...), never parsed out of the message.
    """
    text = str(exc)
    head, sep, rest = text.partition(": ")
    cls = _TAGS.get(head) if sep else None
    if cls is None:
        return VortexError(_plain(text))
    msg, sep, fields = rest.partition(_FIELD_SEP)
    out = cls(_plain(msg))
    if sep and cls in _FIELDS:
        values = json.loads(fields)
        for name in _FIELDS[cls]:
            setattr(out, name, values[name])
    if isinstance(out, InternalError) and out.go_stack:
        out.add_note("Go stack of the panic:\n" + out.go_stack)
    return out


F = TypeVar("F", bound=Callable)


def native(fn: F) -> F:
    """Decorator: re-raise errors from Go calls inside fn as vortexgo errors.

    A try block costs nothing on the success path in CPython 3.11+, so this
    is safe on hot paths.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except RuntimeError as exc:
            if isinstance(exc, VortexError):
                raise
            raise translate(exc) from None

    return wrapper  # type: ignore[return-value]


def release_on_collect(obj: object, release: Callable[[], object], what: str):
    """Run ``release()`` (a bound method of a gopy handle) when ``obj`` is collected.

    Why not ``__del__``: when ``obj`` dies inside a reference cycle, the
    collector may finalize the gopy handle object first, and calling into Go
    through a released handle crashes the interpreter. ``weakref.finalize``
    holds ``release`` (and so the handle) strongly until it has run. It does
    not run at interpreter exit: the process releases everything then.
    A failure becomes a warning, never an exception from the collector.
    Returns the finalizer; ``close()`` methods ``detach()`` it and release
    explicitly so their errors propagate.
    """
    import weakref

    fin = weakref.finalize(obj, _release, release, what)
    fin.atexit = False
    return fin


def _release(release: Callable[[], object], what: str) -> None:
    import sys
    import warnings

    # (In a child of fork() these finalizers never run: _core detaches them at the fork.)
    if sys.is_finalizing():
        # The interpreter is tearing down: a consumer's DLPack deleter (CuPy's array
        # freed with its module) calls here late, and a call into Go then raced the
        # teardown (a SIGSEGV at exit, seen once on the GPU). The process releases
        # everything as it exits.
        return
    try:
        release()
    except Exception as exc:  # pragma: no cover - depends on teardown order
        if isinstance(exc, RuntimeError) and isinstance(translate(exc), ClosedError):
            return  # its owner (an endpoint, a coordinator) released it first: nothing left to do
        warnings.warn(f"vortexgo: releasing {what} failed: {exc}", ResourceWarning, stacklevel=2)


class Closeable(NoCopy, StrictAttributes):
    """Mixin for objects with ``close()``: the ``closed`` property and a context
    manager that closes on exit. An object owned by another (``_owner`` set,
    e.g. a context's coordinator) is left for its owner to close."""

    __slots__ = ()
    _closed: bool

    @property
    def closed(self) -> bool:
        """True after :meth:`close` (or after the owner closed it)."""
        return self._closed

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if not self._closed and getattr(self, "_owner", None) is None:
            self.close()  # type: ignore[attr-defined]
