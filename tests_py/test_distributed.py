"""vortexgo.distributed on a real LocalCluster of worker processes (spawned, as Dask does by
default): the same volumes as the single-machine engine over each whole file (several
formats), a worker killed mid-task, truncated and corrupt files, resume and overwrite; and
the same on a LocalCUDACluster where a GPU and dask-cuda exist."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
zarr = pytest.importorskip("zarr")

import _subproc  # noqa: E402
import vortexgo as vg  # noqa: E402
from vortexgo import distributed as vd  # noqa: E402
from vortexgo import storage as vs  # noqa: E402
from vortexgo.engine import Engine, EngineConfig  # noqa: E402
from vortexgo.format import FormatPlanner, FormatPlannerConfig, StackFormatExecutor, StackFormatExecutorConfig  # noqa: E402,E501
from vortexgo.marker import ScanBoundary  # noqa: E402
from vortexgo.acquire import record_raster  # noqa: E402

S, A, B = 64, 16, 8          # samples, A-scans per B-scan, B-scans per volume: 16 KiB of spectra a volume
VOLUMES = 4
pytestmark = pytest.mark.timeout(120)


def config(average_window: int = 0, dtype: str = "int8", **kw) -> vd.ReprocessConfig:
    pc = vg.ProcessorConfig(samples_per_record=S, ascans_per_block=32, average_window=average_window,
                            levels=(-10.0, 60.0))
    return vd.ReprocessConfig(pc, ascans_per_bscan=A, bscans_per_volume=B, dtype=dtype, **kw)


def spectra(volumes: int = VOLUMES, seed: int = 0) -> np.ndarray:
    """Interferogram-like spectra: a few reflectors over a background, noise."""
    rng = np.random.default_rng(seed)
    k = np.arange(S)
    depth = rng.integers(3, S // 2, (volumes, B, A, 1))
    x = 2000 + 800 * np.cos(2 * np.pi * depth * k / S) + rng.normal(0, 30, (volumes, B, A, S))
    return x.astype(np.uint16)[..., None]  # (volumes, bscans, ascans, samples, channels)


def write(path, data: np.ndarray, kind: str) -> str:
    """``data`` as vortexgo's storages write it (or np.save / tofile for vortex's formats)."""
    path = str(path)
    if kind == "raw":
        data.tofile(path)
    elif kind == "hdf5":
        st = vs.HDF5StackUInt16()
        st.open(vs.HDF5StackConfig(path, data.shape[1:], compression_level=1))
        for v in data:
            st.write_volume(v)
            st.advance_volume(False)
        st.close()
    else:
        st = vs.SimpleStackUInt16()
        cfg = vs.SimpleStackConfig(path, data.shape[1:])
        cfg.header = {"npy": vs.SimpleStackHeader.NumPy, "matlab": vs.SimpleStackHeader.MATLAB,
                      "nrrd": vs.SimpleStackHeader.NRRD, "nifti": vs.SimpleStackHeader.NifTI,
                      "empty": vs.SimpleStackHeader.Empty}[kind]
        st.open(cfg)
        for v in data:
            st.write_volume(v)
            st.advance_volume(False)
        st.close()
    return path


def cpu_reprocess(*args, **kw):
    """vd.reprocess on the workers' CPU: bit-equal to the CPUProcessor reference (on a GPU machine
    "auto" picks CUDA, whose int8 levels may round one step apart: test_cuda_cluster_matches_cpu)."""
    return vd.reprocess(*args, device="cpu", **kw)


def single_machine(data: np.ndarray, cfg: vd.ReprocessConfig, tmp_path) -> np.ndarray:
    """The reference: vortexgo's engine over the whole file on this process, no ranges."""
    path = str(tmp_path / "reference.raw")
    data.tofile(path)
    acq = vg.FileAcquisition(path=path, samples_per_record=S, loop=False)
    proc = vg.CPUProcessor(cfg.processor)
    planner = FormatPlanner(FormatPlannerConfig(B, A))
    ep = vd._endpoint_class(cfg.dtype)(StackFormatExecutor(cfg.format or StackFormatExecutorConfig()))
    ec = EngineConfig(records_per_block=cfg.block(), blocks_to_allocate=4, preload_count=2)
    ec.add_acquisition(acq, [proc])
    ec.add_processor(proc, [planner])
    ec.add_formatter(planner, [ep])
    out = {}

    def on_volume(sample, scan_idx, volume_idx):
        with ep.tensor as v:
            out[scan_idx] = np.array(v)

    ep.volume_callback = on_volume
    eng = Engine(ec)
    for i in range(len(data)):
        eng.scan_queue.append(record_raster(A, B), marker=ScanBoundary(0, i))
    with eng:
        eng.prepare()
        eng.start()
        eng.wait()
    return np.stack([out[i] for i in range(len(data))])


@pytest.fixture(scope="module")
def client():
    # Processes (spawned: Dask's default start method), one thread each.
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.mark.parametrize("average_window", [0, 40])
def test_equals_single_machine_across_formats(client, tmp_path, average_window):
    """Five formats, one array: each file's volumes equal the single-machine engine's over that
    whole file, the rolling background average included (tasks warm it up on the block grid)."""
    cfg = config(average_window)
    kinds = ["npy", "raw", "hdf5", "nrrd", "matlab", "nifti"] if average_window else ["npy", "empty", "hdf5"]
    data = {k: spectra(seed=i) for i, k in enumerate(kinds)}
    files = [write(tmp_path / f"{k}.{k}", data[k], k) for k in kinds]
    out = cpu_reprocess(client, files, cfg, tmp_path / "out.zarr")
    got = out.to_dask().compute()
    assert got.shape == (len(kinds) * VOLUMES, B, A, S) and got.dtype == np.int8
    for i, k in enumerate(kinds):
        want = single_machine(data[k], cfg, tmp_path)
        np.testing.assert_array_equal(got[i * VOLUMES:(i + 1) * VOLUMES], want, err_msg=k)
    assert out.written == len(kinds) * VOLUMES
    meta = zarr.open_array(str(tmp_path / "out.zarr")).attrs["vortexgo"]
    assert [s["format"] for s in meta["sources"]] == ["raw" if k == "empty" else k for k in kinds]
    assert meta["config"]["processor"]["average_window"] == average_window
    import hashlib
    for f, src in zip(files, meta["sources"]):  # each file hashed once, whole: what sha256sum prints
        with open(f, "rb") as fh:
            assert src["sha256"] == hashlib.sha256(fh.read()).hexdigest()
        assert sum(r["count"] for r in src["ranges"]) == VOLUMES and all(r["written"] for r in src["ranges"])
    # Tasks sized by task_bytes (all of a file's 4 volumes fit), at most volumes // (2 x 2 threads):
    # several volumes a task, two tasks or more per thread.
    assert out.tasks[0].count == min(VOLUMES, len(kinds) * VOLUMES // 4) > 1 and meta["job"]


def test_resume_and_overwrite(client, tmp_path):
    """A rerun writes nothing and reads no spectra through the engine; removed chunks are redone;
    overwrite=True redoes every one; another job's array is refused without it."""
    cfg = config()
    f = write(tmp_path / "a.npy", spectra(), "npy")
    store = tmp_path / "out.zarr"
    first = cpu_reprocess(client, [f], cfg, store)
    want = first.to_dask().compute()
    again = cpu_reprocess(client, [f], cfg, store)
    assert again.written == 0
    key = zarr.open_array(str(store)).metadata.encode_chunk_key((2, 0, 0, 0))
    os.remove(store / key)
    third = cpu_reprocess(client, [f], cfg, store)
    assert third.written == 1
    np.testing.assert_array_equal(third.to_dask().compute(), want)
    assert cpu_reprocess(client, [f], cfg, store, overwrite=True).written == VOLUMES
    with pytest.raises(ValueError, match="overwrite=True"):
        cpu_reprocess(client, [f], config(dtype="float32"), store)


def test_uncompressed_chunks_hold_the_same_values(client, tmp_path):
    """compression="none" stores each chunk's bytes as they are (a chunk file is the volume's
    size) and reads back what zstd's array holds; resuming across the two is the same job (the
    array keeps its codec); anything else is refused naming the field."""
    f = write(tmp_path / "a.npy", spectra(seed=5), "npy")
    packed = cpu_reprocess(client, [f], config(), tmp_path / "zstd.zarr")
    plain = cpu_reprocess(client, [f], config(compression="none"), tmp_path / "none.zarr")
    np.testing.assert_array_equal(plain.to_dask().compute(), packed.to_dask().compute())
    a = zarr.open_array(str(tmp_path / "none.zarr"))
    assert not a.compressors
    chunk = tmp_path / "none.zarr" / a.metadata.encode_chunk_key((0, 0, 0, 0))
    assert chunk.stat().st_size == B * A * S  # int8, uncompressed
    assert zarr.open_array(str(tmp_path / "zstd.zarr")).compressors  # zarr's default: zstd
    assert cpu_reprocess(client, [f], config(compression="none"), tmp_path / "zstd.zarr").written == 0
    with pytest.raises(ValueError, match="compression="):
        config(compression="lz4").validate()


def test_truncated_and_corrupt_files(client, tmp_path):
    """A truncated file fails the tasks of its missing volumes, naming the file and byte range;
    the other volumes (and files) are written. A corrupt header is refused before any work."""
    cfg = config()
    good = write(tmp_path / "good.npy", spectra(seed=1), "npy")
    cut = write(tmp_path / "cut.npy", spectra(seed=2), "npy")
    size = os.path.getsize(cut)
    with open(cut, "r+b") as fh:
        fh.truncate(size - cfg.volume_bytes - 100)  # volume 2 is partial, volume 3 missing
    store = tmp_path / "out.zarr"
    with pytest.raises(vd.ReprocessError) as e:
        cpu_reprocess(client, [good, cut], cfg, store)
    failed = e.value.failures
    assert sorted(v for t, _ in failed for v in range(t.volume, t.volume + t.count)) == [2, 3]
    for t, exc in failed:
        assert isinstance(exc, vd.SourceError) and exc.path == cut
        assert f"{cut}: bytes [{t.offset}, {t.end})" in str(exc) and "ends at byte" in str(exc)
    arr = zarr.open_array(str(store))
    assert arr.attrs["vortexgo"]["failed"][0]["path"] == cut
    got = arr[:]
    np.testing.assert_array_equal(got[:VOLUMES], single_machine(spectra(seed=1), cfg, tmp_path))
    np.testing.assert_array_equal(got[VOLUMES:VOLUMES + 2], single_machine(spectra(seed=2)[:2], cfg, tmp_path))

    bad = tmp_path / "bad.npy"
    bad.write_bytes(b"\x93NUMPY\x01\x00\x10\x00{'descr': garbage" + b"\0" * 4096)
    with pytest.raises(vd.SourceError, match=r"bad\.npy: bytes \[0, \d+\): unreadable \.npy header"):
        cpu_reprocess(client, [good, bad], cfg, tmp_path / "out2.zarr")


def test_corrupt_hdf5_chunk_names_the_file_and_range(client, tmp_path):
    """Bytes overwritten inside one deflated chunk of an HDF5 stack fail that volume's task,
    naming the file and the bytes its volume's chunks lie in; the other volumes are written."""
    import h5py

    cfg = config()
    f = write(tmp_path / "a.h5", spectra(), "hdf5")
    spans = vd._hdf5_spans(f, VOLUMES)
    with h5py.File(f, "r") as h:
        info = h["data"].id.get_chunk_info_by_coord((1, 3, 5, 0, 0))
    with open(f, "r+b") as fh:
        fh.seek(info.byte_offset + 2)
        fh.write(b"\xa5" * (info.size - 4))
    with pytest.raises(vd.ReprocessError) as e:
        cpu_reprocess(client, [f], cfg, tmp_path / "out.zarr")
    (t, exc), = e.value.failures
    assert t.volume == 1 and f"{f}: bytes [{spans[1][0]}, {spans[1][1]})" in str(exc)
    assert spans[1][0] <= info.byte_offset < spans[1][1]


def kill_mid_task(c, within: float = 30.0) -> tuple[int, threading.Thread]:
    """Start a thread that SIGKILLs one of the client's workers 0.1 s into the first task it
    runs (within `within` seconds); returns the worker's pid and the thread, to join."""
    pids = c.run(os.getpid)
    victim = next(iter(pids.values()))

    def kill():
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            addr = next((a for a, p in pids.items() if p == victim), None)
            if addr and c.processing().get(addr):
                time.sleep(0.1)
                os.kill(victim, signal.SIGKILL)
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill)
    killer.start()
    return victim, killer


def test_killed_worker_is_retried_and_every_chunk_written_once(client, tmp_path):
    """A worker killed (SIGKILL) mid-task: the scheduler reruns its task elsewhere and the array
    holds every volume, equal to the single-machine engine's. (Its nanny starts a new worker.)"""
    cfg = config(volumes_per_task=1)
    data = spectra(volumes=12, seed=3)
    f = write(tmp_path / "a.npy", data, "npy")
    c = client
    # Slow the tasks down so that one is surely running when its worker dies.
    c.run(lambda: os.environ.__setitem__("VORTEXGO_DISTRIBUTED_TEST_DELAY", "0.3"))

    victim, killer = kill_mid_task(c)
    out = cpu_reprocess(c, [f], cfg, tmp_path / "out.zarr")
    killer.join()
    with pytest.raises(ProcessLookupError):
        os.kill(victim, 0)
    c.run(lambda: os.environ.pop("VORTEXGO_DISTRIBUTED_TEST_DELAY", None))
    c.wait_for_workers(2, timeout=30)
    arr = zarr.open_array(str(tmp_path / "out.zarr"))
    root = tmp_path / "out.zarr"
    chunks = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()
                    and p.name != "zarr.json" and not p.name.endswith(".partial"))  # a killed write's temporary
    assert chunks == sorted(arr.metadata.encode_chunk_key((i, 0, 0, 0)) for i in range(12))
    np.testing.assert_array_equal(arr[:], single_machine(data, cfg, tmp_path))
    assert sum(r["count"] for r in out.results) == 12


def test_bscan_chunks_and_float32(client, tmp_path):
    cfg = config(dtype="float32", chunk="bscan", volumes_per_task=3)
    data = spectra(volumes=5)
    f = write(tmp_path / "a.raw", data, "raw")
    out = cpu_reprocess(client, [f], cfg, tmp_path / "out.zarr")
    arr = out.array
    assert arr.chunks == (1, 1, A, S) and arr.dtype == np.float32 and len(out.tasks) == 2
    np.testing.assert_allclose(arr[:], single_machine(data, cfg, tmp_path), rtol=0, atol=0)
    assert json.loads(json.dumps(dict(arr.attrs)))["vortexgo"]["config"]["chunk"] == "bscan"


def test_pipelines_kept_across_tasks_and_closed(client, tmp_path):
    """Each worker keeps one processor/planner/endpoint per task it runs at once (one thread:
    one) across tasks: with the rolling average (W = 40) and one volume a task, tasks at a
    file's start (empty history) and after it (warm-up) on reused processors still equal the
    single-machine engine. Another configuration replaces them; the worker plugin's teardown
    closes them."""
    cfg = config(average_window=40, volumes_per_task=1)
    data = [spectra(seed=7), spectra(seed=8)]
    files = [write(tmp_path / f"{i}.npy", d, "npy") for i, d in enumerate(data)]
    got = cpu_reprocess(client, files, cfg, tmp_path / "out.zarr").array[:]
    for i, d in enumerate(data):
        np.testing.assert_array_equal(got[i * VOLUMES:(i + 1) * VOLUMES], single_machine(d, cfg, tmp_path))
    kept = client.run(vd._pipeline_count)
    assert all(n <= 1 for n in kept.values()) and sum(kept.values()) >= 1, kept  # one thread per worker
    cpu_reprocess(client, files, config(dtype="float32"), tmp_path / "other.zarr")
    kept = client.run(vd._pipeline_count)
    assert all(n <= 1 for n in kept.values()), kept  # the other configuration's replaced it
    client.unregister_worker_plugin(vd._PipelinePlugin.name)  # what a closing worker runs: teardown
    vd._plugin_clients.discard(client)  # the next job registers it again
    assert set(client.run(vd._pipeline_count).values()) == {0}


def test_cpu_workers_take_their_share_of_the_cores(client, tmp_path):
    """A CPU worker runs the core's CPU work on its own threads (the module's workers have one
    each), not on every core of the host; a GOMAXPROCS in a worker's environment wins."""
    cfg = config()
    f = write(tmp_path / "a.npy", spectra(seed=3), "npy")
    cpu_reprocess(client, [f], cfg, tmp_path / "out.zarr")
    assert set(client.run(vg.cpu_threads).values()) == {1}
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None,
                                  silence_logs=40, env={"GOMAXPROCS": "3"}) as cluster, \
            distributed.Client(cluster) as c:
        cpu_reprocess(c, [f], cfg, tmp_path / "env.zarr")
        assert list(c.run(vg.cpu_threads).values()) == [3]


def test_threads_of_one_process_run_tasks_at_once(tmp_path):
    """Two threads of one process (a worker with two threads) run two tasks at once, each on
    its own pipeline (two kept after), and write what the single-machine engine gives."""
    cfg = config(average_window=40, volumes_per_task=2)
    data = spectra(seed=9)
    f = write(tmp_path / "a.npy", data, "npy")
    tasks = vd.plan_tasks(vd.plan_sources([f], cfg), cfg)
    store = str(tmp_path / "out.zarr")
    vd._open_or_create(store, (VOLUMES, B, A, S), (1, B, A, S), "int8", True, {"config": cfg.to_json(), "sources": []})
    vd.close_pipelines()
    threads_before = vg.cpu_threads()
    start, out, errors = threading.Barrier(len(tasks)), {}, []

    def work(t):
        try:
            start.wait(30)
            out[t.volume] = (vd.run_task(t, cfg, store, device="cpu"), threading.get_ident())
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in tasks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert len(tasks) == 2 and vd._pipeline_count() == 2  # one per task running at once
    assert [out[t.volume][0]["written"] for t in tasks] == [2, 2]
    np.testing.assert_array_equal(zarr.open_array(store)[:], single_machine(data, cfg, tmp_path))
    assert vd.close_pipelines() == 2 and vd._pipeline_count() == 0
    assert vg.cpu_threads() == threads_before  # outside a Dask worker the process keeps its count


def test_second_job_on_a_store_is_refused_while_the_first_runs(client, tmp_path):
    """Two jobs writing one store: the second is refused at once (StoreBusyError naming the
    store and the first job's process) and writes nothing; the first finishes unharmed. A task
    of a job that no longer owns the store (its client died, another job took over) writes
    nothing either."""
    cfg = config(volumes_per_task=1)
    data = spectra(volumes=6, seed=4)
    f = write(tmp_path / "a.npy", data, "npy")
    store = tmp_path / "out.zarr"
    c = client
    c.run(lambda: os.environ.__setitem__("VORTEXGO_DISTRIBUTED_TEST_DELAY", "0.3"))
    first: dict = {}

    def job():
        try:
            first["out"] = cpu_reprocess(c, [f], cfg, store)
        except BaseException as e:  # noqa: BLE001 - asserted below
            first["error"] = e

    t = threading.Thread(target=job)
    t.start()
    try:
        deadline = time.monotonic() + 60
        while not any(c.processing().values()) and time.monotonic() < deadline and t.is_alive():
            time.sleep(0.02)
        assert any(c.processing().values()), "the first job's tasks never ran"
        with pytest.raises(vd.StoreBusyError, match=f"{store}: another reprocess job .*process {os.getpid()}"):
            cpu_reprocess(c, [f], config(dtype="float32"), store, overwrite=True)
    finally:
        t.join(120)
        c.run(lambda: os.environ.pop("VORTEXGO_DISTRIBUTED_TEST_DELAY", None))
    assert "error" not in first, first.get("error")
    arr = zarr.open_array(str(store))
    assert arr.dtype == np.int8 and first["out"].written == 6
    np.testing.assert_array_equal(arr[:], single_machine(data, cfg, tmp_path))

    # A task left over from another job (a token the store does not hold) writes nothing.
    key = store / arr.metadata.encode_chunk_key((0, 0, 0, 0))
    before = key.stat().st_mtime_ns
    task = first["out"].tasks[0]
    with pytest.raises(vd.StoreBusyError, match="a newer job took it over"):
        vd.run_task(task, cfg, str(store), overwrite=True, device="cpu", job="an-earlier-job")
    assert key.stat().st_mtime_ns == before
    # The lock went with the first job: the next one runs (and resumes: nothing to write).
    assert cpu_reprocess(c, [f], cfg, store).written == 0


_FORK_PRELUDE = """
import faulthandler, os, signal, sys, threading, warnings
faulthandler.dump_traceback_later(100, exit=True)  # a hang shows where, before the limit
faulthandler.register(signal.SIGUSR1, all_threads=True)
warnings.simplefilter("ignore", DeprecationWarning)  # forking a threaded process
import dask, distributed, numpy as np, zarr
import vortexgo as vg
from vortexgo import distributed as vd
tmp = os.environ["FORK_TMP"]
pc = vg.ProcessorConfig(samples_per_record=64, ascans_per_block=32, levels=(-10.0, 60.0))
cfg = vd.ReprocessConfig(pc, ascans_per_bscan=16, bscans_per_volume=8)
np.save(f"{tmp}/a.npy", np.random.default_rng(0).integers(1000, 3000, (2, 8, 16, 64, 1)).astype(np.uint16))

def job(store):
    with dask.config.set({"distributed.worker.multiprocessing-method": "fork"}), \\
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None,
                                     silence_logs=50) as cluster, distributed.Client(cluster) as c:
        return vd.reprocess(c, [f"{tmp}/a.npy"], cfg, f"{tmp}/{store}", device="cpu")

def in_thread(store):
    # the job on a thread, so that a hang is reported, not waited out: "hang", or the
    # job's result or exception
    out = {}
    def run():
        try:
            out["r"] = job(store)
        except BaseException as e:
            out["r"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    return "hang" if t.is_alive() else out["r"]
"""


def _fork_case(tmp_path, code: str) -> _subproc.Outcome:
    return _subproc.run(code, prelude=_FORK_PRELUDE, env={"FORK_TMP": str(tmp_path)}, timeout=110)


def test_fork_start_method_from_a_client_without_the_go_runtime(tmp_path):
    """Workers forked from the client (Dask's multiprocessing-method 'fork', not its default)
    from a client that only imported vortexgo work: no Go runtime was forked."""
    o = _fork_case(tmp_path, """
        out = in_thread("one.zarr")
        if out == "hang":
            print("DASK-FORK-HANG: go loaded:", vg._core.loaded(), flush=True)
            os._exit(0)
        if isinstance(out, BaseException):
            raise out
        assert out.written == 2 and not vg._core.loaded()
        assert out.array.shape == (2,) + vd.output_shape(cfg, "cpu")
        print("ok")
    """)
    if "DASK-FORK-HANG: go loaded: False" in o.stdout:
        pytest.skip("Dask's fork start method hung on this machine before vortexgo's Go runtime was loaded "
                    "(its forked worker never started): nothing of vortexgo's to test")
    assert o.stdout.strip().endswith("ok"), o.output()


def test_fork_start_method_from_a_client_that_started_the_go_runtime(tmp_path):
    """From a client that had started the Go runtime every job fails at once with a ForkError
    naming the setting and 'spawn', before anything is written: never a hang. The job is the
    process's first fork-mode cluster: on the H200 machine a *second* fork-mode LocalCluster in
    one process hung with or without vortexgo's Go runtime loaded (scripts/fork_hang_probe.py,
    2026-11-29: 'fork-twice-no-go: first=ok second=hang go_loaded=False'), Dask's, not ours."""
    o = _fork_case(tmp_path, """
        vd.output_shape(cfg, "cpu")  # the Go runtime starts here: forked workers cannot use it
        assert vg._core.loaded()
        out = in_thread("two.zarr")
        if out == "hang":
            import psutil, signal, time
            for child in psutil.Process().children(recursive=True):
                try:
                    os.kill(child.pid, signal.SIGUSR1)  # each forked process dumps its threads
                except OSError:
                    pass
            time.sleep(2)
        assert out != "hang", "the job from a client with the Go runtime hung"
        assert isinstance(out, vg.ForkError), f"expected a ForkError, got {out!r}"
        assert "multiprocessing-method is 'fork'" in str(out) and "'spawn'" in str(out), out
        assert not os.path.exists(f"{tmp}/two.zarr")
        print("ok")
    """)
    assert o.stdout.strip().endswith("ok"), o.output()


def test_cuda_cluster_matches_cpu(tmp_path):
    """The same job on a LocalCUDACluster (one worker per GPU) gives the CPU cluster's volumes
    within float tolerance (float32 output; int8 levels may round one step apart)."""
    if not vg.is_cuda_available():
        pytest.skip("no CUDA device")
    dask_cuda = pytest.importorskip("dask_cuda")
    cfg = config(average_window=40, dtype="float32")
    data = spectra(volumes=6)
    f = write(tmp_path / "a.npy", data, "npy")
    with dask_cuda.LocalCUDACluster(dashboard_address=None, silence_logs=40) as cluster, \
            distributed.Client(cluster) as c:
        gpu = vd.reprocess(c, [f], cfg, tmp_path / "gpu.zarr", device="cuda").array[:]
    want = single_machine(data, cfg, tmp_path)
    np.testing.assert_allclose(gpu, want, rtol=1e-3, atol=1e-2 * float(np.abs(want).max()))


def test_cuda_cluster_faults_resume_and_a_killed_worker(tmp_path):
    """Issue 30's faults on a LocalCUDACluster (one worker per GPU, each task on its worker's
    GPU): a rerun writes nothing; a truncated file fails its own volumes' tasks naming the file
    and bytes while the rest are written; a worker killed mid-task (SIGKILL) has its task rerun
    once its nanny restarts it, every chunk written once. The reference is the same job on the
    same cluster without the faults (the GPU's int8 levels may round one step from the CPU's)."""
    if not vg.is_cuda_available():
        pytest.skip("no CUDA device")
    dask_cuda = pytest.importorskip("dask_cuda")
    cfg = config(average_window=40, volumes_per_task=1)
    data = spectra(volumes=8, seed=5)
    f = write(tmp_path / "a.npy", data, "npy")
    with dask_cuda.LocalCUDACluster(dashboard_address=None, silence_logs=40) as cluster, \
            distributed.Client(cluster) as c:
        ref = vd.reprocess(c, [f], cfg, tmp_path / "ref.zarr", device="cuda")
        want = ref.array[:]
        assert ref.written == 8 and want.shape[0] == 8
        assert vd.reprocess(c, [f], cfg, tmp_path / "ref.zarr", device="cuda").written == 0  # resume

        cut = write(tmp_path / "cut.npy", data, "npy")
        with open(cut, "r+b") as fh:
            fh.truncate(os.path.getsize(cut) - cfg.volume_bytes - 100)  # volume 6 partial, 7 missing
        with pytest.raises(vd.ReprocessError) as e:
            vd.reprocess(c, [cut], cfg, tmp_path / "cut.zarr", device="cuda")
        assert sorted(t.volume for t, _ in e.value.failures) == [6, 7]
        for t, exc in e.value.failures:
            assert isinstance(exc, vd.SourceError) and f"{cut}: bytes [{t.offset}, {t.end})" in str(exc)
        np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "cut.zarr"))[:6], want[:6])

        c.run(lambda: os.environ.__setitem__("VORTEXGO_DISTRIBUTED_TEST_DELAY", "0.3"))
        victim, killer = kill_mid_task(c)
        out = vd.reprocess(c, [f], cfg, tmp_path / "killed.zarr", device="cuda")
        killer.join()
        with pytest.raises(ProcessLookupError):
            os.kill(victim, 0)
        c.run(lambda: os.environ.pop("VORTEXGO_DISTRIBUTED_TEST_DELAY", None))
    root = tmp_path / "killed.zarr"
    arr = zarr.open_array(str(root))
    chunks = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()
                    and p.name != "zarr.json" and not p.name.endswith(".partial"))
    assert chunks == sorted(arr.metadata.encode_chunk_key((i, 0, 0, 0)) for i in range(8))
    assert sum(r["count"] for r in out.results) == 8
    np.testing.assert_array_equal(arr[:], want)


@pytest.mark.parametrize("cuda, cpus, volume_bytes, want", [
    (False, 16, 4 << 20, 2),        # a CPU worker's processor has the cores
    (True, 16, 4 << 20, 8),         # a GPU worker: up to 8 writers
    (True, 4, 4 << 20, 3),          # one core left to the rest
    (True, 1, 4 << 20, 1),
    (True, 16, 400 << 20, 2),       # as many volume copies as fit in 1 GiB
    (True, 16, 2 << 30, 1),         # never none
])
def test_chunk_writers_at_once(monkeypatch, cuda, cpus, volume_bytes, want):
    from types import SimpleNamespace

    monkeypatch.setattr(vd.os, "sched_getaffinity", lambda pid: set(range(cpus)), raising=False)
    assert vd._Pipeline.writers(SimpleNamespace(cuda=cuda), volume_bytes) == want
