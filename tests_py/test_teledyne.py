"""vortex's TeledyneAcquisition against the virtual ADQ digitizer (instruments/virtual/teledyne.c).

ADQAPI is loaded once per process and the virtual instrument reads its
configuration (A-line rate, phantom, FIFO size, API revision) when it
loads, so every case that drives the board runs in its own interpreter
(tests_py/_subproc.py); the configuration classes, which need no library,
are tested here.

With no scanner attached the virtual board delivers the phantom in raster
order, so an engine run through the real driver equals the same run through
SimulatedAcquisition (noise off). The FWOCT firmware's FFT is compared with
vortexgo's CPU processing of the same spectra.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import numpy as np
import pytest

import _subproc
from vortexgo import teledyne
from vortexgo.teledyne import TeledyneConfig

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def virtual(virtual_instrument: Path) -> Path:
    """The virtual digitizer (conftest.py's virtual_instrument)."""
    return virtual_instrument / "libadq.so"


PRELUDE = """
import sys, time, threading
sys.path.insert(0, %r)
import numpy as np
import vortexgo as vg
from vortexgo.engine import Engine, EngineConfig, StackHostTensorEndpointFloat32
from vortexgo.process import hann_window, spectral_filter, CopyProcessor, CopyProcessorConfig
from vortexgo import teledyne
from vortexgo.teledyne import TeledyneAcquisition, TeledyneConfig
from _scans import planner, queue_volumes

S, A, B, RPB = 256, 32, 32, 128
SIM = vg.SimulatedAcquisition(samples_per_record=S, ascans_per_bscan=A, bscans_per_volume=B, volumes=1, noise_level=0)

def teledyne_config(**kw):
    c = TeledyneConfig()
    c.samples_per_record, c.records_per_block = S, RPB
    c.inputs.append(teledyne.Input(0))
    for k, v in kw.items():
        setattr(c, k, v)
    return c

def engine(acq, volumes, endpoints=None, proc=None, **kw):
    if proc is None:
        pc = vg.ProcessorConfig(samples_per_record=S, ascans_per_block=RPB,
                                resampling_samples=SIM.resampling_positions(),
                                spectral_filter=spectral_filter(hann_window(S), SIM.dispersion_compensation()))
        proc = vg.CPUProcessor(pc)
    fmt = planner(A, B)
    eps = endpoints or [StackHostTensorEndpointFloat32()]
    ec = EngineConfig(records_per_block=RPB, blocks_to_allocate=8, preload_count=4, **kw)
    ec.add_acquisition(acq, [proc]); ec.add_processor(proc, [fmt]); ec.add_formatter(fmt, eps)
    eng = Engine(ec)
    queue_volumes(eng, A, B, volumes)
    return eng, eps

def volume(acq, proc=None, volumes=1):
    eng, (ep,) = engine(acq, volumes, proc=proc)
    eng.prepare(); eng.start(); eng.wait()
    s = eng.status()
    assert s.error == "" and s.volumes == volumes and s.blocks_dropped == 0, s
    eng.close()
    with ep.tensor as v:
        return np.array(v)
""" % str(Path(__file__).resolve().parent)


def run(lib: Path, code: str, **extra: str) -> _subproc.Outcome:
    """``code`` in a child with PRELUDE: the virtual board at a 100 kHz A-line
    clock, noiseless, a 32 x 32 phantom, plus ``extra``."""
    env = {"VORTEXGO_ADQ_LIBRARY": str(lib), "VGV_ALINE_RATE_HZ": "100000", "VGV_NOISE_LEVEL": "0",
           "VGV_PHANTOM": "32,32,-1,1,-1,1", **extra}
    o = _subproc.run(code, prelude=PRELUDE, env=env)
    assert "ok" in o.stdout, o.stdout + o.stderr
    return o


# --- configuration (no library) ------------------------------------------------------


def test_config_has_vortexs_fields_and_defaults():
    c = TeledyneConfig()
    assert (c.samples_per_record, c.records_per_block, c.device) == (1024, 1000, 0)
    assert c.clock == teledyne.Clock(2_500_000_000, 10_000_000, teledyne.ClockGenerator.InternalPLL,
                                     teledyne.ClockReferenceSource.Internal, 0, True)
    assert c.samples_per_second == 2_500_000_000
    assert list(c.inputs) == [] and isinstance(c.inputs, teledyne.VectorInput)
    assert (c.trigger_source, c.trigger_skip_factor, c.trigger_offset_samples, c.trigger_sync_passthrough) == \
        (teledyne.TriggerSource.PortTrig, 1, 0, True)
    assert (c.sample_skip_factor, c.enable_fwoct, c.resampling_factor, c.clock_delay_samples) == (1, False, 1.0, 0.0)
    assert c.clock_edges == teledyne.ClockEdges.Rising and c.fft_mode == teledyne.FFTMode.Disabled
    assert c.background.dtype == np.int16 and c.background.size == 0
    assert c.spectral_filter.dtype == np.complex64 and c.spectral_filter.size == 0
    assert c.acquire_timeout == datetime.timedelta(seconds=1) and c.stop_on_error and not c.enable_hugepages
    assert (c.periodic_trigger_frequency, c.test_pattern_signal) == (10_000, False)
    c.inputs.append(teledyne.Input(1))
    c.inputs.append(teledyne.Input())
    assert c.inputs[1] == teledyne.Input(0) and c.channels_per_sample == 2 and c.channel_mask == 0b11
    assert c.shape == [1000, 1024, 2]
    c.samples_per_second = 1_000_000_000
    assert c.clock.sampling_frequency == 1_000_000_000
    d = c.copy()
    d.inputs.append(teledyne.Input(3))
    assert len(c.inputs) == 2, "copy() is deep"
    with pytest.raises(AttributeError, match="did you mean 'records_per_block'"):
        c.records_per_blok = 5
    assert repr(teledyne.Input(2)) == "Input(channel=2)"
    assert repr(teledyne.Clock()).startswith("Clock(sampling_frequency=2500000000, reference_frequency=10000000, ")
    assert str(teledyne.TriggerSource.Periodic) == "TriggerSource.Periodic"
    assert teledyne.ADQProductID.ADQ114 is teledyne.ADQProductID.ADQ214 and teledyne.ADQProductID.ADQ32 == 0x31
    assert [m.value for m in teledyne.FFTMode] == [-1, 0, 1, 2]
    assert repr(teledyne.DeviceInfo(49)) == "<ProductID=49>" and teledyne.DeviceInfo(49).copy() == teledyne.DeviceInfo(49)
    acq = teledyne.TeledyneAcquisition()
    assert acq.board_handle == 0 and not acq.running and isinstance(acq.config, TeledyneConfig)


def test_bad_fields_are_refused_before_the_board():
    c = TeledyneConfig()
    c.inputs.append(teledyne.Input())
    for field, value, err, msg in [
        ("clock", "internal", TypeError, "TeledyneConfig.clock='internal', expected a teledyne.Clock"),
        ("trigger_source", 7, ValueError, "TeledyneConfig.trigger_source=7, expected a teledyne.TriggerSource"),
        ("fft_mode", 5, ValueError, "expected a teledyne.FFTMode"),
        ("resampling_factor", 0, ValueError, r"resampling_factor=0.0, expected a number > 0"),
        ("background", np.full(4, 40000), ValueError, "background: expected int16"),
        ("spectral_filter", [np.nan], ValueError, "spectral_filter: non-finite"),
        ("acquire_timeout", -1.0, ValueError, "acquire_timeout"),
        ("inputs", [teledyne.Input(32)], ValueError, r"inputs\[0\].channel=32"),
        ("inputs", [3], TypeError, r"inputs\[0\]=3, expected a teledyne.Input"),
    ]:
        d = c.copy()
        setattr(d, field, value)
        with pytest.raises(err, match=msg):
            d._record()
    r = c._record()
    assert r["Inputs"] == [0] and r["AcquireTimeout"] == 1_000_000_000 and r["SpectralFilterReal"] == []


# --- the library absent, or another revision ------------------------------------------------


def test_without_the_library_the_error_names_the_variable():
    o = _subproc.run("""
        import vortexgo, vortexgo.compat
        vortexgo.compat.install()
        from vortex.acquire import TeledyneAcquisition, TeledyneConfig, teledyne   # imports without ADQAPI
        import vortex.acquire.teledyne
        assert vortex.acquire.teledyne.Teledyne is teledyne.Teledyne
        c = TeledyneConfig(); c.inputs.append(teledyne.Input())
        for make in (lambda: teledyne.Teledyne(0), teledyne.enumerate, c.validate, lambda: TeledyneAcquisition(c)):
            try:
                make()
            except vortexgo.VortexError as e:
                assert "VORTEXGO_ADQ_LIBRARY" in str(e) and "libadq.so" in str(e), e
            else:
                raise AssertionError("no error without the library")
        print("ok")
    """, env={"VORTEXGO_ADQ_LIBRARY": "/nonexistent/libadq.so"})
    assert "ok" in o.stdout


def test_another_api_revision_is_refused(virtual):
    run(virtual, """
        for make in (lambda: teledyne.Teledyne(0), lambda: TeledyneAcquisition(teledyne_config()), teledyne.library):
            try:
                make()
            except vg.VortexError as e:
                assert "system ADQAPI version is incompatible with compiled version" in str(e), e
            else:
                raise AssertionError("a library of another revision was used")
        print("ok")
    """, VGV_ADQAPI_VERSION="1.0")


# --- the virtual board -------------------------------------------------------------------


def test_board_and_standalone_calls(virtual):
    """vortex's driver names on the virtual ADQ32, and the acquisition outside an engine."""
    run(virtual, """
        assert [d.ProductID for d in teledyne.enumerate()] == [teledyne.ADQProductID.ADQ32]
        b = teledyne.Teledyne()
        i = b.info
        assert (i.product_name, i.channel_count, i.buffer_count, i.device_number) == ("ADQ32", 2, 16, 1)
        assert i.fwoct.detected and i.fwoct.fft_capacity == 8192 and i.fwoct.version == 8
        assert b.valid and b.handle != 0 and not b.running
        b.close(); assert not b.valid and b.handle == 0
        try:
            teledyne.Teledyne(1)
        except vg.VortexError as e:
            assert "device index is out of range: 1 >= 1" in str(e), e
        else:
            raise AssertionError("a second board opened")
        acq = TeledyneAcquisition(teledyne_config(records_per_block=A))
        assert acq.board_handle != 0 and acq.board.info.serial_number == "VG00001"
        acq.prepare()
        got = np.empty((A, S, 1), np.uint16)
        sessions = []
        for session in range(2):     # each session starts at A-line 0: the same blocks
            acq.start()
            assert acq.running
            blocks = []
            for k in range(B):
                assert acq.next(got, id=k) == A
                blocks.append(got.copy())
            acq.stop()
            assert not acq.running and acq.next(got) == 0
            sessions.append(np.array(blocks).astype(int))
        assert sessions[0].max() > 1000 and len(np.unique(sessions[0][:, :, S // 2])) > 10, "the phantom"
        assert np.abs(sessions[0] - sessions[1]).max() <= 1
        results = []
        acq.start(); acq.next_async(got, lambda n, e: results.append((n, e))); acq.stop()
        assert results == [(A, None)], results
        try:
            acq.next(np.empty((A, S + 8, 1), np.uint16))
        except ValueError as e:
            assert "expected (records, 256, 1)" in str(e), e
        else:
            raise AssertionError("a buffer of another shape was filled")
        acq.close()
        print("ok")
    """)


def test_engine_run_equals_the_simulated_source(virtual):
    """The same raster through the real driver's transfer buffers into the
    engine's blocks and through SimulatedAcquisition, over two runs."""
    run(virtual, """
        acq = TeledyneAcquisition(teledyne_config())
        board = volume(acq, volumes=2)
        again = volume(acq)            # the board was left ready
        sim = volume(SIM)
        assert board.shape == (B, A, S) and np.abs(board).max() > 10
        np.testing.assert_allclose(board, sim, rtol=0, atol=1e-3)
        np.testing.assert_allclose(again, sim, rtol=0, atol=1e-3)
        acq.close()
        print("ok")
    """)


def test_validation_uses_vortexs_messages(virtual):
    run(virtual, """
        cases = [
            (dict(inputs=[]), RuntimeError, "no inputs are configured"),
            (dict(inputs=[teledyne.Input(1), teledyne.Input(1)]), RuntimeError,
             "cannot configure the same channel as two different inputs: inputs[1] = Channel #1 and inputs[0] = Channel #1"),
            (dict(sample_skip_factor=0), RuntimeError, "sample skip factor must be positive"),
            (dict(trigger_skip_factor=0), RuntimeError, "trigger skip factor must be positive"),
            (dict(samples_per_record=250), ValueError, "record length of 250 is not a multiple of 8 (FWOCT requirement)"),
            (dict(enable_fwoct=True, fft_mode=teledyne.FFTMode.Magnitude, samples_per_record=16384), RuntimeError,
             "required FFT size of 16384 exceeds capacity of 8192"),
            (dict(enable_fwoct=True, spectral_filter=np.ones(3, np.complex64)), ValueError,
             "spectral filter and record length mismatch: 3 vs 256"),
            (dict(enable_fwoct=True, background=np.zeros(3, np.int16)), ValueError,
             "background and record length mismatch: 3 vs 256"),
            (dict(device=2), vg.VortexError, "device index is out of range: 2 >= 1"),
        ]
        for fields, kind, msg in cases:
            c = teledyne_config(**fields)
            for check in (c.validate, lambda: TeledyneAcquisition(c)):
                try:
                    check()
                except RuntimeError as e:   # VortexError is a RuntimeError
                    assert msg in str(e), (msg, str(e))
                    assert check != c.validate or isinstance(e, kind), (msg, type(e))
                except ValueError as e:
                    assert msg in str(e) and check == c.validate and kind is ValueError, (msg, str(e))
                else:
                    raise AssertionError("accepted: " + msg)
        for fields, msg in [(dict(trigger_source=teledyne.TriggerSource.Periodic, periodic_trigger_frequency=0),
                             "ADQ SetParameters() failed: -1"),
                            (dict(enable_hugepages=True), "hugepages are not supported")]:
            try:
                TeledyneAcquisition(teledyne_config(**fields))
            except vg.VortexError as e:
                assert msg in str(e), (msg, str(e))
            else:
                raise AssertionError("accepted: " + msg)
        # the engine's block must be the board's
        eng, _ = engine(TeledyneAcquisition(teledyne_config(records_per_block=256)), 1)
        eng.prepare(); eng.start()
        try:
            eng.wait()
        except vg.VortexError as e:
            assert "block is not exactly equal to the configured size: 128 != 256" in str(e), e
        else:
            raise AssertionError("a block of another size ran")
        print("ok")
    """, VGV_ADQ_BOARDS="1")


def test_without_fwoct_firmware(virtual):
    run(virtual, """
        assert not teledyne.Teledyne(0).info.fwoct.detected
        c = teledyne_config(enable_fwoct=True)
        for check in (c.validate, lambda: TeledyneAcquisition(c)):
            try:
                check()
            except (ValueError, RuntimeError) as e:
                assert "FWOCT is requested but not detected" in str(e), e
            else:
                raise AssertionError("FWOCT without the firmware")
        acq = TeledyneAcquisition(teledyne_config(samples_per_record=S))   # any record length without FWOCT
        np.testing.assert_allclose(volume(acq), volume(SIM), rtol=0, atol=1e-3)
        print("ok")
    """, VGV_ADQ_FWOCT="0")


def test_fwoct_fft_matches_vortexgos_processing_of_the_same_spectra(virtual):
    """The FWOCT firmware windows (the spectral filter, 2.14 fixed point) and
    FFTs each record; its magnitude (|FFT| / N, rounded to counts) equals
    CPUProcessor's of SimulatedAcquisition's same spectra within the board's
    rounding (half a count, plus the processor's float32 decibels: 1e-5 of
    the value) where the A-scan is above 100 counts."""
    o = run(virtual, """
        w = hann_window(S).astype(np.complex64) * np.exp(0.5j * np.linspace(-1, 1, S)).astype(np.complex64)
        w = (np.round(w.real * 16384) + 1j * np.round(w.imag * 16384)).astype(np.complex64) / 16384  # the board's table
        ac = teledyne_config(enable_fwoct=True, fft_mode=teledyne.FFTMode.Magnitude, spectral_filter=w)
        board = volume(TeledyneAcquisition(ac), proc=CopyProcessor(CopyProcessorConfig(samples_per_record=S,
                                                                                      ascans_per_block=RPB)))
        # The board's forward FFT with window w is the conjugate of the processor's
        # unnormalised inverse FFT with filter conj(w); the processor's output is
        # 20 log10 |y / N|, the board's |y| / N.
        pc = vg.ProcessorConfig(samples_per_record=S, ascans_per_block=RPB, spectral_filter=np.conj(w))
        cpu = 10 ** (volume(SIM, proc=vg.CPUProcessor(pc)).astype(np.float64) / 20)
        n = min(cpu.shape[-1], S // 2)
        board, cpu = board[..., :n], cpu[..., :n]
        assert board.shape == cpu.shape == (B, A, n), (board.shape, cpu.shape)
        near = cpu > 100
        err = (np.abs(board - cpu) - 1e-5 * cpu)[near]   # the processor's float32 dB: 1e-5 of the value
        print("bins compared", near.sum(), "of", near.size, "max error (counts)", err.max())
        assert near.sum() > near.size // 20 and err.max() <= 0.5, err.max()
        print("ok")
    """)
    print(o.stdout)


# --- misuse ---------------------------------------------------------------------------------


def test_overflow_stops_the_engine_loudly_and_keeps_the_completed_volumes(virtual, tmp_path):
    """The host falls behind (a segment callback holds the formatting for 1 s):
    the transfer buffers stay locked, the on-board FIFO (1 MiB here: 0.1 s of
    A-lines at 20 kHz) overflows and the run ends with vortex's overflow error;
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
        acq = TeledyneAcquisition(teledyne_config())
        eng, _ = engine(acq, 4, [host, store], event_queue_size=2)
        eng.prepare(); eng.start()
        try:
            eng.wait()
        except vg.VortexError as e:
            assert "hardware buffer overflow at buffer" in str(e), e
        else:
            raise AssertionError("no overflow")
        s = eng.status()
        assert s.volumes >= 1 and store.volumes_written >= 1, (s, store.volumes_written)
        assert not acq.running, "stop_on_error stopped the board"
        st.close()
        assert s.volumes == store.volumes_written <= np.load(%r).shape[0], s
        eng.close()
        np.testing.assert_allclose(volume(acq), volume(SIM), rtol=0, atol=1e-3)   # the board is ready again
        print("ok")
    """ % (str(tmp_path / "v.npy"), str(tmp_path / "v.npy")), VGV_ADQ_FIFO_BYTES=str(1 << 20),
        VGV_ALINE_RATE_HZ="20000")


def test_timeout_stops_the_engine(virtual):
    """Triggers at 500 Hz: a 128-record block takes 0.26 s, more than acquire_timeout."""
    run(virtual, """
        eng, _ = engine(TeledyneAcquisition(teledyne_config(acquire_timeout=0.05)), 1)
        eng.prepare(); eng.start()
        try:
            eng.wait()
        except vg.VortexError as e:
            assert "acquisition timeout for buffer 0" in str(e), e
        else:
            raise AssertionError("no timeout")
        print("ok")
    """, VGV_ALINE_RATE_HZ="500")


def test_close_while_its_engine_runs(virtual):
    run(virtual, """
        acq = TeledyneAcquisition(teledyne_config())
        eng, (ep,) = engine(acq, 0)
        eng.prepare(); eng.start(); time.sleep(0.1)
        for call in (acq.close, acq.start, lambda: acq.next(np.empty((RPB, S, 1), np.uint16))):
            try:
                call()
            except vg.InUseError as e:
                assert "stop the engine first" in str(e), e
            else:
                raise AssertionError("used under a running engine")
        assert eng.status().error == "" and eng.status().active and acq.running
        eng.stop(); eng.close()
        np.testing.assert_allclose(volume(acq), volume(SIM), rtol=0, atol=1e-3)   # the refused calls changed nothing
        acq.close(); acq.close()
        assert acq.board_handle == 0 and not acq.running
        try:
            acq.board
        except vg.ClosedError as e:
            assert "closed" in str(e), e
        else:
            raise AssertionError("a closed source answered")
        print("ok")
    """)


def test_one_acquisition_in_two_engines(virtual):
    run(virtual, """
        acq = TeledyneAcquisition(teledyne_config())
        first, _ = engine(acq, 0)
        second, (ep,) = engine(acq, 1)
        first.prepare(); first.start()
        try:
            second.prepare()
        except vg.InUseError as e:
            assert "TeledyneAcquisition belongs to another engine" in str(e), e
        else:
            raise AssertionError("one board's acquisition ran in two engines")
        time.sleep(0.1)
        first.stop(); first.close()
        second.prepare(); second.start(); second.wait()   # free once the first engine is closed
        with ep.tensor as v:
            np.testing.assert_allclose(np.array(v), volume(SIM), rtol=0, atol=1e-3)
        second.close(); acq.close()
        print("ok")
    """)
