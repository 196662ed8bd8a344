"""The hardware acceptance check, ``python -m vortexgo hardware-check``: run it first on a rig.

It exercises the AlazarTech digitizer and the NI-DAQmx card through vortexgo's drivers, step
by step, and prints one line per step (``PASS`` / ``FAIL`` with the reason), then a verdict:

1. load the ATS-SDK and list the boards (:func:`vortexgo.alazar.enumerate`);
2. open the board and print its information (:attr:`vortexgo.alazar.Board.info`);
3. acquire a few blocks with :class:`~vortexgo.alazar.AlazarAcquisition` in an engine that
   drives no scanner, and check that every block arrived and that the samples are not constant;
4. create the DAQmx output task (:class:`~vortexgo.io.DAQmxIO`, galvo channels ``ao0``/``ao1``);
5. run a short engine: a small raster scan whose galvo waveform the DAQmx card writes,
   sample-clocked by the digitizer's trigger output (``--clock``, vortex's default ``pfi0``),
   while the digitizer acquires; check that every block was acquired without error.

The exit status is 0 when every step passed, 1 otherwise. Against the virtual instrument
(``VORTEXGO_INSTRUMENTS=virtual``) it passes; tests_py/test_hardware_check.py runs it there.
docs/hardware.md says how to point vortexgo at the vendor libraries.

Safety: the galvo waveform is a raster of ``--amplitude`` scan units (default 0.1, i.e. 0.15 V
peak on vortex's 15/10 V-per-unit channels) around zero; the scanner must be wired to the
channels named by ``--ao``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from typing import Any, Callable, List, Optional, TextIO

import numpy as np

__all__ = ["main", "run_check"]


class _Steps:
    def __init__(self, out: TextIO, verbose: bool) -> None:
        self.out, self.verbose, self.failed, self.ran = out, verbose, 0, 0

    def step(self, title: str, fn: Callable[[], Any]) -> Any:
        self.ran += 1
        t0 = time.perf_counter()
        try:
            note = fn()
        except Exception as e:  # report and go on to the verdict
            self.failed += 1
            print(f"FAIL  {title}: {type(e).__name__}: {e}", file=self.out)
            if self.verbose:
                traceback.print_exc(file=self.out)
            return None
        dt = time.perf_counter() - t0
        print(f"PASS  {title} ({dt:.2f} s){': ' + str(note) if note not in (None, '') else ''}", file=self.out)
        return note if note is not None else True


def run_check(system_index: int = 1, board_index: int = 1, records_per_block: int = 64,
              samples_per_record: int = 1024, blocks: int = 8, ao: str = "Dev1/ao0,Dev1/ao1",
              clock: str = "pfi0", samples_per_second: int = 100_000, amplitude: float = 0.1,
              out: TextIO = sys.stdout, verbose: bool = False) -> bool:
    """Run the checks (module docstring) and print them to ``out``; True when all passed."""
    from . import alazar, daqmx
    from .compat import Block
    from .io import DAQmxConfig, DAQmxIO

    s = _Steps(out, verbose)
    where = os.environ.get("VORTEXGO_INSTRUMENTS") == "virtual" and "the virtual instrument" or "the vendor libraries"
    print(f"vortexgo hardware check on {where}", file=out)
    boards: List[Any] = []

    def enumerate_boards() -> str:
        version, library = alazar.sdk_version()
        print(f"      ATS-SDK {version}: {library}", file=out)
        boards.extend(alazar.enumerate())
        if not boards:
            raise RuntimeError("the ATS-SDK lists no AlazarTech board")
        return ", ".join(repr(b) for b in boards)

    have_board = bool(s.step("ATS-SDK loaded, boards listed", enumerate_boards))

    def board_info() -> str:
        b = alazar.Board(system_index, board_index)
        i = b.info
        for k in ("type", "serial_number", "calibration_date", "onboard_memory_size", "bits_per_sample",
                  "max_pretrigger_samples", "pcie", "features", "dsp", "dac"):
            if hasattr(i, k):
                print(f"      {k}: {getattr(i, k)!r}", file=out)
        return f"board {system_index}.{board_index}"

    if have_board:
        s.step("board opened, information read", board_info)

    def cfg() -> Any:
        c = alazar.AlazarConfig()
        c.device.system_index, c.device.board_index = system_index, board_index
        c.records_per_block = records_per_block
        c.samples_per_record = samples_per_record
        c.inputs.append(alazar.Input(alazar.Channel.B))
        c.options.append(alazar.AuxIOTriggerOut())
        return c

    def engine(acq: Any, scan: Any, A: int, B: int, endpoints: list, ios: list) -> Any:
        import vortexgo as vg
        from .engine import Engine, EngineConfig
        from .format import FormatPlanner, FormatPlannerConfig

        proc = vg.CPUProcessor(samples_per_record=samples_per_record, ascans_per_block=records_per_block)
        planner = FormatPlanner(FormatPlannerConfig(B, A))
        ec = EngineConfig(records_per_block=records_per_block, blocks_to_allocate=16, preload_count=4)
        ec.add_acquisition(acq, [proc])
        ec.add_processor(proc, [planner])
        ec.add_formatter(planner, endpoints)
        for d in ios:
            ec.add_io(d)
        eng = Engine(ec)
        eng.scan_queue.append(scan)
        eng.prepare()
        eng.start()
        eng.wait()
        st = eng.status()
        eng.stop()
        if st.error:
            raise RuntimeError(st.error)
        return st

    def acquire_blocks() -> str:
        from .acquire import record_raster
        from .endpoint import SpectraStackHostTensorEndpointUInt16

        acq = alazar.AlazarAcquisition()
        acq.initialize(cfg())
        spectra = SpectraStackHostTensorEndpointUInt16()
        st = engine(acq, record_raster(records_per_block, blocks), records_per_block, blocks, [spectra], [])
        if st.blocks_acquired < blocks:
            raise RuntimeError(f"{st.blocks_acquired} of {blocks} blocks acquired")
        with spectra.tensor as v:
            a = np.array(v)
        lo, hi = int(a.min()), int(a.max())
        if lo == hi:
            raise RuntimeError(f"every sample of {a.shape[0] * a.shape[1]} records is {lo}: "
                               f"no signal on channel B (or no trigger)")
        return f"{st.blocks_acquired} blocks of {records_per_block} records of {samples_per_record} samples, codes {lo}..{hi}"

    if have_board:
        s.step(f"{blocks} blocks acquired, no scanner driven", acquire_blocks)

    def daqmx_config() -> Any:
        c = DAQmxConfig()
        c.name = "hardware-check"
        c.samples_per_block = records_per_block
        c.samples_per_second = samples_per_second
        c.blocks_to_buffer = 4
        c.clock.source = clock
        for i, ch in enumerate(x.strip() for x in ao.split(",")):
            c.channels.append(daqmx.AnalogVoltageOutput(ch, 15 / 10, Block.StreamIndex.GalvoTarget, i))
        return c

    io: List[Any] = []

    def open_daqmx() -> str:
        version, library = daqmx.driver_version()
        print(f"      NI-DAQmx {version or '(version not reported)'}: {library}", file=out)
        d = DAQmxIO()
        d.initialize(daqmx_config())
        io.append(d)
        return f"channels {ao}, sample clock {clock}"

    s.step("NI-DAQmx loaded, output task created", open_daqmx)

    def galvo_run() -> str:
        from .scan import Range, RasterScan, RasterScanConfig

        A, B = records_per_block, max(2, blocks // 2)
        sc = RasterScanConfig()  # vortex's raster with its flyback and the galvo's limits checked
        sc.ascans_per_bscan, sc.bscans_per_volume = A, B
        sc.bscan_extent = sc.volume_extent = Range(-amplitude, amplitude)
        sc.samples_per_second, sc.loop = samples_per_second, False
        scan = RasterScan()
        scan.initialize(sc)
        acq = alazar.AlazarAcquisition()
        acq.initialize(cfg())
        st = engine(acq, scan, A, B, [], io)
        if st.blocks_acquired < B:
            raise RuntimeError(f"{st.blocks_acquired} blocks acquired, expected at least {B}")
        return f"{st.blocks_acquired} blocks, a {B} x {A} galvo raster of +/-{amplitude} units written"

    if io and have_board:
        s.step("galvo waveform written while acquiring (engine)", galvo_run)
    for d in io:
        d.close()
    return _verdict(s, out)


def _verdict(s: _Steps, out: TextIO) -> bool:
    ok = s.failed == 0
    print(f"{'PASS' if ok else 'FAIL'}: {s.ran - s.failed} of {s.ran} steps passed", file=out)
    return ok


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m vortexgo hardware-check [options]``: the exit status is 0 when all passed."""
    p = argparse.ArgumentParser(prog="python -m vortexgo hardware-check", description=__doc__.split("\n\n")[0])
    add_arguments(p)
    a = p.parse_args(argv)
    return run(a)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The check's options (shared with :mod:`vortexgo.cli`)."""
    p.add_argument("--system", type=int, default=1, help="the board's system index (default 1)")
    p.add_argument("--board", type=int, default=1, help="the board's index in its system (default 1)")
    p.add_argument("--records", type=int, default=64, help="records (A-scans) per block (default 64)")
    p.add_argument("--samples", type=int, default=1024, help="samples per record (default 1024)")
    p.add_argument("--blocks", type=int, default=8, help="blocks to acquire (default 8)")
    p.add_argument("--ao", default="Dev1/ao0,Dev1/ao1", help="the galvo channels x,y (default Dev1/ao0,Dev1/ao1)")
    p.add_argument("--clock", default="pfi0", help="the DAQmx sample clock's terminal: the digitizer's trigger "
                                                  "output (default pfi0)")
    p.add_argument("--rate", type=int, default=100_000, help="the nominal A-line rate for DAQmx (default 100000)")
    p.add_argument("--amplitude", type=float, default=0.1, help="the raster's half extent in scan units "
                                                                "(default 0.1: 0.15 V at 15/10 V per unit)")
    p.add_argument("--verbose", action="store_true", help="tracebacks for failed steps")


def run(a: argparse.Namespace) -> int:
    """Run the check with parsed options."""
    ok = run_check(a.system, a.board, a.records, a.samples, a.blocks, a.ao, a.clock, a.rate, a.amplitude,
                   verbose=a.verbose)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
