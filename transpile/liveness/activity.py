"""Activity analysis: the names each statement reads, modifies and binds, per scope.

Composite names (`a.b`, `a[i]`) are tracked too: writing `a.b` modifies `a.b`
and reads `a`; writing `a[i]` modifies the container `a`. Nested functions and
lambdas are scopes of their own; the names they capture from the enclosing
function count as read where they are defined, and become its cell variables.
"""
from __future__ import annotations

import gast

from transpile import anno
from transpile.liveness.qual_names import QN, from_node

_FUNCTION_NODES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda)

# methods of lists, dicts, sets and arrays that change their object in place
MUTATING_METHODS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update",
                              "setdefault", "popitem", "add", "discard", "fill"})
_COMPREHENSIONS = (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)
FUNCTION_SCOPE = "function_scope"  # the Scope of a function's own body
_COMPOUND = (gast.If, gast.While, gast.For, gast.AsyncFor, gast.With, gast.AsyncWith, gast.Try)


class Scope:
    """Names read / modified / bound in a region of code.

    `isolated` scopes (function bodies, comprehensions) do not pass their
    modifications to the enclosing one. For function scopes, `params`,
    `globals`, `nonlocals`, `cell_vars` (locals captured by nested functions)
    and `nonlocal_writes` (names a nested function assigns through `nonlocal`)
    are filled in too.
    """

    def __init__(self, parent: "Scope | None" = None, isolated: bool = False):
        self.parent = parent
        self.isolated = isolated
        self.read: set[QN] = set()
        self.modified: set[QN] = set()
        self.bound: set[QN] = set()
        self.params: set[QN] = set()
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()
        self.captured: set[str] = set()
        self.is_comprehension = False
        self.nonlocal_writes: set[QN] = set()
        self.local_functions: dict[str, "Scope"] = {}
        self.binds: frozenset[str] = frozenset()   # of a function scope: the names its code binds (syntactically)

    @property
    def function(self) -> "Scope":
        s = self
        while not s.isolated and s.parent is not None:
            s = s.parent
        return s

    def merge_into_parent(self) -> None:
        p = self.parent
        if p is None:
            return
        p.read |= self.read
        if not self.isolated:
            p.modified |= self.modified
            p.bound |= self.bound

    def local_names(self) -> set[str]:
        """Simple names local to this function scope (assigned or parameters)."""
        names = {q.name for q in self.modified | self.bound | self.params if not q.is_composite}
        return names - self.globals - self.nonlocals

    @property
    def cell_vars(self) -> set[str]:
        """Locals of this function that nested functions capture (each captured name looked up: the
        converters ask at every cond and loop, and a long function's locals are many)."""
        return {name for name in self.captured if self._is_local(name)}

    def _is_local(self, name: str) -> bool:
        q = QN(name)
        return (q in self.modified or q in self.bound or q in self.params) and name not in self.globals \
            and name not in self.nonlocals

    def free_names(self) -> set[str]:
        """Simple names this scope reads or writes that belong to an enclosing scope."""
        used = {q.root.name for q in self.read | self.modified}
        return (used - self.local_names()) | self.nonlocals

    def __repr__(self) -> str:
        def fmt(s):
            return "{" + ", ".join(sorted(map(str, s))) + "}"
        return f"Scope(read={fmt(self.read)}, modified={fmt(self.modified)}, bound={fmt(self.bound)})"


class _Analyzer(gast.NodeVisitor):
    def __init__(self, annotate: bool = True):
        self.scope: Scope | None = None
        self.annotate = annotate

    def _set(self, node, key, value) -> None:
        if self.annotate:
            anno.set_anno(node, key, value)

    # -- scope plumbing ---------------------------------------------------------------------
    def _enter(self, isolated: bool = False) -> Scope:
        self.scope = Scope(self.scope, isolated)
        return self.scope

    def _exit(self) -> Scope:
        s = self.scope
        s.merge_into_parent()
        self.scope = s.parent
        return s

    def _block(self, stmts, node, key) -> Scope:
        self._enter()
        for s in stmts:
            self.visit(s)
        scope = self._exit()
        self._set(node, key, scope)
        return scope

    # -- names --------------------------------------------------------------------------------
    def _read(self, qn: QN) -> None:
        self.scope.read.add(qn)
        self.scope.read |= qn.support

    def _modify(self, qn: QN) -> None:
        self.scope.modified.add(qn)
        if qn.is_composite:
            self.scope.read |= qn.parent.support | qn.key_names
            if qn.key is not None:  # an item changed in place changes its container: d['a']['v'] = x changes d
                self._modify(qn.parent)

    def visit_Name(self, node):
        qn = QN(node.id)
        if isinstance(node.ctx, gast.Load):
            self._read(qn)
        elif isinstance(node.ctx, (gast.Store, gast.Del)):
            self._modify(qn)
        elif isinstance(node.ctx, gast.Param):
            self.scope.params.add(qn)
            self.scope.bound.add(qn)
        if node.annotation is not None:
            self.visit(node.annotation)

    def visit_Attribute(self, node):
        qn = from_node(node)
        if isinstance(node.ctx, (gast.Store, gast.Del)):
            if qn is not None:
                self._modify(qn)
            self._visit_loaded(node.value)
            return
        self.generic_visit(node)
        if qn is not None:
            self._read(qn)

    def visit_Subscript(self, node):
        if isinstance(node.ctx, (gast.Store, gast.Del)):
            container = from_node(node.value)
            if container is not None:
                self._modify(container)
                self._read(container)
            else:
                self.visit(node.value)
            self.visit(node.slice)
            return
        self.generic_visit(node)
        qn = from_node(node)
        if qn is not None:
            self._read(qn)

    def _visit_loaded(self, node):
        self.visit(node)

    # -- statements ---------------------------------------------------------------------------
    def _statement(self, node, visit_children):
        self._enter()
        visit_children()
        scope = self._exit()
        self._set(node, anno.SCOPE, scope)

    def visit(self, node):
        if isinstance(node, gast.stmt) and not isinstance(node, _FUNCTION_NODES):
            method = getattr(self, "visit_" + type(node).__name__, self.generic_visit)
            return self._statement(node, lambda: method(node))
        return super().visit(node)

    def visit_AugAssign(self, node):
        qn = from_node(node.target)
        self.visit(node.value)
        if qn is not None:
            self._read(qn)
        self.visit(node.target)

    def visit_Global(self, node):
        self.scope.function.globals.update(node.names)

    def visit_Nonlocal(self, node):
        self.scope.function.nonlocals.update(node.names)

    def visit_Import(self, node):
        for alias in node.names:
            name = alias.asname or alias.name.split(".")[0]
            self._modify(QN(name))

    visit_ImportFrom = visit_Import

    def visit_If(self, node):
        self.visit(node.test)
        self._block(node.body, node, anno.BODY_SCOPE)
        self._block(node.orelse, node, anno.ORELSE_SCOPE)

    def visit_While(self, node):
        self.visit(node.test)
        self._block(node.body, node, anno.BODY_SCOPE)
        self._block(node.orelse, node, anno.ORELSE_SCOPE)

    def visit_For(self, node):
        self.visit(node.iter)
        extra = anno.get_anno(node, "extra_test")
        if extra is not None:
            self.visit(extra)
        self._enter()
        self.visit(node.target)
        for s in node.body:
            self.visit(s)
        self._set(node, anno.BODY_SCOPE, self._exit())
        self._block(node.orelse, node, anno.ORELSE_SCOPE)

    visit_AsyncFor = visit_For

    def visit_With(self, node):
        for item in node.items:
            self.visit(item)
        self._block(node.body, node, anno.BODY_SCOPE)

    visit_AsyncWith = visit_With

    def visit_Try(self, node):
        self._block(node.body, node, anno.BODY_SCOPE)
        for h in node.handlers:
            if h.type is not None:
                self.visit(h.type)
            self._enter()
            if h.name is not None:
                self.visit(h.name)
            for s in h.body:
                self.visit(s)
            self._set(h, anno.BODY_SCOPE, self._exit())
        self._block(node.orelse, node, anno.ORELSE_SCOPE)
        self._block(node.finalbody, node, "finally_scope")

    visit_TryStar = visit_Try

    # -- functions, lambdas, comprehensions ---------------------------------------------------------
    def _function(self, node, name: str | None):
        outer = self.scope
        if outer is not None:  # the analysed function's own decorators and defaults run outside it
            for d in getattr(node, "decorator_list", ()):
                self.visit(d)
            for d in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
                self.visit(d)
        fn_scope = self._enter(isolated=True)
        fn_scope.binds = _bound_names(node)
        args = node.args
        for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if a is not None:
                self.visit(a)
        self._set(node, anno.ARGS_SCOPE, set(fn_scope.params))
        if isinstance(node, gast.Lambda):
            self.visit(node.body)
        else:
            for s in node.body:
                self.visit(s)
        self.scope = outer
        self._set(node, FUNCTION_SCOPE, fn_scope)
        fn_scope.nonlocal_writes = {q for q in fn_scope.modified if q.root.name in fn_scope.nonlocals}
        if outer is None:
            return
        captured = fn_scope.free_names()
        for n in captured:
            self._read(QN(n))
        outer.function.captured |= captured
        if name is not None:
            self._modify(QN(name))
            outer.function.local_functions[name] = fn_scope

    def visit_FunctionDef(self, node):
        if self.scope is None:
            self._function(node, None)
            return
        self._statement(node, lambda: self._function(node, node.name))

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self._function(node, None)

    def visit_ClassDef(self, node):
        for b in node.bases + node.decorator_list + [k.value for k in node.keywords]:
            self.visit(b)
        if self.scope is None:
            return
        self._statement(node, lambda: self._class(node))

    def _class(self, node) -> None:
        """A class defined in the function: its body and methods read the function's variables as nested
        functions do (a method reading a variable that a graph loop changes needs it carried as a cell)."""
        outer = self.scope
        class_scope = self._enter(isolated=True)
        for s in anno.get_anno(node, anno.CLASS_BODY, node.body):
            self.visit(s)
        self.scope = outer
        captured = class_scope.free_names()
        for n in captured:
            self._read(QN(n))
        outer.function.captured |= captured
        self._modify(QN(node.name))

    def _comprehension(self, node, elements):
        outer = self.scope
        self.visit(node.generators[0].iter)
        comp = self._enter(isolated=True)
        comp.is_comprehension = True
        for i, g in enumerate(node.generators):
            if i:
                self.visit(g.iter)
            self.visit(g.target)
            for cond in g.ifs:
                self.visit(cond)
        for e in elements:
            self.visit(e)
        self.scope = outer
        local = {q.name for q in comp.modified if not q.is_composite}
        for q in comp.read:
            if q.root.name not in local:
                self._read(q)
        self._set(node, anno.SCOPE, comp)

    def visit_ListComp(self, node):
        self._comprehension(node, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node):
        self._comprehension(node, [node.key, node.value])

    def visit_NamedExpr(self, node):
        self.visit(node.value)
        s = self.scope
        while s.is_comprehension:  # a walrus in a comprehension binds in the enclosing function
            s = s.parent
        s.modified.add(from_node(node.target))

    def visit_Call(self, node):
        self.generic_visit(node)
        # A method that changes its object in place (`lst.pop()`, `d.update(...)`, `a.sort()`) modifies it:
        # a graph loop or cond around the call carries it.
        func = node.func
        if isinstance(func, gast.Attribute) and func.attr in MUTATING_METHODS and isinstance(func.value, gast.Name) \
                and self.scope is not None and func.value.id in self.scope.function.binds:
            self._modify(QN(func.value.id))  # (a local: `np.sort(x)` changes nothing of the function's)
        # A call to a nested function that writes the caller's variables via `nonlocal`.
        if isinstance(node.func, gast.Name) and self.scope is not None:
            callee = self.scope.function.local_functions.get(node.func.id)
            if callee is not None:
                for q in callee.nonlocal_writes:
                    self._modify(q)
                    self._read(q)


def _bound_names(fn_node) -> frozenset[str]:
    """The names a function's own code binds (parameters, assignment and loop targets, imports, defs), not
    counting nested functions, lambdas, classes and comprehensions."""
    names: set[str] = set()
    args = fn_node.args
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if isinstance(a, gast.Name):
            names.add(a.id)
    todo = [fn_node.body] if isinstance(fn_node, gast.Lambda) else list(fn_node.body)
    while todo:
        n = todo.pop()
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
            names.add(n.id)
        elif isinstance(n, (gast.Import, gast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            names.add(n.name)
            continue
        if isinstance(n, (gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)):
            continue
        todo.extend(gast.iter_child_nodes(n))
    return frozenset(names)


def analyze(fn_node) -> Scope:
    """Annotates every statement of a function (and nested ones) with its Scope."""
    a = _Analyzer()
    a.visit(fn_node)
    return anno.get_anno(fn_node, FUNCTION_SCOPE)


def dump(fn_node) -> str:
    """One line per statement: `line: kind read=... modified=...` (for tests and debugging)."""
    lines = []
    for node in gast.walk(fn_node):
        if isinstance(node, gast.stmt) and anno.has_anno(node, anno.SCOPE):
            s = anno.get_anno(node, anno.SCOPE)
            lines.append((getattr(node, "lineno", 0), type(node).__name__,
                          f"read={_fmt(s.read)} modified={_fmt(s.modified)}"))
    lines.sort(key=lambda x: x[0])
    return "\n".join(f"{ln}: {kind} {text}" for ln, kind, text in lines)


def _fmt(names) -> str:
    return "{" + ", ".join(sorted(map(str, names))) + "}"


def node_effects(node) -> tuple[frozenset, frozenset]:
    """(read, modified) of a CFG node's own work: a simple statement, or the header
    of a compound statement (an if's test, a for's iterable and target, ...)."""
    a = _Analyzer(annotate=False)
    a.scope = Scope(None, isolated=True)
    parts: list = []
    if isinstance(node, (gast.If, gast.While)):
        parts = [node.test]
    elif isinstance(node, (gast.For, gast.AsyncFor)):
        parts = [node.iter] + [p for p in [anno.get_anno(node, "extra_test")] if p is not None]
    elif isinstance(node, gast.expr):  # a for loop's target
        parts = [node]
    elif isinstance(node, (gast.With, gast.AsyncWith)):
        parts = list(node.items)
    elif isinstance(node, gast.ExceptHandler):
        parts = [p for p in (node.type, node.name) if p is not None]
    elif isinstance(node, (gast.Try, gast.TryStar)):
        parts = []
    elif isinstance(node, gast.stmt):
        a.visit(node)
        s = a.scope
        return frozenset(s.read), frozenset(s.modified)
    for p in parts:
        a.visit(p)
    return frozenset(a.scope.read), frozenset(a.scope.modified)


_NO_EFFECTS = (frozenset(), frozenset())


def node_effects_of(graph) -> dict:
    """id(CFG node) -> node_effects of its statement, for every node of a CFG."""
    return {id(n): node_effects(n.ast_node) if n.ast_node is not None else _NO_EFFECTS for n in graph.nodes}
