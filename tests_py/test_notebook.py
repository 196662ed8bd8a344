"""examples/acquire.ipynb runs headless, unchanged, on this machine's device
(CPU here, the GPU where there is one), and needs nothing beyond vortexgo[demo]."""

from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import vortexgo as vg

from conftest import HAS_CUPY

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
PIL = pytest.importorskip("PIL")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "acquire.ipynb"
pytestmark = pytest.mark.timeout(300)
if not NOTEBOOK.is_file():
    pytest.skip("not a source tree (the tests run against an installed wheel)", allow_module_level=True)


def _code(nb) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "code"]


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook executed once by a fresh kernel, its data folder in a temporary directory."""
    if vg.is_cuda_available() and not HAS_CUPY:
        pytest.skip("a GPU without CuPy: the live view reduces device volumes with CuPy (vortexgo[cuda])")
    data = tmp_path_factory.mktemp("data")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    env = dict(os.environ, XDG_DATA_HOME=str(data),
               PYTHONPATH=str(Path(vg.__file__).resolve().parents[1]))  # the package under test
    old = dict(os.environ)
    os.environ.update(env)  # the kernel inherits this process's environment
    try:
        client = nbclient.NotebookClient(nb, timeout=240, kernel_name="python3",
                                         resources={"metadata": {"path": str(tmp_path_factory.mktemp("cwd"))}})
        client.execute()  # raises CellExecutionError naming the cell on any error
    finally:
        os.environ.clear()
        os.environ.update(old)
    return nb, data / "vortexgo" / "notebook"


def test_every_cell_ran_without_error(executed):
    nb, _ = executed
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        assert cell.execution_count is not None
        for o in cell.outputs:
            assert o.output_type != "error", o
            if o.output_type == "stream" and o.name == "stderr":
                assert "Traceback" not in o.text and "Warning" not in o.text, o.text


def test_outputs_the_live_view_the_frame_and_the_files(executed):
    nb, out = executed
    code = [c for c in nb.cells if c.cell_type == "code"]
    text = "".join(o.get("text", "") for c in code for o in c.outputs if o.output_type == "stream")
    assert f"writing to {out}" in text
    assert "M A-scans/s" in text and "GB/s raw input" in text
    shown = int(re.search(r"live view: (\d+) frames shown", text).group(1))
    assert shown >= 1
    # The live view cell displays the widget (ipywidgets is in vortexgo[demo]).
    datas = [o.get("data", {}) for c in code for o in c.outputs if o.output_type in ("display_data", "execute_result")]
    assert any("application/vnd.jupyter.widget-view+json" in d for d in datas), "the LiveView widget"
    pngs = [d["image/png"] for d in datas if "image/png" in d]
    assert pngs, "the last frame is shown as an image"
    vols = np.load(out / "volumes.npy", mmap_mode="r")
    assert vols.dtype == np.int8 and vols.ndim == 5 and vols.shape[0] >= 1
    from PIL import Image

    img = np.asarray(Image.open(out / "liveview.png"))
    assert img.shape == (384, 2 * 384 + 8) and img.std() > 20, "MIP | B-scan with structure"


def test_the_notebook_is_device_agnostic():
    """No cell names a device or a backend's array module outright: it picks
    them from vg.get_device("auto"), so it runs unchanged on CPU and CUDA."""
    src = "\n".join(_code(nbformat.read(NOTEBOOK, as_version=4)))
    assert 'get_device("auto")' in src
    assert "import cupy" not in src and '"cuda:0"' not in src and 'get_device("cpu")' not in src
    assert "StackFormatExecutor(scan=" not in src, "vortex's wiring: scan queue + FormatPlanner"
    assert "LiveView(" in src


def test_its_imports_come_with_vortexgo_demo():
    """Every module the notebook imports is the standard library's, vortexgo's
    own dependency (numpy) or in the [demo] extra of pyproject.toml."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    demo = {re.split(r"[<>=\[ ]", d)[0].lower() for d in extras["demo"]}
    dist = {"tqdm": "tqdm", "PIL": "pillow", "matplotlib": "matplotlib", "ipywidgets": "ipywidgets",
            "IPython": "ipywidgets"}  # IPython comes with ipywidgets
    mods = set()
    for src in _code(nbformat.read(NOTEBOOK, as_version=4)):
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Import):
                mods |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                mods.add(node.module.split(".")[0])
    for m in sorted(mods):
        if m in sys.stdlib_module_names or m in ("vortexgo", "numpy"):
            continue
        assert dist.get(m) in demo, f"the notebook imports {m}, which vortexgo[demo] does not install"
