"""The ADQParameters layout generator (python/vortexgo/adq_layout.py) over the virtual headers."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VIRTUAL = ROOT / "instruments" / "virtual"

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")


def _run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run([sys.executable, "-m", "vortexgo", "adq-layout", *args], capture_output=True, text=True,
                          env=env, timeout=120)


@pytest.mark.parametrize("sub,version,size,infinite,missing", [
    (".", [0x7667, 1], 4928, "transfer.channel[].infinite_record_length_enabled",
     ["transfer.common.transfer_records_to_host_enabled"]),
    ("adqapi9", [9, 2], 3360, "transfer.channel[].record_length_infinite_enabled",
     ["transfer.common.record_buffer_memory_owner", "function.daisy_chain.source"]),
])
def test_generator_tables(tmp_path, sub, version, size, infinite, missing):
    out = tmp_path / "l.json"
    r = _run(str(VIRTUAL / sub), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "VORTEXGO_ADQ_LAYOUT=" in r.stderr
    t = json.loads(out.read_text())
    assert [t["api_version"]["major"], t["api_version"]["minor"]] == version
    assert t["size"] == size
    assert t["fields"]["transfer.channel[].infinite_record_length_enabled"]["name"] == infinite
    for m in missing:
        assert t["fields"][m] is None
    rb = t["fields"]["transfer.channel[].record_buffer[]"]
    assert rb["kind"] == "pointer" and rb["size"] == 8 and [d["count"] for d in rb["dims"]] == [8, 16]
    assert t["fields"]["constant.product_name"]["kind"] == "string"
    assert t["fields"]["constant.clock_system.sampling_frequency"]["kind"] == "float"


def test_generator_prints_without_output(tmp_path):
    r = _run(str(VIRTUAL))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["size"] == 4928


def test_generator_refuses_a_folder_without_the_header(tmp_path):
    r = _run(str(tmp_path))
    assert r.returncode != 0
    assert "neither ADQAPI_definitions.h nor ADQAPI.h" in r.stderr


def test_generator_refuses_a_header_without_the_structure(tmp_path):
    (tmp_path / "ADQAPI_definitions.h").write_text("#define ADQAPI_VERSION_MAJOR 12\n")
    r = _run(str(tmp_path))
    assert r.returncode != 0
    assert "does not declare struct ADQParameters" in r.stderr
