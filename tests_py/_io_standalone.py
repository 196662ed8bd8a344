"""What the tests of vortex's standalone IO calls share (test_daqmx_standalone.py,
test_alazar_io_standalone.py): the prelude of their subprocesses (vortex's six block streams,
an error catcher), the argument checks both IOs make alike, and reading a case's result."""

from __future__ import annotations

import json
from typing import Any

#: the start of a case's code: vortex's names, ``streams(n, cols)`` (vortex's six block streams,
#: zeros), ``error(f)`` (``[type, message]`` of what ``f()`` raises, or None) and
#: ``argument_misuse(io)`` (the argument checks both IOs make alike, for
#: :func:`check_argument_misuse`) and ``leave(how)`` (how a pending-call case ends its IO)
PRELUDE = """
import gc, json, os, sys, threading, time, numpy as np
import vortexgo.compat; vortexgo.compat.install()
from vortexgo.compat import Block
S = Block.StreamIndex

def streams(n, cols=2):
    return (np.zeros((n, 1), np.uint64), np.zeros((n, cols)), np.zeros((n, cols)), np.zeros((n, cols)),
            np.zeros((n, cols)), np.zeros((n, 1), np.uint32))

def error(f):
    try:
        f()
    except Exception as e:
        return [type(e).__name__, str(e)]
    return None

def argument_misuse(io):
    # io: prepared, blocks of 100 samples, its first output reading column 0 of GalvoTarget
    s, bad, r = streams(100), list(streams(100)), {}
    bad[1] = np.zeros(100); r["1d"] = error(lambda: io.next(100, bad))
    bad[1] = np.zeros((50, 2)); r["short"] = error(lambda: io.next(100, bad))
    bad[1] = np.zeros((100, 2), np.float32); r["dtype"] = error(lambda: io.next(100, bad))
    r["five"] = error(lambda: io.next(100, s[:5]))
    r["array"] = error(lambda: io.next(100, np.zeros((100, 6))))
    bad[1] = [[0.0, 0.0]] * 100; r["list"] = error(lambda: io.next(100, bad))
    r["count"] = error(lambda: io.next(-1, s))
    r["callback"] = error(lambda: io.next_async(100, s, None))
    return r

def leave(how):
    # ends the IO named io with calls pending: "close" closes it, "drop" drops the last
    # reference to it, "exit" exits the interpreter; another how leaves it to the case
    if how == "close":
        io.close()
    elif how == "drop":
        del globals()["io"]
        gc.collect()
    elif how == "exit":
        sys.exit(0)
"""


def check_argument_misuse(r: dict) -> None:
    """The refusals and messages ``argument_misuse`` collected (vortex's, and vortexgo's
    for the tuple and dtypes vortex's binding converts)."""
    assert r["1d"][0] == "ValueError" and r["1d"][1].startswith("stream of dimension 2 is required: 1")
    assert r["short"][0] == "ValueError" and r["short"][1].startswith("stream is incorrectly sized: [50 x 2] "
                                                                      "vs [:100,0]")
    assert r["dtype"] == ["TypeError", "streams[1] (galvo target): dtype <f4, expected float64 in native byte order"]
    assert r["five"][0] == "TypeError" and "5 arrays, expected 6" in r["five"][1]
    assert r["array"][0] == "TypeError" and "expected a tuple of 6 arrays" in r["array"][1]
    assert r["list"][0] == "TypeError" and "streams[1] (galvo target)=list" in r["list"][1]
    assert r["count"][0] == "ValueError" and "count" in r["count"][1]
    assert r["callback"][0] == "TypeError" and "callback" in r["callback"][1]


def last_json(out: str) -> Any:
    """The JSON a case printed last."""
    return json.loads(out.strip().splitlines()[-1])
