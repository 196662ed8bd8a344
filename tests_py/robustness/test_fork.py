"""fork: the Go runtime (and the CUDA driver) do not survive ``fork()``.

A child of a process that started vortexgo's Go runtime must behave normally
as long as it does not use vortexgo (a garbage collection, NumPy, a
multiprocessing pool with the fork start method), and get a ForkError at
once (naming spawn and forkserver) when it does: never a hang. A process that
only imported vortexgo has no Go runtime yet, so its children may use
vortexgo. The spawn and forkserver start methods work, with vortexgo
imported at the top of the user's script (the forkserver imports that script
before forking its workers). The parent is unharmed in every case.
"""

from __future__ import annotations

import textwrap

import pytest

from harness import RIG, Case, check, register, variants

F = "fork"

CASES: list[Case] = []

# fork_child(body) forks; the child runs body (with `out(...)` to report) and
# exits with os._exit(0), or 3 on an exception; the parent returns what the
# child reported, or "hang" if it did not end within `within` seconds.
FORK = """
import json, signal, warnings
warnings.simplefilter("ignore", DeprecationWarning)  # Python's note on forking a threaded process
def fork_child(body, within=8.0):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        said = []
        try:
            body(said.append)
        except BaseException as e:
            said.append(f"raised {type(e).__name__}: {e}")
        os.write(w, json.dumps(said).encode())
        os._exit(0)
    os.close(w)
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            data = os.read(r, 1 << 16)
            os.close(r)
            return json.loads(data) if data else [f"child died: status {status}"]
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return ["hang"]
def forked_error(said):
    # The child's report must be one ForkError naming both start methods.
    if len(said) != 1 or not said[0].startswith("raised ForkError") or "spawn" not in said[0] \\
            or "forkserver" not in said[0]:
        return f"expected a ForkError naming spawn and forkserver, got {said}"
    return None
"""


def case(id: str, body: str, devices=("cpu", "cuda:0"), timeout=20, **kw) -> None:
    CASES.extend(variants(f"{F}/{id}", FORK + textwrap.dedent(body), devices=devices, prints="ok",
                          timeout=timeout, **kw))


case("child_collects_and_computes", """
    a = vg.zeros(4, device=DEV)              # the Go runtime is running
    def body(out):
        gc.collect(); gc.collect()           # gopy's gc hook entered Go here: a hang
        out(int(np.arange(10).sum()))
    said = fork_child(body)
    print("ok" if said == [45] and a.numpy().sum() == 0 else said)""",
     issue="importing vortexgo makes every fork() child hang at its first garbage collection")

case("child_drops_inherited_objects", """
    arrs = [vg.zeros(64, device=DEV) for _ in range(20)]
    s = vg.Stream(vg.get_device(DEV))
    def body(out):
        global arrs, s
        del arrs, s                          # finalizers: release nothing, enter no Go
        gc.collect()
        out("done")
    said = fork_child(body)
    print("ok" if said == ["done"] else said)""")

case("child_makes_an_array", """
    vg.zeros(1, device=DEV)
    said = fork_child(lambda out: vg.zeros(3, device=DEV))
    print(forked_error(said) or "ok")""")

case("child_uses_inherited_array", """
    a = vg.from_numpy(np.arange(5, dtype=np.float32), device=DEV)
    said = fork_child(lambda out: out(a.numpy().tolist()))
    print(forked_error(said) or ("ok" if a.numpy().tolist() == [0, 1, 2, 3, 4] else "parent's array changed"))""")

case("child_synchronizes_inherited_stream", """
    s = vg.Stream(vg.get_device(DEV))
    ev = vg.Event(vg.get_device(DEV))
    ev.record(s)
    said = [fork_child(lambda out: s.synchronize()), fork_child(lambda out: out(ev.is_complete)),
            fork_child(lambda out: ev.record(s))]
    bad = [forked_error(x) for x in said if forked_error(x)]
    s.synchronize()
    print(bad or "ok")""")

case("child_prepares_acquisition", """
    vg.zeros(1)
    acq = vg.SimulatedAcquisition(samples_per_record=64, ascans_per_bscan=16, bscans_per_volume=4)
    said = fork_child(lambda out: acq.prepare())
    print(forked_error(said) or "ok")""", devices=("cpu",),
     issue="a child that uses vortexgo hangs forever in SimulatedAcquisition.prepare()")

case("child_of_running_engine", RIG + textwrap.dedent("""
    ep = vg.StackHostTensorEndpointInt8()
    eng, acq, proc = started([ep], volumes=0, device=DEV)
    time.sleep(0.2)
    said = [fork_child(lambda out: out(len(gc.get_objects()) > 0)),   # inherits the engine, never touches it
            fork_child(lambda out: eng.status()), fork_child(lambda out: eng.stop())]
    v0 = eng.status().volumes
    time.sleep(0.5)
    st = eng.status()
    problems = []
    if said[0] != [True]:
        problems.append(f"plain child: {said[0]}")
    problems += [e for e in (forked_error(said[1]), forked_error(said[2])) if e]
    if st.error or not st.running or st.volumes <= v0:
        problems.append(f"the parent's engine was harmed: {st}")
    eng.stop(); eng.close()
    print(problems or "ok")"""), timeout=25)

case("child_of_import_only_parent", """
    # vortexgo imported, never used: no Go runtime yet, so the child loads its own.
    from vortexgo import _core
    assert not _core.loaded()
    def body(out):
        out(vg.from_numpy(np.arange(4, dtype=np.float32)).numpy().tolist())
    said = fork_child(body, within=15)
    print("ok" if said == [[0.0, 1.0, 2.0, 3.0]] else said)""", devices=("cpu",))

case("child_exits_through_atexit", """
    # The child's finalizers and exit hooks: silent, no Go entered, the parent's file untouched.
    import subprocess
    vg.zeros(1)
    st = vg.SimpleStackInt8(); cfg = vg.SimpleStackConfig(); cfg.path = os.path.join(TMP, "a.npy")
    cfg.shape = (2, 3, 4); st.open(cfg)
    err = os.path.join(TMP, "child.err")
    pid = os.fork()
    if pid == 0:
        import atexit
        fd = os.open(err, os.O_WRONLY | os.O_CREAT); os.dup2(fd, 2)
        del st; gc.collect()                 # the stack's finalizer
        atexit._run_exitfuncs()              # what sys.exit runs (weakref.finalize's exit hook among them)
        os._exit(0)                          # not sys.exit: this harness's watchdog does not survive fork
    _, status = os.waitpid(pid, 0)
    st.write_volume(np.ones((2, 3, 4), np.int8)); st.close()
    text = open(err).read()
    back = np.load(cfg.path)
    print("ok" if status == 0 and not text and back.size == 24 and (back == 1).all() else (status, text[-500:], back.shape))""",
     devices=("cpu",))

# multiprocessing: the user's own scripts, run as scripts (spawn and
# forkserver import the main module in their workers and in the server).
SCRIPT = '''
import math, multiprocessing as mp, sys
import numpy as np
import vortexgo as vg

def plain(x):
    return math.sqrt(x)

def work(n):
    a = vg.from_numpy(np.arange(n, dtype=np.float32))
    return float(vg.scale_offset(a, 2.0, 1.0).numpy().sum())

if __name__ == "__main__":
    method, fn = sys.argv[1], sys.argv[2]
    vg.zeros(3)                          # the parent uses vortexgo first
    with mp.get_context(method).Pool(2) as pool:
        try:
            print(pool.map(globals()[fn], [4, 9]))
        except vg.ForkError as e:
            print("ForkError", "spawn" in str(e) and "forkserver" in str(e))
'''

MP = """
import subprocess
path = os.path.join(TMP, "user_script.py")
open(path, "w").write(SCRIPT)
def run(method, fn):
    p = subprocess.run([sys.executable, "-W", "ignore", path, method, fn], capture_output=True, text=True, timeout=60)
    return p.stdout.strip() or p.stderr.strip()[-600:]
"""


def mp_case(id: str, body: str, **kw) -> None:
    CASES.append(Case(f"{F}/{id}", f"SCRIPT = {SCRIPT!r}\n" + MP + textwrap.dedent(body), prints="ok",
                      timeout=70, **kw))


mp_case("pool_fork_plain", """
    out = run("fork", "plain")
    print("ok" if out == "[2.0, 3.0]" else out)""", issue="multiprocessing with fork hangs once vortexgo is imported")
mp_case("pool_fork_using_vortexgo", """
    out = run("fork", "work")
    print("ok" if out == "ForkError True" else out)""")
mp_case("pool_spawn_using_vortexgo", """
    out = run("spawn", "work")
    print("ok" if out == "[16.0, 81.0]" else out)""")
mp_case("pool_forkserver_using_vortexgo", """
    out = run("forkserver", "work")
    print("ok" if out == "[16.0, 81.0]" else out)""")


@pytest.mark.parametrize("case", register(CASES))
def test_fork(case: Case) -> None:
    check(case)
