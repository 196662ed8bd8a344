"""The command line, ``python -m vortexgo``: what a new user runs first.

.. code-block:: text

    python -m vortexgo info                       devices, CUDA driver, cuFFT, the C fast path, versions
    python -m vortexgo demo [--device D] [--out DIR]   a simulated OCT acquisition: MIP and B-scan PNGs, the volumes
    python -m vortexgo bench [--device D]         a short benchmark on this machine's device, as a table
    python -m vortexgo hardware-check             the AlazarTech board and NI-DAQmx card: PASS/FAIL per step
    python -m vortexgo hardware-check --instrument imaq|teledyne|genicam|machdsp   the other instruments
    python -m vortexgo adq-layout INCLUDE -o FILE  the Teledyne driver's layout table from ADQAPI's header

The demo and the benchmark run on a GPU when there is one and on the CPU
backend otherwise. Outputs go to ``--out``, by default a folder in the user's
data directory (:func:`default_out_dir`), never inside the source tree; the
demo prints where it wrote.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, TextIO, Tuple

import numpy as np

__all__ = ["main", "info", "demo", "bench", "bench_table", "enface_images", "default_out_dir", "DemoResult", "BenchRow"]

#: (samples per spectrum, A-scans per B-scan, B-scans per volume, volumes)
#: of the demo on a GPU and on the CPU backend.
DEMO_GPU = (1024, 512, 256, 20)
DEMO_CPU = (512, 128, 128, 6)

# The simulated retina (gosrc/acquire/phantom.go) lies between 30 % and 76 %
# of the unaliased depth range. Projecting over this window leaves out the
# bright samples near zero delay and the noise floor below the choroid, which
# otherwise set the image's levels and hide the tissue.
ENFACE_DEPTH = (0.25, 0.85)


def default_out_dir(what: str = "demo") -> str:
    """Where outputs go without ``--out``: ``<data dir>/vortexgo/<what>``.

    The data directory is ``$XDG_DATA_HOME`` (default ``~/.local/share``) on
    Linux, ``~/Library/Application Support`` on macOS and ``%LOCALAPPDATA%``
    on Windows: a place of the user's, never the current directory (which is
    often a source tree) and never the installed package.
    """
    home = os.path.expanduser("~")
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
    elif sys.platform == "darwin":
        base = os.path.join(home, "Library", "Application Support")
    else:
        base = os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
    return os.path.join(base, "vortexgo", what)


# ------------------------------------------------------------------------- info


def _cufft_line() -> str:
    """Try cuFFT for real (a one-record CUDA processor plans an FFT), since
    finding a file is not the same as loading it."""
    import vortexgo as vg

    if not vg.is_cuda_available():
        return "not checked (no CUDA device)"
    try:
        pc = vg.ProcessorConfig(samples_per_record=64, ascans_per_block=1)
        vg.CUDAProcessor(pc).close()
    except Exception as e:  # the Go side lists every library name it tried
        # The message names the extra that suits this driver ([cuda] or [cuda12]).
        return f"NOT loadable: {e}"
    return f"ok ({os.environ.get('VORTEXGO_CUFFT_PATH') or 'system library'})"


def info(file: Optional[TextIO] = None) -> int:
    """Print what this machine gives vortexgo; returns 0 when the CPU backend works.

    Args:
        file: where to print (default: standard output).
    """
    import vortexgo as vg
    from vortexgo import _core

    _core.load()
    HAVE_C_FAST_PATH = _core.HAVE_C_FAST_PATH

    def say(s: str) -> None:
        print(s, file=file)

    say(f"vortexgo     {getattr(vg, '__version__', 'dev')} from {os.path.dirname(vg.__file__)}")
    say(f"python       {platform.python_version()} ({sys.executable}), numpy {np.__version__}")
    say(f"C fast path  {'yes' if HAVE_C_FAST_PATH else 'no (per-call stream/event operations take the Go path)'}")
    devs = vg.devices()
    for d in devs:
        extra = ""
        if d.is_cuda:
            cc = ".".join(map(str, d.compute_capability))
            extra = f", compute {cc}, {d.total_memory / 2**30:.1f} GiB"
        say(f"device       {d.alias}: {d.name}{extra}")
    if not vg.is_cuda_available():
        say(f"CUDA         unavailable: {vg.cuda_unavailable_reason()}")
    say(f"cuFFT        {_cufft_line()}")
    try:
        import cupy  # noqa: F401

        say(f"CuPy         {cupy.__version__}")
    except ImportError:
        say("CuPy         not installed (optional: `pip install vortexgo[cuda]` with a CUDA 13 driver, "
            "`vortexgo[cuda12]` with CUDA 12, for zero-copy views on the GPU)")
    return 0 if any(d.is_cpu for d in devs) else 1


# ------------------------------------------------------------------------- the pipeline


def _raster_scan(ascans: int, bscans: int) -> Any:
    """One volume of vortex's raster scan with no inactive lines.

    Why no inactive lines: :class:`~vortexgo.acquire.SimulatedAcquisition`
    numbers its A-scans in raster order, one per active scan sample, with no
    flyback. With the default inactive policy the scan's flyback samples would
    be filled with phantom A-scans meant for the next B-scan, and the volume
    would come out sheared. A real scanner samples the flyback instead.
    """
    from .scan import RasterScan, RasterScanConfig, inactive_policy

    cfg = RasterScanConfig()
    cfg.ascans_per_bscan, cfg.bscans_per_volume, cfg.loop = ascans, bscans, False
    cfg.inactive_policy = inactive_policy.FixedLinear(0, 0)
    scan = RasterScan()
    scan.initialize(cfg)
    return scan


class _Rig:
    """The demo's pipeline, wired as vortex wires it: a simulated acquisition,
    a processor, the engine's scan queue playing a raster scan, a format
    planner turning its markers into copies, and endpoints (a device tensor,
    optionally a storage stack)."""

    def __init__(self, device: Any, samples: int, ascans: int, bscans: int, volumes: int,
                 path: Optional[str]) -> None:
        # Closed in reverse order of creation by close(), the engine first.
        self.closers: List[Callable[[], None]] = []
        try:
            self._build(device, samples, ascans, bscans, volumes, path)
        except BaseException:
            self.close()  # what was made so far (an open storage file, pinned memory)
            raise

    def _build(self, device: Any, samples: int, ascans: int, bscans: int, volumes: int,
               path: Optional[str]) -> None:
        from .acquire import SimulatedAcquisition, SimulatedAcquisitionConfig
        from .engine import AscanStackEndpoint, Engine, EngineConfig, StackDeviceTensorEndpointInt8
        from .format import FormatPlanner, FormatPlannerConfig, SimpleSlice, StackFormatExecutor, StackFormatExecutorConfig
        from .process import CPUProcessor, CUDAProcessor, ProcessorConfig, hann_window, spectral_filter
        from .storage import SimpleStackConfig, SimpleStackHeader, SimpleStackInt8

        self.samples, self.ascans, self.bscans, self.volumes = samples, ascans, bscans, volumes
        acquire = SimulatedAcquisition(SimulatedAcquisitionConfig(
            samples_per_record=samples, ascans_per_bscan=ascans, bscans_per_volume=bscans,
            volumes=2))  # two distinct volumes replayed; the scan queue ends the run
        self.closers.append(acquire.close)
        gpu = device.is_cuda
        self.records_per_block = ascans * max(1, (4096 if gpu else 512) // ascans)
        pc = ProcessorConfig(
            samples_per_record=samples, ascans_per_block=self.records_per_block, average_window=ascans,
            resampling_samples=acquire.resampling_positions(),
            spectral_filter=spectral_filter(hann_window(samples), acquire.dispersion_compensation()),
            levels=(0.0, 60.0))
        self.processor = CUDAProcessor(pc, device=device) if gpu else CPUProcessor(pc)
        self.closers.append(self.processor.close)
        planner = FormatPlanner(FormatPlannerConfig(bscans, ascans))
        executor = StackFormatExecutor(StackFormatExecutorConfig(sample_slice=SimpleSlice(0, samples // 2)))
        self.shape = (bscans, ascans, samples // 2)
        self.endpoint = StackDeviceTensorEndpointInt8(executor, self.shape)
        self.closers.append(self.endpoint.close)
        endpoints: list = [self.endpoint]
        if path is not None:
            storage = SimpleStackInt8()
            storage.open(SimpleStackConfig(path, self.shape, header=SimpleStackHeader.NumPy))
            self.closers.append(storage.close)  # pads and finalises the file (vortex's SimpleStack)
            storage_endpoint = AscanStackEndpoint(executor, storage)
            self.closers.append(storage_endpoint.close)
            endpoints.append(storage_endpoint)
        ec = EngineConfig(records_per_block=self.records_per_block, blocks_to_allocate=8, preload_count=4)
        ec.add_acquisition(acquire, [self.processor])
        ec.add_processor(self.processor, [planner])
        ec.add_formatter(planner, endpoints)
        self.engine = Engine(ec)
        self.closers.append(self.engine.close)
        scan = _raster_scan(ascans, bscans)
        for _ in range(volumes):
            self.engine.scan_queue.append(scan)

    def prepare(self) -> float:
        """Prepare the engine (synthesises the phantom, allocates every block); returns seconds."""
        t0 = time.perf_counter()
        self.engine.prepare()
        return time.perf_counter() - t0

    def acquire(self) -> float:
        """Run the prepared engine to the end of its scan queue; returns seconds."""
        t0 = time.perf_counter()
        self.engine.start()
        self.engine.wait()
        return time.perf_counter() - t0

    def close(self) -> None:
        """Close everything, the engine first (it stops a run still going, as
        after Ctrl-C, so nothing else is refused as in use); every close is
        tried and the first error raised."""
        first: Optional[BaseException] = None
        while self.closers:
            try:
                self.closers.pop()()
            except Exception as e:
                first = first or e
        if first is not None:
            raise first


# ------------------------------------------------------------------------- demo


@dataclass(frozen=True)
class DemoResult:
    """What :func:`demo` did and wrote.

    Attributes:
        device: the device's alias (``"cuda:0"`` or ``"cpu"``).
        volumes: volumes acquired.
        ascans_per_second: end-to-end throughput, A-scans per second.
        raw_bytes_per_second: the same as raw uint16 input bytes per second.
        mip_png: path of the en-face MIP image.
        bscan_png: path of the central B-scan image.
        volumes_npy: path of the stored volumes (NumPy file, int8).
    """

    device: str
    volumes: int
    ascans_per_second: float
    raw_bytes_per_second: float
    mip_png: str
    bscan_png: str
    volumes_npy: str


def enface_images(volume: np.ndarray, size: int = 512) -> Tuple[Any, Any]:
    """The en-face MIP and the central B-scan of one int8 volume as PIL images.

    Args:
        volume: (bscans, ascans, depth[, channels]) as an endpoint or a
            storage file holds it.
        size: width and height of both images; small volumes are enlarged
            (bilinear, which keeps speckle readable).

    Returns:
        A pair of PIL images. The first is the MIP over ``ENFACE_DEPTH`` of
        the depth range, B-scans down and A-scans across; the second is the
        middle B-scan, depth down.
    """
    from .display import _panel, to_uint8

    v = np.asarray(volume)
    if v.ndim == 4:
        v = v[..., 0]
    if v.ndim != 3:
        raise ValueError(f"volume shape {v.shape}, expected (bscans, ascans, depth[, channels])")
    d = v.shape[2]
    lo, hi = int(ENFACE_DEPTH[0] * d), max(int(ENFACE_DEPTH[1] * d), int(ENFACE_DEPTH[0] * d) + 1)
    mip = to_uint8(v[:, :, lo:hi].max(axis=2))
    bscan = to_uint8(v[v.shape[0] // 2].T)
    return _panel(mip, size), _panel(bscan, size)


def _require_demo_packages() -> None:
    """Fail before any work when a package the demo writes with is missing
    (after the device and arguments are checked: those errors come first)."""
    try:
        import PIL  # noqa: F401
    except ImportError:
        raise SystemExit("python -m vortexgo demo needs Pillow to write its PNGs, and the vortexgo wheel "
                         "does not install it: pip install 'vortexgo[demo]' (Pillow, tqdm for the progress "
                         "bar, matplotlib and ipywidgets for the examples and the notebook)") from None


def demo(device: str = "auto", out: Optional[str] = None, *, volumes: Optional[int] = None,
         progress: bool = True, size: int = 512, file: Optional[TextIO] = None) -> DemoResult:
    """Run the simulated OCT acquisition of ``examples/acquire.py`` and write its results.

    Simulated spectral-domain OCT spectra (uint16, a retina-like phantom) go
    through the CUDA processor (the CPU processor, at a smaller size, without
    a GPU) into a device tensor endpoint and a storage endpoint, with a tqdm
    progress bar when tqdm is installed.

    Args:
        device: ``"auto"`` (a GPU if present, else the CPU), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
        out: output folder, created if needed; None is :func:`default_out_dir`.
        volumes: volumes to acquire (default 20 on a GPU, 6 on the CPU).
        progress: show a progress bar.
        size: width and height of the PNGs in pixels.
        file: where to print the summary (default: standard output).

    Returns:
        The :class:`DemoResult` with the paths written: ``mip.png``,
        ``bscan.png`` and ``volumes.npy`` (volumes, bscans, ascans, depth, 1; int8).
    """
    import vortexgo as vg
    from ._validate import check_int

    dev = vg.get_device(device)
    samples, ascans, bscans, n = DEMO_GPU if dev.is_cuda else DEMO_CPU
    n = n if volumes is None else check_int("volumes", volumes, 1, 1 << 20)
    size = check_int("size", size, 16, 8192)
    _require_demo_packages()
    out = os.path.abspath(out if out is not None else default_out_dir("demo"))
    os.makedirs(out, exist_ok=True)
    npy = os.path.join(out, "volumes.npy")

    def say(s: str) -> None:
        print(s, file=file)

    say(f"vortexgo demo on {dev.name} ({dev.alias}): {n} volumes of {bscans} x {ascans} A-scans x {samples} samples")
    # Bound the file before writing it: --volumes 1000 is 4 GB on a GPU's demo size.
    file_bytes = n * bscans * ascans * (samples // 2) + 128
    free = shutil.disk_usage(out).free
    if file_bytes > 0.9 * free:
        raise OSError(f"volumes={n} writes {file_bytes / 1e9:.1f} GB to {out}, which has {free / 1e9:.1f} GB free: "
                      "ask for fewer volumes or pass --out on a larger disk")
    say(f"writing to   {out} ({file_bytes / 1e9:.2f} GB in volumes.npy)"
        + ("  -- a large file: --volumes sets how many" if file_bytes > 1e9 else ""))
    rig = _Rig(dev, samples, ascans, bscans, n, npy)
    bar: Any = None
    interrupted = False
    t_prepare = t0 = 0.0
    try:
        t_prepare = rig.prepare()
        if progress:
            try:
                from tqdm.auto import tqdm

                bar = tqdm(total=n, unit="vol", desc="acquiring")
            except ImportError:
                say("(no progress bar: pip install tqdm)")
        if bar is not None:
            # Called on the endpoint's dispatcher thread once a volume's
            # formatting is dispatched: cheap, so the engine never waits on it.
            rig.endpoint.volume_callback = lambda sample, scan_idx, volume_idx: bar.update(1)
        t0 = time.perf_counter()
        elapsed = rig.acquire()
    except KeyboardInterrupt:
        # Ctrl-C (while preparing or acquiring): keep what is complete. rig.close() below
        # stops the engine and pads the file's last volume; the PNGs come from the last
        # complete volume.
        interrupted, elapsed = True, time.perf_counter() - t0
    finally:
        try:
            status = rig.engine.status()
            timings = rig.engine.timings
            processor = repr(rig.processor)  # before rig.close(), which closes it
        finally:
            if bar is not None:
                bar.close()
            rig.close()
    if interrupted:
        done = status.volumes
        say(f"interrupted  after {done} complete volume{'s' * (done != 1)} of {n}, kept in {npy}"
            + (f" (its volume {done + 1} is partial, zero-padded)" if done < n else ""))
        if done:
            mip, bscan = enface_images(np.load(npy, mmap_mode="r")[done - 1], size)
            mip.save(os.path.join(out, "mip.png"))
            bscan.save(os.path.join(out, "bscan.png"))
            say(f"wrote        mip.png and bscan.png of volume {done} to {out}")
        raise KeyboardInterrupt
    if status.error or status.volumes != n:
        raise RuntimeError(f"the engine stopped after {status.volumes} of {n} volumes: {status.error or 'no error given'}")

    stored = np.load(npy, mmap_mode="r")
    mip, bscan = enface_images(stored[-1], size)
    mip_png, bscan_png = os.path.join(out, "mip.png"), os.path.join(out, "bscan.png")
    mip.save(mip_png)
    bscan.save(bscan_png)

    a_scans = status.volumes * ascans * bscans
    result = DemoResult(dev.alias, status.volumes, a_scans / elapsed, a_scans * samples * 2 / elapsed,
                        mip_png, bscan_png, npy)
    say(f"processor    {processor}")
    say(f"acquired     {status.volumes} volumes in {elapsed:.2f} s (prepare {t_prepare:.2f} s): "
        f"{result.ascans_per_second / 1e6:.3f} M A-scans/s, {result.raw_bytes_per_second / 1e9:.3f} GB/s raw input")
    say("             (with every volume written to disk" + (" and the progress bar" if bar is not None else "")
        + "; `python -m vortexgo bench` times the pipeline alone, without the file)")
    say(f"blocks       {status.blocks_formatted} formatted, {status.blocks_dropped} dropped, "
        f"{status.callback_errors} callback errors; per block: process {timings['process'].mean:.3f} ms, "
        f"format {timings['format'].mean:.3f} ms (mean)")
    say(f"wrote        {mip_png} (en-face MIP, {size} x {size})")
    say(f"             {bscan_png} (B-scan {bscans // 2}, depth down)")
    say(f"             {npy} {tuple(stored.shape)} int8")
    return result


# ------------------------------------------------------------------------- bench


@dataclass(frozen=True)
class BenchRow:
    """One line of :func:`bench`'s table.

    Attributes:
        what: what was measured.
        value: the figure, in ``unit``.
        unit: its unit (``"M A-scans/s"``, ``"GB/s"``, ``"us"``).
        note: how it was measured.
    """

    what: str
    value: float
    unit: str
    note: str = ""


def _best_seconds(fn: Callable[[], None], sync: Callable[[], None], iters: int, repeats: int = 3) -> float:
    """Best of ``repeats`` timings of ``iters`` calls of ``fn`` then ``sync``, per call."""
    fn()
    sync()  # warm: first-use allocations, module loads
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / iters)
    return best


def bench(device: str = "auto", *, quick: bool = False) -> List[BenchRow]:
    """A short benchmark of this machine's device: a few seconds on a GPU,
    some tens of seconds on the CPU backend.

    Measures the engine end to end (the demo's pipeline, steady state
    excluded of ``prepare``), host-device copies, an element-wise kernel and
    the per-call cost of stream and event operations from Python. The full
    benchmark with baselines (CuPy loops, the copy ceiling, callback latency)
    is ``bench/bench.py`` in the source tree (``make bench``).

    Args:
        device: ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
        quick: smaller sizes (a smoke run, as the tests use).

    Returns:
        The rows, in the order printed.
    """
    import vortexgo as vg

    dev = vg.get_device(device)
    gpu = dev.is_cuda
    rows: List[BenchRow] = []

    # 1. The engine end to end, as the demo wires it, without storage.
    if gpu:
        samples, ascans, bscans, volumes = (1024, 512, 256, 4 if quick else 40)
    else:
        samples, ascans, bscans, volumes = (512, 128, 64, 1) if quick else (512, 128, 128, 3)
    rig = _Rig(dev, samples, ascans, bscans, volumes, None)
    try:
        rig.prepare()
        elapsed = rig.acquire()
        st = rig.engine.status()
    finally:
        rig.close()
    if st.error or st.volumes != volumes:
        raise RuntimeError(f"bench: the engine stopped early: {st.error or st.volumes} volumes")
    a = volumes * ascans * bscans
    note = f"{samples} x uint16 A-scans -> int8, {ascans} x {bscans} per volume, {volumes} volumes"
    rows.append(BenchRow("engine end to end", a / elapsed / 1e6, "M A-scans/s", note))
    rows.append(BenchRow("engine end to end, raw input", a * samples * 2 / elapsed / 1e9, "GB/s", "uint16 spectra in"))

    # 2. Copies between pinned host memory and the device (memcpy on the CPU).
    stream = vg.Stream(dev)
    nbytes = (16 if quick else 64) << 20
    host = vg.empty(nbytes, "uint8", dev, pinned=True, stream=stream)
    devbuf = vg.empty(nbytes, "uint8", dev, stream=stream)
    iters = 3 if quick else 10
    for what, dst, src in (("copy host -> device", devbuf, host), ("copy device -> host", host, devbuf)):
        t = _best_seconds(lambda: vg.copy(dst, src, stream=stream), stream.synchronize, iters)
        rows.append(BenchRow(what, nbytes / t / 1e9, "GB/s", f"{nbytes >> 20} MiB, {'pinned' if gpu else 'host'} memory"))

    # 3. An element-wise kernel (read + write).
    x = vg.empty(nbytes // 4, "float32", dev, stream=stream)
    t = _best_seconds(lambda: vg.scale_offset(x, 2.0, 1.0, out=x, stream=stream), stream.synchronize, iters)
    rows.append(BenchRow("scale_offset kernel", 2 * nbytes / t / 1e9, "GB/s", f"{nbytes >> 22} M float32 in place, read + write"))
    for arr in (host, devbuf, x):
        arr.free()

    # 4. Per-call costs from Python.
    n = 2000 if quick else 20000
    ev = vg.Event(dev)
    t = _best_seconds(lambda: ev.record(stream), stream.synchronize, n)
    rows.append(BenchRow("event record", t * 1e6, "us", "per call from Python"))
    t = _best_seconds(ev.query, stream.synchronize, n)
    rows.append(BenchRow("event query", t * 1e6, "us", "per call, event complete"))
    t = _best_seconds(stream.synchronize, lambda: None, n)
    rows.append(BenchRow("stream synchronize", t * 1e6, "us", "per call, stream idle"))
    ev.close()
    stream.close()
    return rows


def bench_table(rows: List[BenchRow], device_name: str) -> str:
    """The rows as a markdown table headed by the device's name."""
    lines = [f"vortexgo bench on {device_name}", "", "| what | value | unit | how |", "| --- | ---: | --- | --- |"]
    for r in rows:
        lines.append(f"| {r.what} | {r.value:.3g} | {r.unit} | {r.note} |")
    return "\n".join(lines)


# ------------------------------------------------------------------------- run


def run_script(path: str, args: List[str], shadow: bool = False) -> int:
    """Run a vortex script with ``vortexgo.compat`` installed (``import vortex`` imports
    vortexgo), as ``python script.py args`` would: ``sys.argv`` and ``__main__`` are the
    script's. A real vortex installed beside vortexgo is refused unless ``shadow``."""
    import runpy

    from . import compat

    if not os.path.isfile(path):
        print(f"python -m vortexgo run: {path!r} is not a file, expected a Python script", file=sys.stderr)
        return 2
    try:
        compat.install(shadow=shadow)
    except compat.VortexInstalledError as e:
        print(f"python -m vortexgo run: {e}", file=sys.stderr)
        return 2
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as e:  # the script's own exit status
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


# ------------------------------------------------------------------------- main


def _version() -> str:
    import vortexgo as vg

    return getattr(vg, "__version__", "dev")


def examples_dir() -> Optional[str]:
    """Where this installation's examples are: the wheel's ``vortexgo/examples`` or, run from a
    source tree, its ``examples`` folder; None when neither is there."""
    here = os.path.dirname(os.path.abspath(__file__))
    cands = [os.path.join(here, "examples")]
    up = here
    for _ in range(4):  # python/vortexgo in a checkout; build/invariants/python/vortexgo in a test build
        up = os.path.dirname(up)
        cands.append(os.path.join(up, "examples"))
    for d in cands:
        if os.path.isfile(os.path.join(d, "acquire.py")) and os.path.isfile(os.path.join(d, "acquire.ipynb")):
            return d
    return None


def copy_examples(dest: str, file: Optional[TextIO] = None) -> List[str]:
    """Copy the examples and the notebook into ``dest`` (created; files already there are kept,
    never overwritten); returns the paths written."""
    src = examples_dir()
    if src is None:
        raise OSError("this installation has no examples (a wheel carries them in vortexgo/examples; "
                      "a source tree in examples/): reinstall vortexgo from a wheel")
    os.makedirs(dest, exist_ok=True)
    written, kept = [], []
    for name in sorted(os.listdir(src)):
        if not name.endswith((".py", ".ipynb")):
            continue
        to = os.path.join(dest, name)
        if os.path.exists(to):
            kept.append(name)
            continue
        shutil.copy2(os.path.join(src, name), to)
        written.append(to)
    out = file or sys.stdout
    print(f"copied {len(written)} examples to {os.path.abspath(dest)}"
          + (f" (kept your {', '.join(kept)})" if kept else ""), file=out)
    print("run one: python acquire.py --device cpu; the notebook: jupyter lab acquire.ipynb "
          "(pip install 'vortexgo[demo]' jupyterlab)", file=out)
    return written


def main(argv: Optional[List[str]] = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the command, return the exit status."""
    p = argparse.ArgumentParser(prog="python -m vortexgo",
                                description="vortexgo's command line: info, a demo acquisition, a benchmark, "
                                            "a vortex script run on vortexgo.")
    p.add_argument("--version", action="version", version=f"vortexgo {_version()}")
    sub = p.add_subparsers(dest="command")
    sub.add_parser("info", help="devices, CUDA driver, cuFFT, the C fast path, versions")
    d = sub.add_parser("demo", help="a simulated OCT acquisition: MIP and B-scan PNGs, the volumes, the throughput")
    d.add_argument("--device", default="auto", help="auto (a GPU if present), cpu, cuda or cuda:N")
    d.add_argument("--out", help=f"output folder, created if needed; its mip.png, bscan.png and volumes.npy "
                                 f"are replaced (default: {default_out_dir('demo')})")
    d.add_argument("--volumes", type=int, help="volumes to acquire (default: 20 on a GPU, 6 on the CPU)")
    d.add_argument("--no-progress", action="store_true", help="no progress bar")
    b = sub.add_parser("bench", help="a short benchmark of this machine's device, printed as a table")
    b.add_argument("--device", default="auto", help="auto (a GPU if present), cpu, cuda or cuda:N")
    b.add_argument("--quick", action="store_true", help="smaller sizes: a smoke run")
    e = sub.add_parser("examples", help="copy the examples and the notebook into a folder (default ./vortexgo-examples)")
    e.add_argument("dest", nargs="?", default="vortexgo-examples", help="the folder (created; existing files kept)")
    r = sub.add_parser("run", help="run a vortex script on vortexgo: `import vortex` imports vortexgo (compat)")
    r.add_argument("--shadow", action="store_true", help="also when a real vortex is installed (vortexgo wins here)")
    r.add_argument("script", help="the script's path")
    r.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    from . import hardware_check

    h = sub.add_parser("hardware-check", help="acceptance check of the instruments: the AlazarTech digitizer and "
                                              "NI-DAQmx card, or --instrument imaq, teledyne, genicam, machdsp "
                                              "(docs/hardware.md)")
    hardware_check.add_arguments(h)
    a = sub.add_parser("adq-layout", add_help=False,
                       help="the layout table of ADQAPI's parameter structure, from Teledyne's installed header "
                            "(VORTEXGO_ADQ_LAYOUT; `adq-layout --help`)")
    a.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.command == "hardware-check":
        return hardware_check.run(args)
    if args.command == "adq-layout":
        from . import adq_layout

        return adq_layout.main(args.rest)
    if args.command is None:  # a bare `python -m vortexgo`: what it can do, not an error
        p.print_help()
        return 0
    if args.command == "info":
        return info()
    if args.command == "examples":
        try:
            copy_examples(args.dest)
        except OSError as e:
            print(f"python -m vortexgo examples: {e}", file=sys.stderr)
            return 1
        return 0
    if args.command == "run":
        return run_script(args.script, args.args, shadow=args.shadow)
    import vortexgo as vg

    try:
        if args.command == "demo":
            demo(args.device, args.out, volumes=args.volumes, progress=not args.no_progress)
            return 0
        dev = vg.get_device(args.device)
        rows = bench(dev.alias, quick=args.quick)
        print(bench_table(rows, f"{dev.name} ({dev.alias})"))
        return 0
    except (ValueError, TypeError, RuntimeError, OSError, vg.VortexError) as e:
        print(f"python -m vortexgo {args.command}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # the rig has stopped the engine and closed the files
        print(f"python -m vortexgo {args.command}: interrupted", file=sys.stderr)
        return 130
