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
the table as JSON. The same table holds the header's values of the
enumeration constants and macros the driver writes or passes (``constants``,
CONSTANTS) and the layouts of the small fixed structures it passes by
pointer (``structures``, STRUCTURES: ``ADQInfoListEntry``, ``struct
ADQP2pStatus``, ``struct ADQOverflowStatus``; ``ADQAPI.h`` is included too
when it sits beside ``ADQAPI_definitions.h``), so the driver compiles in
none of them.

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

__all__ = ["CONSTANTS", "FIELDS", "STRUCTURES", "generate", "main"]

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

#: The enumeration values and macros the driver writes into the parameters
#: or passes to ADQAPI: its name for each (the key of the table's
#: ``constants``) and the names tried in the header, in order (ADQAPI
#: releases before the ADQ3 series' current headers spell the reference
#: clock sources ``ADQ_CLOCK_REFERENCE_SOURCE_*``). Each is probed by
#: compiling ``(long long)(NAME)``, so an ``enum`` member and a ``#define``
#: both count; one the header lacks is written as ``null`` and the driver
#: refuses the settings that need it. ADQAPI's return codes (``ADQ_EOK``,
#: ``ADQ_EAGAIN`` ...) are documented stable values and stay compiled into
#: the driver.
CONSTANTS: Tuple[Tuple[str, Tuple[str, ...]], ...] = tuple(
    (c[0], tuple(c[1:]) or (c[0],)) for c in [
        ("ADQ_PARAMETER_ID_TOP",),
        ("ADQ_STATUS_ID_OVERFLOW",),
        ("ADQ_USER_LOGIC2", "ADQ_USER_LOGIC2", "USER_LOGIC_2"),
        ("LOG_LEVEL_INFO",),
        ("ADQ_MAX_NOF_BUFFERS",),
        ("ADQ_INFINITE_NOF_RECORDS",),
        ("ADQ_EVENT_SOURCE_INVALID",),
        ("ADQ_EVENT_SOURCE_TRIG",),
        ("ADQ_EVENT_SOURCE_SYNC",),
        ("ADQ_EVENT_SOURCE_GPIOA0",),
        ("ADQ_EVENT_SOURCE_PERIODIC",),
        ("ADQ_CLOCK_GENERATOR_INTERNAL_PLL",),
        ("ADQ_CLOCK_GENERATOR_EXTERNAL_CLOCK",),
        ("ADQ_REFERENCE_CLOCK_SOURCE_INTERNAL", "ADQ_REFERENCE_CLOCK_SOURCE_INTERNAL",
         "ADQ_CLOCK_REFERENCE_SOURCE_INTERNAL"),
        ("ADQ_REFERENCE_CLOCK_SOURCE_PORT_CLK", "ADQ_REFERENCE_CLOCK_SOURCE_PORT_CLK",
         "ADQ_CLOCK_REFERENCE_SOURCE_PORT_CLK"),
        ("ADQ_REFERENCE_CLOCK_SOURCE_PXIE_10M", "ADQ_REFERENCE_CLOCK_SOURCE_PXIE_10M",
         "ADQ_CLOCK_REFERENCE_SOURCE_PXIE_10M"),
        ("ADQ_FUNCTION_INVALID",),
        ("ADQ_FUNCTION_PATTERN_GENERATOR0",),
        ("ADQ_FUNCTION_DAISY_CHAIN",),
        ("ADQ_PATTERN_GENERATOR_OPERATION_EVENT",),
        ("ADQ_TEST_PATTERN_SOURCE_DISABLE",),
        ("ADQ_TEST_PATTERN_SOURCE_TRIANGLE",),
        ("ADQ_MARKER_MODE_HOST_MANUAL",),
        ("ADQ_MEMORY_OWNER_API",),
        ("ADQ_MEMORY_OWNER_USER",),
        ("ADQ_DIRECTION_OUT",),
        ("ADQ_IMPEDANCE_50_OHM",),
        ("ADQ_ARM_AT_ACQUISITION_START",),
    ])

#: The small fixed structures the driver passes to ADQAPI by pointer: the
#: table's key for each, the C type names tried (``ADQInfoListEntry`` is a
#: typedef in ADQAPI.h), and the members the driver reads (keys and names as
#: in FIELDS). Each is written as its size and those members' offsets, or
#: ``null`` when the header declares no such type.
STRUCTURES: Tuple[Tuple[str, Tuple[str, ...], Tuple[Tuple[str, Tuple[str, ...]], ...]], ...] = (
    ("ADQInfoListEntry", ("ADQInfoListEntry", "struct ADQInfoListEntry"),
     (("ProductID", ("ProductID",)), ("DevFile", ("DevFile",)))),
    ("ADQP2pStatus", ("struct ADQP2pStatus",),
     (("channel[].nof_completed_buffers", ("channel[].nof_completed_buffers",)),
      ("channel[].completed_buffers[]", ("channel[].completed_buffers[]",)))),
    ("ADQOverflowStatus", ("struct ADQOverflowStatus",),
     (("overflow", ("overflow",)),)),
)

#: What _Generic names each member's type (arrays of char decay to char*).
_KIND = ("_Generic((X), float: \"float\", double: \"float\", "
         "_Bool: \"uint\", unsigned char: \"uint\", unsigned short: \"uint\", unsigned int: \"uint\", "
         "unsigned long: \"uint\", unsigned long long: \"uint\", "
         "char: \"int\", signed char: \"int\", short: \"int\", int: \"int\", long: \"int\", long long: \"int\", "
         "char*: \"string\", const char*: \"string\", void*: \"pointer\", const void*: \"pointer\", "
         "default: \"other\")")

_TOP = "struct ADQParameters"


def _p(ctype: str) -> str:
    return f"(({ctype}*)0)->"


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


def _field_c(key: str, name: str, ctype: str = _TOP, indent: str = "    ") -> str:
    """C statements printing one field's JSON entry (a member of ctype)."""
    z = _at(name, -1, 0)
    dims = _split(name)
    P = _p(ctype)
    lines = [f'\tprintf("{indent}\\"{key}\\": {{\\"name\\": \\"{name}\\", \\"offset\\": %zu, \\"size\\": %zu, '
             f'\\"kind\\": \\"%s\\", \\"dims\\": [", (size_t)offsetof({ctype}, {z}), '
             f'sizeof({P}{z}), {_KIND.replace("X", P + z)});']
    for d, prefix in enumerate(dims):
        pz = _at(prefix, -1, 0)
        stride = (f"(size_t)(offsetof({ctype}, {_at(name, d, 1)}) - "
                  f"offsetof({ctype}, {z}))")
        count = f"(sizeof({P}{pz}) / sizeof({P}{pz}[0]))"
        sep = ", " if d else ""
        lines.append(f'\tprintf("{sep}{{\\"count\\": %zu, \\"stride\\": %zu}}", (size_t){count}, {stride});')
    lines.append('\tprintf("]}");')
    return "\n".join(lines)


def _probe_expr(name: str, ctype: str = _TOP) -> str:
    z = _at(name, -1, 0)
    return f"(void)sizeof({_p(ctype)}{z});"


def _program(include: "str | Sequence[str]", body: str) -> str:
    heads = [include] if isinstance(include, str) else list(include)
    inc = "".join(f"#include \"{h}\"\n" for h in heads)
    return (f"#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n{inc}"
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


def _first(names: Sequence[str], ok) -> Optional[str]:
    return next((n for n in names if ok(n)), None)


def generate(include_dir: str, header: Optional[str] = None) -> Dict[str, object]:
    """The layout table of ``struct ADQParameters`` in include_dir's header, as a dict.

    Raises SystemExit with the compiler's message when the header does not
    compile or declares no ``struct ADQParameters`` or ADQAPI revision.
    """
    include_dir = os.path.abspath(include_dir)
    h = _header(include_dir, header)
    with tempfile.TemporaryDirectory(prefix="vg-adq-layout-") as work:
        def compiles(heads: Sequence[str], body: str) -> bool:
            return _compile(_program(heads, body), include_dir, work, None)[0]

        base = ("\t(void)sizeof(struct ADQParameters); int major = ADQAPI_VERSION_MAJOR, minor = ADQAPI_VERSION_MINOR;"
                " (void)major; (void)minor;")
        ok, err = _compile(_program(h, base), include_dir, work, None)
        if not ok:
            raise SystemExit(f"adq-layout: {h} in {include_dir} does not declare struct ADQParameters and "
                             f"ADQAPI_VERSION_MAJOR/MINOR, or does not compile:\n{err}")
        # ADQAPI.h declares ADQInfoListEntry (and includes the definitions):
        # with it too when it is there and compiles
        heads: List[str] = [h]
        if h != "ADQAPI.h" and os.path.exists(os.path.join(include_dir, "ADQAPI.h")) and \
                compiles([h, "ADQAPI.h"], base):
            heads.append("ADQAPI.h")

        def pick(items: Sequence[Tuple[str, Tuple[str, ...]]], probe) -> Dict[str, Optional[str]]:
            """Each item's first name that compiles: all first names at once, else one by one."""
            if compiles(heads, "\n".join("\t" + probe(names[0]) for _, names in items)):
                return {key: names[0] for key, names in items}
            return {key: _first(names, lambda n: compiles(heads, "\t" + probe(n))) for key, names in items}

        chosen = pick(FIELDS, _probe_expr)
        consts = pick(CONSTANTS, lambda n: f"(void)(long long)({n});")
        structs: Dict[str, Optional[Tuple[str, Dict[str, Optional[str]]]]] = {}
        for key, types, members in STRUCTURES:
            ctype = _first(types, lambda t: compiles(heads, f"\t(void)sizeof({t});"))
            structs[key] = None if ctype is None else (ctype, pick(members, lambda n, c=ctype: _probe_expr(n, c)))

        body = ['\tprintf("{\\n  \\"generator\\": \\"vortexgo adq-layout\\",\\n");',
                f'\tprintf("  \\"api_version\\": {{\\"major\\": %d, \\"minor\\": %d}},\\n", '
                f'(int)ADQAPI_VERSION_MAJOR, (int)ADQAPI_VERSION_MINOR);',
                '\tprintf("  \\"size\\": %zu,\\n", sizeof(struct ADQParameters));',
                '\tprintf("  \\"fields\\": {\\n");']

        def members_c(items: Dict[str, Optional[str]], ctype: str, indent: str) -> None:
            for i, (key, name) in enumerate(items.items()):
                sep = ",\\n" if i < len(items) - 1 else "\\n"
                if name is None:
                    body.append(f'\tprintf("{indent}\\"{key}\\": null{sep}");')
                else:
                    body.append(_field_c(key, name, ctype, indent))
                    body.append(f'\tprintf("{sep}");')

        members_c(chosen, _TOP, "    ")
        body.append('\tprintf("  },\\n  \\"constants\\": {\\n");')
        for i, (key, name) in enumerate(consts.items()):
            sep = ",\\n" if i < len(consts) - 1 else "\\n"
            if name is None:
                body.append(f'\tprintf("    \\"{key}\\": null{sep}");')
            else:
                body.append(f'\tprintf("    \\"{key}\\": %lld{sep}", (long long)({name}));')
        body.append('\tprintf("  },\\n  \\"structures\\": {\\n");')
        for i, (key, st) in enumerate(structs.items()):
            sep = ",\\n" if i < len(structs) - 1 else "\\n"
            if st is None:
                body.append(f'\tprintf("    \\"{key}\\": null{sep}");')
                continue
            ctype, members = st
            body.append(f'\tprintf("    \\"{key}\\": {{\\"type\\": \\"{ctype}\\", \\"size\\": %zu, '
                        f'\\"fields\\": {{\\n", sizeof({ctype}));')
            members_c(members, ctype, "      ")
            body.append(f'\tprintf("    }}}}{sep}");')
        body.append('\tprintf("  }\\n}\\n");')
        exe = os.path.join(work, "layout")
        ok, err = _compile(_program(heads, "\n".join(body)), include_dir, work, exe)
        if not ok:
            raise SystemExit(f"adq-layout: the layout program over {h} does not compile:\n{err}")
        r = subprocess.run([exe], capture_output=True, text=True, check=True)
    table = json.loads(r.stdout)
    table["header"] = os.path.join(include_dir, h)
    # the header names the constants were found under, where not the driver's
    aliases = {k: n for k, n in consts.items() if n is not None and n != k}
    if aliases:
        table["constant_names"] = aliases
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
