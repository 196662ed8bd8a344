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


def _generator():
    """python/vortexgo/adq_layout.py by path: it needs only the standard library, not the built core."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("_vg_adq_layout", ROOT / "python" / "vortexgo" / "adq_layout.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


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


@pytest.mark.parametrize("sub,present,absent,aliases", [
    (".", {"ADQ_EVENT_SOURCE_PERIODIC": 4, "ADQ_FUNCTION_DAISY_CHAIN": 9, "ADQ_ARM_AT_ACQUISITION_START": 1,
           "ADQ_MEMORY_OWNER_API": 0, "ADQ_INFINITE_NOF_RECORDS": -1, "ADQ_USER_LOGIC2": 2}, [], {}),
    ("adqapi9", {"ADQ_EVENT_SOURCE_PERIODIC": 14, "ADQ_REFERENCE_CLOCK_SOURCE_PXIE_10M": 3, "ADQ_USER_LOGIC2": 2,
                 "ADQ_MARKER_MODE_HOST_MANUAL": 1, "ADQ_STATUS_ID_OVERFLOW": 1},
     ["ADQ_FUNCTION_DAISY_CHAIN", "ADQ_ARM_AT_ACQUISITION_START", "ADQ_MEMORY_OWNER_API"],
     {"ADQ_USER_LOGIC2": "USER_LOGIC_2", "ADQ_REFERENCE_CLOCK_SOURCE_INTERNAL": "ADQ_CLOCK_REFERENCE_SOURCE_INTERNAL"}),
])
def test_generator_constants(sub, present, absent, aliases):
    adq_layout = _generator()
    t = adq_layout.generate(str(VIRTUAL / sub))
    assert set(t["constants"]) == {key for key, _ in adq_layout.CONSTANTS}
    for name, value in present.items():
        assert t["constants"][name] == value, name
    for name in absent:
        assert t["constants"][name] is None, name
    assert set(t.get("constant_names", {})) >= set(aliases)
    for k, v in aliases.items():
        assert t["constant_names"][k] == v


@pytest.mark.parametrize("sub,p2p_size,nof,overflow_at", [
    (".", 328, {"offset": 4, "size": 4, "dims": [{"count": 8, "stride": 40}]}, 0),
    ("adqapi9", 392, {"offset": 40, "size": 8, "dims": [{"count": 8, "stride": 48}]}, 12),
])
def test_generator_structures(sub, p2p_size, nof, overflow_at):
    adq_layout = _generator()
    s = adq_layout.generate(str(VIRTUAL / sub))["structures"]
    assert s["ADQP2pStatus"]["type"] == "struct ADQP2pStatus" and s["ADQP2pStatus"]["size"] == p2p_size
    n = s["ADQP2pStatus"]["fields"]["channel[].nof_completed_buffers"]
    assert {k: n[k] for k in nof} == nof
    cb = s["ADQP2pStatus"]["fields"]["channel[].completed_buffers[]"]
    assert cb["size"] == 2 and [d["count"] for d in cb["dims"]] == [8, 16]
    assert s["ADQOverflowStatus"]["fields"]["overflow"]["offset"] == overflow_at
    e = s["ADQInfoListEntry"]
    assert e["type"] == "ADQInfoListEntry" and e["size"] == 92
    assert e["fields"]["DevFile"] == {"name": "DevFile", "offset": 20, "size": 64, "kind": "string", "dims": []}


def test_generator_minimal_header(tmp_path):
    """A header with the structure only: every constant and fixed structure null; a macro counts as a constant."""
    (tmp_path / "ADQAPI_definitions.h").write_text(
        "#define ADQAPI_VERSION_MAJOR 12\n#define ADQAPI_VERSION_MINOR 0\n#define ADQ_EVENT_SOURCE_TRIG (2)\n"
        "struct ADQParameters { int id; };\n")
    adq_layout = _generator()
    t = adq_layout.generate(str(tmp_path))
    assert t["constants"]["ADQ_EVENT_SOURCE_TRIG"] == 2
    assert all(v is None for k, v in t["constants"].items() if k != "ADQ_EVENT_SOURCE_TRIG")
    assert t["structures"] == {"ADQInfoListEntry": None, "ADQP2pStatus": None, "ADQOverflowStatus": None}
    assert "constant_names" not in t


def test_generator_reads_adqapi_h_beside(tmp_path):
    """ADQInfoListEntry from ADQAPI.h (where ADQAPI declares it) beside the definitions."""
    (tmp_path / "ADQAPI_definitions.h").write_text(
        "#ifndef D\n#define D\n#define ADQAPI_VERSION_MAJOR 12\n#define ADQAPI_VERSION_MINOR 0\n"
        "struct ADQParameters { int id; };\n#endif\n")
    (tmp_path / "ADQAPI.h").write_text(
        '#include "ADQAPI_definitions.h"\n#define LOG_LEVEL_INFO 3\n'
        "typedef struct { int HWIFType; int ProductID; char DevFile[64]; } ADQInfoListEntry;\n")
    adq_layout = _generator()
    t = adq_layout.generate(str(tmp_path))
    assert t["constants"]["LOG_LEVEL_INFO"] == 3
    assert t["structures"]["ADQInfoListEntry"]["fields"]["DevFile"]["offset"] == 8
