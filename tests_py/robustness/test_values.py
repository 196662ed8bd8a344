"""Silent wrong values: byte orders, strides, dtype mismatches, overflow.
Big-endian inputs are refused (ValueError naming the byte order) or
converted correctly, never reinterpreted; non-contiguous NumPy inputs are
refused or copied correctly; a copy between different dtypes is refused
(not a reinterpretation of bits); ``full`` raises where NumPy raises."""

from __future__ import annotations

import textwrap

import pytest

from harness import RIG, Case, check, register, variants

F = "values"

CASES: list[Case] = []


def ok(id: str, code: str, devices=("cpu", "cuda:0"), **kw) -> None:
    """``code`` prints "ok" when the library behaved (refused cleanly, or gave the right values)."""
    CASES.extend(variants(f"{F}/{id}", code, devices=devices, prints="ok", **kw))


def err(id: str, code: str, raises: str, *words: str, devices=("cpu", "cuda:0"), **kw) -> None:
    CASES.extend(variants(f"{F}/{id}", code, devices=devices, raises=raises, words=words, **kw))


# Refused with a ValueError/TypeError that mentions the byte order, or `check()` passes.
REFUSE_OR = """
def refused(e):
    m = str(e).lower()
    return isinstance(e, (ValueError, TypeError)) and any(w in m for w in ("order", "endian", "byteorder", ">"))
"""

# --- byte orders ----------------------------------------------------------------------------
ok("from_numpy_big_endian_int32", REFUSE_OR + textwrap.dedent("""
    x = np.arange(5, dtype=">i4")
    try:
        a = vg.from_numpy(x, device=DEV)
    except Exception as e:
        print("ok" if refused(e) else f"unclear error {e!r}")
    else:
        # stored in native order, or a big-endian view that reads back right
        vals = a.numpy().tolist()
        y = vg.scale_offset(a, 2.0, 1.0) if a.dtype.isnative else None
        good = vals == [0, 1, 2, 3, 4] and (y is None or y.numpy().tolist() == [1, 3, 5, 7, 9])
        print("ok" if good else f"wrong values {vals} / {None if y is None else y.numpy().tolist()}")"""),
   issue="big-endian arrays accepted by from_numpy and computed as native")
ok("from_numpy_big_endian_float32_compute", REFUSE_OR + textwrap.dedent("""
    x = np.array([1.5, 2.5, -3.0], dtype=">f4")
    try:
        a = vg.from_numpy(x, device=DEV)
        y = vg.scale_offset(a, 2.0, 1.0).numpy().astype(np.float64).tolist()
    except Exception as e:
        print("ok" if refused(e) else f"unclear error {e!r}")
    else:
        print("ok" if y == [4.0, 6.0, -5.0] else f"wrong values {y}")"""))
ok("copy_from_big_endian_numpy", REFUSE_OR + textwrap.dedent("""
    a = vg.zeros(3, "float32", DEV)
    try:
        vg.copy(a, np.array([1.0, 2.0, 3.0], dtype=">f4"))
    except Exception as e:
        print("ok" if refused(e) else f"unclear error {e!r}")
    else:
        v = a.numpy().tolist()
        print("ok" if v == [1.0, 2.0, 3.0] else f"wrong values {v}")"""))
ok("copy_into_big_endian_numpy", REFUSE_OR + textwrap.dedent("""
    a = vg.from_numpy(np.array([1, 2, 3], np.int32), device=DEV)
    out = np.zeros(3, dtype=">i4")
    try:
        vg.copy(out, a)
    except Exception as e:
        print("ok" if refused(e) else f"unclear error {e!r}")
    else:
        print("ok" if out.tolist() == [1, 2, 3] else f"wrong values {out.tolist()}")"""))
ok("full_big_endian_dtype", REFUSE_OR + textwrap.dedent("""
    try:
        a = vg.full(3, 1.5, ">f4", DEV)
    except Exception as e:
        print("ok" if refused(e) else f"unclear error {e!r}")
    else:
        v = a.numpy().tolist()
        print("ok" if v == [1.5, 1.5, 1.5] else f"wrong values {v}")"""))
ok("cast_big_endian_input", REFUSE_OR + textwrap.dedent("""
    try:
        a = vg.from_numpy(np.array([1, 256], dtype=">u2"), device=DEV)
        v = vg.cast(a, "float32").numpy().tolist()
    except Exception as e:
        print("ok" if refused(e) else f"unclear error {e!r}")
    else:
        print("ok" if v == [1.0, 256.0] else f"wrong values {v}")"""))

# --- strides -------------------------------------------------------------------------------------
ok("from_numpy_strided", """
    x = np.arange(20, dtype=np.int32)[::3]
    v = vg.from_numpy(x, device=DEV).numpy().tolist()
    print("ok" if v == x.tolist() else f"wrong values {v}")""")
ok("from_numpy_fortran_order", """
    x = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    v = vg.from_numpy(x, device=DEV).numpy()
    print("ok" if v.shape == (3, 4) and (v == x).all() else f"wrong values {v.tolist()}")""")
ok("from_numpy_negative_strides", """
    x = np.arange(6, dtype=np.int16)[::-1]
    v = vg.from_numpy(x, device=DEV).numpy().tolist()
    print("ok" if v == x.tolist() else f"wrong values {v}")""")
ok("copy_from_strided_numpy", """
    a = vg.zeros(4, "int32", DEV)
    x = np.arange(8, dtype=np.int32)[::2]
    try:
        vg.copy(a, x)
    except ValueError as e:
        print("ok" if "contiguous" in str(e) else f"unclear error {e!r}")
    else:
        v = a.numpy().tolist()
        print("ok" if v == [0, 2, 4, 6] else f"wrong values {v}")""")
ok("copy_into_strided_numpy", """
    a = vg.from_numpy(np.array([1, 2, 3, 4], np.int32), device=DEV)
    buf = np.zeros(8, np.int32); out = buf[::2]
    try:
        vg.copy(out, a)
    except ValueError as e:
        print("ok" if "contiguous" in str(e) else f"unclear error {e!r}")
    else:
        print("ok" if buf.tolist() == [1, 0, 2, 0, 3, 0, 4, 0] else f"wrong values {buf.tolist()}")""")
ok("copy_into_readonly_numpy", """
    a = vg.from_numpy(np.array([1, 2, 3, 4], np.int32), device=DEV)
    out = np.zeros(4, np.int32); out.flags.writeable = False
    try:
        vg.copy(out, a)
    except ValueError as e:
        print("ok" if "read-only" in str(e) or "readonly" in str(e) or "writeable" in str(e) else f"unclear {e!r}")
    else:
        print(f"wrote into a read-only array: {out.tolist()}")""")

# --- empty and 0-d arrays (found by the properties) -------------------------------------------
ok("zero_size_and_0d_round_trip", """
    bad = []
    for x in (np.zeros((0, 3), np.float32), np.zeros((2, 0), np.int16), np.zeros((0,), np.complex64),
              np.array(5, np.int32), np.array(1.5, np.float64)):
        y = vg.from_numpy(x, device=DEV).numpy()
        if y.shape != x.shape or y.dtype != x.dtype or not np.array_equal(y, x):
            bad.append(f"{x.dtype}{x.shape} came back as {y.dtype}{y.shape}")
    for shape in ((), (0, 4)):
        y = vg.full(shape, 3, "int32", DEV).numpy()
        if y.shape != shape or y.dtype != np.int32:
            bad.append(f"full({shape}) came back as {y.dtype}{y.shape}")
    print(bad or "ok")""")

# --- dtype mismatches -------------------------------------------------------------------------------
ok("copy_dtype_mismatch", """
    a = vg.zeros(4, "float32", DEV)
    expect("float32 array <- int32 numpy", lambda: vg.copy(a, np.arange(4, dtype=np.int32)), "TypeError|ValueError", "dtype")
    expect("int32 numpy <- float32 array", lambda: vg.copy(np.zeros(4, np.int32), a), "TypeError|ValueError", "dtype")
    expect("uint8 array <- float32 numpy (same bytes)", lambda: vg.copy(vg.zeros(16, "uint8", DEV), np.ones(4, np.float32)),
           "TypeError|ValueError", "dtype")
    expect("float32 array <- int32 array", lambda: vg.copy(a, vg.zeros(4, "int32", DEV)), "TypeError", "dtype")
    report()""", issue="copy(float32 array, int32 numpy array) reinterprets bits")
ok("unsupported_dtypes", """
    for x in (np.array([True, False]), np.zeros(3, np.float16), np.zeros(3, np.int64), np.zeros(3, np.complex128),
              np.array([1, "a"], dtype=object), np.array(["ab"])):
        expect(f"from_numpy {x.dtype}", lambda: vg.from_numpy(x, device=DEV), "TypeError", "dtype")
    expect("empty bool", lambda: vg.empty(3, bool, DEV), "TypeError", "dtype")
    expect("DeviceTensor int64", lambda: vg.DeviceTensor((3,), "int64", DEV), "TypeError", "dtype")
    report()""")

# --- overflow -----------------------------------------------------------------------------------------
ok("full_out_of_range", """
    for v, d in ((1000, "int8"), (-1, "uint8"), (2**31, "int32"), (-2**31 - 1, "int32"), (2**32, "uint32"),
                 (65536, "uint16"), (2**64, "uint32")):
        expect(f"full({v}, {d})", lambda: vg.full(2, v, d, DEV).numpy(), "OverflowError|ValueError", str(v))
    report()""", issue="full(2, 1000, 'int8') saturates to 127 (NumPy raises)")
ok("full_in_range_extremes", """
    v = [vg.full(2, x, d, DEV).numpy().tolist() for x, d in ((127, "int8"), (-128, "int8"), (255, "uint8"),
                                                            (65535, "uint16"), (2**31 - 1, "int32"), (2**32 - 1, "uint32"))]
    want = [[127] * 2, [-128] * 2, [255] * 2, [65535] * 2, [2**31 - 1] * 2, [2**32 - 1] * 2]
    print("ok" if v == want else f"wrong values {v}")""")
ok("full_float64_exact", """
    v = vg.full(2, 0.1, "float64", DEV).numpy().tolist()
    print("ok" if v == [0.1, 0.1] else f"wrong values {v}")""")


# --- issue 24: messages name the field or argument and what is expected ------------------------
ok("config_messages_name_the_field", """
    from vortexgo.format import FormatPlanner, FormatPlannerConfig
    def planner(**kw):
        c = FormatPlannerConfig(2, 3)
        for k, v in kw.items():
            setattr(c, k, v)
        return FormatPlanner(c)
    expect("mask=inf", lambda: planner(mask=math.inf), "ValueError|TypeError", "mask", "expected")
    expect("mask='x'", lambda: planner(mask="x"), "TypeError", "mask", "expected")
    expect("shape=5", lambda: setattr(FormatPlannerConfig(), "shape", 5), "TypeError", "shape", "expected")
    def proc(**kw):
        return vg.CPUProcessor(samples_per_record=64, ascans_per_block=8, **kw)
    expect("resampling_samples=0.5", lambda: proc(resampling_samples=0.5), "ValueError|TypeError",
           "resampling_samples", "expected")
    expect("resampling_samples=0.5 (property)",
           lambda: vg.ProcessorConfig(resampling_samples=0.5).samples_per_ascan, "ValueError|TypeError", "resampling_samples")
    c = vg.RasterScanConfig()
    expect("bscan_extent=Range(-1e308, 1e308)", lambda: setattr(c, "bscan_extent", vg.Range(-1e308, 1e308)),
           "ValueError", "bscan_extent", "expected")
    expect("volume_extent=(nan, 1)", lambda: setattr(c, "volume_extent", (math.nan, 1)), "ValueError", "volume_extent")
    from vortexgo.format import RadialFormatExecutor, RadialFormatExecutorConfig
    r = RadialFormatExecutorConfig(); r.radial_shape = (2, 3); r.segment_rt_extent = ((0, 1), (0, 1))
    r.volume_xy_extent = (vg.Range(-1e308, 1e308), (0, 1))
    expect("x_extent=Range(-1e308, 1e308)", lambda: RadialFormatExecutor(r), "ValueError", "x_extent", "expected")
    report()""", devices=("cpu",), issue="FormatPlannerConfig.mask = inf: a bare int() error; "
    "resampling_samples=0.5: 'len() of unsized object'; Range(-1e308, 1e308): 'position NaN'")
err("simulated_samples_per_record_2_40", """
    vg.SimulatedAcquisition(samples_per_record=2**40)""", "ValueError|MemoryError", "samples_per_record",
    devices=("cpu",))
CASES[-1].words = ("samples_per_record",)
ok("simulated_message_uses_python_names", """
    try:
        vg.SimulatedAcquisition(samples_per_record=2**40)
    except (ValueError, MemoryError) as e:
        print("ok" if "samples_per_record" in str(e) and "SamplesPerRecord" not in str(e) else f"names Go's field: {e}")
    else:
        print("no error")""", devices=("cpu",))
ok("dlpack_max_version", """
    a = vg.zeros(3, "float32", DEV)
    for mv in ("1.0", (1,), (1, "0"), 1, (1.0, 0)):
        expect(f"max_version={mv!r}", lambda: a.__dlpack__(max_version=mv), "TypeError", "max_version", "(major, minor)")
    a.__dlpack__(max_version=(1, 0)); a.__dlpack__(max_version=None)
    report()""", devices=("cpu",))
ok("stream_from_external_names_handle", """
    class Bad:
        ptr = "abc"
    for obj in (object(), "abc", 1.5, Bad()):
        expect(f"from_external({type(obj).__name__})", lambda: vg.Stream.from_external(obj), "TypeError|ValueError", "handle")
    report()""", devices=("cpu",))
ok("closed_endpoint_stream_repr", RIG + textwrap.dedent("""
    from vortexgo.format import StackFormatExecutor, StackFormatExecutorConfig
    ep = vg.StackHostTensorEndpointInt8(StackFormatExecutor(StackFormatExecutorConfig()), (B, A, S))
    eng, acq, proc = rig([ep], volumes=1)
    s = ep.stream
    eng.close(); ep.close()
    try:
        r = repr(s)
    except Exception as e:
        print(f"repr raised {type(e).__name__}: {e}")
    else:
        print("ok" if "closed" in r else f"repr {r!r} does not say closed")"""), devices=("cpu",))
ok("readback_get_after_pool_close", """
    r = vg.Readback(64, DEV); h = r.readback(vg.zeros(4, "float32", DEV)); h.wait(); r.close()
    expect("get after pool close", h.get, "ClosedError")
    report()""")


@pytest.mark.parametrize("case", register(CASES))
def test_values(case: Case) -> None:
    check(case)
