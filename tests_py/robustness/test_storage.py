"""Storage: disk full (RLIMIT_FSIZE, /dev/full) directly and under a running
engine (the engine stops at once, fires its "error" event, and wait()
raises; the file keeps every volume it reports), closing a stack under a
running engine, shapes that overflow, fractional or string shapes, seeks far
beyond or before the file, and values that must survive the round trip."""

from __future__ import annotations

import textwrap

import pytest

from harness import RIG, Case, check, register

F = "storage"

CASES: list[Case] = []


def c(id: str, code: str, rig: bool = False, **kw) -> None:
    code = textwrap.dedent(code)
    CASES.append(Case(f"{F}/{id}", (RIG + code) if rig else code, **kw))


FSIZE = """
import resource, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)      # EFBIG instead of death by SIGXFSZ
LIMIT = 64 * 1024
resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))
"""

# The engine must notice the failed write: stop by itself, fire "error", raise from wait().
ENGINE_WRITE_ERROR = """
events = []
eng.event_callback = lambda ev, exc: events.append(ev)
eng.start()
try:  # vortex's wait_for raises the session's error once it has ended
    stopped = eng.wait_for(5)
    raised = False
except Exception as e:
    stopped = raised = True
st_err = eng.status().error
if not stopped:
    try:
        eng.stop()
    except Exception:
        pass
problems = [w for w, bad in (("still running 5 s after the write failed", not stopped),
                             ("wait() did not raise", not raised),
                             ("no error event", vg.engine.Engine.Event.Error not in events),
                             ("status().error empty", not st_err)) if bad]
print(problems or "ok")
"""

c("disk_full_during_engine_run", FSIZE + """
st = stack(os.path.join(TMP, "v.npy"))
ep = vg.AscanStackEndpoint(st)
eng, acq, proc = rig([ep], volumes=0)
""" + ENGINE_WRITE_ERROR + """
written = ep.volumes_written
try:  # the volume open at the failure got its first segments: padding it fails too
    st.close()
except OSError:
    pass
""", rig=True, prints="ok", timeout=15, issue="disk full during a continuous run: engine keeps running, data dropped")
c("disk_full_file_keeps_reported_volumes", FSIZE + """
path = os.path.join(TMP, "v.npy")
st = stack(path)
ep = vg.AscanStackEndpoint(st)
eng, acq, proc = rig([ep], volumes=0)
eng.start()
try:
    eng.wait_for(5)
except OSError:
    pass
try:
    eng.stop()
except Exception:
    pass
reported = st.volumes_written
try:
    st.close()
except OSError:
    pass
x = np.load(path, mmap_mode="r")
print("ok" if x.shape[0] == reported and reported * 4096 <= LIMIT else f"file has {x.shape[0]}, stack reports {reported}")
""", rig=True, prints="ok", timeout=15)
c("close_storage_while_running", """
st = stack(os.path.join(TMP, "v.npy"))
ep = vg.AscanStackEndpoint(st)
eng, acq, proc = rig([ep], volumes=0)
eng.start(); time.sleep(0.2)
try:
    st.close()
except vg.InUseError:
    eng.stop(); eng.close()
    print("ok")
else:
    # Closed under the engine: like a failed write, the engine must stop at
    # once with an error that wait() raises.
    stopped = eng.wait_for(5)
    if not stopped:
        try:
            eng.stop()
        except Exception:
            pass
        print(f"still running 5 s after its storage was closed ({eng.status().volumes} volumes formatted, "
              f"{st.volumes_written} stored)")
    else:
        try:
            eng.wait()
            print("stopped without an error")
        except Exception:
            print("ok")
""", rig=True, prints="ok", timeout=15, issue="closing the storage under a running engine: silent drop")
c("dev_full_direct", """
st = vg.SimpleStackInt8()
try:
    st.open(vg.SimpleStackConfig("/dev/full", (2, 2, 2)))
    st.write_volume(np.ones((2, 2, 2), np.int8))
    st.close()
    print("no error writing to /dev/full")
except OSError:
    print("ok")
""", prints="ok")
c("fsize_direct_write", FSIZE + """
st = vg.SimpleStackInt8()
st.open(vg.SimpleStackConfig(os.path.join(TMP, "v.npy"), (16, 16, 16)))
for i in range(32):
    st.write_volume(np.full((16, 16, 16), i, np.int8))
    st.advance_volume()  # vortex: write_volume writes into the current volume only
""", raises="OSError")
c("shape_overflow_2_32", """
st = vg.SimpleStackInt8(); st.open(vg.SimpleStackConfig(os.path.join(TMP, "v.npy"), (2**32, 2**32, 1)))
st.write_volume(np.zeros((1, 1, 1), np.int8))""", raises="ValueError|MemoryError", words=("shape",),
  issue="storage shape (2**32, 2**32, 1) overflows and writes a broken file")
c("shape_2_64", """
st = vg.SimpleStackInt8(); st.open(vg.SimpleStackConfig(os.path.join(TMP, "v.npy"), (2**64, 1, 1)))""",
  raises="ValueError|MemoryError", words=("shape",))
c("shape_fractional", """
st = vg.SimpleStackInt8(); st.open(vg.SimpleStackConfig(os.path.join(TMP, "v.npy"), (2, 1.5, 3)))
print(st.shape)""", raises="TypeError|ValueError", words=("shape",), issue="(2, 1.5, 3) silently truncated to (2, 1, 3)")
c("shape_strings", """
st = vg.SimpleStackInt8(); st.open(vg.SimpleStackConfig(os.path.join(TMP, "v.npy"), ("2", "2", "2")))
print(st.shape)""", raises="TypeError", words=("shape",))
c("shape_numpy_ints", """
st = vg.SimpleStackInt8(); st.open(vg.SimpleStackConfig(os.path.join(TMP, "v.npy"), np.array([2, 3, 4])))
st.write_volume(np.ones((2, 3, 4), np.int8)); st.close()
print(np.load(os.path.join(TMP, "v.npy")).shape)""", prints="(1, 2, 3, 4, 1)")  # vortex's 5-D file shape
c("seek_far_beyond", """
path = os.path.join(TMP, "v.npy")
st = vg.SimpleStackInt8(); st.open(vg.SimpleStackConfig(path, (2, 2, 2)))
st.write_volume(np.ones((2, 2, 2), np.int8))
try:
    st.seek(2**62)
    st.write_volume(np.full((2, 2, 2), 7, np.int8))
except (ValueError, OSError, MemoryError) as e:
    pass
st.close()
try:
    x = np.load(path, mmap_mode="r")
    v0 = int(np.asarray(x[0]).sum()) if x.shape[0] else None
    print("ok" if x.shape[1:] == (2, 2, 2, 1) and v0 == 8 else f"volume 0 is {np.asarray(x[0]).tolist()}")
except Exception as e:
    print(f"the file no longer loads: {type(e).__name__}: {e}")
""", prints="ok", issue="seek(2**62) then write_volume overwrites volume 0, header numpy cannot load")
c("seek_2_64", """
st = vg.SimpleStackInt8(); st.open(vg.SimpleStackConfig(os.path.join(TMP, "v.npy"), (2, 2, 2))); st.seek(2**64)""",
  raises="ValueError", words=("volume",))
c("seek_negative", """
st = vg.SimpleStackInt8(); st.open(vg.SimpleStackConfig(os.path.join(TMP, "v.npy"), (2, 2, 2))); st.seek(-1)""",
  raises="ValueError", words=("volume",))
c("seek_fractional", """
st = vg.SimpleStackInt8(); st.open(vg.SimpleStackConfig(os.path.join(TMP, "v.npy"), (2, 2, 2))); st.seek(1.5)""",
  raises="TypeError", words=("volume",))
c("seek_bscan_beyond", """
st = vg.SimpleStackInt8(); st.open(vg.SimpleStackConfig(os.path.join(TMP, "v.npy"), (2, 2, 2))); st.seek(0, 5)""",
  raises="ValueError", words=("bscan",))
c("partial_bscan_2_40", """
st = vg.SimpleStackInt8(); st.open(vg.SimpleStackConfig(os.path.join(TMP, "v.npy"), (2, 2, 2)))
st.write_partial_bscan(2**40, 0, np.ones((1, 2), np.int8))""", raises="ValueError", words=("bscan",))
c("partial_bscan_negative_ascan", """
st = vg.SimpleStackInt8(); st.open(vg.SimpleStackConfig(os.path.join(TMP, "v.npy"), (2, 2, 2)))
st.write_partial_bscan(0, -1, np.ones((1, 2), np.int8))""", raises="ValueError", words=("ascan",))
c("partial_bscan_too_many_ascans", """
st = vg.SimpleStackInt8(); st.open(vg.SimpleStackConfig(os.path.join(TMP, "v.npy"), (2, 2, 2)))
st.write_partial_bscan(0, 1, np.ones((5, 2), np.int8))""", raises="ValueError")
c("write_big_endian_uint16", """
path = os.path.join(TMP, "v.npy")
st = vg.SimpleStackUInt16(); st.open(vg.SimpleStackConfig(path, (1, 1, 3)))
try:
    st.write_volume(np.array([[[1, 2, 258]]], dtype=">u2"))
except ValueError as e:
    print("ok" if "order" in str(e) or "endian" in str(e) or "dtype" in str(e) else f"unclear {e!r}")
else:
    st.close(); v = np.load(path).ravel().tolist()
    print("ok" if v == [1, 2, 258] else f"wrong values {v}")""", prints="ok")
c("write_strided_volume", """
path = os.path.join(TMP, "v.npy")
st = vg.SimpleStackFloat32(); st.open(vg.SimpleStackConfig(path, (2, 3, 4)))
x = np.arange(2 * 3 * 8, dtype=np.float32).reshape(2, 3, 8)[:, :, ::2]
st.write_volume(x); st.close()
print("ok" if (np.load(path)[0, ..., 0] == x).all() else "wrong values")""", prints="ok")
c("write_wrong_dtype", """
st = vg.SimpleStackInt8(); st.open(vg.SimpleStackConfig(os.path.join(TMP, "v.npy"), (2, 2, 2)))
st.write_volume(np.ones((2, 2, 2), np.float32))""", raises="ValueError", words=("dtype",))
c("open_twice_other_shape", """
path = os.path.join(TMP, "v.npy")
st = vg.SimpleStackInt8(); st.open(vg.SimpleStackConfig(path, (2, 2, 2)))
st.write_volume(np.ones((2, 2, 2), np.int8))
try:
    st.open(vg.SimpleStackConfig(os.path.join(TMP, "w.npy"), (3, 3, 3)))
except (ValueError, vg.VortexError):
    pass
st.close()
x = np.load(path)
print("ok" if x.shape == (1, 2, 2, 2, 1) and x.sum() == 8 else f"first file is {x.shape}")""", prints="ok")


@pytest.mark.parametrize("case", register(CASES))
def test_storage(case: Case) -> None:
    check(case)
