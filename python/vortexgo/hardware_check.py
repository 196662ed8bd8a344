"""The hardware acceptance check, ``python -m vortexgo hardware-check``: run it first on a rig.

It exercises the instruments through vortexgo's drivers (the real driver code, the vendors'
libraries), step by step, and prints one line per step (``PASS`` / ``FAIL`` with the reason and,
on a failure, what to do), then a verdict. ``--instrument`` picks what is checked (repeat it for
several; :data:`INSTRUMENTS`); the default, ``alazar``, is the AlazarTech digitizer and the
NI-DAQmx card:

1. load the ATS-SDK and list the boards (:func:`vortexgo.alazar.enumerate`);
2. open the board and print its information (:attr:`vortexgo.alazar.Board.info`);
3. acquire a few blocks with :class:`~vortexgo.alazar.AlazarAcquisition` in an engine that
   drives no scanner, and check that every block arrived and that the samples are not constant;
4. create the DAQmx output task (:class:`~vortexgo.io.DAQmxIO`, galvo channels ``ao0``/``ao1``);
5. run a short engine: a small raster scan whose galvo waveform the DAQmx card writes,
   sample-clocked by the digitizer's trigger output (``--clock``, vortex's default ``pfi0``),
   while the digitizer acquires; check that every block was acquired without error.

``imaq`` (an NI frame grabber's line-scan camera, ``--interface``), ``teledyne`` (an ADQ
digitizer, ``--board`` from 0) and ``genicam`` (a camera through Aravis, ``--camera``): load the
library and list the devices (with the library's version or API revision where the driver has
one), open the device and print its information, then acquire ``--blocks`` blocks (frames) in an
engine that drives no scanner (:class:`~vortexgo.imaq.ImaqAcquisition`,
:class:`~vortexgo.teledyne.TeledyneAcquisition`, :class:`~vortexgo.genicam.GenICamAcquisition`)
and check that every block arrived and that the samples are not constant. ``machdsp`` (a MachDSP
galvo servo, ``--port``): open the serial port and greet the servo (its firmware and settings),
stream a small raster through :class:`~vortexgo.io.MachDSPIO` in a short engine (its
acquisition delivers as fast as asked: the servo's buffer, drained by its A-line trigger, paces
the run), then read the servo's latched error: none must be there.

The exit status is 0 when every step passed, 1 otherwise. Against the virtual instrument
(``VORTEXGO_INSTRUMENTS=virtual``: the Alazar, DAQmx, IMAQ and Teledyne fakes), Aravis's
simulated camera (``--camera Fake_1``) and a servo on a pseudo-terminal it passes;
tests_py/test_hardware_check.py runs it there. docs/hardware.md says how to point vortexgo at
the vendor libraries.

Safety: the galvo waveform is a raster of ``--amplitude`` scan units (default 0.1, i.e. 0.15 V
peak on vortex's 15/10 V-per-unit DAQmx channels, 0.1 of a MachDSP's 15 full-scale units)
around zero; the scanner must be wired to the channels named by ``--ao`` (or to the servo).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from typing import Any, Callable, List, Optional, Sequence, TextIO, Tuple, Union

import numpy as np

__all__ = ["main", "run_check", "run_checks", "INSTRUMENTS"]


class _Steps:
    def __init__(self, out: TextIO, verbose: bool) -> None:
        self.out, self.verbose, self.failed, self.ran = out, verbose, 0, 0

    def step(self, title: str, fn: Callable[[], Any], hint: Union[str, Callable[[Exception], str]] = "") -> Any:
        """Run ``fn``: PASS with its note, or FAIL with the error and ``hint`` (what to do; a
        function of the error, or text)."""
        self.ran += 1
        t0 = time.perf_counter()
        try:
            note = fn()
        except Exception as e:  # report and go on to the verdict
            self.failed += 1
            print(f"FAIL  {title}: {type(e).__name__}: {e}", file=self.out)
            what = hint(e) if callable(hint) else hint
            if what:
                print(f"      what to do: {what}", file=self.out)
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
    """Run the AlazarTech + NI-DAQmx checks (module docstring) and print them to ``out``; True when all passed."""
    o = argparse.Namespace(system=system_index, board=board_index, records=records_per_block,
                           samples=samples_per_record, blocks=blocks, ao=ao, clock=clock, rate=samples_per_second,
                           amplitude=amplitude)
    return run_checks(["alazar"], o, out=out, verbose=verbose)


def _check_alazar(s: _Steps, o: argparse.Namespace, out: TextIO) -> None:
    """Steps 1-5 (the module docstring): the AlazarTech digitizer and the NI-DAQmx card."""
    from . import alazar, daqmx
    from .compat import Block
    from .io import DAQmxConfig, DAQmxIO

    system_index, board_index = o.system, 1 if o.board is None else o.board
    records_per_block, samples_per_record, blocks = o.records, o.samples, o.blocks
    ao, clock, samples_per_second, amplitude = o.ao, o.clock, o.rate, o.amplitude
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
        return _engine(acq, scan, A, B, endpoints, ios, samples_per_record, records_per_block)

    def acquire_blocks() -> str:
        acq = alazar.AlazarAcquisition()
        acq.initialize(cfg())
        _, note = _acquire_blocks(acq, o, "no signal on channel B (or no trigger)")
        return note

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


def _engine(acq: Any, scan: Any, A: int, B: int, endpoints: list, ios: list, samples_per_record: int,
            records_per_block: int, preload: bool = True) -> Any:
    """One engine run of ``scan``: ``acq`` through a CPU processor to ``endpoints``, ``ios`` fed."""
    import vortexgo as vg
    from .engine import Engine, EngineConfig
    from .format import FormatPlanner, FormatPlannerConfig

    proc = vg.CPUProcessor(samples_per_record=samples_per_record, ascans_per_block=records_per_block)
    planner = FormatPlanner(FormatPlannerConfig(B, A))
    ec = EngineConfig(records_per_block=records_per_block, blocks_to_allocate=16, preload_count=4)
    ec.add_acquisition(acq, [proc], preload=preload)
    ec.add_processor(proc, [planner])
    ec.add_formatter(planner, endpoints)
    for d in ios:
        ec.add_io(d)
    eng = Engine(ec)
    eng.scan_queue.append(scan)
    eng.prepare()
    eng.start()
    try:
        eng.wait()
    finally:
        st = eng.status()
        eng.stop()
    if st.error:
        raise RuntimeError(st.error)
    return st


def _acquire_blocks(acq: Any, o: argparse.Namespace, constant: str, preload: bool = True) -> Tuple[Any, str]:
    """``o.blocks`` blocks of ``acq`` with no scanner driven: every block must arrive and the
    samples must not all be equal (``constant`` says what that means). The status and a note."""
    from .acquire import record_raster
    from .endpoint import SpectraStackHostTensorEndpointUInt16

    spectra = SpectraStackHostTensorEndpointUInt16()
    st = _engine(acq, record_raster(o.records, o.blocks), o.records, o.blocks, [spectra], [], o.samples, o.records,
                 preload)
    if st.blocks_acquired < o.blocks:
        raise RuntimeError(f"{st.blocks_acquired} of {o.blocks} blocks acquired")
    with spectra.tensor as v:
        a = np.array(v)
    lo, hi = int(a.min()), int(a.max())
    if lo == hi:
        raise RuntimeError(f"every sample of {a.shape[0] * a.shape[1]} records is {lo}: {constant}")
    return st, f"{st.blocks_acquired} blocks of {o.records} records of {o.samples} samples, codes {lo}..{hi}"


def _library_hint(variable: str, missing: str, otherwise: str) -> Callable[[Exception], str]:
    """``missing`` when the error names the library's variable (the library did not load), else ``otherwise``."""
    return lambda e: missing if variable in str(e) else otherwise


def _fields(out: TextIO, obj: Any, names: Sequence[str]) -> None:
    for k in names:
        if hasattr(obj, k):
            print(f"      {k}: {getattr(obj, k)!r}", file=out)


def _check_imaq(s: _Steps, o: argparse.Namespace, out: TextIO) -> None:
    """NI-IMAQ: load and list the interfaces, open ``--interface``, acquire frames."""
    from . import imaq
    from ._core import api
    from ._errors import native

    names: List[str] = []

    def load() -> str:
        library = native(api.ImaqLoad)()
        print(f"      NI-IMAQ (the driver reports no version): {library}", file=out)
        names.extend(imaq.enumerate())
        if not names:
            raise RuntimeError("NI-IMAQ lists no interface")
        if o.interface not in names:
            raise RuntimeError(f"--interface {o.interface}: NI-IMAQ lists {', '.join(names)}")
        return ", ".join(names)

    if not s.step("NI-IMAQ loaded, interfaces listed", load, hint=_library_hint(
            "VORTEXGO_NIIMAQ_LIBRARY", "install NI Vision Acquisition Software (NI-IMAQ, libniimaq.so) or set "
            "VORTEXGO_NIIMAQ_LIBRARY to the library's path (VORTEXGO_INSTRUMENTS=virtual: the virtual camera)",
            "check the frame grabber in NI MAX; --interface names one of the interfaces it lists (img0, img1 ...)")):
        return

    def open_camera() -> str:
        with imaq.Imaq(o.interface) as cam:
            _fields(out, cam.info, ("device", "serial", "calibration", "resolution", "acquisition_window",
                                    "line_scan", "bits_per_pixel", "bytes_per_pixel"))
            return repr(cam)

    if not s.step("frame grabber opened, camera information read", open_camera,
                  hint="another program (NI MAX, a second vortexgo) may hold the interface: close it"):
        return

    def acquire() -> str:
        c = imaq.ImaqAcquisitionConfig()
        c.device_name, c.samples_per_record, c.records_per_block = o.interface, o.samples, o.records
        acq = imaq.ImaqAcquisition(c)
        try:
            return _acquire_blocks(acq, o, "the camera sees no light (or sends no lines)", preload=False)[1]
        finally:
            acq.close()

    s.step(f"{o.blocks} frames acquired, no scanner driven", acquire,
           hint="a timeout means no lines came: check the camera's power and cable, its camera file in NI MAX, "
                "and its line trigger (a camera set to an external trigger needs the A-line trigger wired); "
                "--samples must fit the camera's width")


def _check_teledyne(s: _Steps, o: argparse.Namespace, out: TextIO) -> None:
    """ADQAPI: load (API revision checked) and list the boards, open ``--board``, acquire blocks."""
    import json

    from . import teledyne
    from ._core import api

    index = 0 if o.board is None else o.board
    devices: List[Any] = []

    def load() -> str:
        library = teledyne.library()
        major, minor = json.loads(api.TeledyneAPIVersion())
        print(f"      ADQAPI revision {major}.{minor} (ADQAPI_ValidateVersion passed): {library}", file=out)
        devices.extend(teledyne.enumerate())
        if not devices:
            raise RuntimeError("ADQAPI lists no ADQ digitizer")
        known = {int(p): p.name for p in teledyne.ADQProductID}
        return ", ".join(f"{known.get(d.ProductID, hex(d.ProductID))} ({d.DevFile or 'no device file'})"
                         for d in devices)

    if not s.step("ADQAPI loaded, boards listed", load, hint=_library_hint(
            "VORTEXGO_ADQ_LIBRARY", "install Teledyne SP Devices' ADQAPI (libadq.so) or set VORTEXGO_ADQ_LIBRARY to "
            "the library's path (VORTEXGO_INSTRUMENTS=virtual: the virtual board)",
            "no layout table or an incompatible revision: make the table from the SDK headers installed with "
            "the library (`python -m vortexgo adq-layout /path/to/ADQAPI/include -o adq_layout.json`, then "
            "VORTEXGO_ADQ_LAYOUT=adq_layout.json); no board listed: check the "
            "board's driver (Teledyne's digitizer tools list it) and its power")):
        return

    def open_board() -> str:
        b = teledyne.Teledyne(index)
        try:
            _fields(out, b.info, ("product_name", "product_options", "serial_number", "firmware_name",
                                  "channel_count", "pattern_generator_count", "buffer_count", "fwoct"))
            return repr(b)
        finally:
            b.close()

    if not s.step("board opened, information read", open_board,
                  hint=f"--board is the board's index from 0 (here {index}; the listing above has "
                       f"{len(devices)} board{'s' if len(devices) != 1 else ''})"):
        return

    def acquire() -> str:
        c = teledyne.TeledyneConfig()
        c.device, c.samples_per_record, c.records_per_block = index, o.samples, o.records
        c.inputs.append(teledyne.Input(0))
        acq = teledyne.TeledyneAcquisition(c)
        try:
            return _acquire_blocks(acq, o, "no signal on channel A (or no trigger)")[1]
        finally:
            acq.close()

    s.step(f"{o.blocks} blocks acquired, no scanner driven", acquire,
           hint="a timeout means no trigger: wire the A-line trigger (the laser's sweep trigger) to the TRIG port "
                "(vortex's default trigger_source PortTrig); the OCT signal goes to channel A")


def _check_genicam(s: _Steps, o: argparse.Namespace, out: TextIO) -> None:
    """Aravis: load and list the cameras, open and configure ``--camera``, acquire frames."""
    from . import genicam
    from ._core import api

    acqs: List[Any] = []

    def load() -> str:
        version = genicam.aravis_version()
        print(f"      Aravis {version}: {api.AravisLibrary()}", file=out)
        if o.camera.startswith("Fake"):
            genicam.enable_interface("Fake")
        ids = genicam.device_ids()
        if not ids and not o.camera:
            raise RuntimeError("Aravis finds no camera")
        listed = ", ".join(ids) if ids else "none listed"
        if o.camera and o.camera not in ids:
            listed += f"; --camera {o.camera} is opened by its id or address"
        return listed

    if not s.step("Aravis loaded, cameras listed", load, hint=_library_hint(
            "VORTEXGO_ARAVIS_LIBRARY", "apt-get install libaravis-0.8-0 aravis-tools, or set "
            "VORTEXGO_ARAVIS_LIBRARY to libaravis-0.8.so.0's path",
            "a GigE Vision camera must be on the NIC's subnet, a USB3 Vision one readable by this user (udev "
            "rules); arv-tool-0.8 lists what Aravis sees; --camera opens one by its id or address")):
        return

    def open_camera() -> str:
        c = genicam.GenICamConfig(camera=o.camera, samples_per_record=o.samples, records_per_block=o.records,
                                  pixel_format=genicam.PixelFormat[o.pixel_format], line_rate=o.line_rate)
        acq = genicam.GenICamAcquisition(c)
        acqs.append(acq)
        cam = acq.camera
        _fields(out, cam, ("id", "vendor", "model", "gige_vision", "line_rate_feature"))
        return repr(acq)

    if not s.step("camera opened and configured", open_camera,
                  hint="--camera takes an id from the listing (or a GigE Vision camera's address); "
                       "--pixel-format, --samples (Width) and --records (Height) must be the camera's to take"):
        return

    def acquire() -> str:
        st, note = _acquire_blocks(acqs[0], o, "the camera sees no light")
        return f"{note}; frames received {st.frames_received}, dropped {st.frames_dropped}, " \
               f"incomplete {st.frames_incomplete}"

    s.step(f"{o.blocks} frames acquired, no scanner driven", acquire,
           hint="no frame: a camera in triggered mode (TriggerMode On) needs its trigger wired; incomplete frames "
                "over GigE Vision: check the NIC (jumbo frames, the packet size) and the link")
    for a in acqs:
        a.close()


def _check_machdsp(s: _Steps, o: argparse.Namespace, out: TextIO) -> None:
    """MachDSP: open ``--port`` and greet the servo, stream a small raster in an engine, read its error."""
    from . import machdsp
    from .compat import Block
    from .io import MachDSPIO, MachDSPIOConfig

    port_hint = (f"--port names the servo's serial port (here {o.port}; ls /dev/ttyACM* /dev/serial/by-id), "
                 f"readable and writable by this user (the dialout group), held by no other program")

    def greet() -> str:
        m = machdsp.MachDSP(o.port, o.baud)
        try:
            if m.ping(7) != 7:
                raise RuntimeError("the servo answered a ping with another index")
            _fields(out, m.info, ("version", "zero_point", "per_lsb", "max_buffer_samples", "max_sample_divisor",
                                  "max_aux_divisor"))
            _fields(out, m.read_settings(), ("underflow_behavior", "overflow_behavior", "block_count",
                                             "block_samples", "internal_trigger", "sample_divisor"))
        finally:
            m.close()
        return f"{o.port} at {o.baud} baud"

    if not s.step("serial port opened, servo greeted", greet, hint=port_hint):
        return

    def stream() -> str:
        import vortexgo as vg

        from .scan import Range, RasterScan, RasterScanConfig

        A, B = o.records, max(2, o.blocks // 2)
        sc = RasterScanConfig()  # vortex's raster with its flyback and the galvo's limits checked
        sc.ascans_per_bscan, sc.bscans_per_volume = A, B
        sc.bscan_extent = sc.volume_extent = Range(-o.amplitude, o.amplitude)
        sc.samples_per_second, sc.loop = o.rate, False
        scan = RasterScan()
        scan.initialize(sc)
        c = MachDSPIOConfig()
        c.port, c.baud_rate, c.samples_per_block, c.blocks_to_buffer = o.port, o.baud, A, 4
        c.output_channels = [machdsp.Channel(1.0, Block.StreamIndex.GalvoTarget, i) for i in (0, 1)]
        io = MachDSPIO()
        io.initialize(c)
        # The engine's clock: a source that delivers as fast as the engine asks, so the servo's
        # buffer (drained by its A-line trigger) paces the run.
        src = vg.SimulatedAcquisition(samples_per_record=o.samples, ascans_per_bscan=A, bscans_per_volume=B,
                                      volumes=1)
        try:
            st = _engine(src, scan, A, B, [], [io], o.samples, A)
        finally:
            io.close()
        if st.blocks_acquired < B:
            raise RuntimeError(f"{st.blocks_acquired} blocks streamed, expected at least {B}")
        return f"{st.blocks_acquired} blocks, a {B} x {A} galvo raster of +/-{o.amplitude} units streamed"

    s.step("galvo waveform streamed to the servo (engine)", stream,
           hint="the servo plays a sample per A-line trigger: wire the trigger to its trigger input (a timeout or "
                "an underflow without it)")

    def no_fault() -> str:
        m = machdsp.MachDSP(o.port, o.baud)
        try:
            m.check_error()
            st = m.stream_status()
        finally:
            m.close()
        return f"stream {st.state.name}, no error latched"

    s.step("servo reports no fault", no_fault, hint="power-cycle the servo and look at its status LEDs")


#: The instruments ``--instrument`` picks, with what each checks.
INSTRUMENTS = {
    "alazar": ("an AlazarTech digitizer and an NI-DAQmx card", _check_alazar),
    "imaq": ("an NI-IMAQ frame grabber's line-scan camera", _check_imaq),
    "teledyne": ("a Teledyne SP Devices ADQ digitizer", _check_teledyne),
    "genicam": ("a GenICam camera through Aravis", _check_genicam),
    "machdsp": ("a MachDSP galvo servo", _check_machdsp),
}


def run_checks(instruments: Sequence[str], o: argparse.Namespace, out: TextIO = sys.stdout,
               verbose: bool = False) -> bool:
    """Check each of ``instruments`` (names of :data:`INSTRUMENTS`) with the options ``o``
    (:func:`add_arguments`'), print the steps and the verdict to ``out``; True when all passed."""
    s = _Steps(out, verbose)
    virtual = os.environ.get("VORTEXGO_INSTRUMENTS") == "virtual"
    if list(instruments) == ["alazar"]:
        print(f"vortexgo hardware check on {'the virtual instrument' if virtual else 'the vendor libraries'}", file=out)
    else:
        print(f"vortexgo hardware check of {', '.join(instruments)}"
              f"{' (VORTEXGO_INSTRUMENTS=virtual: on the virtual instrument where it has one)' if virtual else ''}",
              file=out)
    for name in instruments:
        what, check = INSTRUMENTS[name]
        if len(instruments) > 1:
            print(f"-- {name}: {what}", file=out)
        check(s, o, out)
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
    p.add_argument("--instrument", action="append", choices=list(INSTRUMENTS), metavar="{" + ",".join(INSTRUMENTS) + "}",
                   help="what to check; repeat it for several (--instrument imaq --instrument machdsp). alazar "
                        "(the default): an AlazarTech digitizer and an NI-DAQmx card; imaq: an NI-IMAQ frame "
                        "grabber's line-scan camera; teledyne: a Teledyne ADQ digitizer; genicam: a GenICam camera "
                        "through Aravis; machdsp: a MachDSP galvo servo")
    p.add_argument("--records", type=int, default=64, help="records (A-scans; camera lines) per block (default 64)")
    p.add_argument("--samples", type=int, default=1024, help="samples (camera pixels) per record (default 1024)")
    p.add_argument("--blocks", type=int, default=8, help="blocks (camera frames) to acquire (default 8)")
    p.add_argument("--amplitude", type=float, default=0.1, help="the galvo raster's half extent in scan units "
                                                                "(default 0.1: 0.15 V at DAQmx's 15/10 V per unit; "
                                                                "0.1 of MachDSP's 15 full-scale units)")
    p.add_argument("--verbose", action="store_true", help="tracebacks for failed steps")
    g = p.add_argument_group("digitizers (alazar, teledyne)")
    g.add_argument("--system", type=int, default=1, help="the AlazarTech board's system index (default 1)")
    g.add_argument("--board", type=int, default=None, help="the board's index: the AlazarTech board's in its system "
                                                           "(default 1), the ADQ digitizer's from 0 (default 0)")
    g = p.add_argument_group("the galvo raster (alazar: NI-DAQmx; machdsp)")
    g.add_argument("--ao", default="Dev1/ao0,Dev1/ao1", help="the DAQmx galvo channels x,y (default Dev1/ao0,Dev1/ao1)")
    g.add_argument("--clock", default="pfi0", help="the DAQmx sample clock's terminal: the digitizer's trigger "
                                                  "output (default pfi0)")
    g.add_argument("--rate", type=int, default=100_000, help="the nominal A-line rate of the galvo raster for DAQmx "
                                                             "and MachDSP (default 100000)")
    g = p.add_argument_group("imaq")
    g.add_argument("--interface", default="img0", help="the NI-IMAQ interface of the camera, as NI MAX names it "
                                                       "(default img0)")
    g = p.add_argument_group("genicam")
    g.add_argument("--camera", default="", help="the camera's Aravis id (arv-tool-0.8 lists them) or a GigE Vision "
                                                "camera's address (default: the first camera Aravis finds; Fake_1: "
                                                "Aravis's simulated camera)")
    g.add_argument("--pixel-format", default="Mono12", choices=["Mono8", "Mono10", "Mono12", "Mono16", "Mono10p",
                                                                 "Mono12p"],
                   help="the camera's pixel format (default Mono12)")
    g.add_argument("--line-rate", type=float, default=0.0, help="the camera's line rate in lines per second "
                                                                "(default 0: the camera's own)")
    g = p.add_argument_group("machdsp")
    g.add_argument("--port", default="/dev/ttyACM0", help="the servo's serial port (default /dev/ttyACM0)")
    g.add_argument("--baud", type=int, default=12_000_000, help="the serial line's rate (default 12000000, vortex's)")


def run(a: argparse.Namespace) -> int:
    """Run the check with parsed options."""
    instruments = list(dict.fromkeys(a.instrument or ["alazar"]))
    ok = run_checks(instruments, a, verbose=a.verbose)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
