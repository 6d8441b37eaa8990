"""Fused elementwise chains (exec/compiled/fusion.py): bit for bit the unfused code's values and dtypes, its
warnings and errors, and the chain's own kernel calls wherever the fused kernel declines. The tests that run
the fused kernel need numba (the `fast` extra) and are skipped without it; the others hold either way."""
import warnings

import numpy as np
import pytest

import grad
import graph as G
from exec import RunError, Session
from exec.compiled import fusion

B, H = 8, 128  # 1024 elements: the smallest arrays a chain is fused for


@pytest.fixture
def fused(monkeypatch):
    """Fusion on, each chain compiled on its first call (numba needed)."""
    pytest.importorskip("numba")
    monkeypatch.setattr(fusion, "_available", True)
    monkeypatch.setattr(fusion, "HOT_CALLS", 1)


@pytest.fixture
def unfused(monkeypatch):
    monkeypatch.setattr(fusion, "_available", False)


def _cell_graph(dtype=np.float32, steps=5):
    """An LSTM cell's loop and its gradient: the gradient loop's body is a chain of Add, Mul, TanhGrad and
    SigmoidGrad on (B, H) arrays, the forward's `f * c + i * g` another."""
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(dtype, (B, 4 * H), name="x")
        c0 = G.placeholder(dtype, (B, H), name="c0")

        def body(t, h, c):
            z = x * G.cast(t + 1, dtype) + G.concat([h, h, h, h], axis=1)
            i, f, u, o = (z[:, k * H:(k + 1) * H] for k in range(4))
            c = G.sigmoid(f) * c + G.sigmoid(i) * G.tanh(u)
            return t + 1, G.sigmoid(o) * G.tanh(c), c
        _, h, c = G.while_loop(lambda t, h, c: t < steps, body, (G.constant(0), c0, c0))
        loss = G.reduce_sum(h * h) + G.reduce_sum(c)
        gx, gc = grad.gradients(loss, [x, c0])
    return g, (x, c0), [loss, gx, gc]


def _feeds(placeholders, dtype, scale=1.0, seed=0):
    rng = np.random.default_rng(seed)
    return {p: (rng.standard_normal(p.shape) * scale).astype(dtype) for p in placeholders}


def _run(g, fetches, feeds, mode="compiled"):
    return Session(g, mode=mode).run(fetches, feeds)


def _same(got, want):
    for a, b in zip(got, want, strict=True):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_cell_gradient_is_the_unfused_one_bit_for_bit(fused, monkeypatch, dtype):
    g, ph, fetches = _cell_graph(dtype)
    feeds = _feeds(ph, dtype)
    source = Session(g, mode="compiled").compiled_source(fetches, feeds)
    assert "Fused" in source and "TanhGrad(" in source  # the kernel, and the chain's own calls beside it
    got = _run(g, fetches, feeds)
    monkeypatch.setattr(fusion, "_available", False)
    want = _run(g, fetches, feeds)
    _same(got, want)
    _same(got, _run(g, fetches, feeds, mode="dataflow"))


def test_the_fused_kernel_really_runs(fused):
    g, ph, fetches = _cell_graph()
    sess = Session(g, mode="compiled")
    sess.run(fetches, _feeds(ph, np.float32))
    running = {tuple(k.ops) for k in _kernels(sess) if k.run.__name__ == "run"}
    assert ("Mul", "Mul", "Add") in running  # the forward's f * c + i * g
    assert any(ops.count("SigmoidGrad") == 3 and ops.count("TanhGrad") == 2 for ops in running)  # the gradient's


def _kernels(sess) -> list:
    """The fused kernels of the session's compiled programs (globals of their generated modules)."""
    out = []
    for _, program in sess._programs.values():
        fn = getattr(program.function, "function", program.function)
        out += [v for v in fn.__globals__.values() if isinstance(v, fusion.FusedKernel)]
    return out


def test_without_numba_the_program_is_the_unfused_one(unfused):
    g, ph, fetches = _cell_graph()
    feeds = _feeds(ph, np.float32)
    assert "Fused" not in Session(g, mode="compiled").compiled_source(fetches, feeds)
    _same(_run(g, fetches, feeds), _run(g, fetches, feeds, mode="dataflow"))


def _chain_graph(dtype, n=3, shape=(B, H)):
    """A loop of n iterations of a chain of every fusable op, scalars beside arrays."""
    g = G.Graph()
    with g.as_default():
        a = G.placeholder(dtype, shape, name="a")
        b = G.placeholder(dtype, shape, name="b")
        s = G.placeholder(dtype, (), name="s")

        def body(t, x, y):
            u = x * y + s
            v = G.neg(u) - y * G.constant(dtype(0.5))
            w = G.square(v) + G.tanh_grad(x, u)
            return t + 1, w * s, G.sigmoid_grad(y, v) - u
        _, x, y = G.while_loop(lambda t, x, y: t < n, body, (G.constant(0), a, b))
    return g, (a, b, s), [x, y]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_inputs_fused_and_unfused_agree(fused, monkeypatch, dtype, seed):
    g, (a, b, s), fetches = _chain_graph(dtype)
    rng = np.random.default_rng(seed)
    feeds = {a: rng.standard_normal((B, H)).astype(dtype), b: rng.uniform(-1, 1, (B, H)).astype(dtype),
             s: dtype(rng.uniform(0.5, 1.5))}
    assert "Fused" in Session(g, mode="compiled").compiled_source(fetches, feeds)
    got = _run(g, fetches, feeds)
    monkeypatch.setattr(fusion, "_available", False)
    _same(got, _run(g, fetches, feeds))


def _overflowing(fused_on: bool, monkeypatch, errstate: dict):
    monkeypatch.setattr(fusion, "_available", fused_on)
    g, (a, b, s), fetches = _chain_graph(np.float32)
    feeds = {a: np.full((B, H), 3e18, np.float32), b: np.ones((B, H), np.float32), s: np.float32(1)}
    with warnings.catch_warnings(record=True) as caught, np.errstate(**errstate):
        warnings.simplefilter("always")
        try:
            result = _run(g, fetches, feeds)
        except RunError as e:
            result = e
    return result, [(w.category, str(w.message)) for w in caught]


def test_an_overflow_warns_as_the_unfused_code_does(fused, monkeypatch):
    """The kernel declines when a value is not finite: numpy's calls then warn, and give the values."""
    got, got_warnings = _overflowing(True, monkeypatch, {})
    want, want_warnings = _overflowing(False, monkeypatch, {})
    _same(got, want)
    assert got_warnings == want_warnings and want_warnings


@pytest.mark.parametrize("errstate,value", [({"over": "raise"}, 3e18),  # a product past float32's largest
                                            ({"under": "raise", "over": "ignore"}, 1e-30)])  # below its smallest
def test_numpy_errors_are_raised_as_the_unfused_code_raises_them(fused, monkeypatch, errstate, value):
    """The same RunError (node, line, iteration) caused by the same FloatingPointError."""
    g, (a, b, s), fetches = _chain_graph(np.float32)
    feeds = {a: np.full((B, H), value, np.float32), b: np.full((B, H), value, np.float32), s: np.float32(1)}
    errors = []
    for on in (True, False):
        monkeypatch.setattr(fusion, "_available", on)
        with np.errstate(**errstate), pytest.raises(RunError) as info:
            _run(g, fetches, feeds)
        errors.append((str(info.value), type(info.value.__cause__)))
    assert errors[0] == errors[1]
    assert errors[0][1] is FloatingPointError


def test_inputs_it_was_not_compiled_for_run_the_chains_own_calls(fused, monkeypatch):
    """A fed array in another memory order: numba's dispatch refuses it and the unfused calls compute it."""
    g, (a, b, s), fetches = _chain_graph(np.float32)
    rng = np.random.default_rng(1)
    wide = rng.standard_normal((B, 2 * H)).astype(np.float32)
    feeds = {a: wide[:, ::2], b: rng.uniform(-1, 1, (B, H)).astype(np.float32), s: np.float32(0.7)}
    assert not feeds[a].flags.c_contiguous
    got = _run(g, fetches, feeds)
    monkeypatch.setattr(fusion, "_available", False)
    _same(got, _run(g, fetches, feeds))


def test_the_kernel_waits_for_a_hot_chain(monkeypatch):
    """Compiling takes about a second: a chain runs its own calls until it has run HOT_CALLS times."""
    pytest.importorskip("numba")
    monkeypatch.setattr(fusion, "_available", True)
    monkeypatch.setattr(fusion, "HOT_CALLS", 10 ** 9)
    g, ph, fetches = _cell_graph()
    sess = Session(g, mode="compiled")
    sess.run(fetches, _feeds(ph, np.float32))
    kernels = _kernels(sess)
    assert kernels and all(k.calls > 0 and k.run.__name__ == "_warm_up" for k in kernels)


def test_small_arrays_and_broadcasts_are_not_fused(fused):
    g = G.Graph()
    with g.as_default():
        small = G.placeholder(np.float32, (4, 8), name="small")
        y = (small * small + small) * small - small
        big = G.placeholder(np.float32, (B, H), name="big")
        bias = G.placeholder(np.float32, (H,), name="bias")
        z = ((big + bias) * big + big) * bias
    source = Session(g, mode="compiled").compiled_source([y, z], [small, big, bias])
    assert "Fused" not in source  # (4, 8) is too small; z's chain has two ops of its full shape between broadcasts


def test_a_step_between_that_reads_the_chain_runs_after_it(fused):
    """A step between the chain's calls that reads one of its values and feeds none moves after the kernel."""
    g = G.Graph()
    with g.as_default():
        a = G.placeholder(np.float32, (B, H), name="a")
        u = a * a
        side = G.reduce_sum(u)  # between u and the rest of the chain in graph order
        v = (u + a) * a
        out = [v - u, side]
    sess = Session(g, mode="compiled")
    feeds = {a: np.linspace(-1, 1, B * H, dtype=np.float32).reshape(B, H)}
    source = sess.compiled_source(out, feeds)
    assert source.index("Fused") < source.index("Sum(")
    for _ in range(3):
        got = sess.run(out, feeds)
    want = Session(g, mode="dataflow").run(out, feeds)
    _same(got, want)
