"""examples/scan_patterns.py runs and draws every pattern (non-blank PNGs)."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")

EXAMPLE = pathlib.Path(__file__).parents[1] / "examples" / "scan_patterns.py"


def test_scan_patterns_example_draws_every_pattern(tmp_path):
    spec = importlib.util.spec_from_file_location("scan_patterns", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    written = mod.main(["--out", str(tmp_path)])
    names = sorted(p.name for p in tmp_path.glob("*.png"))
    assert len(written) == len(names) == 10 and "scan_patterns.png" in names
    assert any("scanqueue" in n for n in names) and any("spiral" in n for n in names)
    import matplotlib.image as mpimg

    for p in tmp_path.glob("*.png"):
        img = mpimg.imread(p)[..., :3]
        assert img.shape[0] > 200 and img.shape[1] > 600, p.name
        # drawn: far from one flat colour, and with the active colour (the blue of ACTIVE) present
        assert img.std() > 0.05, p.name
        blue = (img[..., 2] > 0.6) & (img[..., 0] < 0.3)
        assert blue.sum() > 200, p.name
