"""The corpus of everyday numpy programs (tests/transpile/corpus/, see its README), decorated unchanged.

For every program: converted == plain Python, values, dtypes and the arguments after the call, in compiled
and dataflow mode, over inputs whose loops run several times, once and zero times; once more with
`relax_shapes=True`, where the inputs' sizes differ, so that loops over their lengths are graph loops. Where
the program is numeric and exportable: `transpile.export_onnx`, run by onnxruntime with its default options,
== ours (for the exact shapes, and for the relaxed trace over every size). Where it is a loss of float inputs:
`grad.gradients` inside a converted wrapper == central differences of the plain program. The samplers' draws
follow their distributions; three programs run partitioned over two devices == one device.
"""
from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest

import grad
import graph
import transpile
from graph import nest
from tests.grad.gradcheck import numeric_gradient
from tests.transpile.corpus import (
    char_sampler,
    conjugate_gradient,
    ctc,
    discounted_returns,
    edit_distance,
    gae,
    gauss_seidel,
    histogram,
    jacobi,
    kmeans,
    knapsack,
    longest_increasing_subsequence,
    lstm_forward,
    monotonic_stack,
    newton,
    power_iteration,
    rejection_sampling,
    rk4,
    scans,
    sequence_cross_entropy,
    sieve,
    softmax_regression,
    td0,
    viterbi,
)
from tests.transpile.idioms import MODES, assert_like_python


@dataclass(frozen=True)
class Grad:
    """Which arguments the loss is differentiated by, which results make the loss (all when None), and the
    cases checked (those where the program's discrete decisions, trip counts included, do not change under
    a small perturbation; all when None)."""
    wrt: tuple[int, ...]
    outputs: tuple[int, ...] | None = None
    cases: tuple[int, ...] | None = None
    rtol: float = 1e-5
    atol: float = 1e-7


@dataclass(frozen=True)
class Program:
    fn: Callable
    cases: list
    python_numbers_may_differ: bool = False   # a Python number that graph control flow makes a numpy scalar
    export: bool = True                        # numeric and exportable
    drop: tuple[str, ...] = ()                 # export_onnx(drop=...): the Asserts of a `raise` in a graph
                                               # branch, of range()'s tensor step (reversed(range(n)) too)
    grad: Grad | None = None
    xfail: dict = field(default_factory=dict)  # check -> reason: "python", "relaxed", "onnx", "onnx_relaxed",
                                               # "gradients", "gradients_relaxed"


def _xfail(reason, *checks) -> dict:
    """A program's checks that fail (transpile: reported, not fixed yet), each a strict xfail for `reason`;
    no program has one now."""
    return {check: reason for check in checks}


def _log_model(cases):
    return [(y, np.log(A), np.log(B), np.log(Pi)) for y, A, B, Pi in cases]


PROGRAMS = {
    # linear solvers and root finding
    "jacobi": Program(jacobi.jacobi, jacobi.cases(), grad=Grad((0, 1), outputs=(0,), cases=(0, 1, 3))),
    "gauss_seidel": Program(gauss_seidel.gauss_seidel, gauss_seidel.cases(),
                            python_numbers_may_differ=True, grad=Grad((0, 1), outputs=(0,), cases=(0, 1, 2))),
    "conjugate_gradient": Program(conjugate_gradient.conjugate_gradient, conjugate_gradient.cases(),
                                  grad=Grad((0, 1, 2), outputs=(0,), cases=(1, 3))),
    "power_iteration": Program(power_iteration.power_iteration, power_iteration.cases(),
                               python_numbers_may_differ=True, grad=Grad((0,), cases=(1,))),
    "newton_kepler": Program(newton.kepler, newton.cases(), python_numbers_may_differ=True, drop=("Assert",),
                             grad=Grad((0, 1), outputs=(0,), cases=(0, 1, 3, 4))),
    # dynamic programming
    "edit_distance": Program(edit_distance.edit_distance, edit_distance.cases()),
    "longest_increasing_subsequence": Program(
        longest_increasing_subsequence.longest_increasing_subsequence, longest_increasing_subsequence.cases(),
        python_numbers_may_differ=True),
    "knapsack": Program(knapsack.knapsack, knapsack.cases()),
    "knapsack_1d": Program(knapsack.knapsack_1d, knapsack.cases(), grad=Grad((0,), cases=(1,))),
    "viterbi": Program(viterbi.viterbi, viterbi.cases(), drop=("Assert",), grad=Grad((1, 2, 3), outputs=(1,))),
    "viterbi_log": Program(
        viterbi.viterbi_log, _log_model(viterbi.cases()), grad=Grad((1, 2, 3), outputs=(0,))),
    # sampling (the draws of np.random: test_samplers_* below)
    "char_sampler_inverse_cdf": Program(char_sampler.sample_inverse_cdf, char_sampler.cases(),
                                        python_numbers_may_differ=True, export=False),  # np.searchsorted: NumpyCall
    "rejection_sampling_from": Program(rejection_sampling.rejection_sample_from, rejection_sampling.cases()),
    # clustering
    "kmeans": Program(kmeans.kmeans, kmeans.cases(), python_numbers_may_differ=True,
                      grad=Grad((0, 1), outputs=(0, 2))),
    # sequence losses
    "ctc_loss": Program(ctc.ctc_loss, ctc.cases(), grad=Grad((0,))),
    "masked_cross_entropy": Program(sequence_cross_entropy.masked_cross_entropy, sequence_cross_entropy.cases(),
                                    grad=Grad((0,))),
    "looped_cross_entropy": Program(sequence_cross_entropy.looped_cross_entropy, sequence_cross_entropy.cases(),
                                    python_numbers_may_differ=True, grad=Grad((0,))),
    # reinforcement learning
    "discounted_returns": Program(discounted_returns.discounted_returns, discounted_returns.cases(),
                                  drop=("Assert",), grad=Grad((0,))),
    "gae": Program(gae.compute_gae, gae.cases(), drop=("Assert",), grad=Grad((0, 1, 3))),
    "td0": Program(td0.td0, td0.cases(), python_numbers_may_differ=True, grad=Grad((0, 2))),
    "td0_in_place": Program(td0.td0_in_place, [c[:5] for c in td0.cases()], export=False),  # returns nothing
    # networks and training
    "lstm_forward": Program(lstm_forward.lstm_forward, lstm_forward.cases(), grad=Grad((0, 1, 2, 3, 4))),
    "softmax_regression_sgd": Program(softmax_regression.train_softmax_regression, softmax_regression.cases(),
                                      drop=("Assert",), grad=Grad((0,), cases=(0, 1))),
    # ODEs
    "rk4_oscillator": Program(rk4.integrate_oscillator, rk4.cases(), python_numbers_may_differ=True,
                              grad=Grad((0,), outputs=(1,), cases=(0, 1))),
    "rk4_lotka_volterra": Program(rk4.integrate_lotka_volterra, rk4.cases(), python_numbers_may_differ=True),
    # counting, scans, lists as stacks
    "histogram": Program(histogram.histogram, histogram.cases()),
    "histogram2d": Program(histogram.histogram2d, histogram.cases2d(), grad=Grad((2,), cases=(0, 1))),
    "prefix_sums": Program(scans.prefix_sums, scans.cases(), python_numbers_may_differ=True,
                           grad=Grad((0,), cases=(0, 2))),
    "exclusive_scan": Program(scans.exclusive_scan, scans.cases(), python_numbers_may_differ=True),
    "running_max": Program(scans.running_max, scans.cases(), python_numbers_may_differ=True,
                           grad=Grad((0,), cases=(0, 2))),
    "sieve": Program(sieve.primes_up_to, sieve.cases()),
    "sliding_window_max": Program(monotonic_stack.sliding_window_max, monotonic_stack.cases(), drop=("Assert",)),
    "next_greater": Program(monotonic_stack.next_greater, [c[:1] for c in monotonic_stack.cases()],
                            drop=("Assert",)),
}


def _params(check: str, names=None):
    """The programs' names for `check`, a strict xfail where the program's entry says so."""
    out = []
    for name in names if names is not None else PROGRAMS:
        reason = PROGRAMS[name].xfail.get(check)
        out.append(pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=reason)) if reason else name)
    return out


def _quiet(fn, *args):
    """fn(*args) without numpy's RuntimeWarnings (log(0), inf - inf in a DP table started at -inf)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args)


def _shapes_differ(cases) -> bool:
    return len({tuple(np.shape(a) for a in c if isinstance(a, np.ndarray)) for c in cases}) > 1


# --------------------------------------------------------------------------- converted == plain Python

@pytest.mark.parametrize("name", _params("python"))
def test_converted_program_is_like_python(name):
    p = PROGRAMS[name]
    _quiet(lambda: assert_like_python(p.fn, *p.cases, python_numbers_may_differ=p.python_numbers_may_differ))


@pytest.mark.parametrize("name", _params("relaxed", [n for n, p in PROGRAMS.items() if _shapes_differ(p.cases)]))
def test_converted_program_is_like_python_with_relaxed_shapes(name):
    """The first call traces the exact shapes; the next, of other sizes, the relaxed trace: a loop over a
    length is then a graph loop, which runs several times, once or zero times in the later calls."""
    p = PROGRAMS[name]
    _quiet(lambda: assert_like_python(p.fn, *p.cases, python_numbers_may_differ=p.python_numbers_may_differ,
                                      relax_shapes=True))


# --------------------------------------------------------------------------- ONNX

def _bound(fn, args) -> dict:
    bound = inspect.signature(fn).bind(*args)
    bound.apply_defaults()
    return dict(bound.arguments)


def _signature(fn, args, exact: bool):
    """What decides a trace: None-ness, the type of Python numbers, the dtype and the shape (or rank)."""
    def key(a):
        if a is None or isinstance(a, (bool, int, float)):
            return type(a)
        a = np.asarray(a)
        return a.dtype, a.shape if exact else a.ndim
    return tuple(key(a) for a in _bound(fn, args).values())


def _static_dims_accept(model, arguments) -> bool:
    """Whether the model's input dims that are numbers (not named unknowns) are those of `arguments`."""
    for i in model.graph.input:
        dims = i.type.tensor_type.shape.dim
        shape = np.shape(arguments[i.name])
        if len(dims) != len(shape) or any(d.HasField("dim_value") and d.dim_value != n for d, n in zip(dims, shape)):
            return False
    return True


def _check_onnx_equals_ours(p: Program, converted, export_args, calls, what, path):
    """The model exported for `export_args`, run by onnxruntime on each of `calls`, its outputs put in the
    function's structure (the saved signature's: a list built in a graph loop is one output, a value the
    trace knows is no output), == what the converted function returns."""
    from tests.graph.onnx_checks import check_same, default_runtime

    model = transpile.export_onnx(converted, export_args, drop=p.drop)
    converted.save(path, *export_args)
    signature = transpile.load(path).signature
    sess = default_runtime(model) if model.graph.output else None  # (a trace that computes nothing)
    ran = 0
    for args in calls:
        arguments = _bound(p.fn, args)
        if not _static_dims_accept(model, arguments):
            continue
        want = _quiet(converted, *args)
        outputs = [] if sess is None else sess.run(
            None, {i.name: np.asarray(arguments[i.name]) for i in model.graph.input})
        got = signature.pack(outputs)
        got_leaves, want_leaves = nest.flatten(got), nest.flatten(want)
        assert len(got_leaves) == len(want_leaves), f"{what}: {got!r} != {want!r}"
        for k, (g, w) in enumerate(zip(got_leaves, want_leaves)):
            check_same(g, w, f"{what}: result leaf {k} for {args}")
        ran += 1
    assert ran, f"{what}: no call ran"


@pytest.mark.parametrize("name", _params("onnx", [n for n, p in PROGRAMS.items() if p.export]))
def test_exported_program_computes_in_onnxruntime_what_it_computes_here(name, tmp_path):
    """Exported for each case's exact shapes (loops over lengths unrolled, the data-dependent ones graph
    loops), run on every case of those shapes."""
    pytest.importorskip("onnx")
    p = PROGRAMS[name]
    converted = transpile.function(p.fn)
    done = set()
    for args in p.cases:
        sig = _signature(p.fn, args, exact=True)
        if sig not in done:
            done.add(sig)
            same = [c for c in p.cases if _signature(p.fn, c, exact=True) == sig]
            _check_onnx_equals_ours(p, converted, args, same, f"{name} (exact shapes)", tmp_path / f"{len(done)}.fg")


@pytest.mark.parametrize("name", _params("onnx_relaxed", [n for n, p in PROGRAMS.items()
                                                          if p.export and _shapes_differ(p.cases)]))
def test_exported_relaxed_trace_computes_in_onnxruntime_what_it_computes_here(name, tmp_path):
    """The trace of unknown sizes (graph loops over the lengths: ONNX Loops), run on every case it accepts."""
    pytest.importorskip("onnx")
    p = PROGRAMS[name]
    relaxed = transpile.function(p.fn, relax_shapes=True)
    for args in p.cases:
        _quiet(relaxed, *args)
    first = _signature(p.fn, p.cases[0], exact=True)
    second = next(c for c in p.cases if _signature(p.fn, c, exact=True) != first)  # the call traced relaxed
    sig = _signature(p.fn, second, exact=False)
    same = [c for c in p.cases if _signature(p.fn, c, exact=False) == sig]
    _check_onnx_equals_ours(p, relaxed, second, same, f"{name} (relaxed shapes)", tmp_path / "relaxed.fg")


# --------------------------------------------------------------------------- gradients

def _sin_loss(results, outputs):
    """A scalar loss of the chosen results: sum(sin(.)) weighs every element differently."""
    if not isinstance(results, tuple):
        results = (results,)
    chosen = results if outputs is None else tuple(results[k] for k in outputs)
    return sum(np.sum(np.sin(np.stack(r) if isinstance(r, list) else r)) for r in chosen)


def _loss_and_gradients(fn, spec: Grad):
    def loss_and_gradients(*args):
        loss = _sin_loss(fn(*args), spec.outputs)
        return loss, grad.gradients(loss, [args[k] for k in spec.wrt])
    return loss_and_gradients


def _gradient_params():
    out = []
    for relax in (False, True):
        check = "gradients_relaxed" if relax else "gradients"
        for name, p in PROGRAMS.items():
            cases = p.cases if p.grad is None or p.grad.cases is None else [p.cases[k] for k in p.grad.cases]
            if p.grad is None or relax and not _shapes_differ(cases):
                continue
            reason = p.xfail.get(check)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(name, relax, marks=marks, id=f"{name}-{'relaxed' if relax else 'exact'}"))
    return out


@pytest.mark.parametrize("name, relax", _gradient_params())
def test_gradients_of_the_program_equal_finite_differences(name, relax):
    """In both modes; with `relax`, the calls after the first run the trace of unknown sizes, whose loops
    over the lengths are graph loops that the gradient runs backwards."""
    p, spec = PROGRAMS[name], PROGRAMS[name].grad
    cases = p.cases if spec.cases is None else [p.cases[k] for k in spec.cases]
    converted = {mode: transpile.function(_loss_and_gradients(p.fn, spec), mode=mode, relax_shapes=relax)
                 for mode in MODES}
    for args in cases:
        def plain_loss(*xs, args=args):
            full = list(args)
            for k, x in zip(spec.wrt, xs):
                full[k] = x
            return _sin_loss(p.fn(*full), spec.outputs)
        wrt = [np.array(args[k], dtype=np.float64) for k in spec.wrt]
        want_loss = _quiet(plain_loss, *wrt)
        want = _quiet(numeric_gradient, plain_loss, wrt)
        for mode, f in converted.items():
            loss, grads = _quiet(f, *args)
            np.testing.assert_allclose(loss, want_loss, rtol=1e-10, err_msg=f"{name} {mode}: the loss")
            for k, (g, w) in zip(spec.wrt, zip(grads, want)):
                g = np.zeros_like(w) if g is None else np.asarray(g)
                assert g.shape == w.shape, f"{name} {mode}: gradient for argument {k}: {g.shape} != {w.shape}"
                np.testing.assert_allclose(g, w, rtol=spec.rtol, atol=spec.atol,
                                           err_msg=f"{name} {mode}: gradient for argument {k}, args {args}")


# --------------------------------------------------------------------------- samplers

def _chi_square(counts, p) -> float:
    expected = counts.sum() * p
    return float(np.sum((counts - expected) ** 2 / expected))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sampler", [char_sampler.sample, char_sampler.sample_random_inverse_cdf],
                         ids=lambda f: f.__name__)
def test_samplers_draw_from_the_models_softmax(sampler, mode):
    """np.random.choice and an inverse CDF of np.random.rand() draw at every step (graph random ops): the
    same structure and dtypes as Python's draws, a reproducible sequence under np.random.seed, and, where the
    model's distribution is the softmax of its output bias at every step, frequencies that follow it."""
    Wxh, Whh, Why, bh, by = char_sampler.model()
    h0 = np.zeros((Whh.shape[0], 1))
    np.random.seed(0)
    want = sampler(h0, 2, 6, Wxh, Whh, Why, bh, by)
    np.random.seed(0)
    f = transpile.function(sampler, mode=mode)
    got = f(h0, 2, 6, Wxh, Whh, Why, bh, by)
    assert len(got[0]) == 6 and all(0 <= ix < len(by) for ix in got[0])
    assert {type(ix) for ix in got[0]} <= {type(ix) for ix in want[0]} | {np.int64}  # np.int64 for Python's int
    assert got[1].shape == want[1].shape and got[1].dtype == want[1].dtype
    np.random.seed(0)
    again = transpile.function(sampler, mode=mode)
    assert [int(i) for i in again(h0, 2, 6, Wxh, Whh, Why, bh, by)[0]] == [int(i) for i in got[0]]
    assert_like_python(sampler, (h0, 2, 0, Wxh, Whh, Why, bh, by), modes=(mode,))   # no step: no draw
    zero = [np.zeros_like(w) for w in (Wxh, Whh, Why, bh)]
    draws, h = f(h0, 2, 1000, *zero, by)
    np.testing.assert_array_equal(h, np.zeros_like(h0))
    p = np.exp(by.ravel() - by.max())
    p /= p.sum()
    counts = np.bincount(np.asarray(draws, dtype=np.int64), minlength=len(p))
    assert _chi_square(counts, p) < 20.5, (counts, p)   # 4 degrees of freedom: p-value 4e-4


@pytest.mark.parametrize("mode", MODES)
def test_rejection_sampling_draws_from_its_target_density(mode):
    """The while loop runs until n proposals are accepted: Beta(2, 2)'s mean and variance, the acceptance rate
    1/M, a Kolmogorov-Smirnov distance within its 1% bound; n = 0 draws nothing, as in Python."""
    np.random.seed(1)
    f = transpile.function(rejection_sampling.rejection_sample, mode=mode)
    assert_like_python(rejection_sampling.rejection_sample, (0,), (0, 2.0), modes=(mode,))
    samples, trials = f(2000)
    assert samples.dtype == np.float64 and samples.shape == (2000,) and type(trials) is int
    assert abs(samples.mean() - 0.5) < 0.02 and abs(samples.var() - 0.05) < 0.006
    assert abs(2000 / trials - 1 / 1.5) < 0.04
    x = np.sort(samples)
    cdf = 3 * x ** 2 - 2 * x ** 3
    ecdf = np.arange(1, len(x) + 1) / len(x)
    assert max(np.max(ecdf - cdf), np.max(cdf - (ecdf - 1 / len(x)))) < 1.63 / np.sqrt(len(x))


# --------------------------------------------------------------------------- partitioned

DEVICES = ("/cpu:0", "/cpu:1")


def _devices_of(converted, *args) -> set:
    return {node.device for node in converted.get_graph(*args).nodes if node.device}


def _on_device(fn, device):
    """`fn` with the ops it builds placed on `device` (None: left unplaced)."""
    def placed(*args, **kwargs):
        if device is None:
            return fn(*args, **kwargs)
        with graph.device(device):
            return fn(*args, **kwargs)
    return placed


def _two_layer_lstm(devices):
    """A layer per device: the second layer's loop reads the first's hidden states from the other device."""
    first, second = devices if devices else (None, None)

    def two_layers(xs, h0, c0, W1, b1, W2, b2):
        hs1, _, _ = _on_device(lstm_forward.lstm_forward, first)(xs, h0, c0, W1, b1)
        hs2, h, c = _on_device(lstm_forward.lstm_forward, second)(hs1, h0, c0, W2, b2)
        return hs2, h, c
    return two_layers


def _lstm_inputs():
    W2, b2 = lstm_forward.params(D=4, H=4, seed=21)
    return [(*case, W2, b2) for case in lstm_forward.cases()]


def test_two_layer_lstm_with_a_layer_per_device_equals_one_device_and_python():
    from tests.dist.helpers import within
    two = transpile.function(_two_layer_lstm(DEVICES), relax_shapes=True)
    assert _devices_of(two, *_lstm_inputs()[0]) == set(DEVICES)
    plain = _two_layer_lstm(None)
    for args in _lstm_inputs():   # 5 steps, 2 (the relaxed trace: graph loops), 0
        assert_same_values = within(60, two, *args)
        from tests.transpile.idioms import assert_same
        assert_same(assert_same_values, plain(*args))


def test_gradients_of_the_two_device_lstm_equal_one_devices_and_finite_differences():
    from tests.dist.helpers import within
    spec = Grad((0, 1, 3, 5))
    one = transpile.function(_loss_and_gradients(_two_layer_lstm(None), spec))
    two = transpile.function(_loss_and_gradients(_two_layer_lstm(DEVICES), spec))
    args = _lstm_inputs()[1]
    loss, grads = within(60, two, *args)
    want_loss, want = one(*args)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-12)
    for g, w in zip(grads, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)

    def plain_loss(*xs):
        full = list(args)
        for k, x in zip(spec.wrt, xs):
            full[k] = x
        return _sin_loss(_two_layer_lstm(None)(*full), None)
    for g, w in zip(grads, numeric_gradient(plain_loss, [np.array(args[k]) for k in spec.wrt]), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)


def _rk4_with_the_derivative_on(devices):
    """The integrator on devices[0], the right-hand side on devices[1] (None: one device)."""
    first, second = devices if devices else (None, None)

    def integrate(s0, t1, h=0.1):
        return _on_device(rk4.rk4, first)(_on_device(rk4.damped_oscillator, second), s0, 0.0, t1, h)
    return integrate


def _kepler_with_the_function_on(devices):
    """The solver on devices[0], f and f' on devices[1] (None: one device)."""
    first, second = devices if devices else (None, None)

    def kepler(M, e, maxiter=50):
        return _on_device(newton.newton, first)(_on_device(lambda E: E - e * np.sin(E) - M, second),
                                                _on_device(lambda E: 1.0 - e * np.cos(E), second), M,
                                                maxiter=maxiter)
    return kepler


@pytest.mark.parametrize("program, plain, cases", [
    (_rk4_with_the_derivative_on, rk4.integrate_oscillator, rk4.cases()),
    (_kepler_with_the_function_on, newton.kepler, newton.cases()),
], ids=["rk4", "newton"])
def test_a_loop_whose_function_evaluations_run_on_another_device(program, plain, cases):
    """The integrator's (the solver's) while loop on one device, the right-hand side (f and f') on /cpu:1: the
    loop's control on the first, a Send and Recv per evaluation; == one device == Python (for Newton: its
    returns inside the loop and the raise under a graph condition too)."""
    from tests.dist.helpers import within
    from tests.transpile.idioms import assert_same
    two = transpile.function(program(DEVICES))
    one = transpile.function(program(None))
    assert _devices_of(two, *cases[0]) == set(DEVICES)
    for args in cases:
        got = within(60, two, *args)
        assert_same(got, one(*args))
        assert_same(got, plain(*args), python_numbers_may_differ=True)
