"""The peers section of `make bench`: vortexgo's engine next to what an expert writes instead.

For 1024-, 1376- (Axsun100k) and 2048-sample uint16 A-scans, in one run on one
device, every variant fed the same pinned ring of raw spectra and producing the
same int8 volume:

- **vortexgo's engine** (``bench_engine.engine_throughput``: SimulatedAcquisition
  lending pinned blocks -> CUDAProcessor -> stack endpoint);
- **an expert CuPy pipeline**: a pinned host ring, a copy stream and two compute
  streams ordered by events, the pre-FFT steps (background mean, resampling,
  spectral filter) in two RawKernels (a column mean and one fused gather),
  cuFFT through a plan cached per compute stream writing into preallocated
  buffers, the post-FFT steps (power, decibels, levels, int8) in one fused
  kernel writing straight into the volume; nothing allocated in the loop;
- **the same in PyTorch**: pinned host tensors, ``non_blocking`` copies on a side
  stream, ``torch.fft.ifft``, the elementwise parts through ``torch.compile``
  when it compiles here (the row says which ran);
- **the ceiling**: back-to-back pinned host-to-device copies of the same blocks.

Every variant's volume is checked against the same NumPy reference
(``bench_engine.Chain`` on NumPy, the steps of gosrc/process/doc.go) before it is
timed; a variant that disagrees is reported and not timed.

vortex 0.5.1 itself runs in a subprocess (bench/vortex_peer.py; vortexgo never
imports vortex) when its build is found (``VORTEX_BUILD`` or
gpu-build/vortex-build or ../shared/vortex-build), in its own demo's
configuration (NullAcquisition, 512-record blocks) and in ours (8192-record
blocks), next to vortexgo running the same script.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_engine as be  # noqa: E402
import vortexgo as vg  # noqa: E402

HERE = Path(__file__).resolve().parent

# The expert pipeline's kernels. The arithmetic follows gosrc/process/doc.go
# (vortex's CUDAProcessor): products and sums rounded separately in the
# resampling, decibels of |y/M|^2, levels mapped with rounding half away from zero.
_KERNELS = r"""
extern "C" __global__ void background_mean(const unsigned short* x, int records, int n, int w, float* mean) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    // w <= records: the rolling history is this block's own last w records.
    unsigned long long s = 0;
    for (int r = records - w; r < records; ++r) s += x[(size_t)r * n + j];
    mean[j] = (float)((double)s / (double)w);
}

extern "C" __global__ void pre_fft(const unsigned short* x, const float* mean, const int* b0, const float* f,
                                   const float2* h, int records, int n, int m, float2* out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)records * m) return;
    int r = (int)(i / m), j = (int)(i - (size_t)r * m);
    const unsigned short* row = x + (size_t)r * n;
    int b = b0[j];
    float x0 = __fsub_rn((float)row[b], mean[b]);
    float x1 = __fsub_rn((float)row[b + 1], mean[b + 1]);
    float fj = f[j];
    float v = __fadd_rn(__fmul_rn(x0, __fsub_rn(1.0f, fj)), __fmul_rn(x1, fj));
    float2 hj = h[j];
    out[i] = make_float2(v * hj.x, v * hj.y);
}

extern "C" __global__ void post_fft(const float2* y, size_t count, float scale2, float lo, float step,
                                    signed char* out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    float2 v = y[i];
    float p = fmaxf((v.x * v.x + v.y * v.y) * scale2, 1.17549435e-38f);
    float t = (10.0f * log10f(p) - lo) * step - 128.0f;
    t = fminf(fmaxf(roundf(t), -128.0f), 127.0f);
    out[i] = (signed char)(t == t ? t : 0.0f);
}
"""


class ExpertCuPy:
    """The expert's CuPy pipeline (see the module docstring). ``step(k)`` queues
    block ``k`` (host block ``k % len(host)`` into volume slot ``k % per_volume``)
    and returns at once; ``finish()`` waits for everything queued."""

    def __init__(self, g: be.Geometry, host: list[np.ndarray], pc: Any, levels: tuple[float, float],
                 window: int, device_blocks: int = 3) -> None:
        import cupy as cp

        if not 0 < window <= g.rpb:
            raise ValueError(f"window={window}: the expert pipeline assumes 0 < window <= records per block")
        self.cp, self.g, self.host, self.w = cp, g, host, window
        mod = cp.RawModule(code=_KERNELS, options=("-std=c++14",))
        self.k_mean, self.k_pre, self.k_post = (mod.get_function(n) for n in ("background_mean", "pre_fft", "post_fft"))
        pos = np.asarray(pc.resampling_samples, np.float32)
        self.m = pos.size
        b0 = np.minimum(np.floor(pos).astype(np.int64), g.samples - 2)
        self.b0 = cp.asarray(b0.astype(np.int32))
        self.f = cp.asarray((pos - b0.astype(np.float32)).astype(np.float32))
        self.h = cp.asarray(np.asarray(pc.spectral_filter, np.complex64))
        lo, hi = (float(v) for v in levels)
        self.lo, self.step_ = np.float32(lo), np.float32(255.0 / (hi - lo))
        self.scale2 = np.float32(1.0 / (self.m * self.m))
        self.up = cp.cuda.Stream(non_blocking=True)
        self.comp = [cp.cuda.Stream(non_blocking=True) for _ in range(2)]
        self.dev = [cp.empty((g.rpb, g.samples), cp.uint16) for _ in range(device_blocks)]
        self.uploaded = [cp.cuda.Event(disable_timing=True) for _ in range(device_blocks)]
        self.consumed = [cp.cuda.Event(disable_timing=True) for _ in range(device_blocks)]
        self.mean = [cp.empty(g.samples, cp.float32) for _ in self.comp]
        self.spec = [cp.empty((g.rpb, self.m), cp.complex64) for _ in self.comp]
        from cupy.cuda import cufft

        self._cufft = cufft
        self.plans = []
        for s in self.comp:
            with s:
                self.plans.append(cufft.Plan1d(self.m, cufft.CUFFT_C2C, g.rpb))
        self.vol = cp.empty((g.records_per_volume, self.m), cp.int8)
        self.per_volume = g.records_per_volume // g.rpb
        self.nbytes = g.block_bytes

    def step(self, k: int) -> None:
        d, c = k % len(self.dev), k & 1
        comp = self.comp[c]
        self._upload(k, d, comp)
        j = k % self.per_volume
        self._compute(comp, d, c, self.vol[j * self.g.rpb:(j + 1) * self.g.rpb])
        self.consumed[d].record(comp)

    def _upload(self, k: int, d: int, comp: Any) -> None:
        """Host block k into device block d on the copy stream, once block k - len(dev) is
        done with it; comp waits for the upload."""
        cp, up = self.cp, self.up
        up.wait_event(self.consumed[d])  # block k - len(dev) is done with dev[d]
        cp.cuda.runtime.memcpyAsync(self.dev[d].data.ptr, self.host[k % len(self.host)].ctypes.data, self.nbytes,
                                    cp.cuda.runtime.memcpyHostToDevice, up.ptr)
        self.uploaded[d].record(up)
        comp.wait_event(self.uploaded[d])

    def _compute(self, comp: Any, d: int, c: int, dst: Any) -> None:
        """Device block d through the fused kernels and the cached plan of compute stream c
        (stream comp), the int8 A-scans into dst."""
        g = self.g
        with comp:
            x, spec = self.dev[d], self.spec[c]
            self.k_mean(((g.samples + 255) // 256,), (256,),
                        (x, np.int32(g.rpb), np.int32(g.samples), np.int32(self.w), self.mean[c]))
            total = g.rpb * self.m
            self.k_pre(((total + 255) // 256,), (256,),
                       (x, self.mean[c], self.b0, self.f, self.h, np.int32(g.rpb), np.int32(g.samples),
                        np.int32(self.m), spec))
            self.plans[c].fft(spec, spec, self._cufft.CUFFT_INVERSE)
            self.k_post(((total + 255) // 256,), (256,),
                        (spec, np.uint64(total), self.scale2, self.lo, self.step_, dst))

    def finish(self) -> None:
        self.up.synchronize()
        for s in self.comp:
            s.synchronize()

    def volume(self) -> np.ndarray:
        """One volume, block by block in order, on the host (the agreement check)."""
        for k in range(self.per_volume):
            self.step(k)
        self.finish()
        return self.cp.asnumpy(self.vol)


class ExpertTorch:
    """The same pipeline in PyTorch: pinned host tensors, non_blocking copies on a
    side stream, two compute streams, ``torch.fft.ifft``, the elementwise parts
    compiled with ``torch.compile`` when that works here (``self.compiled``)."""

    def __init__(self, g: be.Geometry, host: list[np.ndarray], pc: Any, levels: tuple[float, float],
                 window: int, device_blocks: int = 3, compile: bool = True) -> None:
        import torch

        self.torch, self.g, self.w = torch, g, window
        dev = torch.device("cuda:0")
        # Raw spectra travel as int16 bits (torch's uint16 supports few ops); the
        # pre step widens them back to 0..65535.
        self.host = [torch.from_numpy(h.view(np.int16)).pin_memory() for h in host]
        pos = np.asarray(pc.resampling_samples, np.float32)
        self.m = pos.size
        b0 = np.minimum(np.floor(pos).astype(np.int64), g.samples - 2)
        self.b0 = torch.as_tensor(b0, device=dev)
        self.b1 = self.b0 + 1
        self.f = torch.as_tensor((pos - b0.astype(np.float32)).astype(np.float32), device=dev)
        self.h = torch.as_tensor(np.asarray(pc.spectral_filter, np.complex64), device=dev)
        lo, hi = (float(v) for v in levels)
        self.lo, self.step_ = lo, 255.0 / (hi - lo)
        self.up = torch.cuda.Stream()
        self.comp = [torch.cuda.Stream() for _ in range(2)]
        self.dev = [torch.empty((g.rpb, g.samples), dtype=torch.int16, device=dev) for _ in range(device_blocks)]
        self.uploaded = [torch.cuda.Event() for _ in range(device_blocks)]
        self.consumed = [torch.cuda.Event() for _ in range(device_blocks)]
        self.vol = torch.empty((g.records_per_volume, self.m), dtype=torch.int8, device=dev)
        self.per_volume = g.records_per_volume // g.rpb
        self.compiled = False
        pre, post = self._pre, self._post
        if compile:
            try:
                cpre, cpost = torch.compile(pre, dynamic=False), torch.compile(post, dynamic=False)
                x = self.dev[0].copy_(self.host[0], non_blocking=False)
                cpost(torch.fft.ifft(cpre(x), dim=1, norm="forward"))  # compile now, not in the timed loop
                torch.cuda.synchronize()
                pre, post, self.compiled = cpre, cpost, True
            except Exception as exc:  # noqa: BLE001 - report which path ran, do not fail the bench
                self.compile_error = f"{type(exc).__name__}: {exc}"[:300]
        self.pre, self.post = pre, post

    def _pre(self, raw: Any) -> Any:
        torch = self.torch
        x = raw.to(torch.int32).bitwise_and_(0xFFFF).to(torch.float32)
        mean = (x[x.shape[0] - self.w:].to(torch.float64).sum(0) / self.w).to(torch.float32)
        x = x - mean
        x0, x1 = x[:, self.b0], x[:, self.b1]
        y = x0 * (1 - self.f) + x1 * self.f
        return y * self.h

    def _post(self, a: Any) -> Any:
        torch = self.torch
        p = (a.real * a.real + a.imag * a.imag) / float(self.m * self.m)
        db = 10 * torch.log10(torch.clamp(p, min=1.17549435e-38))
        t = (db - self.lo) * self.step_ - 128
        t = torch.sign(t) * torch.floor(torch.abs(t) + 0.5)  # half away from zero, as the others
        return torch.nan_to_num(torch.clamp(t, -128, 127), nan=0.0).to(torch.int8)

    def step(self, k: int) -> None:
        torch, g = self.torch, self.g
        d = k % len(self.dev)
        c = k & 1
        with torch.cuda.stream(self.up):
            self.up.wait_event(self.consumed[d])
            self.dev[d].copy_(self.host[k % len(self.host)], non_blocking=True)
            self.uploaded[d].record(self.up)
        comp = self.comp[c]
        with torch.cuda.stream(comp):
            comp.wait_event(self.uploaded[d])
            # norm="forward": the inverse unscaled, as cuFFT's; post divides by M^2
            a = torch.fft.ifft(self.pre(self.dev[d]), dim=1, norm="forward")
            j = k % self.per_volume
            self.vol[j * g.rpb:(j + 1) * g.rpb] = self.post(a)
            self.consumed[d].record(comp)

    def finish(self) -> None:
        self.torch.cuda.synchronize()

    def volume(self) -> np.ndarray:
        for k in range(self.per_volume):
            self.step(k)
        self.finish()
        return self.vol.cpu().numpy()


def _timed(peer: Any, seconds: float) -> dict:
    n, dt = be._timed_blocks(peer.step, peer.finish, seconds)
    rate = n * peer.g.rpb / dt
    return {"ascans_per_s": rate, "gbs": rate * peer.g.samples * 2 / 1e9, "blocks": n}


def _numpy_reference(raw: np.ndarray, g: be.Geometry, pc: Any) -> np.ndarray:
    chain = be.Chain(np, g.samples, g.rpb, be.AVERAGE_WINDOW, pc.resampling_samples, pc.spectral_filter, be.LEVELS)
    return np.concatenate([chain(b) for b in raw.reshape(-1, g.rpb, g.samples)])


def _agrees(a: dict) -> bool:
    # float32 FFTs against NumPy's float64: a level apart at rounding boundaries
    # and in the noise floor; anything wider is a wrong result.
    return a["within_1_fraction"] >= 0.999 and a["identical_fraction"] >= 0.95


# --- sources that fill blocks --------------------------------------------------------------


def source_throughput(g: be.Geometry, device: Any, pc: Any, raw: np.ndarray, seconds: float) -> dict:
    """The engine fed by the sources that fill blocks instead of lending them:
    FileAcquisition replaying ``raw`` from a file in the page cache (written, then
    read once to warm it) and NullAcquisition (a block of zeros); same processor
    and endpoint as the engine row. A-scans/s from the blocks processed over
    ``seconds`` after a warm-up."""
    import tempfile

    from vortexgo.acquire import FileAcquisition, NullAcquisition, record_raster
    from vortexgo.engine import Engine, EngineConfig, StackDeviceTensorEndpointInt8
    from vortexgo.format import FormatPlanner, FormatPlannerConfig, StackFormatExecutor, StackFormatExecutorConfig
    from vortexgo.process import CPUProcessor, CUDAProcessor

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spectra.raw"
        data = np.ascontiguousarray(np.tile(raw, (4, 1)))  # 4 volumes: larger than any cache of blocks
        data.tofile(path)
        path.read_bytes()  # into the page cache
        # file: the default, which on a GPU uploads from the file's pages pinned in place;
        # file_read: pin=False, every block read into the engine's pinned buffers.
        for name, make in (("file", lambda: FileAcquisition(path=str(path), samples_per_record=g.samples, loop=True)),
                           ("file_read", lambda: FileAcquisition(path=str(path), samples_per_record=g.samples,
                                                                 loop=True, pin=False)),
                           ("null", lambda: NullAcquisition(samples_per_record=g.samples))):
            acq = make()
            proc = CUDAProcessor(pc, device=device) if device.is_cuda else CPUProcessor(pc)
            scan = record_raster(g.ascans, g.bscans, loop=True)
            planner = FormatPlanner(FormatPlannerConfig(g.bscans, g.ascans))
            ep = StackDeviceTensorEndpointInt8(StackFormatExecutor(StackFormatExecutorConfig()),
                                               (g.bscans, g.ascans, proc.config.samples_per_ascan))
            ec = EngineConfig(records_per_block=g.rpb, blocks_to_allocate=g.blocks, preload_count=g.preload)
            ec.add_acquisition(acq, [proc])
            ec.add_processor(proc, [planner])
            ec.add_formatter(planner, [ep])
            eng = Engine(ec)
            eng.scan_queue.append(scan)
            try:
                eng.prepare()
                pinned = bool(getattr(acq, "pinned", False))
                eng.start()
                time.sleep(0.5)
                s0, t0 = eng.status(), time.perf_counter()
                time.sleep(seconds)
                s1, t1 = eng.status(), time.perf_counter()
                eng.stop()
                err = eng.status().error
            finally:
                eng.close()
                ep.close()
                proc.close()
                acq.close()
            rate = (s1.blocks_processed - s0.blocks_processed) * g.rpb / (t1 - t0)
            out[name] = {"ascans_per_s": rate, "gbs": rate * g.samples * 2 / 1e9, "error": err or None}
            if name.startswith("file"):
                out[name]["pinned"] = pinned
    return out


# --- vortex itself, in a subprocess ------------------------------------------------------


def _vortex_build() -> Optional[Path]:
    for c in (os.environ.get("VORTEX_BUILD"), HERE.parent / "gpu-build" / "vortex-build",
              HERE.parent.parent / "shared" / "vortex-build"):
        if c and (Path(c) / "setup.sh").is_file():
            return Path(c)
    return None


def _vortex_env(build: Path) -> Optional[dict]:
    """The environment that makes vortex importable (its setup.sh's exports), or None."""
    env = dict(os.environ, VORTEX_SKIP_SMOKE="1", PYTHON=sys.executable)
    r = subprocess.run(["bash", str(build / "setup.sh")], capture_output=True, text=True, env=env, timeout=300)
    if r.returncode != 0:
        print(f"vortex build not usable: {r.stderr.strip()[-400:]}", file=sys.stderr)
        return None
    out = dict(os.environ)
    for line in r.stdout.splitlines():
        if line.startswith("export ") and "=" in line:
            k, v = line[len("export "):].split("=", 1)
            v = v.strip().strip('"').strip("'")
            out[k] = os.path.expandvars(v.replace("$" + k, os.environ.get(k, "")))
    return out


def vortex_side_by_side(env: Optional[dict], configs: list[dict], ascans: int) -> list[dict]:
    """Run bench/vortex_peer.py with vortex and with vortexgo on each config."""
    rows = []
    for cfg in configs:
        row = {"config": cfg}
        for impl in ("vortex", "vortexgo"):
            if impl == "vortex" and env is None:
                row[impl] = {"skipped": "vortex build not found"}
                continue
            e = env if impl == "vortex" else dict(os.environ)
            cmd = [sys.executable, str(HERE / "vortex_peer.py"), "--impl", impl, "--ascans", str(ascans),
                   "--json"] + [f"--{k.replace('_', '-')}={v}" for k, v in cfg.items() if k != "name"]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=240)
            except subprocess.TimeoutExpired:
                row[impl] = {"error": "timed out after 240 s"}
                continue
            if r.returncode != 0:
                row[impl] = {"error": (r.stderr.strip() or r.stdout.strip())[-600:]}
                continue
            runs = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
            row[impl] = {"runs": runs, "ascans_per_s": statistics.median(x["ascans_per_s"] for x in runs)}
        rows.append(row)
    return rows


# --- the section -------------------------------------------------------------------------


def _median_run(runs: list[dict]) -> dict:
    """The run of median throughput, with every run's rate beside it (the spread)."""
    ok = sorted((r for r in runs if "ascans_per_s" in r), key=lambda r: r["ascans_per_s"])
    if not ok:
        return runs[-1]
    out = dict(ok[len(ok) // 2])
    out["runs_ascans_per_s"] = [r["ascans_per_s"] for r in runs if "ascans_per_s" in r]
    return out


def bench(results: dict, device: Any, *, quick: bool = False, sizes: Optional[list[int]] = None,
          rounds: Optional[int] = None) -> dict:
    """Every variant timed in ``rounds`` interleaved rounds (engine, expert CuPy, PyTorch,
    then again), medians reported with the runs beside them: one run of each on a shared
    VM moved by 5-10% between runs and between variants measured minutes apart."""
    seconds = 0.8 if quick else 2.0
    rounds = rounds or (1 if quick else 3)
    sizes = sizes or [1024, 1376, 2048]
    out: dict[str, Any] = {"device": device.name, "configs": [], "rounds": rounds}
    for s in sizes:
        g = be.Geometry(s, 512, 128, 8192)
        row: dict[str, Any] = {"samples": s, "geometry": g.describe()}
        raw, engine_vol, pc = be.reference_volume(g, device)
        ref = _numpy_reference(raw, g, pc)
        row["agreement"] = {"engine": be._agreement(engine_vol, ref)}
        host = be._pinned_blocks(raw, g, True)
        peers: dict[str, Any] = {}
        for name, make in (("expert_cupy", lambda host=host: ExpertCuPy(g, host, pc, be.LEVELS, be.AVERAGE_WINDOW)),
                           ("expert_torch", lambda host=host: ExpertTorch(g, host, pc, be.LEVELS, be.AVERAGE_WINDOW))):
            try:
                peer = make()
            except ImportError as exc:
                row[name] = {"skipped": str(exc)}
                continue
            a = be._agreement(peer.volume(), ref)
            row["agreement"][name] = a
            if not _agrees(a):
                row[name] = {"error": f"disagrees with the NumPy reference: {a}"}
                continue
            peers[name], peer = peer, None
        runs: dict[str, list] = {"ceiling": [], "engine": [], "engine_callbacks": [], **{k: [] for k in peers}}
        for _ in range(rounds):
            runs["ceiling"].append(be.h2d_ceiling(g, seconds * 0.5))
            runs["engine"].append(be.engine_counters(g, device, seconds, 0.5))
            runs["engine_callbacks"].append(be.engine_throughput(g, device, seconds, 0.5))
            for name, peer in peers.items():
                runs[name].append(_timed(peer, seconds))
        ceilings = sorted(runs.pop("ceiling"), key=lambda c: c["gbs"])
        row["ceiling"] = dict(ceilings[len(ceilings) // 2], runs_gbs=[c["gbs"] for c in ceilings])
        for name, rs in runs.items():
            row[name] = _median_run(rs)
        if "expert_torch" in peers:
            row["expert_torch"]["compiled"] = peers["expert_torch"].compiled
            if not peers["expert_torch"].compiled:
                row["expert_torch"]["compile_error"] = getattr(peers["expert_torch"], "compile_error", "not tried")
        del peers
        try:
            row["sources"] = source_throughput(g, device, pc, raw, seconds)
        except Exception as exc:  # noqa: BLE001 - reported in the table, the other rows still run
            row["sources"] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
        ceiling = row["ceiling"]["gbs"]
        e = row["engine"]["ascans_per_s"]
        row["fraction_of_ceiling"] = {k: row[k]["gbs"] / ceiling
                                      for k in ("engine", "engine_callbacks", "expert_cupy", "expert_torch")
                                      if "gbs" in row.get(k, {})}
        for k, v in row["sources"].items():
            if isinstance(v, dict) and "gbs" in v:
                row["fraction_of_ceiling"][f"engine_{k}"] = v["gbs"] / ceiling
        row["engine_over"] = {k: e / row[k]["ascans_per_s"] for k in ("expert_cupy", "expert_torch")
                              if "ascans_per_s" in row.get(k, {})}
        out["configs"].append(row)
        del host, raw, engine_vol, ref
        _free_pools()
    build = _vortex_build()
    env = _vortex_env(build) if build else None
    vcfgs = [dict(name="vortex's demo", samples=1024, records_per_block=512, blocks=32, preload=8, slots=2),
             dict(name="ours", samples=1024, records_per_block=8192, blocks=32, preload=8, slots=2)]
    out["vortex"] = vortex_side_by_side(env, vcfgs, ascans=(2 if quick else 10) * 1024 * 1024)
    results["peers"] = be._jsonable(out)
    results["peers_md"] = markdown(results["peers"])
    return results["peers"]


def _free_pools() -> None:
    import cupy as cp

    cp.get_default_memory_pool().free_all_blocks()
    try:
        import torch

        torch.cuda.empty_cache()
    except ImportError:
        pass


def _f(row: dict, key: str, field: str, fmt: str) -> str:
    v = row.get(key, {})
    if field in v:
        return format(v[field], fmt)
    return v.get("error", v.get("skipped", "—"))[:60]


def markdown(r: dict) -> str:
    lines = [f"## Against expert peers and the copy ceiling ({r['device']})", "",
             "Same pinned ring of raw spectra, same int8 volume (checked against one NumPy reference "
             f"before timing); 8192-record blocks, 512 x 128 A-scans per volume. Medians of {r.get('rounds', 1)} "
             "interleaved rounds (ceiling, engine, engine with a volume_callback, expert CuPy, PyTorch, then again); "
             "the runs are in the JSON. *engine*: no callback, like the peers, which notify no one (formatted-block "
             "counter); *engine + volume_callback*: a Python handler per volume, which makes the engine wait at every "
             "volume boundary until the previous volume's handler ran (its stamps time the run). Ceiling: back-to-back "
             "pinned copies from that ring (one volume's blocks, as every variant reads them); *one block*: the "
             "same block copied again and again, warm in the host's caches, for comparison.", "",
             "| samples | ceiling GB/s | one block GB/s | engine M A-scans/s | engine + volume_callback | expert CuPy | "
             "PyTorch | engine / ceiling | engine + callback / ceiling | CuPy / ceiling | torch / ceiling | "
             "engine / CuPy | engine / torch |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in r["configs"]:
        fr, over = row["fraction_of_ceiling"], row["engine_over"]

        def m(k: str) -> str:
            v = row.get(k, {})
            return f"{v['ascans_per_s'] / 1e6:.2f}" if "ascans_per_s" in v else v.get("error", v.get("skipped", "—"))[:50]

        torch_note = ""
        if "compiled" in row.get("expert_torch", {}):
            torch_note = " (compiled)" if row["expert_torch"]["compiled"] else " (eager)"
        one = row["ceiling"].get("one_block_gbs", float("nan"))
        lines.append(f"| {row['samples']} | {row['ceiling']['gbs']:.2f} | {one:.2f} | {m('engine')} | "
                     f"{m('engine_callbacks')} | {m('expert_cupy')} | "
                     f"{m('expert_torch')}{torch_note} | {fr.get('engine', float('nan')):.3f} | "
                     f"{fr.get('engine_callbacks', float('nan')):.3f} | "
                     f"{fr.get('expert_cupy', float('nan')):.3f} | {fr.get('expert_torch', float('nan')):.3f} | "
                     f"{over.get('expert_cupy', float('nan')):.3f} | {over.get('expert_torch', float('nan')):.3f} |")
    lines += ["", "Sources that fill blocks (engine, same processor and endpoint), as fractions of the ceiling: "
              "FileAcquisition replaying a file in the page cache (*file*: the default, which on a GPU uploads from "
              "the file's pages pinned in place; *file_read*: `pin=False`, every block read into the engine's pinned "
              "buffers by 4 threads), NullAcquisition (zeros):", ""]
    for row in r["configs"]:
        fr = row["fraction_of_ceiling"]
        src = row.get("sources", {})
        parts = [f"{k} {src[k]['ascans_per_s'] / 1e6:.2f} M A-scans/s ({fr.get('engine_' + k, float('nan')):.3f})"
                 for k in ("file", "file_read", "null") if isinstance(src.get(k), dict) and "ascans_per_s" in src[k]]
        lines.append(f"- {row['samples']} samples: " + ("; ".join(parts) or str(src.get("error", "—"))))
    lines += ["", "Agreement with the NumPy reference (fraction of int8 values identical / within one level):", ""]
    for row in r["configs"]:
        parts = [f"{k} {a['identical_fraction']:.4f} / {a['within_1_fraction']:.5f}" for k, a in row["agreement"].items()]
        lines.append(f"- {row['samples']} samples: " + "; ".join(parts))
    lines += ["", "### vortex 0.5.1 and vortexgo running the same script (bench/vortex_peer.py)", "",
              "| configuration | vortex M A-scans/s | vortexgo M A-scans/s | vortexgo / vortex |",
              "| --- | ---: | ---: | ---: |"]
    for row in r.get("vortex", []):
        c = row["config"]
        v, o = row.get("vortex", {}), row.get("vortexgo", {})
        vs = f"{v['ascans_per_s'] / 1e6:.2f}" if "ascans_per_s" in v else v.get("error", v.get("skipped", "—"))[:80]
        os_ = f"{o['ascans_per_s'] / 1e6:.2f}" if "ascans_per_s" in o else o.get("error", o.get("skipped", "—"))[:80]
        ratio = f"{o['ascans_per_s'] / v['ascans_per_s']:.2f}" if "ascans_per_s" in v and "ascans_per_s" in o else "—"
        desc = (f"{c['name']}: {c['samples']} samples, {c['records_per_block']}-record blocks, "
                f"{c['blocks']} blocks, preload {c['preload']}, {c['slots']} slots")
        lines.append(f"| {desc} | {vs} | {os_} | {ratio} |")
    return "\n".join(lines) + "\n"


def run(results: dict, quick: bool = False) -> None:
    if not vg.is_cuda_available():
        raise RuntimeError(f"the peers section needs a GPU: {vg.cuda_unavailable_reason()}")
    bench(results, vg.get_device("cuda:0"), quick=quick)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", default="", help="comma-separated samples per A-scan (default 1024,1376,2048)")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    res: dict = {}
    bench(res, vg.get_device("cuda:0"), quick=a.quick, sizes=[int(x) for x in a.sizes.split(",") if x] or None)
    print(res["peers_md"])
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / "peers.json").write_text(json.dumps(res["peers"], indent=2))
        (Path(a.out) / "peers.md").write_text(res["peers_md"])
