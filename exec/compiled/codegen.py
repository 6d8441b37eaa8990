"""Emits one Python function for a structured plan (exec/compiled/structure.py).

Every kernel call is one line, `value = Kernel(args)`, with the kernels and constants bound as
globals of the generated module; guards become nested `if`/`else` blocks, loops `while True:`
with the predicate test and `break`, back edges one tuple assignment. A value is deleted
after its last use (at the guard it was defined under), so that buffers are released and a
Variable's array held by no one else can be updated in place (exec/kernels/variables.py).
Each loop counts its iterations (`n_<loop> += 1`) for error messages; the counters are read
only when a kernel fails (exec/compiled/runtime.py).
"""
from __future__ import annotations

import builtins
import keyword
import operator
import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from exec.compiled.folding import reads
from exec.compiled.fusion import Fused
from exec.compiled.structure import Call, Loop, Select, Structured
from graph.node import Node, Tensor

_INDENT = "    "


@dataclass(eq=False)
class Source:
    """A generated program: its source, the globals it runs with, and per line the node it calls."""
    text: str
    name: str
    globals: dict
    line_nodes: dict = field(default_factory=dict)  # line number -> (node, loop counters innermost first)


class _Namer:
    def __init__(self, reserved=()):
        self.taken = set(reserved) | set(dir(builtins)) | set(keyword.kwlist)

    def fresh(self, base: str) -> str:
        base = re.sub(r"\W", "_", base) or "v"
        if base[0].isdigit():
            base = "v" + base
        name, k = base, 1
        while name in self.taken:
            name, k = f"{base}_{k}", k + 1
        self.taken.add(name)
        return name


@dataclass(eq=False)
class _Stmt:
    """One statement of a block: its guard, the names it reads and binds, and how it is written."""
    guard: tuple
    uses: set
    defs: set
    write: Callable  # write(out, depth)
    final: bool = False  # a return: nothing runs after it
    selection: bool = False  # a cond's result taking one branch's value


class _Emitter:
    def __init__(self, program: Structured, kernel_of: Callable, constant_of: Callable, helpers: dict,
                 folded: dict, operators: dict, inits: dict):
        self.program = program
        self.operators = operators
        self.inits = inits
        self.folded = folded
        self.kernel_of = kernel_of
        self.constant_of = constant_of
        self.namer = _Namer(helpers)
        self.globals = dict(helpers)
        self.names: dict = {}        # (node id, port) -> variable or global name
        self.kernels: dict = {}      # id(kernel) -> global name
        self.constants: dict = {}    # (dtype, value) of a scalar constant -> global name
        self.line_nodes: dict = {}
        self.counters: list = []  # (counter, frame name) of the loops being written, outermost first
        self.loop_lines: list = []  # (first line, last line, counter, loop context) of each loop written
        self.read: set = set()
        self.scalars: set = set()    # variables that only ever hold scalars: never worth a `del`

    # -- names ---------------------------------------------------------------------------------
    def name(self, t: Tensor) -> str:
        key = (t.node.id, t.index)
        got = self.names.get(key)
        if got is None:
            node = t.node
            if key in self.folded or node.op == "Const" and node not in self.program.fed:
                value = self.folded[key] if key in self.folded else self.constant_of(node)
                got = self.scalar_constant(value) or self.namer.fresh(_base(node, t.index))
                self.globals[got] = value
            else:
                got = self.namer.fresh(_base(node, t.index))
                if t.shape == ():
                    self.scalars.add(got)
            self.names[key] = got
        return got

    def scalar_constant(self, value) -> str | None:
        """The global named after a numeric scalar constant (`c2`, `c0_5`, `cm1`), one per value and
        dtype; None for other values."""
        if not isinstance(value, np.generic) or value.dtype.kind not in "biuf":
            return None
        key = (value.dtype.str, value.item())
        got = self.constants.get(key)
        if got is None:
            text = repr(value.item()).replace("-", "m").replace(".", "_").replace("+", "")
            got = self.constants[key] = self.namer.fresh(f"c{text}" if text[0].isdigit() or text[0] == "m"
                                                         else f"c_{text.lower()}")
        return got

    def kernel(self, node: Node) -> str:
        fn = self.kernel_of(node)
        got = self.kernels.get(id(fn))
        if got is None:
            got = self.kernels[id(fn)] = self.namer.fresh(getattr(fn, "kernel_name", node.op))
            self.globals[got] = fn
        return got

    def literal(self, lit) -> str:
        key, taken = lit
        name = self.name(self.program.predicates[key])
        return name if taken else f"not {name}"

    def is_variable(self, name: str) -> bool:
        return name not in self.globals

    # -- statements ----------------------------------------------------------------------------
    def stmt(self, guard: tuple, uses: set, defs: set, write=None, final: bool = False) -> _Stmt:
        """A statement; the variables it reads (globals aside), its guard's predicates included,
        count as read for the whole program."""
        uses = {u for u in uses | {self.name(self.program.predicates[key]) for key, _ in guard}
                if self.is_variable(u)}
        self.read |= uses
        return _Stmt(guard, uses, defs, write, final)

    def statements(self, steps: list) -> list[_Stmt]:
        out = []
        for s in steps:
            if isinstance(s, Call):
                out.append(self.call(s))
            elif isinstance(s, Loop):
                out.append(self.loop(s))
            elif isinstance(s, Fused):
                out.append(self.fused(s))
            else:
                st = self.select(s)
                if st is None:
                    continue
                out.insert(_after_last_definer(out, st.uses), st)
        return _group_selections(out)

    def coalesce(self, steps: list, reads: dict) -> None:
        """Gives a branch's value the name of the cond's result when the result is its only reader and
        the value is computed in that branch only (`y = f(x)` instead of `t = f(x)` and `y = t`). A value
        computed before the cond keeps its own name: two of them, one per branch (a swap, `a, b = b, a`
        under a tensor `if`), would both be computed into the result's variable, the later one winning."""
        made = {}
        for s in steps:
            if isinstance(s, Call):
                for o in s.outs:
                    if o is not None:
                        made[(o.node.id, o.index)] = s
            elif isinstance(s, Loop):
                for part in (s.head, s.tail, s.body):
                    self.coalesce(part, reads)
        for s in steps:
            if isinstance(s, Select):
                key = (s.source.node.id, s.source.index)
                if key in made and made[key].guard == s.guard and reads.get(key) == 1 and key not in self.names:
                    self.names[key] = self.name(s.out)

    def call(self, s: Call) -> _Stmt:
        args = [self.name(t) for t in s.args]
        outs = [None if o is None else self.name(o) for o in s.outs]
        node = s.node
        template = self.operators.get(node) or _scalar_operator(node)
        fn = self.kernel(node) if template is None else None
        loc = f"  # {node.source}" if node.source else ""

        def write(out, depth):
            bound = [o if o is not None and o in self.read else "_" for o in outs]
            call = f"{fn}({', '.join(args)})" if template is None else template.format(*args)
            if not bound:
                line = call
            elif len(bound) == 1:
                line = call if bound[0] == "_" else f"{bound[0]} = {call}"
            elif all(b == "_" for b in bound):
                line = call
            else:
                line = f"{', '.join(bound)}, = {call}" if len(bound) == 1 else f"{', '.join(bound)} = {call}"
            self.line_nodes[len(out) + 1] = (node, tuple(reversed(self.counters)))
            out.append(_INDENT * depth + line + loc)
        return self.stmt(s.guard, set(args), {o for o in outs if o is not None}, write)

    def fused(self, s: Fused) -> _Stmt:
        """`result = Fused(inputs)`, unpacked into the chain's outputs; where the kernel declines (None), the
        chain's own calls, each on its line (exec/compiled/fusion.py)."""
        calls = [self.call(c) for c in s.calls]
        args = [self.name(t) for t in s.inputs]
        outs = [self.name(t) for t in s.outputs]
        fn = self.namer.fresh("Fused")
        self.globals[fn] = s.kernel
        result = self.namer.fresh("fused")
        inner = sorted({d for c in calls for d in c.defs} - set(outs))

        def write(lines, depth):
            self.line_nodes[len(lines) + 1] = (s.calls[-1].node, tuple(reversed(self.counters)))
            lines.append(_INDENT * depth + f"{result} = {fn}({', '.join(args)})  # {len(calls)} elementwise ops")
            lines.append(_INDENT * depth + f"if {result} is None:")
            for c in calls:
                c.write(lines, depth + 1)
            if inner:  # released as the unfused block would have released them
                lines.append(_INDENT * (depth + 1) + f"del {', '.join(inner)}")
            lines.append(_INDENT * depth + "else:")
            lines.append(_INDENT * (depth + 1) + f"_, {', '.join(outs)} = {result}")
            lines.append(_INDENT * depth + f"del {result}")
        return self.stmt(s.guard, set(args), set(outs), write)

    def select(self, s: Select) -> _Stmt:
        out, src = self.name(s.out), self.name(s.source)
        index = None
        if s.index_out is not None:
            index = self.name(s.index_out)
            const = f"INDEX_{s.index}"
            self.globals[const] = np.int32(s.index)
            self.namer.taken.add(const)

        if src == out and index is None:
            return None  # the branch computed it under the result's name

        def write(lines, depth):
            if src != out:
                lines.append(_INDENT * depth + f"{out} = {src}")
            if index is not None:
                lines.append(_INDENT * depth + f"{index} = INDEX_{s.index}")
        defs = {out} | ({index} if index else set())
        st = self.stmt(s.guard, {src} - {out}, defs, write)
        st.selection = True
        return st

    def loop(self, s: Loop) -> _Stmt:
        for (m, _), label in zip(s.init, s.labels, strict=True):  # the user's names for the loop variables
            key = (m.node.id, m.index)
            if label and key not in self.names:
                self.names[key] = self.namer.fresh(re.sub(r"\W+", "_", label).strip("_") or "loop_var")
                if m.shape == ():
                    self.scalars.add(self.names[key])
        merges = [self.name(m) for m, _ in s.init]
        init = [self.inits.get((m.node.id, m.index)) or self.name(v) for m, v in s.init]
        counter = self.namer.fresh("n_" + _base_name(s.frame.name))
        head = self.statements(s.head)
        tail = self.statements(s.tail)
        body = self.statements(s.body)
        pred = self.name(s.pred)
        nexts = [self.name(v) for _, v in s.back]
        exits = {self.name(t) for t in s.exits}
        moved = [(m, v) for m, v in zip(merges, nexts, strict=True) if m != v]
        # the test reads what the Exits hand out (it is the last use of the final iteration's values)
        brk = self.stmt((), {pred} | exits | _free(tail), _defs(tail))
        # a loop variable that goes on unchanged is read by the back edge: it must outlive the iteration
        back = self.stmt((), {v for _, v in moved} | {m for m, v in zip(merges, nexts, strict=True) if m == v},
                         set(merges))
        level = head + [brk] + body + [back]
        uses = _free(level, params=set(merges)) | {v for v in init if v.isidentifier()}
        where = f"  # {s.context.describe()}" if s.context is not None else f"  # frame {s.frame.name}"

        def write_break(lines, depth):
            lines.append(_INDENT * depth + f"if not {pred}:")
            self.block(tail, lines, depth + 1, dels=False)
            lines.append(_INDENT * (depth + 1) + "break")

        def write_back(lines, depth):
            if moved:
                lines.append(_INDENT * depth + f"{', '.join(m for m, _ in moved)} = {', '.join(v for _, v in moved)}")
            lines.append(_INDENT * depth + f"{counter} += 1")

        brk.write, back.write = write_break, write_back

        def write(lines, depth):
            for m, v in zip(merges, init, strict=True):
                lines.append(_INDENT * depth + f"{m} = {v}")
            lines.append(_INDENT * depth + f"{counter} = 0")
            lines.append(_INDENT * depth + "while True:" + where)
            first = len(lines)
            self.counters.append((counter, s.frame.name))
            self.block(level, lines, depth + 1, params=set(merges), rebound=back)
            self.counters.pop()
            self.loop_lines.append((first, len(lines), counter, s.context))
        return self.stmt(s.guard, uses, set(merges) | exits, write)

    # -- blocks --------------------------------------------------------------------------------
    def block(self, stmts: list[_Stmt], lines: list, depth: int, params=(), rebound=None, dels=True) -> None:
        """Writes `stmts` with their guards as nested ifs, and `del`s after last uses."""
        if dels:
            stmts = self.with_dels(stmts, set(params), rebound)
        open_: list = []  # the literals of the open ifs, outermost first, each with whether it is an else
        for st in stmts:
            g = st.guard
            k = 0
            while k < len(open_) and k < len(g) and open_[k][0] == g[k]:
                k += 1
            if k < len(open_) and k < len(g) and open_[k][0][0] == g[k][0] and not open_[k][1]:
                lines.append(_INDENT * (depth + k) + "else:")  # the complement of the if just closed
                open_ = open_[:k] + [(g[k], True)]
                k += 1
            else:
                open_ = open_[:k]
            for lit in g[k:]:
                lines.append(_INDENT * (depth + len(open_)) + f"if {self.literal(lit)}:")
                open_.append((lit, False))
            st.write(lines, depth + len(open_))

    def with_dels(self, stmts: list[_Stmt], params: set, rebound) -> list[_Stmt]:
        """`stmts` with a `del` after each value's last use in the block, at the guard it was defined
        under (values bound in the block or passed to it in `params`; never after `rebound`, the
        statement that binds the params again)."""
        last: dict = {}
        for k, st in enumerate(stmts):
            for name in st.uses:
                last[name] = k
        defined: dict = {p: () for p in params}
        for st in stmts:
            for name in st.defs:
                defined[name] = _common(defined[name], st.guard) if name in defined else st.guard
        after: dict = {}
        for name, guard in defined.items():
            k = last.get(name)
            if name not in self.read or name in self.scalars:
                continue
            if k is None:
                continue
            if rebound is not None and stmts[k] is rebound or stmts[k].final:
                continue
            # not inside a run of statements that share a deeper block: that would split it in two
            while k + 1 < len(stmts) and not stmts[k + 1].final and stmts[k + 1] is not rebound and \
                    len(_common_prefix(stmts[k].guard, stmts[k + 1].guard)) > len(guard):
                k += 1
            if k + 1 < len(stmts) and stmts[k + 1].final:
                continue  # the function returns next: everything is released then
            after.setdefault(k, []).append((guard, name))
        out = []
        for k, st in enumerate(stmts):
            out.append(st)
            by_guard: dict = {}
            for guard, name in after.get(k, ()):
                by_guard.setdefault(guard, []).append(name)
            for guard, names in sorted(by_guard.items(), key=lambda item: -len(item[0])):  # the open block first
                out.append(_Stmt(guard, set(), set(), lambda lines, depth, names=sorted(names):
                                 lines.append(_INDENT * depth + f"del {', '.join(names)}")))
        return out


def _after_last_definer(out: list[_Stmt], uses: set) -> int:
    """The place right after the last statement of `out` that binds a name in `uses` (into the block of the
    branch a cond result selects from), the end when none does: searched from the end, where it usually is
    (a scan from the start made long programs quadratic)."""
    for k in range(len(out) - 1, -1, -1):
        if out[k].defs & uses:
            return k + 1
    return len(out)


def _group_selections(stmts: list[_Stmt]) -> list[_Stmt]:
    """Runs of independent cond results ordered by guard, so that those of one branch share its
    block (`if p: a = x; b = y` / `else: ...` instead of one if/else per result)."""
    out, run = [], []
    for st in stmts + [None]:
        if st is not None and st.selection and not any(st.uses & r.defs for r in run):
            run.append(st)
            continue
        out += sorted(run, key=lambda r: r.guard)
        run = []
        if st is not None:
            if st.selection:
                run.append(st)
            else:
                out.append(st)
    return out


def _free(stmts: list[_Stmt], params=frozenset()) -> set:
    used, bound = set(), set(params)
    for st in stmts:
        used |= st.uses - bound
        bound |= st.defs
    return used


def _defs(stmts: list[_Stmt]) -> set:
    out = set()
    for st in stmts:
        out |= st.defs
    return out


def _common_prefix(a: tuple, b: tuple) -> tuple:
    k = 0
    while k < len(a) and k < len(b) and a[k] == b[k]:
        k += 1
    return a[:k]


def _common(a: tuple, b: tuple) -> tuple:
    return tuple(lit for lit in a if lit in b)


# Numpy scalars compute with Python's operators what the ufunc computes, in a tenth to a twentieth of the
# time (the scalar math fast path against a ufunc call): scalar arithmetic and comparisons use them.
# Operands of different dtypes are fine (numpy scalars promote as the ufunc does: float64 / int64 is
# float64), as long as the operator gives the node's own dtype, which `_operator_dtype` checks; bools
# take only the logical operators.
_ARITHMETIC = {"Add": "{} + {}", "Sub": "{} - {}", "Mul": "{} * {}", "TrueDiv": "{} / {}", "FloorDiv": "{} // {}",
               "Mod": "{} % {}", "Neg": "-{}", "Abs": "abs({})"}
_COMPARISONS = {"Less": "{} < {}", "LessEqual": "{} <= {}", "Greater": "{} > {}", "GreaterEqual": "{} >= {}",
                "Equal": "{} == {}", "NotEqual": "{} != {}"}
# `~` of a numpy bool scalar goes through the ufunc (0.5 to 1 us in numpy 2.4), and so does `^ True`
# (the Python bool is converted first); `^` with numpy's own True (TRUE, a helper) is the same logical not
# on the scalar fast path (30 ns)
_LOGICAL = {"LogicalAnd": "{} & {}", "LogicalOr": "{} | {}", "LogicalNot": "{} ^ TRUE"}
# np.maximum / np.minimum of two scalars of one dtype: a NaN operand wins, and of equal operands (0.0 and
# -0.0) the second is the result, as the ufunc gives them
_CHOICES = {"Maximum": "({0} if {0} > {1} or {0} != {0} else {1})",
            "Minimum": "({0} if {0} < {1} or {0} != {0} else {1})"}
_OPERATOR_FUNCTIONS = {"Add": operator.add, "Sub": operator.sub, "Mul": operator.mul, "TrueDiv": operator.truediv,
                       "FloorDiv": operator.floordiv, "Mod": operator.mod, "Neg": operator.neg, "Abs": abs}
_operator_dtypes: dict = {}


def _operator_dtype(op: str, dtypes: tuple):
    """The dtype `_ARITHMETIC[op]` gives on numpy scalars of `dtypes` (ones, so nothing divides by zero)."""
    key = (op, dtypes)
    got = _operator_dtypes.get(key)
    if got is None:
        with np.errstate(all="ignore"):
            result = _OPERATOR_FUNCTIONS[op](*(np.ones((), d)[()] for d in dtypes))
        got = _operator_dtypes[key] = np.asarray(result).dtype
    return got


def _scalar_operator(node: Node) -> str | None:
    """The operator expression (a format string of the inputs) that computes `node` on numpy scalars,
    or None where its kernel is called."""
    op, ins, outs = node.op, node.inputs, node.outputs
    if len(outs) != 1 or outs[0].shape != () or any(t.shape != () for t in ins):
        return None
    dtypes = tuple(t.dtype for t in ins)
    kinds = {getattr(d, "kind", None) for d in dtypes}
    if op in _ARITHMETIC and kinds <= set("iuf") and _operator_dtype(op, dtypes) == outs[0].dtype:
        return _ARITHMETIC[op]
    if op in _CHOICES and kinds <= set("iuf") and len(set(dtypes)) == 1 and outs[0].dtype == dtypes[0]:
        return _CHOICES[op]
    if op in _COMPARISONS and kinds <= set("iuf"):
        return _COMPARISONS[op]
    if op in _LOGICAL and kinds == {"b"}:
        return _LOGICAL[op]
    return None


def _base_name(name: str) -> str:
    return name.rsplit("/", 1)[-1].lower() or "loop"


def _base(node: Node, port: int) -> str:
    base = "cond" if node.op == "Merge" else _base_name(node.name)
    return base if port == 0 else f"{base}_{port}"


def generate(program: Structured, name: str, kernel_of: Callable, constant_of: Callable, helpers: dict,
             folded: dict, operators: dict | None = None, inits: dict | None = None) -> Source:
    """The source of `def name(*fed values): ... return [fetched values]` for `program`.

    `kernel_of(node)` is the callable a node's line calls (named by its `kernel_name` attribute where it
    has one, else by the op), `constant_of(node)` a Const's value,
    `folded` the values computed at compile time ((node id, port) -> value: constants too);
    `helpers` are the runtime names the code uses besides (DEAD, TRUE, failed, interrupted, dead, FETCHES, LINES,
    LOOPS); `operators` the nodes written as an expression instead of a call (node -> format string of
    its arguments, e.g. `{}[{}]`), besides scalar arithmetic; `inits` the loop variables that start at a
    literal instead of their initial value's name ((node id, port) of the Merge -> source text, e.g. `0`).
    """
    e = _Emitter(program, kernel_of, constant_of, helpers, folded, operators or {}, inits or {})
    e.coalesce(program.steps, reads(program))
    params = [e.name(t) for t in program.params]
    stmts = e.statements(program.steps)
    results, guarded = [], []
    for k, (t, guard) in enumerate(program.results):
        if guard == ():
            results.append(e.name(t))
            continue
        slot = e.namer.fresh(f"fetch_{k}")
        guarded.append((k, slot))
        results.append(slot)
        if guard is not None:  # else never live: always the dead-fetch error
            src = e.name(t)
            stmts.append(e.stmt(guard, {src}, {slot}, lambda lines, depth, slot=slot, src=src:
                                lines.append(_INDENT * depth + f"{slot} = {src}")))

    def write_return(lines, depth):
        for k, slot in guarded:
            lines.append(_INDENT * depth + f"if {slot} is DEAD:")
            lines.append(_INDENT * (depth + 1) + f"raise dead(FETCHES[{k}])")
        lines.append(_INDENT * depth + f"return [{', '.join(results)}]")
    stmts.append(e.stmt((), set(results), set(), write_return, final=True))
    lines = [f"def {name}({', '.join(params)}):"]
    lines += [_INDENT + f"{slot} = DEAD" for _, slot in guarded]
    lines.append(_INDENT + "try:")
    e.block(stmts, lines, 2, params=set(params))
    lines.append(_INDENT + "except Exception as error:")
    lines.append(_INDENT * 2 + "raise failed(error, LINES)")
    lines.append(_INDENT + "except KeyboardInterrupt as interrupt:")
    lines.append(_INDENT * 2 + "raise interrupted(interrupt, LOOPS) from None")
    e.globals["LINES"] = e.line_nodes
    e.globals["LOOPS"] = e.loop_lines
    return Source("\n".join(lines) + "\n", name, e.globals, e.line_nodes)
