"""vortex's AlazarAcquisition against the virtual digitizer (instruments/virtual).

The ATS-SDK library is loaded once per process and the virtual instrument
reads its configuration (A-line rate, phantom, faults, FIFO size) when it
loads, so every case that drives the board runs in its own interpreter with
the environment it needs (tests_py/_subproc.py); the configuration classes,
which need no library, are tested here.

The closed loop: with no scanner attached the virtual board delivers the
phantom in raster order, so an engine run through the real driver equals
the same run through SimulatedAcquisition (noise off): bit for bit here.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

import _subproc
from _alazar_child import run
from vortexgo import alazar
from vortexgo.alazar import AlazarAcquisition, AlazarConfig

pytestmark = pytest.mark.timeout(180)

@pytest.fixture(scope="module")
def virtual(virtual_instrument: Path) -> Path:
    """The virtual digitizer (conftest.py's virtual_instrument)."""
    return virtual_instrument / "libATSApi.so"


# --- configuration (no library) ------------------------------------------------------


def test_config_has_vortexs_fields_and_defaults():
    c = AlazarConfig()
    assert (c.samples_per_record, c.records_per_block) == (1024, 1000)
    assert (c.device.system_index, c.device.board_index) == (1, 1)
    assert c.clock == alazar.InternalClock(800_000_000) and c.samples_per_second == 800_000_000
    assert c.trigger == alazar.SingleExternalTrigger(2500, 0.09, 80, alazar.TriggerSlope.Positive, alazar.Coupling.DC)
    assert list(c.inputs) == [] and list(c.options) == [] and c.resampling == []
    assert c.acquire_timeout == datetime.timedelta(seconds=1) and c.stop_on_error
    c.inputs.append(alazar.Input())
    assert c.inputs[0] == alazar.Input(alazar.Channel.B, 400, 50, alazar.Coupling.DC)
    assert c.shape == [1000, 1024, 1] and c.channels_per_sample == 1 and c.bytes_per_multisample == 2
    assert c.channel_mask == int(alazar.Channel.B) and c.recommended_minimum_records_per_block == 512
    c.clock = alazar.ExternalClock()
    assert not c.samples_per_second_is_known
    with pytest.raises(RuntimeError, match="samples per second is not defined with current clock setting"):
        c.samples_per_second
    assert repr(alazar.ExternalClock()) == ("ExternalClock(coupling=<Coupling.AC: 1>, dual=False, "
                                            "edge=<ClockEdge.Rising: 0>, level_ratio=0.50)")
    assert alazar.DualExternalTrigger().level_ratios == [0.09, 0.09]
    assert alazar.AuxIOPacerOut() == alazar.AuxIOPacerOut(2) != alazar.AuxIOPacerOut(4)
    assert alazar.OCTIgnoreBadClock().good_seconds == 4.95e-6
    assert (alazar.InfiniteAcquisition, alazar.TriggerRangeTTL) == (0x7FFFFFFF, 0)
    d = c.copy()
    d.inputs.append(alazar.Input(alazar.Channel.A))
    assert len(c.inputs) == 1, "copy() is deep"
    with pytest.raises(AttributeError, match="did you mean 'records_per_block'"):
        c.records_per_blok = 5
    assert not alazar.Board().valid and alazar.Board().handle == 0


def test_bad_fields_are_refused_before_the_board():
    c = AlazarConfig()
    c.inputs.append(alazar.Input())
    c.clock = "internal"
    with pytest.raises(TypeError, match="AlazarConfig.clock='internal', expected an alazar.InternalClock"):
        c._record()
    c.clock = alazar.InternalClock()
    c.options.append(alazar.Input())
    with pytest.raises(TypeError, match=r"AlazarConfig.options\[0\]"):
        c._record()


# --- the library absent ----------------------------------------------------------------


def test_without_the_library_the_error_names_the_variable():
    _subproc.run("""
        import vortexgo, vortexgo.compat
        vortexgo.compat.install()
        from vortex.acquire import AlazarAcquisition, AlazarConfig, alazar   # imports without the SDK
        import vortex.driver.alazar, vortex.acquire.alazar
        assert vortex.driver.alazar.Board is alazar.Board is vortex.acquire.alazar.Board
        for make in (lambda: alazar.Board(1, 1), lambda: alazar.enumerate(),
                     lambda: AlazarAcquisition(AlazarConfig())):
            try:
                make()
            except vortexgo.VortexError as e:
                assert "VORTEXGO_ATSAPI_LIBRARY" in str(e) and "libATSApi.so" in str(e), e
            else:
                raise AssertionError("no error without the library")
        print("ok")
    """, env={"VORTEXGO_ATSAPI_LIBRARY": "/nonexistent/libATSApi.so"})


# --- the virtual board -------------------------------------------------------------------


def test_engine_run_equals_the_simulated_source(virtual):
    """The closed loop's first half: the same raster through the real driver's
    DMA into the engine's blocks and through SimulatedAcquisition."""
    o = run(virtual, """
        acq = AlazarAcquisition(alazar_config())
        info = acq.board.info
        assert info.type.model == "ATS9360" and info.supported_channels == [alazar.Channel.A, alazar.Channel.B]
        assert [b.info.board_index for b in alazar.enumerate()] == [1]
        vols = []
        for src in (acq, SIM):
            eng, (ep,) = engine(src, 2)
            eng.prepare(); eng.start(); eng.wait()
            s = eng.status()
            assert s.error == "" and s.volumes == 2 and s.blocks_dropped == 0, s
            with ep.tensor as v:
                vols.append(np.array(v))
        assert vols[0].shape == (B, A, S) and np.abs(vols[0]).max() > 10
        np.testing.assert_array_equal(vols[0], vols[1])
        print("ok")
    """)
    assert "ok" in o.stdout


def test_validation_uses_vortexs_messages(virtual):
    run(virtual, """
        cases = [
            (dict(inputs=[]), "no inputs are configured"),
            (dict(samples_per_record=1000), "samples per record must be evenly divisible by 128: 1000"),
            (dict(samples_per_record=128), "samples per record must equal or exceed 256: 128"),
            (dict(resampling=[1, 2]), "samples per record does not match number of resampled samples: 256 vs 2"),
            (dict(clock=alazar.InternalClock(250_000_000)),
             "failed to configure internal clock at 250000000 samples/s and decimation 0: (574) ApiInvalidData"),
            (dict(clock=alazar.ExternalClock(dual=True)),
             "dual edge sampling is requested but is not supported by the ATS9360"),
            (dict(device=alazar.AlazarDevice(1, 2)), "unable to open Alazar board 1-2: board not found"),
        ]
        for fields, msg in cases:
            c = alazar_config()
            for k, v in fields.items():
                setattr(c, k, v)
            applied = "clock" in fields  # validate() checks the shape; the board checks the clock when applied
            for check in ((lambda: AlazarAcquisition(c)),) if applied else (c.validate, lambda: AlazarAcquisition(c)):
                try:
                    check()
                except RuntimeError as e:
                    assert msg in str(e), (msg, str(e))
                else:
                    raise AssertionError("accepted: " + msg)
        c = alazar_config(inputs=[alazar.Input(alazar.Channel.C)])
        try:
            AlazarAcquisition(c)
        except vg.VortexError as e:
            assert "(561) ApiNotSupportThisChannel" in str(e), e
        # the engine's block must be the board's
        eng, _ = engine(AlazarAcquisition(alazar_config(records_per_block=256)), 1)
        eng.prepare(); eng.start()
        try:
            eng.wait()
        except vg.VortexError as e:
            assert "block is not exactly equal to the configured size: 128 != 256" in str(e), e
        else:
            raise AssertionError("a block of another size ran")
        print("ok")
    """)


def test_stop_and_restart_leave_the_board_ready(virtual):
    run(virtual, """
        acq = AlazarAcquisition(alazar_config())
        eng, (ep,) = engine(acq, 0)        # endless
        eng.prepare()
        for _ in range(3):
            eng.start(); time.sleep(0.1); eng.stop()
            eng.scan_queue.clear(); queue_volumes(eng, A, B, 0)  # vortex's: a stop mid-scan needs a new queue
            s = eng.status()
            assert s.error == "" and s.blocks_acquired > 0, s
        assert not acq.board.info.type.model == ""
        eng.close()
        acq.close()
        print("ok")
    """)


def test_overflow_stops_the_engine_with_the_sdks_error(virtual, tmp_path):
    """The host falls behind (a segment callback holds the formatting for
    1 s): the board runs out of posted buffers, its FIFO (1 MiB here: 0.1 s
    of A-lines at 20 kHz) overflows and the run ends with ApiBufferOverflow;
    the volume completed before is stored."""
    run(virtual, """
        from vortexgo.engine import AscanStackEndpoint
        from vortexgo.storage import SimpleStackConfig, SimpleStackInt8
        st = SimpleStackInt8(); st.open(SimpleStackConfig(%r, (B, A, S)))
        store = AscanStackEndpoint(st)
        host = StackHostTensorEndpointFloat32()
        slow = threading.Event()
        def seg(sample, scan, volume, bscan):
            if scan >= 1 and not slow.is_set():
                slow.set(); time.sleep(1.0)
        host.segment_callback = seg
        eng, _ = engine(AlazarAcquisition(alazar_config()), 4, [host, store], event_queue_size=2)
        eng.prepare(); eng.start()
        try:
            eng.wait()
        except vg.VortexError as e:
            assert "ApiBufferOverflow" in str(e) and "(582)" in str(e), e
        else:
            raise AssertionError("no overflow")
        s = eng.status()
        assert s.volumes >= 1 and store.volumes_written >= 1, (s, store.volumes_written)
        st.close()
        shape = np.load(%r).shape
        # every completed volume is in the file (the store also holds the part of the volume the error cut)
        assert s.volumes == store.volumes_written and shape[0] >= store.volumes_written, (shape, s.volumes)
        print("ok")
    """ % (str(tmp_path / "v.npy"), str(tmp_path / "v.npy")), env={"VGV_ALAZAR_FIFO_BYTES": str(1 << 20), "VGV_ALINE_RATE_HZ": "20000"})


def test_timeout_stops_the_engine(virtual):
    """Triggers at 500 Hz: a 128-record block takes 0.26 s, more than acquire_timeout."""
    run(virtual, """
        eng, _ = engine(AlazarAcquisition(alazar_config(acquire_timeout=0.05)), 1)
        eng.prepare(); eng.start()
        try:
            eng.wait()
        except vg.VortexError as e:
            assert "(579) ApiWaitTimeout" in str(e), e
        else:
            raise AssertionError("no timeout")
        print("ok")
    """, env={"VGV_ALINE_RATE_HZ": "500"})


def test_board_removed_mid_run(virtual):
    run(virtual, """
        eng, _ = engine(AlazarAcquisition(alazar_config()), 0)
        eng.prepare(); eng.start()
        try:
            eng.wait()
        except vg.VortexError as e:
            assert "(513) ApiFailed" in str(e), e
        else:
            raise AssertionError("the run went on without its board")
        assert eng.status().blocks_acquired >= 3
        try:
            alazar.Board(1, 1)
        except vg.VortexError as e:
            assert "board not found" in str(e), e
        else:
            raise AssertionError("a removed board opened")
        print("ok")
    """, env={"VGV_FAULT": "board_removed@1000"})  # 7 whole blocks of 128 before it


def test_the_model_at_galvo_positions_equals_the_simulated_source(virtual):
    """The closed loop's other half, the interface the virtual DAQmx writes:
    galvo positions written with vgv_galvo_write (in volts, io_delay A-lines
    ahead, a fifth of a grid step off) make vgv_spectrum show the grid point
    they are nearest to, equal to SimulatedAcquisition's raw spectrum of it
    (the stated tolerance: 1 count; measured 0)."""
    run(virtual, """
        import ctypes
        from vortexgo.endpoint import SpectraStackDeviceTensorEndpointUInt16
        # SimulatedAcquisition's raw spectra, through an engine: (B, A, S)
        sim = vg.SimulatedAcquisition(samples_per_record=S, ascans_per_bscan=A, bscans_per_volume=24, volumes=1,
                                      noise_level=0, seed=7)
        spectra = SpectraStackDeviceTensorEndpointUInt16()
        proc = vg.CPUProcessor(samples_per_record=S, ascans_per_block=A)
        fmt = planner(A, 24)
        ec = EngineConfig(records_per_block=A, blocks_to_allocate=3, preload_count=1)
        ec.add_acquisition(sim, [proc]); ec.add_processor(proc, [fmt]); ec.add_formatter(fmt, [spectra])
        eng = Engine(ec); queue_volumes(eng, A, 24, 1)
        eng.prepare(); eng.start(); eng.wait()
        with spectra.tensor as v:
            want = np.array(v).reshape(24, A, S)
        assert want.max() > 1000 and len(np.unique(want[:, :, S // 2])) > 100, "a phantom, not a constant"

        lib = ctypes.CDLL(%r)
        class Config(ctypes.Structure):
            _fields_ = [("aline_rate_hz", ctypes.c_double), ("samples_per_aline", ctypes.c_int32),
                        ("volts_per_unit", ctypes.c_double), ("io_delay", ctypes.c_int64)]
        class Phantom(ctypes.Structure):
            _fields_ = [("ascans", ctypes.c_int32), ("bscans", ctypes.c_int32), ("volumes", ctypes.c_int32),
                        ("seed", ctypes.c_uint64)] + [(n, ctypes.c_double) for n in (
                        "noise_level", "reference_level", "dark_level", "center_wavelength", "wavelength_span",
                        "source_bandwidth", "dispersion", "x_min", "x_max", "y_min", "y_max")] + [
                        ("free_raster", ctypes.c_int32)]
        c = Config(); lib.vgv_config_get(ctypes.byref(c))
        c.volts_per_unit, c.io_delay = 2.0, 3
        assert lib.vgv_configure(ctypes.byref(c)) == 0
        p = Phantom(); lib.vgv_phantom_get(ctypes.byref(p))
        p.ascans, p.bscans, p.volumes, p.seed, p.noise_level = A, 24, 1, 7, 0.0
        p.x_min, p.x_max, p.y_min, p.y_max = -0.5, 0.5, -1.0, 1.0  # A-scans along y (channel 1)
        assert lib.vgv_phantom_configure(ctypes.byref(p)) == 0

        # the raster in a random order, so nothing but the positions can make it match
        rng = np.random.default_rng(3)
        order = rng.permutation(24 * A)
        bscan, ascan = order // A, order %% A
        x = (-1.0 + ascan * 2.0 / (A - 1) + 0.2 * 2.0 / (A - 1)) * 2.0          # volts
        y = (-0.5 + bscan * 1.0 / 23 - 0.2 * 1.0 / 23) * 2.0
        dbl = ctypes.POINTER(ctypes.c_double)
        for ch, v in ((1, x), (0, y)):  # x: the A-scan coordinate, galvo channel 1
            v = np.ascontiguousarray(v)
            lib.vgv_galvo_write(ch, ctypes.c_int64(0), v.ctypes.data_as(dbl), ctypes.c_int64(len(v)))
        out = np.empty(S, np.uint16)
        worst = 0
        for k in range(len(order)):
            lib.vgv_spectrum(ctypes.c_int64(k + 3), out.ctypes.data_as(ctypes.POINTER(ctypes.c_uint16)), S)
            worst = max(worst, int(np.abs(out.astype(int) - want[bscan[k], ascan[k]].astype(int)).max()))
        assert worst <= 1, worst
        gx, gy = ctypes.c_double(), ctypes.c_double()
        assert lib.vgv_galvo_at(ctypes.c_int64(3), ctypes.byref(gx), ctypes.byref(gy)) == 0 and gy.value == x[0]
        assert lib.vgv_galvo_at(ctypes.c_int64(len(order) + 3), ctypes.byref(gx), ctypes.byref(gy)) == 1, "underflow"
        print("worst", worst)
    """ % str(virtual.parent / "libvgvirtual.so"))


def test_parallel_spectra_equal_serial_and_keep_shot_noise(virtual):
    """vgv_spectra (the boards' DMA engines since vortex's demos ran at their own
    sizes: many host threads at once, VGV_THREADS) equals vgv_spectrum called
    A-line by A-line, noise included (per-A-line streams, so the thread that made a
    spectrum does not matter); the noise is shot noise of the stated level
    ((noisy - clean) / sqrt(clean) has mean 0, standard deviation noise_level); and a
    stride shorter than a spectrum is refused (nothing written), not overrun."""
    run(virtual, """
        import ctypes
        import os
        assert os.environ["VGV_THREADS"] == "4"
        lib = ctypes.CDLL(%r)
        class Phantom(ctypes.Structure):
            _fields_ = [("ascans", ctypes.c_int32), ("bscans", ctypes.c_int32), ("volumes", ctypes.c_int32),
                        ("seed", ctypes.c_uint64)] + [(n, ctypes.c_double) for n in (
                        "noise_level", "reference_level", "dark_level", "center_wavelength", "wavelength_span",
                        "source_bandwidth", "dispersion", "x_min", "x_max", "y_min", "y_max")] + [
                        ("free_raster", ctypes.c_int32)]
        u16 = ctypes.POINTER(ctypes.c_uint16)
        S2, N = 1024, 3000  # 48 threads' worth of 64 Ki samples: all four workers run
        def spectra(level, seed=7):
            p = Phantom(); lib.vgv_phantom_get(ctypes.byref(p))
            p.ascans, p.bscans, p.volumes, p.seed, p.noise_level = 40, 30, 1, seed, level
            assert lib.vgv_phantom_configure(ctypes.byref(p)) == 0
            batch = np.zeros((N, S2 + 5), np.uint16)  # a stride longer than the spectrum
            lib.vgv_spectra(ctypes.c_int64(11), ctypes.c_int64(N), batch.ctypes.data_as(u16), ctypes.c_size_t(S2 + 5), S2)
            serial = np.zeros((N, S2), np.uint16)
            for k in range(N):
                lib.vgv_spectrum(ctypes.c_int64(11 + k), serial[k].ctypes.data_as(u16), S2)
            assert (batch[:, S2:] == 0).all(), "wrote past the spectrum into the stride's gap"
            return batch[:, :S2], serial
        clean, clean_serial = spectra(0.0)
        assert (clean == clean_serial).all()
        assert clean.max() > 1000 and len(np.unique(clean[:, S2 // 2])) > 100, "a phantom, not a constant"
        first = None
        for level in (1.0, 3.0):
            noisy, noisy_serial = spectra(level)
            first = noisy if first is None else first
            assert (noisy == noisy_serial).all(), "the same A-line, the same noise, whichever thread made it"
            z = (noisy.astype(float) - clean) / np.sqrt(clean)
            assert abs(z.mean()) < 0.01 * level, z.mean()
            assert abs(z.std() / level - 1) < 0.03, (level, z.std())
            again, _ = spectra(level)
            assert (again == noisy).all(), "noise is a function of the A-line and seed"
        # another seed: another phantom's speckle and another noise stream
        other, _ = spectra(1.0, seed=8)
        assert (other != first).mean() > 0.5
        # refused sizes: nothing written
        buf = np.full((4, 8), 7, np.uint16)
        lib.vgv_spectra(ctypes.c_int64(0), ctypes.c_int64(4), buf.ctypes.data_as(u16), ctypes.c_size_t(4), 8)
        lib.vgv_spectra(ctypes.c_int64(0), ctypes.c_int64(-1), buf.ctypes.data_as(u16), ctypes.c_size_t(8), 8)
        lib.vgv_spectra(ctypes.c_int64(0), ctypes.c_int64(4), None, ctypes.c_size_t(8), 8)
        assert (buf == 7).all()
        print("ok")
    """ % str(virtual.parent / "libvgvirtual.so"), env={"VGV_THREADS": "4"})
