"""The package layering of DESIGN.md, checked by reading every module's imports."""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
OURS = {"graph", "exec", "grad", "dist", "transpile"}
ALLOWED = {
    "graph": set(),
    "exec": {"graph"},
    "grad": {"graph"},
    "dist": {"graph", "exec"},
    "transpile": {"graph", "exec"},
}
# Within transpile, only the runtime helpers (every module of the operators package) and the api (api.py,
# signatures.py, the call signatures its traces are cached under, and captured_state.py, the Python state they
# read and write) may import graph, and only api.py may import exec (to run). Entries are paths under
# transpile/; one ending in "/" is a package.
TRANSPILE_USERS = {"graph": ("operators/", "api.py", "signatures.py", "captured_state.py"), "exec": ("api.py",)}


def _may_import(path: pathlib.Path, top: str) -> bool:
    module = path.relative_to(ROOT / "transpile").as_posix()
    return any(module.startswith(u) if u.endswith("/") else module == u for u in TRANSPILE_USERS[top])


def _imports(path: pathlib.Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0], node.lineno


def _modules():
    for pkg in sorted(OURS):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            yield pkg, path


@pytest.mark.parametrize("pkg,path", list(_modules()), ids=lambda v: str(v).replace(str(ROOT) + "/", ""))
def test_module_respects_layering(pkg, path):
    for top, line in _imports(path):
        if top not in OURS or top == pkg:
            continue
        where = f"{path.relative_to(ROOT)}:{line}"
        assert top in ALLOWED[pkg], f"{where}: {pkg}/ may not import {top}/ (allowed: {sorted(ALLOWED[pkg])})"
        if pkg == "transpile":
            assert _may_import(path, top), \
                f"{where}: only {', '.join(f'transpile/{u}' for u in TRANSPILE_USERS[top])} may import {top}/"


def test_every_package_is_checked():
    assert {p for p, _ in _modules()} == OURS


def test_dynamic_imports_are_checked_too():
    """`importlib.import_module("grad")` or `__import__("exec")` would bypass the check above."""
    for pkg, path in _modules():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                    "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
                top = str(node.args[0].value).split(".")[0]
                assert top not in OURS or top == pkg or top in ALLOWED[pkg], \
                    f"{path.relative_to(ROOT)}:{node.lineno}: {pkg}/ may not import {top}/"
