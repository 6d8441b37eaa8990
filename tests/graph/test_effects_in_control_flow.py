"""Effects (Variable assignments, prints) inside conds and loops, nested in loops and conds to any
depth, all run, once per time their branch or iteration runs, in program order, even when no output
depends on them: executor == reference interpreter == the same program in plain Python."""
import contextlib
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graph as G
from exec import Session
from exec.reference import run_reference

# a program: list of statements; ("assign", c): v = v * 2 + c | ("print",) | ("cond", then, else) on the
# parity of the innermost loop counter | ("loop", k, body) runs body k times
statements = st.recursive(
    st.one_of(st.integers(-2, 2).map(lambda c: ("assign", c)), st.just(("print",))),
    lambda inner: st.one_of(
        st.tuples(st.just("cond"), st.lists(inner, max_size=3), st.lists(inner, max_size=3)),
        st.tuples(st.just("loop"), st.integers(0, 3), st.lists(inner, min_size=1, max_size=3)),
    ), max_leaves=10)


def _int64(x: int) -> int:
    """x wrapped as int64 arithmetic wraps (deep loops of doublings overflow)."""
    return (x + 2 ** 63) % 2 ** 64 - 2 ** 63


def _python(program, state, counter=0):
    for s in program:
        if s[0] == "assign":
            state["v"] = _int64(state["v"] * 2 + s[1])
        elif s[0] == "print":
            print("v", state["v"], "at", counter)
        elif s[0] == "cond":
            _python(s[1] if counter % 2 == 0 else s[2], state, counter)
        else:
            for k in range(s[1]):
                _python(s[2], state, k)


def _graph(program, v, counter):
    for s in program:
        if s[0] == "assign":
            v.assign(v.read() * 2 + s[1])
        elif s[0] == "print":
            G.print_("v", v.read(), "at", counter)
        elif s[0] == "cond":
            # branches return nothing: only their effects make them matter
            G.cond(G.equal(G.mod(counter, 2), 0), lambda s=s: _graph(s[1], v, counter),
                   lambda s=s: _graph(s[2], v, counter))
        else:
            def body(k, s=s):
                _graph(s[2], v, k)
                return k + 1
            G.while_loop(lambda k, s=s: k < s[1], body, (G.constant(np.int64(0)),))


@settings(max_examples=40, deadline=None)
@given(st.lists(statements, min_size=1, max_size=4))
def test_effects_run_in_program_order_at_any_depth(program):
    state, want_out = {"v": 1}, io.StringIO()
    with contextlib.redirect_stdout(want_out):
        _python(program, state)
    for run in (lambda f: Session(f.graph).run(f), run_reference):
        g = G.Graph()
        with g.as_default():
            v = G.Variable(np.int64(1), name="v")
            _graph(program, v, G.constant(np.int64(0)))
            final = v.read()  # ordered after every effect above
        got_out = io.StringIO()
        with contextlib.redirect_stdout(got_out):
            got = run(final)
        assert got == state["v"]
        assert got_out.getvalue() == want_out.getvalue()


def test_a_branch_may_return_ops():
    g = G.Graph()
    with g.as_default():
        v = G.Variable(np.float64(0.0), name="v")
        p = G.placeholder(np.bool_, [])
        out = G.cond(p, lambda: G.group(v.assign_add(1.0)), lambda: G.no_op())
        out2 = G.cond(p, lambda: (G.group(v.assign_add(1.0)), v.read()), lambda: (None, v.read()))
        final = v.read()
    assert out is None and out2[0] is None
    assert Session(g).run(final, {p: True}) == 2.0 and Session(g).run(final, {p: False}) == 2.0
    with g.as_default():
        with pytest.raises(G.GraphError, match=r"the output of the cond has no value \(None, or an op\) in the "
                                               r"false branch but is value in the other"):
            G.cond(p, lambda: v.read(), lambda: G.no_op())
        with pytest.raises(G.GraphError, match=r"output \[1\] of the cond has no value .* in the true branch"):
            G.cond(p, lambda: (v.read(), None), lambda: (v.read(), v.read()))


def test_only_the_variables_a_loop_condition_reads_wait_for_the_iterations_effects():
    """Every node of an iteration runs after its LoopCond, so holding back the condition's variables
    (and the first, whose Merge gates the condition's own effects) keeps program order."""
    g = G.Graph()
    with g.as_default():
        v = G.Variable(np.int64(0), name="v")

        def cond(x, y, z):
            return v.read() < 10  # reads v, which the previous iteration assigned

        def body(x, y, z):
            v.assign(v.read() + 1)
            return x * 2, y + v.read(), z + 1
        x, y, z = G.while_loop(cond, body, (G.constant(np.int64(1)),) * 3)
        after = v.read()
    assert sum(n.name.rsplit("/", 1)[-1].startswith("after_effects") for n in g.nodes) == 1
    assert Session(g).run([x, y, z, after]) == [2 ** 10, 1 + sum(range(1, 11)), 11, 10]

    g = G.Graph()
    with g.as_default():
        out = io.StringIO()
        w = G.Variable(np.int64(0), name="w")

        def body(i, s, t, u):
            G.print_("i", i, "w", w.read())
            w.assign(w.read() + i)
            return i + 1, s + w.read(), t * 2, u - 1
        # the condition reads i and s through a cond (a lazy `and`): both wait, t and u go ahead
        res = G.while_loop(lambda i, s, t, u: G.cond(i < 4, lambda: s < 100, lambda: G.constant(False)), body,
                           tuple(G.constant(np.int64(c)) for c in (0, 0, 1, 0)))
    assert sum(n.name.rsplit("/", 1)[-1].startswith("after_effects") for n in g.nodes) == 2
    with contextlib.redirect_stdout(out):
        assert Session(g).run(list(res)) == [4, 0 + 1 + 3 + 6, 16, -4]
    assert out.getvalue().split() == "i 0 w 0 i 1 w 0 i 2 w 1 i 3 w 3".split()
