#!/usr/bin/env python3
"""List vortex's public Python names outside its hardware drivers, from its binding sources.

The drivers' names (Alazar, DAQmx, Teledyne, IMAQ) are scripts/vortex_driver_names.py's; this
script lists the rest: every module, class, enum, enum member, module function and attribute,
and every class member that ``src/vortex-python/bindings.cpp`` binds through ``bind/*.cpp``
(``bind_core``, ``bind_log``, ``bind_marker``, ``bind_scan``, ``bind_acquire``, ``bind_process``,
``bind_format``, ``bind_io``, ``bind_engine``, ``bind_storage``, ``bind_memory``) plus the root
module's ``__version__`` and ``__feature__``.

It reads the C++ the way a reader does, without compiling it:

- each ``bind_*`` function is walked statement by statement: ``def_submodule`` makes a module,
  ``CLS_VAL``/``CLS_PTR``/``CLS_BASE_PTR``/``py::class_<...>(parent, name)`` a class (nested when
  the parent is a class), ``py::enum_`` an enum and its ``.value`` members,
  ``py::bind_vector`` a list type, ``m.def``/``m.attr`` module functions and attributes;
- members come from bind/common.hpp's macros (``RW_VAR``... an attribute, ``RO_*`` a read-only
  one, ``FXN`` a method, ``SFXN`` a static method, ``SHALLOW_COPY`` ``copy``), ``c.def``,
  ``c.def_property[_readonly]``, ``py::self == py::self`` (``__eq__``) and ``py::init`` (its
  keyword arguments and the defaults written there);
- calls of other functions of the binding files (``setup_*``, ``bind_*``, templates such as
  ``bind_cpu_tensor<int8_t>(m)``) are followed with their arguments bound: modules, classes,
  names (``bind_linear_transform<double>(m, "LinearTransform")``) and element types, so the
  per-dtype names (``CpuTensorInt8``, ``StackTensorEndpointInt8``, ``SimpleStackUInt16``)
  come out as vortex spells them (``detail::dtype<T>::display_name``; the engine's element
  types from ``bind/engine.hpp``'s ``engine_t``);
- the file's own function-like ``#define`` macros (``BIND_CPU_ENDPOINT``...) are expanded first;
- each name records the preprocessor conditions it is bound under (``VORTEX_ENABLE_CUDA``...).

The reading this script shares with scripts/vortex_driver_names.py (comments, ``#if`` conditions,
brackets, bind/common.hpp's macros, ``py::init``'s keyword arguments) is
scripts/vortex_bind_reader.py's.

Run from anywhere::

    python scripts/vortex_api_names.py [--reference DIR] [--out FILE]

Without ``--out`` the JSON goes to stdout. The test data is
``tests_py/data/vortex_api_names.json`` (tests_py/test_api_coverage.py).
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, Optional

if os.path.dirname(os.path.abspath(__file__)) not in sys.path:  # run as a script or imported from the tests
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vortex_bind_reader as vbr  # noqa: E402 - the C++ reading both listings share
from vortex_bind_reader import (  # noqa: E402
    MACRO_KIND, add_function, common_members, condition_at, conditions, init_at, literal_default, match_close,
    new_module, read, split_args, split_top, version)

BIND = "src/vortex-python/bind"
ENTRY = "src/vortex-python/bindings.cpp"
#: bind/*.cpp files bindings.cpp calls, in its order; each defines ``bind_<name>(py::module&)``.
ENTRY_FUNCS = ["core", "log", "marker", "scan", "acquire", "process", "format", "io", "engine", "storage", "memory"]
#: Functions of the binding files this listing does not follow: the drivers' own binders
#: (scripts/vortex_driver_names.py lists what they bind).
SKIP_FUNCS = {"bind_machdsp"}

#: detail::dtype<T>::display_name (bind/common.hpp).
DISPLAY = {"int8_t": "Int8", "int16_t": "Int16", "int32_t": "Int32", "int64_t": "Int64", "uint8_t": "UInt8",
           "uint16_t": "UInt16", "uint32_t": "UInt32", "uint64_t": "UInt64", "float": "Float32", "double": "Float64",
           "vortex::counter_t": "UInt64", "counter_t": "UInt64"}

#: What pybind11's bind_vector gives a vector of comparable values.
VECTOR_METHODS = [m for m in vbr.VECTOR_METHODS if m != "__repr__"] + ["__bool__"]

FUNC_RE = re.compile(r"(?:template\s*<([^{};]*?)>\s*)?(?:static\s+)?(?:void|auto|bool)\s+(\w+)\s*\(([^)]*)\)\s*\{")


def macros(text: str) -> dict:
    """The text's function-like ``#define NAME(params) body`` macros."""
    out = {}
    for m in re.finditer(r"^[ \t]*#define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)", text, re.M):
        body = m.group(3).replace("\\\n", "\n")
        out[m.group(1)] = ([p.strip() for p in m.group(2).split(",") if p.strip()], body)
    return out


def expand(text: str, defs: dict) -> str:
    """``text`` with ``defs``' macros expanded (``#param`` stringified, ``##`` pasted), repeatedly."""
    if not defs:
        return text
    pat = re.compile(r"\b(" + "|".join(map(re.escape, defs)) + r")\s*\(")
    for _ in range(8):
        out, i, hit = [], 0, False
        for m in pat.finditer(text):
            if m.start() < i:
                continue
            line_start = text.rfind("\n", 0, m.start()) + 1
            if text[line_start:m.start()].lstrip().startswith("#define"):
                continue
            end = match_close(text, m.end() - 1)
            args = split_args(text[m.end():end - 1])
            params, body = defs[m.group(1)]
            for p, a in zip(params, args):
                body = re.sub(r"#\s*" + p + r"\b(?!\s*#)", '"' + a + '"', body)
                body = re.sub(r"\b" + p + r"\b", a, body)
            body = body.replace("##", "")
            out.append(text[i:m.start()])
            out.append(body)
            i, hit = end, True
        out.append(text[i:])
        text = "".join(out)
        if not hit:
            break
    return text


class Func:
    """A function of a binding file: its template parameters, parameters and body."""

    def __init__(self, name: str, tparams: list, params: list, body: str, rel: str, start: int, marks: list) -> None:
        self.name, self.tparams, self.params, self.body = name, tparams, params, body
        self.rel, self.start, self.marks = rel, start, marks


def parse_functions(text: str, rel: str, marks: list) -> dict:
    out = {}
    for m in FUNC_RE.finditer(text):
        start = m.end() - 1
        tparams = [t.split()[-1] for t in split_args(m.group(1) or "") if t.strip()]
        params = []
        for p in split_args(m.group(3)):
            p = p.split("=")[0].strip()
            if p:
                params.append(p.replace("&", " ").split()[-1] if p.split() else p)
        out.setdefault(m.group(2), Func(m.group(2), tparams, params, text[start:match_close(text, start, "{", "}")],
                                        rel, start, marks))
    return out


class Env(dict):
    """Names in scope while walking: modules (``("module", path)``), classes (``("class", dict)``),
    strings (``("str", s)``) and types (``("type", cpp)``)."""

    def child(self) -> "Env":
        return Env(self)


class Extractor:
    def __init__(self, root: str) -> None:
        self.root = root
        self.modules: dict[str, dict] = {}
        self.files: dict[str, tuple] = {}
        self.headers: dict[str, Func] = {}
        self.engine = self._engine_types()
        for name in sorted(os.listdir(os.path.join(root, BIND))):
            rel = f"{BIND}/{name}"
            if name == "common.hpp" or not name.endswith((".cpp", ".hpp")):
                continue
            raw = read(root, rel)
            text = expand(raw, macros(raw))
            marks = conditions(text)
            funcs = parse_functions(text, rel, marks)
            self.files[rel] = (text, marks, funcs)
            if name.endswith(".hpp"):
                self.headers.update(funcs)

    def _engine_types(self) -> dict:
        """``engine_t``'s element types: bind/engine.hpp's ``vortex::engine_t<...>`` arguments under
        the parameter names of vortex/engine.hpp's ``engine_t`` alias."""
        args = re.search(r"vortex::engine_t<([^>]*)>", read(self.root, f"{BIND}/engine.hpp")).group(1)
        names = re.search(r"template<([^>]*)>\s*using engine_t", read(self.root, "src/vortex/engine.hpp")).group(1)
        return {n.split()[-1]: a.strip() for n, a in zip(names.split(","), args.split(","))}

    def module(self, path: str) -> dict:
        return self.modules.setdefault(path, new_module())

    # -- evaluation of the small expressions names are written with

    def type_of(self, t: str, env: Env) -> str:
        t = re.sub(r"\btypename\s+", "", t).strip()
        v = env.get(t)
        if v and v[0] == "type":
            return v[1]
        m = re.match(r"(\w+)::(\w+)$", t)
        if m and m.group(2) in self.engine:
            return self.engine[m.group(2)]
        return t

    def string(self, e: str, env: Env) -> Optional[str]:
        """A C++ string expression's value, or None."""
        e = e.strip()
        m = re.match(r"^\((.*)\)\.c_str\(\)$", e, re.S) or re.match(r"^(.*)\.c_str\(\)$", e, re.S)
        if m:
            return self.string(m.group(1), env)
        if re.match(r'^"[^"]*"s?$', e):
            return e.rstrip("s")[1:-1]
        m = re.match(r'^std::string\((.*)\)$', e, re.S)
        if m:
            return self.string(m.group(1), env)
        m = re.match(r"^(?:::)?(?:detail::)?dtype<(.*)>::display_name$", e)
        if m:
            return DISPLAY.get(self.type_of(m.group(1), env))
        m = re.match(r'^fmt::format\("([^"]*)",\s*(.*)\)$', e, re.S)
        if m:
            parts = [self.string(a, env) for a in split_args(m.group(2))]
            if None in parts:
                return None
            return m.group(1).replace("{}", "%s") % tuple(parts)
        if re.match(r"^\w+$", e):
            v = env.get(e)
            return v[1] if v and v[0] == "str" else None
        pieces = split_top(e, "+", "(<[", ")>]")
        if len(pieces) > 1:
            vals = [self.string(p, env) for p in pieces]
            return None if None in vals else "".join(vals)
        return None

    # -- walking

    def where(self, f: Func, pos: int, extra: list) -> dict:
        cond = sorted(set(condition_at(f.marks, f.start + pos) + list(extra)))
        d = {"source": f"{f.rel}:{f.body.count(chr(10), 0, pos) + self.files[f.rel][0].count(chr(10), 0, f.start) + 1}"}
        if cond:
            d["conditions"] = cond
        return d

    def run(self) -> dict:
        root = self.module("vortex")
        text = read(self.root, ENTRY)
        for m in re.finditer(r'\bm\.attr\("(\w+)"\)\s*=', text):
            root["attributes"][m.group(1)] = {"source": f"{ENTRY}:{text.count(chr(10), 0, m.start()) + 1}"}
        for name in ENTRY_FUNCS:
            rel = f"{BIND}/{name}.cpp"
            f = self.files[rel][2][f"bind_{name}"]
            self.call(f, [("module", "vortex")], [], [])
        return self.modules

    def lookup(self, name: str, rel: str) -> Optional[Func]:
        if name in SKIP_FUNCS:
            return None
        return self.files[rel][2].get(name) or self.headers.get(name)

    def call(self, f: Func, args: list, targs: list, extra: list) -> None:
        env = Env()
        for p, a in zip(f.params, args):
            env[p] = a
        for p, a in zip(f.tparams, targs):
            env[p] = ("type", a)
        self.block(f, f.body, 0, env, extra)

    def block(self, f: Func, body: str, base: int, env: Env, extra: list) -> None:
        """Walk the statements of ``body`` (a ``{...}`` block at ``base`` in ``f.body``)."""
        i, n = 1, len(body) - 1
        while i < n:
            ch = body[i]
            if ch == "{":
                end = match_close(body, i, "{", "}")
                self.block(f, body[i:end], base + i, env.child(), extra)
                i = end
                continue
            if ch.isspace() or ch in ";}":
                i += 1
                continue
            kw = re.match(r"(if|for|while|catch)\s*\(|(else|try)\b", body[i:])
            if kw:  # a control statement: walk its block(s) as if they always ran
                i = match_close(body, i + kw.end() - 1) if kw.group(1) else i + kw.end()
                continue
            end = statement_end(body, i)
            self.statement(f, body[i:end], base + i, env, extra)
            i = end

    def statement(self, f: Func, s: str, pos: int, env: Env, extra: list) -> None:
        s_stripped = s.strip()
        if s_stripped.startswith("#"):
            return
        m = re.match(r"auto\s+(\w+)\s*=\s*(\w+)\.def_submodule\(\"(\w+)\"\)", s_stripped)
        if m:
            parent = env.get(m.group(2))
            if parent and parent[0] == "module":
                path = f"{parent[1]}.{m.group(3)}"
                self.module(path)
                env[m.group(1)] = ("module", path)
            return
        m = re.match(r"auto\s+(\w+)\s*=\s*root\.attr\(\"(\w+)\"\)\.cast<py::module>\(\)", s_stripped)
        if m:
            env[m.group(1)] = ("module", f"vortex.{m.group(2)}")
            return
        m = re.match(r"using\s+(\w+)\s*=\s*(.+?);?$", s_stripped, re.S)
        if m:
            env[m.group(1)] = ("type", self.type_of(m.group(2), env))
            return
        m = re.match(r"auto\s+(\w+)\s*=\s*(.+?);?$", s_stripped, re.S)
        if m and "py::class_" not in s and "CLS_" not in s and "py::enum_" not in s:
            val = self.string(m.group(2), env)
            if val is not None:
                env[m.group(1)] = ("str", val)
                return
            v = env.get(m.group(2).strip())
            if v is not None:  # auto engine = c;
                env[m.group(1)] = v
                return
        # a class: CLS_* or py::class_ (assigned to a variable, or not)
        m = re.match(r"(?:auto\s+(\w+)\s*=\s*)?CLS_(?:VAL|PTR|BASE_PTR)\((\w+)", s_stripped)
        if m:
            self.new_class(f, pos, env, extra, env.get("m"), m.group(2), "c")
            return
        m = re.match(r"(?:auto\s+(\w+)\s*=\s*)?py::class_<", s_stripped)
        if m:
            close = angle_end(s_stripped, s_stripped.index("py::class_<") + len("py::class_"))
            call_end = match_close(s_stripped, close)
            cargs = split_args(s_stripped[close + 1:call_end - 1])
            name = self.string(cargs[1], env) if len(cargs) > 1 else None
            targs = split_args(s_stripped[s_stripped.index("py::class_<") + len("py::class_<"):close - 1])
            bases = [self.type_of(t, env) for t in targs[1:] if not re.match(r"(std::shared_ptr|sp)<", t.strip())]
            if name is not None:
                var = m.group(1) or "<tmp>"
                self.new_class(f, pos, env, extra, env.get(cargs[0]), name, var)
                if bases and env.get(var, ("",))[0] == "class":
                    env[var][1]["bases"] = bases
                rest = s_stripped[call_end:]
                if var == "<tmp>":  # chained .def(...) on the temporary
                    rest = rest.replace(".def", "<tmp>.def")
                self.members(f, rest, pos, env, var, extra)
            return
        m = re.match(r"py::bind_vector<.*?>\((\w+),\s*\"(\w+)\"\)", s_stripped, re.S)
        if m and env.get(m.group(1), ("",))[0] == "module":
            cls = {**self.where(f, pos, extra), "kind": "vector",
                   "members": {k: {"kind": "method"} for k in VECTOR_METHODS}, "inits": []}
            for d in re.findall(r"\)\s*\.def\(\"(\w+)\"", s_stripped):
                cls["members"][d] = {"kind": "method"}
            em = re.match(r"py::bind_vector<std::vector<(.*)>\s*>", s_stripped[:s_stripped.index(">(") + 1], re.S)
            if em:
                cls["element"] = self.type_of(em.group(1), env)
            self.module(env[m.group(1)][1])["classes"][m.group(2)] = cls
            return
        m = re.match(r"(\w+)\.export_values\(\)", s_stripped)
        if m and env.get(m.group(1), ("",))[0] == "enum":
            env[m.group(1)][1]["export_values"] = True
            return
        m = re.match(r"(?:auto\s+(\w+)\s*=\s*)?py::enum_<(.*?)>\((\w+),\s*\"(\w+)\"\)", s_stripped, re.S)
        if m:
            var, m = m.group(1), re.match(r"(?:auto\s+\w+\s*=\s*)?py::enum_<(.*?)>\((\w+),\s*\"(\w+)\"\)", s_stripped, re.S)
            members = re.findall(r"\.value\(\"(\w+)\"", s_stripped)
            e = {**self.where(f, pos, extra), "kind": "enum", "members": members,
                 "export_values": ".export_values()" in s_stripped}
            parent = env.get(m.group(2))
            if var:
                env[var] = ("enum", e)
            if parent and parent[0] == "module":
                self.module(parent[1])["enums"][m.group(3)] = e
            elif parent and parent[0] == "class":
                parent[1]["members"][m.group(3)] = e
            return
        # module functions and attributes
        m = re.match(r"(\w+)\.def\((\"\w+\"|\w+\.c_str\(\))", s_stripped)
        if m and env.get(m.group(1), ("",))[0] == "module":
            name = self.string(m.group(2), env)
            add_function(self.module(env[m.group(1)][1])["functions"], name, self.where(f, pos, extra))
            return
        m = re.match(r"(\w+)\.attr\(\"(\w+)\"\)\s*=", s_stripped)
        if m and env.get(m.group(1), ("",))[0] == "module":
            self.module(env[m.group(1)][1])["attributes"][m.group(2)] = self.where(f, pos, extra)
            return
        # members of the class in scope
        m = re.match(r"(\w+)\.def", s_stripped)
        if m and env.get(m.group(1), ("",))[0] == "class":
            self.members(f, s_stripped, pos, env, m.group(1), extra)
            return
        if re.match(r"(" + "|".join(MACRO_KIND) + r")\(|SHALLOW_COPY\(", s_stripped) and env.get("c", ("",))[0] == "class":
            self.members(f, s_stripped, pos, env, "c", extra)
            return
        # calls of other binding functions
        m = re.match(r"(\w+)\s*(<.*?>)?\s*\((.*)\)\s*;?$", s_stripped, re.S)
        if m:
            callee = self.lookup(m.group(1), f.rel)
            if callee is not None:
                targs = [self.type_of(t, env) for t in split_args(m.group(2)[1:-1])] if m.group(2) else []
                args = []
                for a in split_args(m.group(3)):
                    v = env.get(a.strip())
                    if v is None:
                        sv = self.string(a, env)
                        v = ("str", sv) if sv is not None else ("expr", a)
                    args.append(v)
                self.call(callee, args, targs, sorted(set(extra) | set(condition_at(f.marks, f.start + pos))))

    def new_class(self, f: Func, pos: int, env: Env, extra: list, parent: Any, name: str, var: Optional[str]) -> None:
        cls = {**self.where(f, pos, extra), "kind": "class", "members": {}, "inits": []}
        if env.get("C", ("",))[0] == "type":
            cls["cpp"] = env["C"][1]
        if parent and parent[0] == "module":
            cls = self.module(parent[1])["classes"].setdefault(name, cls)
        elif parent and parent[0] == "class":
            cls = parent[1]["members"].setdefault(name, cls)
        else:
            return
        env["<last>"] = ("class", cls)
        if var:
            env[var] = ("class", cls)

    def members(self, f: Func, s: str, pos: int, env: Env, var: str, extra: list) -> None:
        cls = env[var][1]
        mem = cls["members"]
        base = set(cls.get("conditions", []))

        def add(name: str, kind: str, at: int) -> None:
            d = {"kind": kind}
            cond = sorted(set(condition_at(f.marks, f.start + pos + at)) | set(extra))
            cond = sorted(set(cond) - base)
            if cond:
                d["conditions"] = cond
            mem.setdefault(name, d)

        v = re.escape(var)
        for name, kind, at in common_members(s, var):
            add(name, kind, at)
        for m in re.finditer(v + r"\.def\((\"\w+\"|\w+\.c_str\(\))", s):
            name = self.string(m.group(1), env)
            if name:
                add(name, "method", m.start())
        for m in re.finditer(v + r"\.def_static\(\"(\w+)\"", s):
            add(m.group(1), "staticmethod", m.start())
        for m in re.finditer(v + r"\.def_(?:readonly_static|property_readonly_static)\(\"(\w+)\"", s):
            add(m.group(1), "class_attribute", m.start())
        for m in re.finditer(v + r"\.def_(property|readwrite)\(\"(\w+)\"", s):
            add(m.group(2), "attribute", m.start())
        for m in re.finditer(v + r"\.def_(property_readonly|readonly)\(\"(\w+)\"", s):
            add(m.group(2), "readonly", m.start())
        for m in re.finditer(v + r"\.def\(py::init", s):
            init = init_at(s, m.start(), var)
            cond = sorted((set(condition_at(f.marks, f.start + pos + m.start())) | set(extra)) - base)
            if cond:
                init["conditions"] = cond
            if init not in cls["inits"]:
                cls["inits"].append(init)
            add("__init__", "method", m.start())


def statement_end(body: str, i: int) -> int:
    """Index just past the statement starting at ``i`` (a ``;`` outside brackets, or a
    preprocessor line)."""
    if body[i] == "#":
        j = body.find("\n", i)
        return len(body) if j < 0 else j + 1
    depth, instr = 0, False
    j = i
    while j < len(body):
        ch = body[j]
        if ch == '"' and body[j - 1] != "\\":
            instr = not instr
        elif not instr:
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                if depth == 0:
                    return j
                depth -= 1
            elif ch == ";" and depth == 0:
                return j + 1
        j += 1
    return j


def angle_end(s: str, i: int) -> int:
    """Index just past the ``<...>`` starting at ``s[i]``."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "<":
            depth += 1
        elif s[j] == ">":
            depth -= 1
            if depth == 0:
                return j + 1
    raise ValueError("unbalanced <")


def inherit(modules: dict) -> None:
    """A class bound with a base (``py::class_<C, holder, Base>``) lists the base's members it
    inherits (``"via": the base``), as ``dir()`` shows them."""
    by_cpp = {c["cpp"]: c for m in modules.values() for c in m["classes"].values() if c.get("cpp")}
    for m in modules.values():
        for c in m["classes"].values():
            for b in c.get("bases", []):
                base = by_cpp.get(b) or by_cpp.get(b.replace("vortex::", "", 1))
                for k, v in (base or {}).get("members", {}).items():
                    if k != "__init__":
                        c["members"].setdefault(k, {**v, "via": b})


def comparable(modules: dict) -> None:
    """pybind11's bind_vector gives ``==``, ``in``, ``count`` and ``remove`` only to a vector whose
    element compares: a list of a class bound without ``__eq__`` (``SegmentList``) has none."""
    by_cpp = {c["cpp"]: c for m in modules.values() for c in m["classes"].values() if c.get("cpp")}
    for m in modules.values():
        for c in m["classes"].values():
            el = by_cpp.get(c.get("element", ""))
            if c["kind"] == "vector" and el is not None and "__eq__" not in el["members"]:
                for k in ("__eq__", "__contains__", "count", "remove"):
                    c["members"].pop(k, None)


def resolve_defaults(modules: dict) -> None:
    """Constructor defaults written as plain numbers, booleans or strings, as Python values."""
    for mod in modules.values():
        for cls in list(mod["classes"].values()):
            for init in cls.get("inits", []):
                for p in init["params"]:
                    d = p["default"]
                    if d is None:
                        continue
                    lit = literal_default(d)
                    if lit is not None:
                        p["python_default"] = lit
                    elif d == "nullptr":
                        p["python_default"] = {"value": None}
                    elif re.match(r'^"[^"]*"$', d):
                        p["python_default"] = {"value": d[1:-1]}


def extract(root: str) -> dict:
    ex = Extractor(root)
    ex.run()
    inherit(ex.modules)
    comparable(ex.modules)
    resolve_defaults(ex.modules)
    return {
        "vortex_version": version(root),
        "generated_by": "scripts/vortex_api_names.py",
        "sources": [ENTRY] + sorted(ex.files) + ["src/vortex-python/bind/common.hpp", "src/vortex/engine.hpp"],
        "engine_types": ex.engine,
        "modules": {k: ex.modules[k] for k in sorted(ex.modules)},
    }


def main(argv: Optional[list] = None) -> int:
    """``[--reference DIR] [--out FILE]``: the listing as JSON, to FILE or stdout."""
    return vbr.main(__doc__, extract, argv)


if __name__ == "__main__":
    sys.exit(main())
