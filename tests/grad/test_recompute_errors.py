"""memory_policy options of graph.while_loop (checked, saved, listed), the bodies "recompute" refuses (effects,
TensorArray writes, in the body or in a nested loop), each named with the loop's line and the policies to use
instead, nested loops with policies of their own, and second order."""
import json
import os
import zipfile

import numpy as np
import pytest

import grad
import graph
from exec import Session
from graph.printing import format_graph


def _loop(body_extra, **opts):
    """A loop whose body also runs body_extra(i, h) (for its effect or its value); its gradient."""
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(np.float64, (3,), name="x")

        def body(i, h):
            h = graph.tanh(h) + body_extra(i, h)
            return i + 1, h
        _, h = graph.while_loop(lambda i, h: i < 4, body, (graph.constant(0), x),  # the loop under test
                                memory_policy="recompute", **opts)
        loss = graph.reduce_sum(h)
    return g, lambda: grad.gradients(loss, [x])


def _refused(body_extra, *words):
    g, differentiate = _loop(body_extra)
    with open(__file__) as f:
        line = next(n for n, text in enumerate(f, 1) if text.rstrip().endswith("# the loop under test"))
    with g.as_default(), pytest.raises(graph.GraphError) as e:
        differentiate()
    msg = str(e.value)
    assert f"{os.path.basename(__file__)}:{line}" in msg, msg     # the loop's line
    assert "memory_policy='recompute'" in msg and "'keep' or 'swap'" in msg, msg
    for w in words:
        assert w in msg, msg


def test_a_variable_the_loop_assigns_is_refused():
    v = {}

    def extra(i, h):
        var = v.setdefault("v", graph.Variable(np.zeros(3), name="V"))
        var.assign(h)
        return var.read() * 0.0
    _refused(extra, "Variable")


def test_random_draws_are_refused():
    _refused(lambda i, h: graph.random_normal((3,), seed=1) * 0.1, "random")


def test_prints_are_refused():
    def extra(i, h):
        graph.print_(h)
        return h * 0.0
    _refused(extra, "Print")


def test_tensor_array_writes_in_a_cond_of_the_body_are_refused():
    def extra(i, h):
        ta = graph.TensorArray(np.float64, size=4)
        ta = graph.cond(graph.reduce_sum(h) > 0.0, lambda: ta.write(i, h), lambda: ta)
        return h * 0.0
    _refused(extra, "writes a TensorArray inside a cond")


def test_an_inner_loop_that_writes_an_array_is_refused():
    def extra(i, h):
        ta = graph.TensorArray(np.float64, size=2)
        _, ta = graph.while_loop(lambda j, ta: j < 2, lambda j, ta: (j + 1, ta.write(j, h)), (graph.constant(0), ta))
        return ta.read(0) * 0.0
    _refused(extra, "TensorArray")


@pytest.mark.parametrize("outer, inner", [(("recompute", 2), ("keep", None)), (("keep", None), ("recompute", 2)),
                                          (("recompute", 1), ("recompute", 3))])
def test_nested_loops_with_policies_of_their_own(outer, inner):
    """An inner loop in a recomputed body runs again (a copy, with its trip count) in the gradient loop;
    its own gradient saves or recomputes as its policy says."""
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(np.float64, (3,), name="x")

        def body(i, h, policy, k):
            def inner_body(j, y):
                return j + 1, graph.sin(y) * 1.1
            opts = {"memory_policy": policy, "checkpoint_every": k} if policy != "keep" else {}
            _, y = graph.while_loop(lambda j, y: j < i + 1, inner_body, (graph.constant(0), h), **opts)
            return i + 1, graph.tanh(y + h * 0.5)
        out = {}
        for name, (op, ok), (ip, ik) in (("got", outer, inner), ("keep", ("keep", None), ("keep", None))):
            opts = {"memory_policy": op, "checkpoint_every": ok} if op != "keep" else {}
            _, h = graph.while_loop(lambda i, h: i < 5, lambda i, h: body(i, h, ip, ik), (graph.constant(0), x),
                                    **opts)
            out[name] = grad.gradients(graph.reduce_sum(h * h), [x])[0]
    got = Session(g).run(out, {x: np.array([0.3, -0.4, 0.8])})
    np.testing.assert_allclose(got["got"], got["keep"], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("opts, words", [
    (dict(memory_policy="fast"), "memory_policy must be one of"),
    (dict(memory_policy="keep", checkpoint_every=2), "checkpoint_every is an option of memory_policy='recompute'"),
    (dict(memory_policy="recompute", checkpoint_every=0), "checkpoint_every must be a Python int >= 1"),
    (dict(memory_policy="recompute", swap_memory=True), "swap_memory=True asks for memory_policy='swap'"),
])
def test_bad_options_are_errors_at_the_users_line(opts, words):
    g = graph.Graph()
    with g.as_default(), pytest.raises(graph.GraphError, match=words) as e:
        graph.while_loop(lambda i: i < 3, lambda i: i + 1, (graph.constant(0),), **opts)
    assert os.path.basename(__file__) in str(e.value)


def test_the_policy_is_kept_listed_saved_and_loaded(tmp_path):
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(np.float64, (3,), name="x")
        step = (lambda i, h: i < 3, lambda i, h: (i + 1, graph.tanh(h)), (graph.constant(0), x))
        graph.while_loop(*step, memory_policy="recompute", checkpoint_every=4, name="a")
        graph.while_loop(*step, swap_memory=True, name="b")
        with graph.loop_memory_policy("recompute"):
            graph.while_loop(*step, name="c")

            def body(i, h):
                graph.set_memory_policy("keep")
                return i + 1, h
            graph.while_loop(lambda i, h: i < 3, body, (graph.constant(0), x), name="d")
        graph.while_loop(*step, name="e")
    expected = {"a": ("recompute", 4, False), "b": ("swap", 1, True), "c": ("recompute", 1, False),
                "d": ("keep", 1, False), "e": ("keep", 1, False)}
    listing = format_graph(g)
    assert "%a/Enter = Enter[frame=a, par=32, memory=recompute/4]" in listing
    assert "%b/Enter = Enter[frame=b, par=32, memory=swap]" in listing
    assert "%e/Enter = Enter[frame=e, par=32]" in listing
    g.save(str(tmp_path / "g.fg"))
    loaded = graph.load(str(tmp_path / "g.fg"))
    loaded = getattr(loaded, "graph", loaded)
    for gr in (g, loaded):
        loops = {n.frame.frame_name: n.frame for n in gr.nodes if n.op == "Enter"}
        got = {name: (lp.memory_policy, lp.checkpoint_every, lp.swap_memory) for name, lp in loops.items()}
        assert got == expected


@pytest.mark.parametrize("k", [1, 2])
def test_second_order_through_a_recomputed_loop(k):
    """With a checkpoint every iteration the gradient loop is differentiated again like any loop; with
    segments recomputed from checkpoints it is refused, naming the forward loop."""
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(np.float64, (3,), name="x")
        out = {}
        for policy in ("keep", "recompute"):
            opts = {"memory_policy": policy, "checkpoint_every": k} if policy == "recompute" else {}
            _, h = graph.while_loop(lambda i, h: i < 5, lambda i, h: (i + 1, graph.tanh(h * h + 0.3)),
                                    (graph.constant(0), x), **opts)  # the recomputed loop
            (dx,) = grad.gradients(graph.reduce_sum(h), [x])
            if policy == "recompute" and k > 1:
                with pytest.raises(graph.GraphError, match="checkpoint_every=2: the segments") as e:
                    grad.gradients(graph.reduce_sum(dx), [x])
                assert f"{os.path.basename(__file__)}:" in str(e.value)
                return
            out[policy] = grad.gradients(graph.reduce_sum(dx), [x])[0]
    got = Session(g).run(out, {x: np.array([0.1, 0.5, -0.3])})
    np.testing.assert_allclose(got["recompute"], got["keep"], rtol=1e-12, atol=1e-12)


def test_files_saved_before_memory_policies_load(tmp_path):
    """An archive whose loops have no memory_policy fields (older files) loads with "swap" where
    swap_memory was set and "keep" elsewhere."""
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(np.float64, (3,), name="x")
        step = (lambda i, h: i < 3, lambda i, h: (i + 1, graph.tanh(h)), (graph.constant(0), x))
        graph.while_loop(*step, swap_memory=True, name="s")
        graph.while_loop(*step, memory_policy="recompute", checkpoint_every=2, name="r")
    new, old = tmp_path / "new.fg", tmp_path / "old.fg"
    g.save(str(new))
    with zipfile.ZipFile(new) as zin, zipfile.ZipFile(old, "w") as zout:
        for item in zin.namelist():
            data = zin.read(item)
            if item == "graph.json":
                doc = json.loads(data)
                for ctx in doc["contexts"]:
                    ctx["fields"].pop("memory_policy", None)
                    ctx["fields"].pop("checkpoint_every", None)
                data = json.dumps(doc)
            zout.writestr(item, data)
    loaded = graph.load(str(old))
    loaded = getattr(loaded, "graph", loaded)
    loops = {n.frame.frame_name: n.frame for n in loaded.nodes if n.op == "Enter"}
    assert (loops["s"].memory_policy, loops["s"].swap_memory) == ("swap", True)
    assert (loops["r"].memory_policy, loops["r"].checkpoint_every) == ("keep", 1)
