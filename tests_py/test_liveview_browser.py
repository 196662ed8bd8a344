"""The LiveView in a real browser: JupyterLab 4 in Debian's headless Chromium, driven by Selenium.

nbclient (tests_py/test_notebook.py) runs the notebook but renders nothing; this opens a notebook in
JupyterLab as a user does, runs it, and reads what the page shows: before the first volume the
view's image is a real (dark) image, not a broken-image icon; while the engine runs the image
changes (a new frame, the B-scan sweeping); at the end the status line names the last volume and
the kernel printed how many frames were shown. A screenshot is kept under
build/liveview-screenshots/ to look at. Skips, saying what is missing, without Chromium, its
driver (Debian's chromium-driver), Selenium or JupyterLab (.ci/run and `make test` install them).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "build" / "liveview-screenshots"

pytestmark = pytest.mark.timeout(300)

_missing = [what for what, ok in (
    ("chromium (apt-get install chromium)", shutil.which("chromium")),
    ("chromedriver (apt-get install chromium-driver)", shutil.which("chromedriver")),
    ("selenium (pip install selenium)", importlib.util.find_spec("selenium")),
    ("jupyterlab (pip install jupyterlab)", importlib.util.find_spec("jupyterlab")),
    ("ipywidgets", importlib.util.find_spec("ipywidgets")),
    ("Pillow", importlib.util.find_spec("PIL")),
) if not ok]
if _missing:
    pytest.skip("the browser test needs " + ", ".join(_missing), allow_module_level=True)

# A CPU acquisition long enough to see several frames (the demo's pipeline, smaller).
CELLS = [
    "import vortexgo as vg\n"
    "from vortexgo import cli\n"
    "from vortexgo.display import LiveView\n"
    "rig = cli._Rig(vg.get_device('cpu'), 256, 64, 32, 40, None)\n"
    "view = LiveView(rig.endpoint, bscan_index='sweep', size=128)\n"
    "view",
    "import time\n"
    "time.sleep(3)  # the page shows the placeholder first\n"
    "rig.prepare()\n"
    "rig.acquire()\n"
    "view.wait_frame(30)\n"
    "print('frames shown', view.frames_shown, 'last volume', view.frame.volume_index)",
    "view.close()\n"
    "rig.close()\n"
    "print('closed')",
]


def _notebook(path: Path) -> None:
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": src} for src in CELLS],
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
          "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(what: str, fn, timeout: float, every: float = 0.25):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


# The view's output: its image and status line, read from the page (JupyterLab's DOM).
_READ_VIEW = """
const imgs = [...document.querySelectorAll('.jp-OutputArea-output img')];
const labels = [...document.querySelectorAll('.jp-OutputArea-output .widget-label')];
const text = [...document.querySelectorAll('.jp-OutputArea-output pre')].map(e => e.textContent).join('\\n');
return {n: imgs.length,
        src: imgs.length ? imgs[0].src.slice(-64) + ':' + imgs[0].src.length : '',
        // a broken image is one that finished loading with no pixels (a new frame still loading is not)
        decoded: imgs.every(i => !i.complete || i.naturalWidth > 0),
        loaded: imgs.length > 0 && imgs.every(i => i.complete && i.naturalWidth > 0),
        width: imgs.length ? imgs[0].naturalWidth : 0,
        label: labels.length ? labels[0].textContent : '',
        text: text};
"""


@pytest.fixture()
def lab(tmp_path):
    """A JupyterLab server on a free loopback port, the package under test on its kernels' path."""
    _notebook(tmp_path / "live.ipynb")
    port, token = _free_port(), "vortexgo-test"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "python"), os.environ.get("PYTHONPATH")])),
               JUPYTER_CONFIG_DIR=str(tmp_path / "jcfg"), JUPYTER_RUNTIME_DIR=str(tmp_path / "jrun"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "jset"), JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "jws"))
    log = open(tmp_path / "lab.log", "w")
    p = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
                          f"--ServerApp.token={token}", f"--ServerApp.root_dir={tmp_path}",
                          "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=", "--ServerApp.open_browser=False",
                          "--allow-root"],  # CI runs as root
                         env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        def up():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    return True
            except OSError:
                return p.poll() is not None  # it exited: stop waiting, the assertion below says why
        _wait("JupyterLab to listen", up, 60)
        assert p.poll() is None, (tmp_path / "lab.log").read_text()[-3000:]
        yield f"http://127.0.0.1:{port}/lab/tree/live.ipynb?token={token}", tmp_path
    finally:
        p.terminate()
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
        log.close()


def test_liveview_renders_and_updates_in_jupyterlab(lab):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    url, where = lab
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1400"):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        driver.set_script_timeout(60)
        driver.get(url)
        _wait("JupyterLab's app and the notebook", lambda: driver.execute_script(
            "return !!(window.jupyterapp && document.querySelector('.jp-Notebook .jp-Cell'))"), 120)
        _wait("the kernel", lambda: driver.execute_script(
            "const w = window.jupyterapp.shell.currentWidget;"
            "return !!(w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel"
            " && w.sessionContext.session.kernel.status === 'idle');"), 120)
        driver.execute_script("window.jupyterapp.commands.execute('notebook:run-all-cells');")
        # Before the first volume: the view's image is there and decodes (no broken-image icon).
        first = _wait("the view's first image", lambda: (lambda v: v if v["n"] and v["width"] else None)(
            driver.execute_script(_READ_VIEW)), 90)
        assert first["decoded"] and first["label"] == "waiting for the first volume", first
        _wait("the placeholder to load", lambda: driver.execute_script(_READ_VIEW)["loaded"], 30)
        driver.save_screenshot(str(SHOTS / "before.png"))
        seen = {first["src"]}
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            v = driver.execute_script(_READ_VIEW)
            assert v["decoded"], v  # every image the page shows decodes, at every moment
            seen.add(v["src"])
            if "closed" in v["text"]:
                break
            time.sleep(0.1)
        v = _wait("the last frame to load", lambda: (lambda r: r if r["loaded"] else None)(driver.execute_script(_READ_VIEW)), 30)
        driver.save_screenshot(str(SHOTS / "after.png"))
        assert "closed" in v["text"], f"the notebook did not finish: {v}\n" + (where / "lab.log").read_text()[-2000:]
        assert len(seen) >= 3, f"the view's image changed {len(seen) - 1} times while the engine ran: {v}"
        shown = int(v["text"].split("frames shown ")[1].split()[0])
        assert shown >= 2 and v["label"].startswith("volume ") and f"{shown} shown" in v["label"], v
    finally:
        driver.quit()
