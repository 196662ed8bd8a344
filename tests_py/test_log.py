"""vortexgo.log: vortex's loggers, sinks and helpers, read back from where
the records go (a file, standard error, Python's logging)."""

from __future__ import annotations

import logging
import re
import threading

import pytest

import vortexgo as vg
from vortexgo import log

LINE = re.compile(r"^\[\d{2}-[A-Z][a-z]{2}-\d{4} \d{2}:\d{2}:\d{2}\.\d{6}\] (?P<name>.{10}) \((?P<L>[TDIWEC])\) (?P<msg>.*)$")


def test_console_logger_writes_vortex_pattern_to_stderr(capsys):
    lg = vg.get_console_logger("engine", 2)
    lg.info("hello")
    lg.debug("hidden below info")
    lg.warn("careful")
    lines = capsys.readouterr().err.splitlines()
    assert [LINE.match(l).group("L", "msg") for l in lines] == [("I", "hello"), ("W", "careful")]
    assert LINE.match(lines[0]).group("name") == "engine    "
    assert repr(lg) == "<Logger: engine -> [<StdErrSink>]>"


def test_file_logger_appends_and_change_moves(tmp_path):
    p = tmp_path / "logs" / "run.log"
    lg = vg.get_file_logger("acq", p)
    lg.error("boom")
    lg.flush()
    assert LINE.match(p.read_text().strip()).group("L", "msg") == ("E", "boom")
    sink = lg.sinks[0]
    assert isinstance(sink, log.FileSink) and sink.filename == str(p)
    q = tmp_path / "other.log"
    sink.change(q)
    lg.critical("moved")
    lg.flush()
    assert "moved" in q.read_text() and "moved" not in p.read_text()
    sink.change(q, truncate=True)
    lg.flush()
    assert q.read_text() == ""
    sink.close()


def test_python_logger_maps_levels_times_ten(caplog):
    lg = vg.get_python_logger("proc")
    assert lg.name == "vortex.proc" and lg.level == log.DEBUG
    with caplog.at_level(0, logger="vortex.proc"):
        lg.trace("not created: below the logger's debug level")
        lg.debug("d")
        lg.error("e")
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("vortex.proc", 10, "d"), ("vortex.proc", 40, "e")]


def test_logger_sinks_levels_patterns(capsys):
    out, err = log.StdOutSink(), log.ConsoleSink()
    lg = log.Logger("multi", sinks=[out, err])
    lg.add_sink(out)  # twice: no effect
    assert len(lg.sinks) == 2
    err.level = log.ERROR
    lg.set_pattern("%l|%n|%v|%%")
    lg.warn("w")
    lg.error("e")
    cap = capsys.readouterr()
    assert cap.out.splitlines() == ["warning|multi|w|%", "error|multi|e|%"]
    assert cap.err.splitlines() == ["error|multi|e|%"]
    lg.remove_sink(out)
    lg.remove_sink(out)  # not attached: no effect
    c = lg.clone("copy")
    assert c.name == "copy" and c.sinks == lg.sinks and c.level == lg.level
    lg.level = log.OFF
    lg.critical("off")
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("call,exc,words", [
    (lambda: log.Logger("x").log(7, "m"), ValueError, "level=7"),
    (lambda: setattr(log.Logger("x"), "level", -1), ValueError, "Logger.level=-1"),
    (lambda: log.Logger("x", sink=log.StdErrSink(), sinks=[]), ValueError, "not both"),
    (lambda: log.Logger("x").add_sink("stderr"), TypeError, "sink='stderr'"),
    (lambda: log.Logger(3), TypeError, "name=3"),
    (lambda: log.FileSink(""), ValueError, "filename"),
])
def test_bad_values_name_the_argument(call, exc, words):
    with pytest.raises(exc, match=re.escape(words)):
        call()


def test_records_from_threads_stay_whole(tmp_path):
    p = tmp_path / "t.log"
    lg = vg.get_file_logger("threads", p, log.TRACE)

    def spam(k):
        for i in range(200):
            lg.info(f"thread {k} line {i} " + "x" * 50)

    ts = [threading.Thread(target=spam, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    lg.flush()
    lines = p.read_text().splitlines()
    assert len(lines) == 800
    assert all(LINE.match(l) and l.endswith("x" * 50) for l in lines)
