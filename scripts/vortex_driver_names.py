#!/usr/bin/env python3
"""List vortex's Python names for its AlazarTech, NI-DAQmx, Teledyne ADQ and NI-IMAQ drivers.

vortex's driver modules need the vendors' SDKs to build, so vortex-build
(../shared/vortex-build) has none of them; the names come from vortex's
binding sources instead:

- ``src/vortex-python/module/alazar.cpp``, ``module/daqmx.cpp``, ``module/teledyne.cpp`` and
  ``module/imaq.cpp``: which
  module each class, enum and function lands in (``VORTEX_BIND``,
  ``def_submodule``), and every member (the macros of ``bind/common.hpp``:
  ``RW_VAR``/``RO_VAR``/``RW_ACC``/``RO_ACC``... an attribute, ``FXN`` a method,
  ``SFXN``/``SRO_VAR`` a class attribute, ``SHALLOW_COPY`` ``copy``,
  ``py::self == py::self`` ``__eq__``, ``py::init`` ``__init__`` with its
  keyword arguments and defaults);
- the shared helpers they call (``setup_acquire_config``/``setup_acquisition``
  in ``bind/acquire.hpp``, ``setup_io`` in ``bind/io.hpp``, the file's own
  ``setup_*``), expanded in place;
- ``py::bind_vector`` lists (the list methods pybind11 gives a vector of
  comparable values);
- ``doc/module/*.rst``: names the API pages document for these classes that
  the bindings of this version do not bind (recorded with ``"documented"``).

Each name carries the preprocessor conditions it is bound under
(``VORTEX_ENABLE_ALAZAR_GPU`` ...). The reading this script shares with
scripts/vortex_api_names.py is scripts/vortex_bind_reader.py's. Run from anywhere::

    python scripts/vortex_driver_names.py [--reference DIR] [--out FILE]

Without ``--out`` the JSON goes to stdout. The test data is
``tests_py/data/vortex_driver_names.json`` (tests_py/test_driver_coverage.py).
"""

from __future__ import annotations

import os
import re
import sys
from typing import Optional

if os.path.dirname(os.path.abspath(__file__)) not in sys.path:  # run as a script or imported from the tests
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vortex_bind_reader import (  # noqa: E402 - the C++ reading both listings share
    VECTOR_METHODS, add_function, common_members, condition_at, conditions, init_at, literal_default, main as _main,
    match_close, new_module, read, version)

#: The binding files read, relative to the reference root, and the modules their VORTEX_BIND(x) serve.
MODULE_FILES = ["src/vortex-python/module/alazar.cpp", "src/vortex-python/module/daqmx.cpp",
                "src/vortex-python/module/teledyne.cpp", "src/vortex-python/module/imaq.cpp"]
HELPER_FILES = ["src/vortex-python/bind/acquire.hpp", "src/vortex-python/bind/io.hpp"]
#: Binding files without a VORTEX_BIND of their own: (file, the function read, the module its
#: py::module argument is). bind/io.cpp's bind_machdsp: vortex.io.MachDSPIO and vortex.io.machdsp.
ENTRY_FILES = [("src/vortex-python/bind/io.cpp", "bind_machdsp", "vortex.io")]
DOC_FILES = ["doc/module/acquire.rst", "doc/module/engine.rst"]


def functions(text: str) -> dict[str, str]:
    """Bodies of the file's ``static void name(...) { ... }`` functions (and VORTEX_MODULE's)."""
    out = {}
    for m in re.finditer(r"(?:static\s+)?void\s+(\w+)\s*\(([^)]*)\)\s*\{", text):
        start = m.end() - 1
        out[m.group(1)] = (m.group(2), text[start:match_close(text, start, "{", "}")], start)
    m = re.search(r"VORTEX_MODULE\((\w+)\)\s*\{", text)
    if m:
        start = m.end() - 1
        out["<module>"] = ("", text[start:match_close(text, start, "{", "}")], start)
    return out


class Extractor:
    def __init__(self, root: str) -> None:
        self.root = root
        self.helpers: dict[str, tuple[str, str, list]] = {}
        for rel in HELPER_FILES:
            text = read(root, rel)
            marks = conditions(text)
            for name, (params, body, start) in functions(text).items():
                self.helpers[name] = (body, rel, condition_at(marks, start))
        self.modules: dict[str, dict] = {}
        self.enum_types: dict[str, dict] = {}

    def module(self, path: str) -> dict:
        return self.modules.setdefault(path, new_module())

    def run(self) -> dict:
        for rel in MODULE_FILES:
            self.file(rel)
        for rel, fname, module in ENTRY_FILES:
            self.entry(rel, fname, module)
        return self.modules

    def entry(self, rel: str, fname: str, module: str) -> None:
        """The names ``fname`` of ``rel`` binds into ``module`` (and its submodules)."""
        text = read(self.root, rel)
        self.marks, self.rel = conditions(text), rel
        self.funcs = functions(text)
        _p, _body, start = self.funcs[fname]
        self.bind(fname, {"m": module}, start)

    def file(self, rel: str) -> None:
        text = read(self.root, rel)
        self.marks, self.rel = conditions(text), rel
        self.funcs = functions(text)
        for name, (_params, body, start) in self.funcs.items():
            if name.startswith("setup_"):
                self.helpers[name] = (body, rel, condition_at(self.marks, start))
        _p, body, start = self.funcs["<module>"]
        for m in re.finditer(r"VORTEX_BIND\((\w+)\)", body):
            self.bind(f"_bind_{m.group(1)}", {"m": f"vortex.{m.group(1)}"}, start + m.start())

    def where(self, pos: int, extra: Optional[list] = None) -> dict:
        cond = condition_at(self.marks, pos) + list(extra or [])
        d = {"source": f"{self.rel}:{self.funcs_text_line(pos)}"}
        if cond:
            d["conditions"] = sorted(set(cond))
        return d

    def funcs_text_line(self, pos: int) -> int:
        return sum(1 for off, _ in self.marks if off <= pos)

    def bind(self, fname: str, vars_: dict, call_pos: int) -> None:
        params, body, start = self.funcs[fname]
        pm = re.match(r"py::module&\s*(\w+)", params.strip())
        if pm and pm.group(1) != "m":
            vars_ = {pm.group(1): vars_["m"]}
        vars_ = dict(vars_)
        extra = condition_at(self.marks, call_pos)
        # submodules, then calls of other _bind_ functions with a module variable
        for m in re.finditer(r"auto\s+(\w+)\s*=\s*(\w+)\.def_submodule\(\"(\w+)\"\)", body):
            vars_[m.group(1)] = f"{vars_[m.group(2)]}.{m.group(3)}"
        for m in re.finditer(r"\b(_bind_\w+)\((\w+)\);", body):
            if m.group(1) in self.funcs and m.group(2) in vars_:
                self.bind(m.group(1), {"m": vars_[m.group(2)]}, start + m.start())
        # module attributes and functions
        for m in re.finditer(r"\b(\w+)\.attr\(\"(\w+)\"\)\s*=", body):
            if m.group(1) in vars_:
                self.module(vars_[m.group(1)])["attributes"][m.group(2)] = self.where(start + m.start(), extra)
        for m in re.finditer(r"\b(\w+)\.def\(\"(\w+)\"", body):
            if m.group(1) in vars_:
                add_function(self.module(vars_[m.group(1)])["functions"], m.group(2), self.where(start + m.start(), extra))
        # enums
        for m in re.finditer(r"py::enum_<([\w:]+)>\((\w+),\s*\"(\w+)\"\)", body):
            ctype = m.group(1)
            end = body.find(";", m.end())
            chain = body[m.end():end]
            block_end = body.find("}", m.end())
            if ctype == "C":
                um = None
                for um in re.finditer(r"using C = ([\w:]+);", body[:m.start()]):
                    pass
                ctype = um.group(1) if um else ctype
            members = {v: cv.split("::")[-1] for v, cv in re.findall(r"\.value\(\"(\w+)\",\s*([\w:]+)\)", chain)}
            exported = "export_values()" in body[m.start():block_end if block_end > 0 else len(body)]
            e = {**self.where(start + m.start(), extra), "members": list(members), "export_values": exported}
            self.module(vars_[m.group(2)])["enums"][m.group(3)] = e
            self.enum_types[ctype] = {"module": vars_[m.group(2)], "name": m.group(3), "cpp": members}
        # classes a file-local template binds (memory's CUDA tensors), at the call's conditions
        for m in re.finditer(r"\b(\w+)<[^;()]*?>\((\w+),\s*(\w+)\);", body):
            helper = self.funcs.get(m.group(1))
            if helper is None or m.group(2) not in vars_:
                continue
            for hm in re.finditer(r"(bind_\w+)<[^;]*?>\(\w+,\s*\"(\w+)\"", helper[1]):
                cls = {**self.where(start + m.start(), extra), "kind": "class", "cpp": hm.group(1), "members": {},
                       "inits": [], "note": f"bound by {m.group(1)} through {hm.group(1)}"}
                self.module(vars_[m.group(2)])["classes"].setdefault(hm.group(2), cls)
        # vectors
        for m in re.finditer(r"py::bind_vector<[^;]*?>\((\w+),\s*\"(\w+)\"\)", body):
            cls = {**self.where(start + m.start(), extra), "kind": "vector",
                   "members": {k: {"kind": "method"} for k in VECTOR_METHODS}}
            self.module(vars_[m.group(1)])["classes"][m.group(2)] = cls
        # classes
        for m in re.finditer(r"\bCLS_(VAL|PTR|BASE_PTR)\((\w+)", body):
            blk_start = body.rfind("{", 0, m.start())
            # the innermost block holding the CLS macro
            depth, i = 0, m.start()
            while i > 0:
                i -= 1
                if body[i] == "}":
                    depth += 1
                elif body[i] == "{":
                    if depth == 0:
                        blk_start = i
                        break
                    depth -= 1
            blk = body[blk_start:match_close(body, blk_start, "{", "}")]
            using = re.search(r"using C = ([^;]+);", blk)
            cls = {**self.where(start + m.start(), extra), "kind": "class",
                   "cpp": using.group(1).strip() if using else None, "members": {}, "inits": []}
            self.members(cls, blk, start + blk_start, extra)
            self.module(vars_["m"])["classes"][m.group(2)] = cls

    def members(self, cls: dict, blk: str, pos: int, extra: list, via: Optional[str] = None) -> None:
        mem = cls["members"]

        def add(name: str, kind: str, at: int, **more) -> None:
            d = {"kind": kind, **more}
            cond = condition_at(self.marks, pos + at) if via is None else []
            cond = sorted(set(cond) - set(cls.get("conditions", [])) - set(extra))
            if cond:
                d["conditions"] = cond
            if via:
                d["via"] = via
            mem.setdefault(name, d)

        for name, kind, at in common_members(blk, "c"):
            add(name, kind, at)
        for m in re.finditer(r"\bc\.def\(\"(\w+)\"", blk):
            add(m.group(1), "method", m.start())
        for m in re.finditer(r"\bc\.def_property(_readonly)?\(\"(\w+)\"", blk):
            add(m.group(2), "readonly" if m.group(1) else "attribute", m.start())
        for m in re.finditer(r"\bc\.def\(py::init", blk):
            init = init_at(blk, m.start(), "c")
            cond = condition_at(self.marks, pos + m.start()) if via is None else []
            cond = sorted(set(cond) - set(cls.get("conditions", [])) - set(extra))
            if cond:
                init["conditions"] = cond
            cls["inits"].append(init)
            add("__init__", "method", m.start())
        for m in re.finditer(r"\b(setup_\w+)(?:<[^;]*?>)?\(c\)", blk):
            hb, hrel, hcond = self.helpers[m.group(1)]
            self.members(cls, hb, 0, extra, via=f"{m.group(1)} ({hrel})")

    def documented(self) -> None:
        """Names doc/module/*.rst documents for these classes that the bindings do not bind."""
        for rel in DOC_FILES:
            path = os.path.join(self.root, rel)
            if not os.path.exists(path):
                continue
            cur = None
            for n, line in enumerate(open(path), 1):
                cm = re.match(r"\.\. class:: vortex\.([\w.]+)", line)
                if cm:
                    cur = self.find_class(cm.group(1).split(".")[-1])
                    continue
                if re.match(r"\.\. ", line):
                    cur = None
                    continue
                mm = re.match(r"    \.\. (?:method|property|attribute):: (\w+)", line)
                if mm and cur is not None and mm.group(1) not in cur["members"]:
                    if cur.get("kind") == "enum":
                        continue
                    cur["members"][mm.group(1)] = {"kind": "documented", "source": f"{rel}:{n}",
                                                   "note": "documented in vortex's API pages, not bound by its bindings"}

    def find_class(self, name: str) -> Optional[dict]:
        for mod in self.modules.values():
            if name in mod["classes"]:
                return mod["classes"][name]
            if name in mod["enums"]:
                return {"kind": "enum", "members": {}}
        return None

    def resolve_defaults(self) -> None:
        """Defaults written as a C++ enum value (``vortex::alazar::coupling_t::AC``) named as Python's."""
        for mod in self.modules.values():
            for cls in mod["classes"].values():
                for init in cls.get("inits", []):
                    for p in init["params"]:
                        d = p["default"]
                        if d is None:
                            continue
                        em = re.match(r"([\w:]+)::(\w+)$", d)
                        if em and em.group(1) in self.enum_types:
                            e = self.enum_types[em.group(1)]
                            py = [k for k, v in e["cpp"].items() if v == em.group(2)]
                            if py:
                                p["python_default"] = {"enum": f"{e['module']}.{e['name']}", "member": py[0]}
                                continue
                        lit = literal_default(d)
                        if lit is not None:
                            p["python_default"] = lit
                            continue
                        am = re.match(r"std::array<float, \d+>\{(.*)\}$", d)
                        if am:
                            p["python_default"] = {"value": [float(x.strip().rstrip("f")) for x in am.group(1).split(",")]}


def extract(root: str) -> dict:
    ex = Extractor(root)
    ex.run()
    ex.documented()
    ex.resolve_defaults()
    features = None
    gs = os.path.join(root, "doc", "getting-started.rst")
    if os.path.exists(gs):  # the feature list vortex's released wheels print (``OK 0.5.1 ['machdsp', ...]``)
        fm = re.search(r"OK [\d.]+ \[([^\]]*)\]", open(gs).read())
        features = re.findall(r"'(\w+)'", fm.group(1)) if fm else None
    return {
        "vortex_version": version(root),
        "generated_by": "scripts/vortex_driver_names.py",
        "released_features": features,
        "sources": ["doc/getting-started.rst"] + MODULE_FILES + [e[0] for e in ENTRY_FILES] + HELPER_FILES + ["src/vortex-python/bind/common.hpp"] + DOC_FILES,
        "modules": {k: ex.modules[k] for k in sorted(ex.modules)},
    }


def main(argv: Optional[list] = None) -> int:
    """``[--reference DIR] [--out FILE]``: the listing as JSON, to FILE or stdout."""
    return _main(__doc__, extract, argv)


if __name__ == "__main__":
    sys.exit(main())
