"""Special files (issue 24): every storage opening a FIFO without a reader,
FileAcquisition on a FIFO without a writer, sockets, directories and
devices. Before, a FIFO blocked open(2) inside a Go call forever and
Ctrl-C could not end it. Now non-regular files are refused at once with an
error naming the path and what it is; /dev/null is taken as a sink (a
character device never waits). Each FIFO case also runs the call in a
child process and sends it SIGINT after a second: the child must be gone
(refused, or interrupted) within a few seconds."""

from __future__ import annotations

import textwrap

import pytest

from harness import Case, check, register

F = "special"

CASES: list[Case] = []


def c(id: str, code: str, **kw) -> None:
    CASES.append(Case(f"{F}/{id}", textwrap.dedent(code), **kw))


OPENERS = {
    "SimpleStack": "st = vg.SimpleStackInt8(); st.open(vg.SimpleStackConfig(P, (2, 2, 2)))",
    "SimpleStream": "st = vg.storage.SimpleStreamUInt16(); st.open(vg.storage.SimpleStreamConfig(P))",
    "StreamDump": "st = vg.storage.StreamDump(); st.open(vg.storage.StreamDumpConfig(P))",
    "MarkerLog": "st = vg.storage.MarkerLog(); st.open(vg.storage.MarkerLogConfig(P))",
    "BroctStorage": "st = vg.storage.BroctStorage(); st.open(vg.storage.BroctStorageConfig(P, (2, 2, 2)))",
    "HDF5Stack": "st = vg.storage.HDF5StackInt8(); st.open(vg.storage.HDF5StackConfig(P, (2, 2, 2)))",
    "FileAcquisition": ("st = vg.FileAcquisition(vg.FileAcquisitionConfig(path=P, samples_per_record=8)); "
                        "st.prepare(); st.start()"),
}

# In a child, with SIGINT after a second: refused at once or interrupted,
# never stuck (the harness's own timeout catches a stuck parent).
SIGINT = r"""
import signal, subprocess
P = os.path.join(TMP, "fifo"); os.mkfifo(P)
child = "import os, numpy as np, vortexgo as vg\nP = os.environ['P']\n" + {opener!r} + "\nprint('opened', flush=True)"
p = subprocess.Popen([sys.executable, "-c", child], env=dict(os.environ, P=P), stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
time.sleep(1.0)
if p.poll() is None:
    p.send_signal(signal.SIGINT)
try:
    out, err = p.communicate(timeout=4)
    gone = True
except subprocess.TimeoutExpired:
    p.kill(); out, err = p.communicate()
    gone = False
if not gone:
    print("still blocked 4 s after SIGINT")
elif "opened" in out:
    print("opened a FIFO without a reader/writer")
elif "FIFO" in err or "KeyboardInterrupt" in err:
    print("ok")
else:
    print("ended without a clear error: " + err.strip().splitlines()[-1][:200])
"""

for name, opener in OPENERS.items():
    c(f"fifo[{name}]", f"P = os.path.join(TMP, 'fifo'); os.mkfifo(P)\n{opener}\n",
      raises="ValueError|OSError", words=("FIFO", "path"), timeout=15,
      issue="a FIFO without a reader (writer) blocks forever and ignores Ctrl-C")
    c(f"fifo_sigint[{name}]", SIGINT.format(opener=opener), prints="ok", timeout=20)
    if name != "FileAcquisition":
        c(f"socket[{name}]", f"""
import socket
P = os.path.join(TMP, "sock")
s = socket.socket(socket.AF_UNIX); s.bind(P)
{opener}
""", raises="ValueError|OSError", words=("socket", "path"), timeout=15)
    c(f"directory[{name}]", f"P = TMP\n{opener}\n", raises="ValueError|OSError", words=("path",), timeout=15)

# /dev/null is a sink users expect to work (benchmarks, dry runs).
c("dev_null_sinks", """
P = "/dev/null"
st = vg.SimpleStackInt8(); st.open(vg.SimpleStackConfig(P, (2, 2, 2)))
st.write_volume(np.ones((2, 2, 2), np.int8)); st.advance_volume(); st.close()
s = vg.storage.SimpleStreamUInt16(); s.open(vg.storage.SimpleStreamConfig(P)); s.write(np.ones(4, np.uint16)); s.close()
print("ok" if os.path.exists(P) and not os.path.isfile(P) else "/dev/null replaced")
""", prints="ok")

c("file_acquisition_device", """
a = vg.FileAcquisition(vg.FileAcquisitionConfig(path="/dev/zero", samples_per_record=8))
a.prepare()
""", raises="ValueError", words=("path", "device"))


@pytest.mark.parametrize("case", register(CASES))
def test_special_files(case: Case) -> None:
    check(case)
