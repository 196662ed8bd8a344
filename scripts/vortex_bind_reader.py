"""Reading vortex's pybind11 binding sources as text: what scripts/vortex_driver_names.py and
scripts/vortex_api_names.py share.

Neither script compiles vortex; both read its C++ the way a reader does. This module holds the
pieces of that reading they have in common: where vortex's source tree is, comments blanked,
the ``#if`` conditions in force at an offset, bracket matching and top-level splitting,
bind/common.hpp's member macros, ``py::init`` keyword arguments with their defaults written as
Python values, overloads of a module function, and the command line both scripts take.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any, Callable, Iterator, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
#: Where vortex's source tree usually is: ../shared next to the checkout (or next to its worktrees' folder).
REFERENCE_CANDIDATES = [os.path.normpath(os.path.join(HERE, *[".."] * k, "shared", "vortex-reference")) for k in (2, 3)]


def default_reference() -> Optional[str]:
    """$VORTEX_REFERENCE, else the first candidate that exists, else None."""
    env = os.environ.get("VORTEX_REFERENCE")
    if env:
        return env
    return next((c for c in REFERENCE_CANDIDATES if os.path.isdir(c)), None)


def find_reference(probe: str) -> Optional[str]:
    """The first of $VORTEX_REFERENCE and the candidates that holds the file ``probe`` (a path
    relative to vortex's source tree), else None: the GPU machine's carried copy holds only part
    of the tree, so a folder alone does not say the part a caller reads is there."""
    env = os.environ.get("VORTEX_REFERENCE")
    cands = ([env] if env else []) + REFERENCE_CANDIDATES
    return next((c for c in cands if os.path.isfile(os.path.join(c, probe))), None)


#: bind/common.hpp's member macros and what each binds.
MACRO_KIND = {
    "RW_VAR": "attribute", "RW_VAR_XT": "attribute", "RW_VAR_XT_FIXED": "attribute", "RW_MUT": "attribute",
    "RW_MUT_GIL": "attribute", "RW_ACC": "attribute", "RW_ACC_GIL": "attribute", "RW_ACC_XT": "attribute",
    "RO_VAR": "readonly", "RO_ACC": "readonly", "RO_ACC_GIL": "readonly",
    "FXN": "method", "FXN_GIL": "method", "SFXN": "staticmethod", "SRO_VAR": "class_attribute",
}
MACRO_RE = re.compile(r"\b(" + "|".join(MACRO_KIND) + r")\((\w+)")

#: What pybind11's bind_vector gives a vector of values with operator== (vortex's are).
VECTOR_METHODS = ["__init__", "__len__", "__getitem__", "__setitem__", "__delitem__", "__iter__", "__contains__",
                  "__eq__", "__repr__", "append", "extend", "insert", "pop", "clear", "count", "remove"]


def strip_comments(text: str) -> str:
    """C++ comments blanked (same length, newlines kept), strings untouched."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(c if c == "\n" else " " for c in text[i:j]))
            i = j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def read(root: str, rel: str) -> str:
    """The file ``rel`` of the source tree ``root``, comments blanked."""
    with open(os.path.join(root, rel)) as f:
        return strip_comments(f.read())


def version(root: str) -> Optional[str]:
    """The source tree's VERSION, or None."""
    path = os.path.join(root, "VERSION")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return f.read().strip()


def conditions(text: str) -> list[tuple[int, tuple[str, ...]]]:
    """(offset, active #if conditions) at each line start."""
    stack: list[str] = []
    marks, off = [], 0
    for line in text.splitlines(keepends=True):
        s = line.strip()
        if s.startswith("#ifdef"):
            stack.append(s[6:].strip())
        elif s.startswith("#ifndef"):
            stack.append(f"!{s[7:].strip()}")
        elif s.startswith("#if"):
            stack.append(re.sub(r"\s+", " ", s[3:].strip()))
        elif s.startswith("#else"):
            if stack:
                stack[-1] = f"!({stack[-1]})"
        elif s.startswith("#endif"):
            if stack:
                stack.pop()
        marks.append((off, tuple(stack)))
        off += len(line)
    return marks


def condition_at(marks: list, pos: int) -> list[str]:
    """The conditions ``marks`` (of :func:`conditions`) has in force at offset ``pos``."""
    cur: tuple[str, ...] = ()
    for off, st in marks:
        if off > pos:
            break
        cur = st
    return [re.sub(r"defined\((\w+)\)", r"\1", c) for c in cur]


def match_close(text: str, i: int, open_: str = "(", close: str = ")") -> int:
    """Index just past the bracket closing the one at text[i]."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_:
            depth += 1
        elif text[j] == close:
            depth -= 1
            if depth == 0:
                return j + 1
    raise ValueError(f"unbalanced {open_} at {i}")


def split_top(s: str, sep: str = ",", opens: str = "(<{[", closes: str = ")>}]") -> list[str]:
    """``s`` split at each ``sep`` outside brackets and strings, the pieces stripped (an empty
    last piece dropped)."""
    out, depth, cur, instr = [], 0, [], False
    for ch in s:
        if ch == '"':
            instr = not instr
        if not instr:
            if ch in opens:
                depth += 1
            elif ch in closes:
                depth -= 1
            elif ch == sep and depth == 0:
                out.append("".join(cur).strip())
                cur = []
                continue
        cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def split_args(s: str) -> list[str]:
    """Top-level comma split (respecting (), <>, {}, [] and strings)."""
    return split_top(s)


def init_params(call: str) -> dict:
    """A ``c.def(py::init...)`` call: its positional C++ types and keyword arguments with defaults."""
    args = split_args(call[call.index("(") + 1:call.rindex(")")])
    first = args[0]
    types_ = []
    tm = re.match(r"py::init<(.*)>\(\)$", first, re.S)
    if tm:
        types_ = split_args(tm.group(1))
    elif first.startswith("py::init(["):
        lm = re.match(r"py::init\(\[\]\((.*?)\)", first, re.S)
        types_ = [a.rsplit(" ", 1)[0].strip() for a in split_args(lm.group(1))] if lm and lm.group(1).strip() else []
    params = []
    for a in args[1:]:
        km = re.match(r'"(\w+)"_a(?:\s*=\s*(.*))?$', a, re.S)
        if km:
            params.append({"name": km.group(1), "default": None if km.group(2) is None
                           else re.sub(r"\s+", " ", km.group(2).strip())})
    return {"arity": len(types_), "params": params}


def init_at(s: str, at: int, var: str) -> dict:
    """:func:`init_params` of the ``var.def(py::init...)`` call starting at ``s[at]``."""
    return init_params(s[at:match_close(s, at + len(var) + len(".def"))])


def common_members(s: str, var: str) -> Iterator[tuple[str, str, int]]:
    """(name, kind, offset in ``s``) of the members both listings read the same way, in this
    order: bind/common.hpp's macros, ``SHALLOW_COPY`` (``copy``) and ``var.def(py::self == py::self)``."""
    for m in MACRO_RE.finditer(s):
        yield m.group(2), MACRO_KIND[m.group(1)], m.start()
    if "SHALLOW_COPY()" in s:
        yield "copy", "method", s.index("SHALLOW_COPY()")
    for m in re.finditer(r"\b" + re.escape(var) + r"\.def\(py::self\s*==\s*py::self\)", s):
        yield "__eq__", "operator", m.start()


def add_function(funcs: dict, name: str, where: dict) -> None:
    """Record the module function ``name`` bound at ``where``; an overload counts, and the
    function is bound when any of its overloads is (only the conditions they share remain)."""
    if name not in funcs:
        funcs[name] = where
        return
    f = funcs[name]
    f["overloads"] = f.get("overloads", 1) + 1
    common = sorted(set(f.get("conditions", [])) & set(where.get("conditions", [])))
    if common:
        f["conditions"] = common
    else:
        f.pop("conditions", None)


def new_module() -> dict:
    """An empty module entry of the listings."""
    return {"functions": {}, "attributes": {}, "classes": {}, "enums": {}}


def literal_default(d: str) -> Optional[dict]:
    """A default written as a C++ number (``1'000``, ``0.5f``) or boolean, as Python's
    (``{"value": ...}``), else None."""
    num = d.replace("'", "").rstrip("f")
    for conv in (int, float):
        try:
            return {"value": conv(num)}
        except ValueError:
            pass
    if d in ("true", "false"):
        return {"value": d == "true"}
    return None


def main(doc: str, extract: Callable[[str], Any], argv: Optional[list] = None) -> int:
    """The scripts' command line: ``[--reference DIR] [--out FILE]``, the JSON of ``extract`` to
    FILE or stdout; ``doc`` is the script's docstring (its first line describes it)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--reference", default=default_reference(),
                    help="vortex's source tree (default: $VORTEX_REFERENCE, else ../shared/vortex-reference)")
    ap.add_argument("--out", help="write the JSON here (default: stdout)")
    a = ap.parse_args(argv)
    if not a.reference:
        ap.error("vortex's source tree was not found: pass --reference or set VORTEX_REFERENCE")
    text = json.dumps(extract(a.reference), indent=1) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0
