"""Exception classes, and the mapping from the Go core's tagged error text."""

from __future__ import annotations

import functools
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
    ``cuda: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory``."""


class ClosedError(VortexError, ValueError):
    """Use of a stream, event, buffer, tensor or engine after it was closed."""


class MemoryBudgetError(VortexError, MemoryError):
    """An allocation would exceed the memory budget; the text names the
    requested size, the current usage and the limit."""


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

    #: The Go stack of the panic ("" when the text carried none).
    go_stack: str = ""


class ForkError(VortexError):
    """vortexgo was used in a child of ``fork()`` of a process that had started
    its Go runtime: neither the Go runtime nor the CUDA driver survives a
    fork. Start such workers with multiprocessing's ``spawn`` or
    ``forkserver`` method. Python code in the child that does not use
    vortexgo is not affected."""


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


def translate(exc: BaseException) -> BaseException:
    """Map a RuntimeError raised by the gopy layer to vortexgo's class.

    The Go side prefixes each error with its class ("CudaError: ..."); see
    gosrc/pyapi/errors.go.
    """
    text = str(exc)
    head, sep, rest = text.partition(": ")
    cls = _TAGS.get(head) if sep else None
    if cls is None:
        return VortexError(text)
    if cls is InternalError:
        # The first line is the message; the rest is the Go stack
        # (gosrc/guard.PanicError), kept out of the message but shown.
        msg, _, stack = rest.partition("\n")
        exc = InternalError(msg)
        exc.go_stack = stack
        if stack:
            exc.add_note("Go stack of the panic:\n" + stack)
        return exc
    return cls(rest)


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
    import warnings

    # (In a child of fork() these finalizers never run: _core detaches them at the fork.)

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
