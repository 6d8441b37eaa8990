"""Each converter on its own: source before -> source after."""
import textwrap

import gast
import numpy as np
import pytest

from transpile import conversion, liveness
from transpile.converters import (
    asserts,
    break_statements,
    call_trees,
    conditional_expressions,
    conditionals,
    continue_statements,
    dead_flags,
    guard_clauses,
    lists,
    logical_expressions,
    loops,
    return_statements,
    slices,
    variables,
)
from transpile.converters.base import Context
from transpile.naming import Namer

_NEEDS_ANALYSIS = (conditionals, loops, call_trees)


def _convert(src: str, *steps) -> str:
    fn = gast.parse(textwrap.dedent(src)).body[0]
    ctx = Context("<test>", Namer.for_function(fn), fn_globals={"np": np})
    for step in steps:
        if step in _NEEDS_ANALYSIS or step is variables:
            liveness.analyze(fn)
        if step is variables:
            variables.mark_maybe_undefined(fn, ctx)
        fn = step.transform(fn, ctx)
    return conversion.to_source(fn)


def _normalized(src: str) -> str:
    return conversion.to_source(gast.parse(textwrap.dedent(src)).body[0])


CASES = {
    "guard_clauses": ((guard_clauses,), """
        def f(x):
            if x > 0:
                return 1
            elif x < 0:
                return -1
            return 0
        """, """
        def f(x):
            if x > 0:
                return 1
            elif x < 0:
                return -1
            else:
                return 0
        """),
    "return_statements_tail": ((return_statements,), """
        def f(x):
            if x > 0:
                return 1
            else:
                return -1
        """, """
        def f(x):
            if x > 0:
                retval = 1
            else:
                retval = -1
            return retval
        """),
    "return_statements_in_loop": ((return_statements,), """
        def f(xs, t):
            for v in xs:
                if v > t:
                    return v
            return t
        """, """
        def f(xs, t):
            do_return = False
            retval = ag.undefined_return()
            for v in xs:
                if v > t:
                    retval = v
                    do_return = True
                    break
            if not do_return:
                retval = t
                do_return = True
            return retval
        """),
    "break_statements": ((break_statements,), """
        def f(x, n):
            i = 0
            while i < n:
                if x[i] < 0:
                    break
                i += 1
            else:
                i = -1
            return i
        """, """
        def f(x, n):
            i = 0
            break_ = False
            while not break_ and i < n:
                if x[i] < 0:
                    break_ = True
                if not break_:
                    i += 1
            if not break_:
                i = -1
            return i
        """),
    "continue_statements_tail": ((guard_clauses, continue_statements), """
        def f(xs):
            s = 0
            for v in xs:
                if v < 0:
                    continue
                s += v
            return s
        """, """
        def f(xs):
            s = 0
            for v in xs:
                if v < 0:
                    pass
                else:
                    s += v
            return s
        """),
    "continue_statements_flag": ((continue_statements,), """
        def f(xs):
            s = 0
            for v in xs:
                with ctx:
                    if v < 0:
                        continue
                    s += v
            return s
        """, """
        def f(xs):
            s = 0
            for v in xs:
                continue_ = False
                with ctx:
                    if v < 0:
                        continue_ = True
                    if not continue_:
                        s += v
            return s
        """),
    "asserts": ((asserts,), """
        def f(x, n):
            assert x > 0, "positive"
            assert n < 10
            assert n > 0, f"n={n}"
            assert len(x) == len(self.xs)
            assert (n)
        """, """
        def f(x, n):
            ag.assert_stmt(x > 0, 'positive')
            ag.assert_stmt(n < 10, 'n < 10')
            ag.assert_stmt(n > 0, lambda: f'n={n}')
            ag.assert_stmt(len(x) == len(self.xs), 'len(x) == len(self.xs)')
            ag.assert_stmt(n, 'n')
        """),
    "lists": ((lists,), """
        def f(xs):
            out = []
            for v in xs:
                out.append(v * 2)
            return out
        """, """
        def f(xs):
            out = []
            for v in xs:
                out = ag.list_append(out, v * 2)
            return out
        """),
    "slices": ((slices,), """
        def f(x, i, v):
            x[i] = v
            x[0] += 1
            self.w[i] = v
        """, """
        def f(x, i, v):
            x = ag.set_item(x, i, v)
            x = ag.set_item(x, 0, x[0] + 1)
            ag.set_attribute_item(self, 'w', i, v)
        """),
    "call_trees": ((call_trees,), """
        def f(self, h, x):
            h = step(h, x)
            y = self.layer(h)
            n = len(x)
            z = np.tanh(h) + x.sum()
            g = lambda t: t
            return g(z)
        """, """
        def f(self, h, x):
            h = ag.call(step, h, x)
            y = ag.call(self.layer, h)
            n = ag.len(x)
            z = np.tanh(h) + x.sum()
            g = lambda t: t
            return g(z)
        """),
    "conditionals": ((conditionals,), """
        def f(x):
            if x > 0:
                y = x * 2
                z = y + 1
            else:
                z = -x
            return z
        """, """
        def f(x):
            def if_true():
                y = x * 2
                z = y + 1
                return z
            def if_false():
                z = -x
                return z
            z = ag.if_stmt(x > 0, if_true, if_false, (), ('z',), facts=ag.IfFacts(line=3, true=ag.BranchFacts(line=4, assigned={'z': 5}), false=ag.BranchFacts(line=7, assigned={'z': 7})))
            return z
        """),
    "loops_while": ((loops,), """
        def f(x, n):
            i = 0
            s = 0.0
            while i < n:
                t = x[i] * 2
                s = s + t
                i = i + 1
            return s
        """, """
        def f(x, n):
            i = 0
            s = 0.0
            def loop_test(i, s):
                return i < n
            def loop_body(i, s):
                t = x[i] * 2
                s = s + t
                i = i + 1
                return i, s
            i, s = ag.while_stmt(loop_test, loop_body, (i, s), ('i', 's'), facts=ag.LoopFacts(line=5, body_line=6))
            return s
        """),
    "loops_for": ((loops,), """
        def f(xs):
            s = 0.0
            for v in xs:
                s = s + v
            for i, v in enumerate(xs):
                last = v
            return s, last
        """, """
        def f(xs):
            s = 0.0
            def loop_body(v, s):
                s = s + v
                return s
            s = ag.for_stmt(xs, loop_body, (s,), ('s',), facts=ag.LoopFacts(line=4, body_line=5))
            last = ag.Undefined('last')
            def loop_body_2(itr, last):
                i, v = itr
                last = v
                return last
            last = ag.for_stmt(enumerate(xs), loop_body_2, (last,), ('last',), facts=ag.LoopFacts(line=6, body_line=7))
            return s, last
        """),
    "conditional_expressions": ((conditional_expressions,), """
        def f(x):
            y = x if x > 0 else -x
        """, """
        def f(x):
            y = ag.if_exp(x > 0, lambda: x, lambda: -x)
        """),
    "logical_expressions": ((logical_expressions,), """
        def f(x, i, n, done):
            if i < n and x[i] > 0 or not done:
                pass
            ok = 0 <= i < n
            ok2 = 0 <= g(i) < n
        """, """
        def f(x, i, n, done):
            if ag.or_(ag.and_(i < n, lambda: x[i] > 0), lambda: ag.not_(done)):
                pass
            ok = ag.and_(0 <= i, lambda: i < n)
            ok2 = ag.and_(0 <= (cmp := g(i)), lambda: cmp < n)
        """),
    "dead_flags": ((return_statements, dead_flags), """
        def f(x, n):
            for i in range(n):
                x = x + 1
                if x > 10:
                    return x
            return -x
        """, """
        def f(x, n):
            do_return = False
            retval = ag.undefined_return()
            for i in range(n):
                x = x + 1
                if x > 10:
                    retval = x
                    do_return = True
                    break
            if not do_return:
                retval = -x
            return retval
        """),
    "variables": ((variables,), """
        def f(x, n):
            for i in range(n):
                y = x[i]
            y += 1
            return y
        """, """
        def f(x, n):
            for i in range(n):
                y = x[i]
            y = ag.ld(y) + 1
            return y
        """),
}


@pytest.mark.parametrize("name", list(CASES))
def test_converter_before_after(name):
    steps, before, after = CASES[name]
    assert _convert(before, *steps) == _normalized(after)


def test_every_converter_has_a_before_after_case():
    import pkgutil

    import transpile.converters as pkg
    tested = {step.__name__.rsplit(".", 1)[-1] for steps, _, _ in CASES.values() for step in steps}
    # base and carried are helpers; unsupported only rejects (its cases are in test_errors.py)
    converters = {info.name for info in pkgutil.iter_modules(pkg.__path__)} - {"base", "carried", "unsupported"}
    assert converters <= tested, f"converters without a before/after case: {sorted(converters - tested)}"


def test_every_converter_module_has_a_docstring_and_an_example():
    import pkgutil

    import transpile.converters as pkg
    for info in pkgutil.iter_modules(pkg.__path__):
        module = __import__(f"transpile.converters.{info.name}", fromlist=["_"])
        assert module.__doc__ and len(module.__doc__.strip().splitlines()) == 1, info.name
        if info.name in ("base", "carried"):
            continue
        classes = [v for v in vars(module).values() if isinstance(v, type) and v.__module__ == module.__name__
                   and v.__doc__ and ("Before" in v.__doc__ or "::" in v.__doc__)]
        assert classes, f"{info.name}: the converter class needs a before/after example"
