"""vortexgo.log loggers where vortex scripts put them: handed to vortexgo's own parts
(which log with :mod:`logging`'s calling convention), and reached as ``vortex.log`` /
``vortex.get_*_logger`` through vortexgo.compat."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import vortexgo as vg
from vortexgo import log
from vortexgo.engine import StackDeviceTensorEndpointInt8

from test_engine import make_rig, run

ROOT = Path(__file__).resolve().parents[1]


def test_logging_style_arguments_are_formatted(capsys):
    lg = vg.get_console_logger("fmt", log.TRACE)
    lg.set_pattern("%L %v")
    lg.debug("block %d of %s", 3, "vol")
    lg.info("%(a)s-%(b)s", {"a": 1, "b": 2})
    lg.warn("100% sure")  # no args: no %-formatting, as logging
    lg.error("too few %d %d", 1)  # never raises: the arguments are appended
    assert capsys.readouterr().err.splitlines() == ["D block 3 of vol", "I 1-2", "W 100% sure", "E too few %d %d (1,)"]


def test_exception_appends_the_traceback(tmp_path):
    p = tmp_path / "x.log"
    lg = vg.get_file_logger("exc", p)
    try:
        raise KeyError("missing")
    except KeyError as e:
        lg.exception("failed %s", "here")
        caught = e
    lg.error("explicit", exc_info=caught)
    lg.error("nothing in flight", exc_info=True)
    lg.flush()
    text = p.read_text()
    assert text.count("Traceback (most recent call last)") == 2 and text.count("KeyError: 'missing'") == 2
    assert "(E) failed here\n" in text and "(E) nothing in flight\n" in text
    assert lg.is_enabled(log.ERROR) and not lg.is_enabled(log.DEBUG) and not lg.is_enabled(log.OFF)


def test_a_vortex_logger_given_to_the_engine_gets_its_callback_errors(tmp_path):
    # vortex scripts pass Engine(get_console_logger(...)); vortexgo's engine logs a raising
    # callback with logger.exception("%s ...", what): the record reaches the vortex sink.
    p = tmp_path / "engine.log"
    lg = vg.get_file_logger("engine", p, log.DEBUG)
    ep = StackDeviceTensorEndpointInt8()
    ep.volume_callback = lambda *a: 1 / 0
    eng = run(make_rig([ep], volumes=2), logger=lg)
    assert eng.status().callback_errors == 2
    lg.flush()
    text = p.read_text()
    assert len(re.findall(r"\(E\) vortexgo: \w+\.volume_callback raised", text)) == 2 and "ZeroDivisionError" in text


def test_python_logger_records_reach_logging_handlers():
    # vortex's get_python_logger('acquire') feeds logging.getLogger('vortex.acquire'):
    # the demos configure the root logger and see the records there.
    got: list[logging.LogRecord] = []

    class H(logging.Handler):
        def emit(self, record):
            got.append(record)

    h = H(level=0)
    root = logging.getLogger()
    old = root.level
    root.addHandler(h)
    root.setLevel(logging.NOTSET)
    try:
        lg = vg.get_python_logger("acquire")
        lg.info("hello %s", "world")
        lg.trace("below the default debug level: not created")
        lg2 = vg.get_python_logger("x", scope="lab", level=log.TRACE)
        lg2.trace("trace maps to 0")
    finally:
        root.removeHandler(h)
        root.setLevel(old)
    assert [(r.name, r.levelno, r.getMessage()) for r in got] == [
        ("vortex.acquire", logging.INFO, "hello world"), ("lab.x", 0, "trace maps to 0")]


def test_helpers_match_vortex_signatures():
    import inspect

    def params(f):
        return [(p.name, p.default) for p in inspect.signature(f).parameters.values()]

    # vortex 0.5.1 (bind/log.cpp): (name, level=info), (name, filename, level=info), (name, scope="vortex", level=debug)
    e = inspect.Parameter.empty
    assert params(vg.get_console_logger) == [("name", e), ("level", log.INFO)]
    assert params(vg.get_file_logger) == [("name", e), ("filename", e), ("level", log.INFO)]
    assert params(vg.get_python_logger) == [("name", e), ("scope", "vortex"), ("level", log.DEBUG)]


def test_vortex_names_reach_the_log_module():
    code = textwrap.dedent("""
        import vortexgo.compat as c
        c.install()
        import vortex, vortex.log, vortexgo
        from vortex import get_console_logger, get_file_logger, get_python_logger
        from vortex.log import Logger, StdErrSink, FileSink, PythonSink, ConsoleSink, SinkList
        assert get_console_logger is vortexgo.get_console_logger and vortex.log.Logger is vortexgo.log.Logger
        lg = get_console_logger("compat", 2)
        lg.info("via vortex names")
        print(repr(lg))
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**__import__("os").environ, "PYTHONPATH": __import__("os").path.dirname(__import__("os").path.dirname(__import__("vortexgo").__file__))})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "<Logger: compat -> [<StdErrSink>]>" and "(I) via vortex names" in r.stderr
