"""The package layering of docs/design.md (section 2), checked by reading every module's imports."""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
OURS = {"graph", "exec", "grad", "dist", "transpile"}
ALLOWED = {
    "graph": set(),
    "exec": {"graph", "dist"},
    "grad": {"graph"},
    "dist": {"graph", "exec"},
    "transpile": {"graph", "exec"},
}
# Within transpile, only the runtime helpers (every module of the operators package) and the api (api.py,
# tracing.py, the traces it builds and caches, signatures.py, the call signatures they are cached under, and
# captured_state.py, the Python state they read and write) may import graph, and only api.py and tracing.py
# may import exec (to run). Entries are paths under transpile/; one ending in "/" is a package.
TRANSPILE_USERS = {"graph": ("operators/", "api.py", "tracing.py", "signatures.py", "captured_state.py"),
                   "exec": ("api.py", "tracing.py")}
# Within exec, only session.py may import dist, and only dist's graph-level modules (placement and partitioning,
# which import graph alone); dist's runtime modules (a transport between processes) may import exec.
EXEC_DIST_USERS = {"session.py": ("dist.placement", "dist.partition")}
DIST_GRAPH_LEVEL = ("__init__.py", "placement.py", "partition.py")


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
        if pkg == "dist":
            assert path.relative_to(ROOT / "dist").as_posix() not in DIST_GRAPH_LEVEL or top == "graph", \
                f"{where}: dist's graph-level modules ({', '.join(DIST_GRAPH_LEVEL)}) import graph/ only"
    if pkg == "exec":
        for module, line in _full_imports(path):
            if module.split(".")[0] == "dist":
                allowed = EXEC_DIST_USERS.get(path.relative_to(ROOT / "exec").as_posix(), ())
                assert module in allowed, f"{path.relative_to(ROOT)}:{line}: exec/ may import only " \
                    f"{', '.join(m for ms in EXEC_DIST_USERS.values() for m in ms)} of dist/, and only from " \
                    f"{', '.join('exec/' + u for u in EXEC_DIST_USERS)}; got {module}"


def _full_imports(path: pathlib.Path):
    """(dotted module name, line) of each absolute import in `path`."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "dist":  # `from dist import partition` names modules or what dist/__init__ exports
                yield from ((f"dist.{a.name}", node.lineno) for a in node.names)
            else:
                yield node.module, node.lineno


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


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere in its body (top level or in a function)."""
    paths = {_module_name(path): path for _, path in _modules()}

    def owner(name: str) -> str | None:  # the module `name` is, or lives in
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets.update(owner(a.name) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
                # `from pkg import mod` imports the module pkg.mod; `from mod import name`, mod itself
                targets.update(owner(f"{base}.{a.name}") if f"{base}.{a.name}" in paths else owner(base)
                               for a in node.names)
        edges[name] = {t for t in targets if t and t != name}
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_cycles():
    """Modules import each other in one direction only, also through imports inside functions:
    a cycle means a shared piece lives in the wrong module."""
    cycles = _cycles(_import_graph())
    assert not cycles, "import cycles among the project's modules: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_cycle_finder_finds_cycles():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(edges) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
