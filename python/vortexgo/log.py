"""Logging as vortex's users call it (vortex's ``vortex.log`` and its helpers).

vortex wraps spdlog: a :class:`Logger` has a name and a level and routes
records to sinks (standard out or error, a file, Python's :mod:`logging`).
Scripts create one with :func:`get_console_logger` and pass it to engine
parts as ``logger=`` / ``log=``. This module gives the same objects, names,
levels and default pattern, written in Python on top of a lock per sink:
records are formatted and written on the calling thread, in order, so a
record is on the console or in the file when the call returns.

Levels are spdlog's: trace 0, debug 1, info 2, warn 3, error 4, critical 5,
off 6. :class:`PythonSink` maps them to :mod:`logging` levels by multiplying
by 10, as vortex does.
"""

from __future__ import annotations

import datetime as _dt
import logging as _logging
import os
import re
import sys
import threading
from typing import IO, Iterable, List, Optional, Union

from ._attrs import NoCopy, StrictAttributes, ValueList
from ._validate import check_int

__all__ = [
    "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "CRITICAL", "OFF",
    "Logger", "Sink", "StdOutSink", "StdErrSink", "ConsoleSink", "FileSink", "PythonSink", "SinkList",
    "get_console_logger", "get_file_logger", "get_python_logger",
]

TRACE, DEBUG, INFO, WARN, ERROR, CRITICAL, OFF = range(7)
_LEVEL_NAMES = ("trace", "debug", "info", "warning", "error", "critical", "off")
_LEVEL_LETTERS = "TDIWEC"

#: The pattern vortex gives every logger. (vortex 0.5.1's own constant reads
#: "d-%b-%Y ...", its opening "[%" lost; we keep the bracketed date it meant.)
DEFAULT_PATTERN = "[%d-%b-%Y %H:%M:%S.%f] %-10n %^(%L) %v%$"

_FLAG = re.compile(r"%(-?)(\d*)([a-zA-Z%^$])")


def _level(name: str, v: object) -> int:
    return check_int(name, v, TRACE, OFF)


def _format(pattern: str, logger: str, level: int, msg: str, when: _dt.datetime) -> str:
    """Render spdlog's pattern flags: the ones vortex's pattern uses and the
    common others (%l %t %P %e %F %T %%); unknown flags are kept as written."""

    def flag(m: "re.Match[str]") -> str:
        left, width, f = m.group(1), m.group(2), m.group(3)
        text = {
            "v": msg, "n": logger, "l": _LEVEL_NAMES[level], "L": _LEVEL_LETTERS[level] if level < OFF else "O",
            "d": f"{when.day:02d}", "b": when.strftime("%b"), "Y": f"{when.year:04d}", "m": f"{when.month:02d}",
            "H": f"{when.hour:02d}", "M": f"{when.minute:02d}", "S": f"{when.second:02d}",
            "e": f"{when.microsecond // 1000:03d}", "f": f"{when.microsecond:06d}",
            "F": f"{when.microsecond * 1000:09d}", "T": when.strftime("%H:%M:%S"),
            "t": str(threading.get_ident()), "P": str(os.getpid()), "%": "%",
            "^": "", "$": "",  # colour range markers: no colours written
        }.get(f)
        if text is None:
            return m.group(0)
        if width:
            text = text.ljust(int(width)) if left else text.rjust(int(width))
        return text

    return _FLAG.sub(flag, pattern)


def _message(msg: object, args: tuple, exc_info: object) -> str:
    """The record's text: ``msg % args`` as :mod:`logging` does, plus a traceback for ``exc_info``.
    A record never raises: a message its arguments do not fit is written with them appended."""
    text = str(msg)
    if args:
        if len(args) == 1 and isinstance(args[0], dict) and args[0]:
            args = args[0]  # type: ignore[assignment] - logging's mapping form
        try:
            text = text % args
        except (TypeError, ValueError, KeyError):
            text = f"{text} {args!r}"
    if exc_info:
        import traceback

        if isinstance(exc_info, BaseException):
            info = (type(exc_info), exc_info, exc_info.__traceback__)
        elif isinstance(exc_info, tuple):
            info = exc_info
        else:
            info = sys.exc_info()
        if info[0] is not None:
            text = text + "\n" + "".join(traceback.format_exception(*info)).rstrip("\n")
    return text


class Sink(NoCopy, StrictAttributes):
    """Where records go; the base of every sink. Thread-safe.

    A sink is shared, not copied (vortex's sinks refuse ``copy`` and pickle
    too): ``copy.copy``, ``copy.deepcopy`` and pickle raise ``TypeError``;
    attach the one sink to several loggers instead.
    """

    _copy_reason = "it owns its output (a stream, a file or Python's logging) and the lock that orders its records"
    _copy_hint = ("share the sink instead: attach it to several loggers (Logger(name, sink), logger.add_sink(sink)), "
                  "or make another sink")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pattern = DEFAULT_PATTERN
        self._level = TRACE

    @property
    def level(self) -> int:
        """Records below this level are skipped by this sink."""
        return self._level

    @level.setter
    def level(self, v: int) -> None:
        self._level = _level("Sink.level", v)

    def set_pattern(self, pattern: str) -> None:
        """Set this sink's spdlog-style pattern (a logger's ``set_pattern`` overrides it)."""
        if not isinstance(pattern, str):
            raise TypeError(f"pattern={pattern!r}, expected a str")
        self._pattern = pattern

    def _sink(self, logger: str, level: int, msg: str, when: _dt.datetime) -> None:
        if level < self._level:
            return
        text = _format(self._pattern, logger, level, msg, when)
        with self._lock:
            self._write(text + "\n", logger, level, msg, when)

    def _write(self, text: str, logger: str, level: int, msg: str, when: _dt.datetime) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        """Finish writing every record sunk so far."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class _StreamSink(Sink):
    _stream_name = ""

    def _stream(self) -> IO[str]:
        # Looked up per record: pytest, Jupyter and users replace sys.stdout.
        return getattr(sys, self._stream_name)

    def _write(self, text: str, *_: object) -> None:
        self._stream().write(text)

    def flush(self) -> None:
        with self._lock:
            self._stream().flush()


class StdOutSink(_StreamSink):
    """Writes formatted records to standard output."""

    _stream_name = "stdout"


class StdErrSink(_StreamSink):
    """Writes formatted records to standard error."""

    _stream_name = "stderr"


#: vortex's alias of :class:`StdErrSink`.
ConsoleSink = StdErrSink


class FileSink(Sink):
    """Appends formatted records to a file (erased first with ``truncate=True``)."""

    _copy_hint = ("share the sink instead: attach it to several loggers (Logger(name, sink), logger.add_sink(sink)), "
                  "or make another with FileSink(sink.filename)")

    def __init__(self, filename: Union[str, os.PathLike], truncate: bool = False) -> None:
        super().__init__()
        self._file: Optional[IO[str]] = None
        self._filename = ""
        self.change(filename, truncate)

    @property
    def filename(self) -> str:
        """The file records go to."""
        return self._filename

    def change(self, filename: Union[str, os.PathLike], truncate: bool = False) -> None:
        """Send later records to ``filename`` (thread-safe)."""
        path = os.fspath(filename)
        if not isinstance(path, str) or not path:
            raise ValueError(f"filename={filename!r}, expected a path")
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
        f = open(path, "w" if truncate else "a", encoding="utf-8")
        with self._lock:
            old, self._file, self._filename = self._file, f, path
        if old is not None:
            old.close()

    def _write(self, text: str, *_: object) -> None:
        assert self._file is not None
        self._file.write(text)

    def flush(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.flush()

    def close(self) -> None:
        """Close the file; later records are dropped with an error."""
        with self._lock:
            f, self._file = self._file, None
        if f is not None:
            f.close()

    def __del__(self) -> None:
        f = getattr(self, "_file", None)
        if f is not None:
            f.close()

    def __repr__(self) -> str:
        return f"<FileSink: {self._filename}>"


class PythonSink(Sink):
    """Hands records to :mod:`logging` as ``LogRecord``s of the logger named
    like the vortexgo :class:`Logger`, at level ``10 * level``."""

    def _write(self, text: str, logger: str, level: int, msg: str, when: _dt.datetime) -> None:
        record = _logging.LogRecord(logger, level * 10, __file__, 0, msg, None, None)
        record.created = when.timestamp()
        _logging.getLogger(logger).handle(record)

    def _sink(self, logger: str, level: int, msg: str, when: _dt.datetime) -> None:
        # No pattern: Python's handlers format the record themselves.
        if level >= self._level:
            with self._lock:
                self._write("", logger, level, msg, when)


class SinkList(ValueList):
    """A list of sinks (vortex's ``log.SinkList``). Its copies share the sinks
    (a deep copy or pickle refuses: a sink is not copied)."""

    def __repr__(self) -> str:
        return f"SinkList[{', '.join(map(repr, self))}]"


def _check_sink(name: str, s: object) -> Sink:
    if not isinstance(s, Sink):
        raise TypeError(f"{name}={s!r}, expected a vortexgo.log sink (StdErrSink, FileSink, PythonSink, ...)")
    return s


class Logger(NoCopy, StrictAttributes):
    """A named logger routing records at or above :attr:`level` to its sinks.

    ``Logger(name, sink=None, sinks=None)``: pass one sink or a list, not both.
    A logger is shared, not copied (as vortex's): ``copy.copy``,
    ``copy.deepcopy`` and pickle raise ``TypeError``; :meth:`clone` makes
    another logger over the same sinks.
    """

    _copy_reason = "its sinks own their outputs (streams, files, Python's logging) and locks"
    _copy_hint = "share the logger instead, or make another over the same sinks with logger.clone(name)"

    def __init__(self, name: str, sink: Optional[Sink] = None, sinks: Optional[Iterable[Sink]] = None) -> None:
        if not isinstance(name, str):
            raise TypeError(f"name={name!r}, expected a str")
        if sink is not None and sinks is not None:
            raise ValueError("Logger: pass sink= or sinks=, not both")
        self._name = name
        self._level = INFO
        self._sinks: List[Sink] = []
        for s in ([sink] if sink is not None else list(sinks or ())):
            self.add_sink(s)

    @property
    def name(self) -> str:
        """The logger's name (read only)."""
        return self._name

    @property
    def level(self) -> int:
        """Records below this level are not created."""
        return self._level

    @level.setter
    def level(self, v: int) -> None:
        self._level = _level("Logger.level", v)

    @property
    def sinks(self) -> SinkList:
        """The attached sinks (a copy)."""
        return SinkList(self._sinks)

    def add_sink(self, sink: Sink) -> None:
        """Attach ``sink``; attaching it twice has no effect."""
        _check_sink("sink", sink)
        if all(s is not sink for s in self._sinks):
            self._sinks = self._sinks + [sink]  # copy on write: a record in flight keeps its list

    def remove_sink(self, sink: Sink) -> None:
        """Detach ``sink``; detaching one not attached has no effect."""
        self._sinks = [s for s in self._sinks if s is not sink]

    def set_pattern(self, pattern: str) -> None:
        """Set the spdlog-style pattern of every attached sink."""
        for s in self._sinks:
            s.set_pattern(pattern)

    def log(self, level: int, msg: str, *args: object, exc_info: object = None, **_: object) -> None:
        """Emit ``msg`` at ``level`` (0 trace ... 5 critical).

        vortex's form is ``log(level, msg)``. vortexgo's own parts log through
        whatever logger a script hands them with :mod:`logging`'s calling
        convention (``debug("block %d", n)``, ``exception(...)``), so a
        vortexgo :class:`Logger` takes that too: ``args`` are %-formatted into
        ``msg`` and ``exc_info`` (True, an exception or an exc_info tuple)
        appends the traceback. Other :mod:`logging` keywords (``extra``,
        ``stacklevel``) are accepted and ignored.
        """
        level = _level("level", level)
        if level < self._level or level == OFF:
            return
        when = _dt.datetime.now()
        text = _message(msg, args, exc_info)
        for s in self._sinks:
            s._sink(self._name, level, text, when)

    def trace(self, msg: str, *args: object, **kw: object) -> None:
        """Log at trace level."""
        self.log(TRACE, msg, *args, **kw)

    def debug(self, msg: str, *args: object, **kw: object) -> None:
        """Log at debug level."""
        self.log(DEBUG, msg, *args, **kw)

    def info(self, msg: str, *args: object, **kw: object) -> None:
        """Log at info level."""
        self.log(INFO, msg, *args, **kw)

    def warn(self, msg: str, *args: object, **kw: object) -> None:
        """Log at warn level."""
        self.log(WARN, msg, *args, **kw)

    warning = warn

    def error(self, msg: str, *args: object, **kw: object) -> None:
        """Log at error level."""
        self.log(ERROR, msg, *args, **kw)

    def exception(self, msg: str, *args: object, exc_info: object = True, **kw: object) -> None:
        """Log at error level with the exception being handled (:mod:`logging`'s ``exception``)."""
        self.log(ERROR, msg, *args, exc_info=exc_info, **kw)

    def critical(self, msg: str, *args: object, **kw: object) -> None:
        """Log at critical level."""
        self.log(CRITICAL, msg, *args, **kw)

    def is_enabled(self, level: int) -> bool:
        """True when a record at ``level`` would be created."""
        level = _level("level", level)
        return level >= self._level and level != OFF

    def flush(self) -> None:
        """Flush every attached sink."""
        for s in self._sinks:
            s.flush()

    def clone(self, name: str) -> "Logger":
        """A logger named ``name`` sharing this one's sinks and level."""
        c = Logger(name, sinks=self._sinks)
        c._level = self._level
        return c

    def __repr__(self) -> str:
        return f"<Logger: {self._name} -> [{', '.join(map(repr, self._sinks))}]>"


def get_console_logger(name: str, level: int = INFO) -> Logger:
    """A new logger writing to standard error (vortex's helper)."""
    lg = Logger(name, StdErrSink())
    lg.level = level
    return lg


def get_file_logger(name: str, filename: Union[str, os.PathLike], level: int = INFO) -> Logger:
    """A new logger appending to ``filename`` (vortex's helper)."""
    lg = Logger(name, FileSink(filename))
    lg.level = level
    return lg


def get_python_logger(name: str, scope: str = "vortex", level: int = DEBUG) -> Logger:
    """A new logger named ``{scope}.{name}`` feeding Python's :mod:`logging`
    (vortex's helper; its bound default level is debug)."""
    lg = Logger(f"{scope}.{name}", PythonSink())
    lg.level = level
    return lg


def is_logger(v: object) -> bool:
    """True for a logger a vortex script passes where vortex takes one: a Python
    :class:`logging.Logger` or a :class:`vortexgo.log.Logger` (what
    ``get_console_logger`` returns). vortex's constructors take the logger as
    their first argument (``CUDAProcessor(logger)``, ``Engine(logger)``)."""
    return isinstance(v, (_logging.Logger, Logger))
