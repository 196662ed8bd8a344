"""Is Python slower right after its thread slept? The same 16 calls of a no-op handler, timed
after the thread slept 47 ms then spun 3 ms (what the dispatcher does between blocks 50 ms apart),
after it only slept, after it slept and then called another no-op for 3 ms, and back to back;
medians and p90 over the rounds, in us. (docs/design.md, "Gaps too long to spin through".)

    python bench/probe_cold_turn.py [--rounds 200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def turn(handler) -> float:
    t0 = time.perf_counter_ns()
    for i in range(16):
        handler(i, i, i, i)
    return (time.perf_counter_ns() - t0) / 1e3


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=200)
    rounds = ap.parse_args(argv).rounds

    def handler(a, b, c, d):
        return None

    res = {}
    def other(a, b, c, d):
        return None

    for name, sleep, spin, warm in (("back to back", 0.0, 0.0, None), ("slept 47 ms, spun 3 ms", 0.047, 0.003, None),
                                    ("slept 47 ms", 0.047, 0.0, None), ("slept 2 ms", 0.002, 0.0, None),
                                    ("slept 47 ms, 3 ms calling another no-op", 0.047, 0.003, other)):
        ts = []
        for _ in range(rounds):
            if sleep:
                time.sleep(sleep)
            end = time.perf_counter() + spin
            while time.perf_counter() < end:
                if warm is not None:
                    warm(0, 0, 0, 0)
            ts.append(turn(handler))
        res[name] = ts
        print(f"{name:40s} p50 {np.percentile(ts, 50):6.2f} us  p90 {np.percentile(ts, 90):6.2f} us", flush=True)
    return res


if __name__ == "__main__":
    main()
