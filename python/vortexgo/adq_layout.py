"""The layout of Teledyne ADQAPI's ``struct ADQParameters``, read from an installed header.

vortexgo's Teledyne driver (``gosrc/driver/teledyne``) reads and writes
ADQAPI's parameter structure (``ADQ_PARAMETER_ID_TOP``) as an opaque buffer
through a layout table: for each field it uses, the byte offset, size and
kind, the element counts and strides of the arrays on its path, the
structure's size and the ADQAPI revision the header declares. Teledyne's
``ADQAPI_definitions.h`` ships only with its SDK and changes between
releases, so the table is generated on the user's machine from the user's
header: this module writes a small C program of ``offsetof``/``sizeof``
over the header, compiles and runs it with the system C compiler, and prints
the table as JSON.

.. code-block:: text

    python -m vortexgo adq-layout /path/to/ADQAPI/include -o adq_layout.json
    make adq-layout ADQAPI_INCLUDE=/path/to/ADQAPI/include      # build/adq_layout.json
    export VORTEXGO_ADQ_LAYOUT=$PWD/adq_layout.json

Fields whose names changed between ADQAPI releases are tried under each
name (as vortex's driver picks them with ``#if ADQAPI_VERSION_MAJOR``); a
field the header lacks is written as ``null``, and the driver refuses the
settings that need it. This file needs only the standard library, so it also
runs as a script (``python python/vortexgo/adq_layout.py``, as ``make``
does) without vortexgo built.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Sequence, Tuple

__all__ = ["FIELDS", "generate", "main"]

#: The fields the driver uses: its name for each (the key of the table) and
#: the names tried in the header, in order. ``[]`` marks an array whose
#: elements the driver indexes; ``port[ADQ_PORT_SYNC]`` is the header's own
#: constant. The alternatives follow vortex's driver: ADQAPI < 10 names the
#: infinite record length ``record_length_infinite_enabled``, and has
#: ``transfer_records_to_host_enabled`` where >= 10 has
#: ``record_buffer_memory_owner`` (both are listed: the driver uses the one
#: present).
FIELDS: Tuple[Tuple[str, Tuple[str, ...]], ...] = tuple(
    (f[0], tuple(f[1:]) or (f[0],)) for f in [
        ("constant.nof_channels",),
        ("constant.nof_pattern_generators",),
        ("constant.serial_number",),
        ("constant.product_name",),
        ("constant.product_options",),
        ("constant.firmware_name",),
        ("constant.clock_system.clock_generator",),
        ("constant.clock_system.reference_source",),
        ("constant.clock_system.sampling_frequency",),
        ("constant.clock_system.reference_frequency",),
        ("constant.clock_system.delay_adjustment",),
        ("constant.clock_system.delay_adjustment_enabled",),
        ("constant.clock_system.low_jitter_mode_enabled",),
        ("event_source.periodic.frequency",),
        ("acquisition.channel[].horizontal_offset",),
        ("acquisition.channel[].record_length",),
        ("acquisition.channel[].nof_records",),
        ("acquisition.channel[].trigger_source",),
        ("acquisition.channel[].trigger_blocking_source",),
        ("afe.channel[].dc_offset",),
        ("signal_processing.sample_skip.channel[].skip_factor",),
        ("test_pattern.channel[].source",),
        ("function.pattern_generator[].nof_instructions",),
        ("function.pattern_generator[].instruction[].count",),
        ("function.pattern_generator[].instruction[].op",),
        ("function.pattern_generator[].instruction[].source",),
        ("function.pattern_generator[].instruction[].output_value",),
        ("function.pattern_generator[].instruction[].output_value_transition",),
        ("function.daisy_chain.source",),
        ("function.daisy_chain.arm",),
        ("function.daisy_chain.resynchronization_enabled",),
        ("function.daisy_chain.position",),
        ("port[ADQ_PORT_SYNC].pin[0].direction",),
        ("port[ADQ_PORT_SYNC].pin[0].function",),
        ("port[ADQ_PORT_SYNC].pin[0].invert_output",),
        ("port[ADQ_PORT_SYNC].pin[0].input_impedance",),
        ("transfer.common.record_buffer_memory_owner",),
        ("transfer.common.transfer_records_to_host_enabled",),
        ("transfer.common.packed_buffers_enabled",),
        ("transfer.common.write_lock_enabled",),
        ("transfer.common.marker_mode",),
        ("transfer.channel[].record_size",),
        ("transfer.channel[].record_buffer_size",),
        ("transfer.channel[].nof_buffers",),
        ("transfer.channel[].metadata_enabled",),
        ("transfer.channel[].infinite_record_length_enabled", "transfer.channel[].infinite_record_length_enabled",
         "transfer.channel[].record_length_infinite_enabled"),
        ("transfer.channel[].record_buffer[]",),
    ])

#: What _Generic names each member's type (arrays of char decay to char*).
_KIND = ("_Generic((X), float: \"float\", double: \"float\", "
         "_Bool: \"uint\", unsigned char: \"uint\", unsigned short: \"uint\", unsigned int: \"uint\", "
         "unsigned long: \"uint\", unsigned long long: \"uint\", "
         "char: \"int\", signed char: \"int\", short: \"int\", int: \"int\", long: \"int\", long long: \"int\", "
         "char*: \"string\", const char*: \"string\", void*: \"pointer\", const void*: \"pointer\", "
         "default: \"other\")")

_P = "((struct ADQParameters*)0)->"


def _split(path: str) -> List[str]:
    """The prefixes of path that end at each ``[]``, e.g. ``a.b[].c[].d`` -> [``a.b``, ``a.b[0].c``]."""
    out, done = [], ""
    rest = path
    while "[]" in rest:
        head, rest = rest.split("[]", 1)
        out.append(done + head)
        done = done + head + "[0]"
    return out


def _at(path: str, dim: int, index: int) -> str:
    """path with element 0 at every ``[]`` but the dim-th, which gets index."""
    parts = path.split("[]")
    s = parts[0]
    for i, p in enumerate(parts[1:]):
        s += f"[{index if i == dim else 0}]" + p
    return s


def _field_c(key: str, name: str) -> str:
    """C statements printing one field's JSON entry."""
    z = _at(name, -1, 0)
    dims = _split(name)
    lines = [f'\tprintf("    \\"{key}\\": {{\\"name\\": \\"{name}\\", \\"offset\\": %zu, \\"size\\": %zu, '
             f'\\"kind\\": \\"%s\\", \\"dims\\": [", (size_t)offsetof(struct ADQParameters, {z}), '
             f'sizeof({_P}{z}), {_KIND.replace("X", _P + z)});']
    for d, prefix in enumerate(dims):
        pz = _at(prefix, -1, 0)
        stride = (f"(size_t)(offsetof(struct ADQParameters, {_at(name, d, 1)}) - "
                  f"offsetof(struct ADQParameters, {z}))")
        count = f"(sizeof({_P}{pz}) / sizeof({_P}{pz}[0]))"
        sep = ", " if d else ""
        lines.append(f'\tprintf("{sep}{{\\"count\\": %zu, \\"stride\\": %zu}}", (size_t){count}, {stride});')
    lines.append('\tprintf("]}");')
    return "\n".join(lines)


def _probe_expr(name: str) -> str:
    z = _at(name, -1, 0)
    return f"(void)sizeof({_P}{z});"


def _program(include: str, body: str) -> str:
    return (f"#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n#include \"{include}\"\n"
            f"int main(void) {{\n{body}\n\treturn 0;\n}}\n")


def _cc() -> str:
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or "cc"


def _compile(src: str, include_dir: str, work: str, out: Optional[str]) -> Tuple[bool, str]:
    path = os.path.join(work, "probe.c")
    with open(path, "w") as f:
        f.write(src)
    args = [_cc(), "-std=gnu11", "-I", include_dir, path]
    args += ["-o", out] if out else ["-fsyntax-only"]
    r = subprocess.run(args, capture_output=True, text=True)
    return r.returncode == 0, r.stderr


def _header(include_dir: str, header: Optional[str]) -> str:
    if header:
        return header
    for h in ("ADQAPI_definitions.h", "ADQAPI.h"):
        if os.path.exists(os.path.join(include_dir, h)):
            return h
    raise SystemExit(f"adq-layout: neither ADQAPI_definitions.h nor ADQAPI.h in {include_dir} "
                     "(the include folder of Teledyne's ADQAPI SDK)")


def generate(include_dir: str, header: Optional[str] = None) -> Dict[str, object]:
    """The layout table of ``struct ADQParameters`` in include_dir's header, as a dict.

    Raises SystemExit with the compiler's message when the header does not
    compile or declares no ``struct ADQParameters`` or ADQAPI revision.
    """
    include_dir = os.path.abspath(include_dir)
    h = _header(include_dir, header)
    with tempfile.TemporaryDirectory(prefix="vg-adq-layout-") as work:
        base = ("\t(void)sizeof(struct ADQParameters); int major = ADQAPI_VERSION_MAJOR, minor = ADQAPI_VERSION_MINOR;"
                " (void)major; (void)minor;")
        ok, err = _compile(_program(h, base), include_dir, work, None)
        if not ok:
            raise SystemExit(f"adq-layout: {h} in {include_dir} does not declare struct ADQParameters and "
                             f"ADQAPI_VERSION_MAJOR/MINOR, or does not compile:\n{err}")
        # every field under its first name at once; when that fails, each name alone
        chosen: Dict[str, Optional[str]] = {}
        firsts = "\n".join("\t" + _probe_expr(names[0]) for _, names in FIELDS)
        if _compile(_program(h, firsts), include_dir, work, None)[0]:
            chosen = {key: names[0] for key, names in FIELDS}
        else:
            for key, names in FIELDS:
                chosen[key] = next((n for n in names
                                    if _compile(_program(h, "\t" + _probe_expr(n)), include_dir, work, None)[0]), None)
        body = ['\tprintf("{\\n  \\"generator\\": \\"vortexgo adq-layout\\",\\n");',
                f'\tprintf("  \\"api_version\\": {{\\"major\\": %d, \\"minor\\": %d}},\\n", '
                f'(int)ADQAPI_VERSION_MAJOR, (int)ADQAPI_VERSION_MINOR);',
                '\tprintf("  \\"size\\": %zu,\\n", sizeof(struct ADQParameters));',
                '\tprintf("  \\"fields\\": {\\n");']
        for i, (key, _) in enumerate(FIELDS):
            name = chosen[key]
            sep = ",\\n" if i < len(FIELDS) - 1 else "\\n"
            if name is None:
                body.append(f'\tprintf("    \\"{key}\\": null{sep}");')
            else:
                body.append(_field_c(key, name))
                body.append(f'\tprintf("{sep}");')
        body.append('\tprintf("  }\\n}\\n");')
        exe = os.path.join(work, "layout")
        ok, err = _compile(_program(h, "\n".join(body)), include_dir, work, exe)
        if not ok:
            raise SystemExit(f"adq-layout: the layout program over {h} does not compile:\n{err}")
        r = subprocess.run([exe], capture_output=True, text=True, check=True)
    table = json.loads(r.stdout)
    table["header"] = os.path.join(include_dir, h)
    return table


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``adq-layout INCLUDE_DIR [-o FILE] [--header NAME]``: print or write the table."""
    ap = argparse.ArgumentParser(prog="python -m vortexgo adq-layout",
                                 description="Write the layout table of ADQAPI's struct ADQParameters "
                                             "(VORTEXGO_ADQ_LAYOUT) from an installed ADQAPI header.")
    ap.add_argument("include", help="the folder holding ADQAPI_definitions.h (or ADQAPI.h)")
    ap.add_argument("-o", "--output", help="the JSON file to write (default: print it)")
    ap.add_argument("--header", help="the header to include (default ADQAPI_definitions.h, else ADQAPI.h)")
    o = ap.parse_args(argv)
    text = json.dumps(generate(o.include, o.header), indent=2) + "\n"
    if o.output:
        tmp = o.output + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, o.output)
        print(f"wrote {o.output}: set VORTEXGO_ADQ_LAYOUT={os.path.abspath(o.output)}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
