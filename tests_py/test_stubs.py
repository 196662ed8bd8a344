"""The type stubs (.pyi) of the modules that make their classes from a table:
each declares exactly the module's names, so editors, type checkers and
readers see every class the module makes at import."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import vortexgo

PACKAGE = Path(vortexgo.__file__).parent
STUBBED = ("endpoint", "storage", "memory")


def _literal_all(tree: ast.Module, where: str) -> list[str]:
    """The module's ``__all__``, which must be a literal list of names."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            assert isinstance(node.value, ast.List), f"{where}: __all__ is not a literal list"
            names = []
            for elt in node.value.elts:
                assert isinstance(elt, ast.Constant) and isinstance(elt.value, str), \
                    f"{where}: __all__ holds {ast.dump(elt)}, expected literal names"
                names.append(elt.value)
            return names
    raise AssertionError(f"{where}: no __all__")


def _stub_names(tree: ast.Module) -> dict[str, ast.AST]:
    """The names a stub declares at its top level."""
    out: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = node
    return out


@pytest.mark.parametrize("name", STUBBED)
def test_stub_declares_the_module_names(name):
    module = importlib.import_module(f"vortexgo.{name}")
    source = ast.parse((PACKAGE / f"{name}.py").read_text())
    stub = ast.parse((PACKAGE / f"{name}.pyi").read_text())
    names = _literal_all(source, f"{name}.py")
    assert names == list(module.__all__)
    assert _literal_all(stub, f"{name}.pyi") == names, f"{name}.pyi's __all__ differs from the module's"
    declared = _stub_names(stub)
    missing = [n for n in names if n not in declared]
    assert not missing, f"{name}.pyi lacks {missing}"
    extra = [n for n in declared if not n.startswith("_") and not hasattr(module, n)]
    assert not extra, f"{name}.pyi declares {extra}, which vortexgo.{name} does not have"
    for n, node in declared.items():
        if isinstance(node, ast.ClassDef) and hasattr(module, n) and node.bases:
            runtime = getattr(module, n)
            base = node.bases[0]
            base_name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else ""
            assert runtime.__bases__[0].__name__ == base_name, \
                f"{name}.pyi: {n} derives from {base_name}, the module's from {runtime.__bases__[0].__name__}"


@pytest.mark.parametrize("name", STUBBED)
def test_table_classes_are_the_module_own(name):
    """Every class the table makes names itself and its module, as a written one would."""
    module = importlib.import_module(f"vortexgo.{name}")
    for n in module.__all__:
        obj = getattr(module, n)
        if isinstance(obj, type) and obj.__name__ == n:
            assert obj.__module__ == module.__name__, n
            assert obj.__qualname__ == n, n
            assert obj.__doc__ and "{name}" not in obj.__doc__, n


def test_package_is_typed():
    assert (PACKAGE / "py.typed").is_file()


def test_storage_endpoint_names_the_endpoint_classes():
    """vortexgo.storage_endpoint, the storage endpoints' earlier home, names the same classes."""
    from vortexgo import endpoint, engine, storage_endpoint

    assert list(storage_endpoint.__all__) == list(endpoint.STORAGE_ENDPOINTS)
    for n in storage_endpoint.__all__:
        assert getattr(storage_endpoint, n) is getattr(endpoint, n) is getattr(engine, n), n
    for n in endpoint.__all__:
        assert getattr(engine, n) is getattr(endpoint, n), n
