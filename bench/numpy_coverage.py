"""Which of numpy's functions and ufuncs work on graph tensors: every public function numpy dispatches on
array arguments (NEP 18: numpy's namespace and np.linalg), every ufunc, and the ufunc methods reduce,
accumulate, outer and reduceat of the binary ufuncs, each called with typical arguments on graph
placeholders and run, against numpy on the same arrays.

A function works when the graph builds, runs, and gives numpy's values (floats within 1e-12 relative),
dtypes and shapes, for every sample call listed for it; it works as graph ops when no sample needed a NumpyCall
(numpy's own function run on the values), else through NumpyCall. Functions with effects (writing into an argument,
writing files) are not counted: they must refuse graph tensors, and the script checks that they do. Functions
of datetimes and of memory identity are not applicable to graph values. Prints one line per failure and the
counts; `--json` ends with one JSON line, `--all` prints the functions that work too.

Usage: python bench/numpy_coverage.py [--all] [--json] [--mode auto|compiled|dataflow]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from dataclasses import dataclass, field

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import graph as G  # noqa: E402
from exec import Session  # noqa: E402

_DISPATCHED = type(np.concatenate)
_RNG = np.random.default_rng(0)

# --------------------------------------------------------------------------- the arrays the samples use

X = _RNG.normal(size=(3, 4))                      # a matrix
X2 = _RNG.normal(size=(3, 4))
XT = _RNG.normal(size=(4, 2))
X3 = _RNG.normal(size=(2, 3, 4))
XN = np.array([[1.0, np.nan, -2.0, 0.5], [np.nan, np.nan, np.nan, np.nan], [3.0, -1.0, np.inf, 0.0]])
V = _RNG.normal(size=5)                           # a vector
V3 = np.array([0.5, -1.0, 2.0])
W3 = np.array([1.0, 2.0, 0.5])
A = _RNG.normal(size=(3, 3))
M = A @ A.T + 3 * np.eye(3)                       # symmetric positive definite
B3 = np.array([1.0, -2.0, 0.5])
I = np.array([3, 1, 4, 1, 5, 9])                  # small non-negative integers
I2 = np.array([1, 5, 7, 3])
IX = np.array([[0, 2, 1, 0], [1, 0, 2, 3], [2, 1, 0, 1]])   # column indices of X
BOOL = X > 0
SORTED = np.sort(V)
S0, S1 = np.array(1.0), np.array(4.0)             # scalars
U8 = np.array([3, 200, 17], np.uint8)
VZ = np.array([0.0, 0.0, 1.5, -2.0, 0.0])
C = np.array([1.0 + 2.0j, -0.5 + 0.0j, 3.0 - 1.0j])
T6 = np.eye(6).reshape(6, 2, 3)


@dataclass(frozen=True)
class Sample:
    """One call: `func(*args, **kwargs)`; every ndarray in args (lists and tuples included) and kwargs
    becomes a placeholder of its dtype and shape."""

    args: tuple
    kwargs: dict = field(default_factory=dict)


def s(*args, **kwargs) -> Sample:
    return Sample(args, kwargs)


# functions that write into an argument or a file: graph values must be refused, not written
EFFECTS = {"copyto", "place", "put", "put_along_axis", "putmask", "fill_diagonal", "save", "savetxt", "savez",
           "savez_compressed"}
# not applicable to graph values: datetimes, memory identity, Python objects describing a computation
NOT_APPLICABLE = {"busday_count": "datetimes", "busday_offset": "datetimes", "is_busday": "datetimes",
                  "datetime_as_string": "datetimes", "isnat": "datetimes", "may_share_memory": "memory identity",
                  "shares_memory": "memory identity", "einsum_path": "returns a contraction plan, not values"}

SAMPLES: dict[str, list[Sample]] = {
    "all": [s(BOOL), s(BOOL, axis=0)], "allclose": [s(X, X2), s(X, X)], "amax": [s(X, axis=0)],
    "amin": [s(X, axis=1)], "angle": [s(C)], "any": [s(BOOL, axis=1)], "append": [s(V, V3)],
    "apply_along_axis": [s(np.sum, 0, X)], "apply_over_axes": [s(np.sum, X, [0])],
    "argmax": [s(X, axis=1)], "argmin": [s(X)], "argpartition": [s(V, 2)], "argsort": [s(X, axis=0)],
    "argwhere": [s(BOOL)], "around": [s(X, 2)], "array2string": [s(V)], "array_equal": [s(X, X), s(X, X2)],
    "array_equiv": [s(X, X[0])], "array_repr": [s(V)], "array_split": [s(V, 3)], "array_str": [s(V)],
    "astype": [s(X, np.float32)], "atleast_1d": [s(S0), s(V, X)], "atleast_2d": [s(V)], "atleast_3d": [s(X)],
    "average": [s(X), s(X, axis=0, weights=W3), s(X, axis=0, weights=W3, returned=True)],
    "bincount": [s(I)], "block": [s([[M, M], [M, M]])], "broadcast_arrays": [s(X, X[0])],
    "broadcast_to": [s(V, (2, 5))], "can_cast": [s(X, np.float32)], "choose": [s(IX % 2, [X, X2])],
    "clip": [s(X, -0.5, 0.5), s(X, X2, X2 + 1.0)], "column_stack": [s([V3, W3])], "common_type": [s(X)],
    "compress": [s([True, False, True], X, axis=0)], "concat": [s([X, X2])], "concatenate": [s([X, X2], axis=1)],
    "convolve": [s(V, V3)], "copy": [s(X)], "corrcoef": [s(X)], "correlate": [s(V, V3)],
    "count_nonzero": [s(X > 0.5)], "cov": [s(X)], "cross": [s(V3, W3), s(X[:, :3], V3)],
    "cumprod": [s(X, axis=1)], "cumsum": [s(X)], "cumulative_prod": [s(V)], "cumulative_sum": [s(X, axis=0)],
    "delete": [s(V, 1)], "diag": [s(V), s(M), s(V3, k=1)], "diag_indices_from": [s(M)], "diagflat": [s(V3)],
    "diagonal": [s(M), s(X3, 1, 1, 2)], "diff": [s(X), s(V, n=2), s(X, axis=0, prepend=0.0)],
    "digitize": [s(V, np.array([-1.0, 0.0, 1.0]))], "dot": [s(M, M)], "dsplit": [s(X3, 2)],
    "dstack": [s([X, X2])], "ediff1d": [s(V)], "einsum": [s("ij->j", X)], "empty_like": [s(X)],
    "expand_dims": [s(X, 0)], "extract": [s(BOOL, X)], "fix": [s(X * 3)], "flatnonzero": [s(BOOL)],
    "flip": [s(X)], "fliplr": [s(X)], "flipud": [s(X)], "full_like": [s(X, 2.0)],
    "geomspace": [s(S0, S1, 5)], "gradient": [s(V), s(X, axis=1)], "histogram": [s(V, bins=4)],
    "histogram2d": [s(V, V, bins=3)], "histogram_bin_edges": [s(V, bins=4)], "histogramdd": [s(X, bins=2)],
    "hsplit": [s(X, 2)], "hstack": [s([V, V3])], "i0": [s(V)], "imag": [s(C)], "inner": [s(V3, W3), s(X, X2)],
    "insert": [s(V, 1, 5.0)], "interp": [s(V, SORTED, V3[np.arange(5) % 3])], "intersect1d": [s(I, I2)],
    "isclose": [s(X, X2), s(X, X + 1e-9)], "iscomplex": [s(C)], "iscomplexobj": [s(X)], "isin": [s(I, I2)],
    "isneginf": [s(XN)], "isposinf": [s(XN)], "isreal": [s(X)], "isrealobj": [s(X)], "ix_": [s(I2, I2)],
    "kron": [s(M, X)], "lexsort": [s((V, V))], "linspace": [s(S0, S1, 5), s(S0, S1, 4, endpoint=False)],
    "logspace": [s(S0, S1, 5)], "matrix_transpose": [s(X3)], "max": [s(X, axis=0)], "mean": [s(X, axis=1)],
    "median": [s(X), s(X, axis=1)], "meshgrid": [s(V, V3), s(V, V3, indexing="ij")], "min": [s(X)],
    "min_scalar_type": [s(X)], "moveaxis": [s(X3, 0, -1)], "nan_to_num": [s(XN)], "nanargmax": [s(X)],
    "nanargmin": [s(X, axis=0)], "nancumprod": [s(XN)], "nancumsum": [s(XN, axis=1)], "nanmax": [s(XN[[0, 2]])],
    "nanmean": [s(XN[[0, 2]], axis=1)], "nanmedian": [s(XN[[0, 2]])], "nanmin": [s(XN[[0, 2]], axis=0)],
    "nanpercentile": [s(XN[[0, 2]], 40)], "nanprod": [s(XN)], "nanquantile": [s(XN[[0, 2]], 0.4)],
    "nanstd": [s(XN[[0, 2]])], "nansum": [s(XN, axis=0)], "nanvar": [s(XN[[0, 2]], axis=1)], "ndim": [s(X)],
    "nonzero": [s(BOOL)], "ones_like": [s(X)], "outer": [s(V, V3)], "packbits": [s(BOOL)],
    "pad": [s(X, 1)], "partition": [s(V, 2)], "percentile": [s(X, 30), s(X, [10, 90], axis=0)],
    "permute_dims": [s(X3, (2, 0, 1))], "piecewise": [s(V, [V < 0, V >= 0], [-1.0, 1.0])], "poly": [s(V3)],
    "polyadd": [s(V, V3)], "polyder": [s(V)], "polydiv": [s(V, V3)], "polyfit": [s(V, V * 2 + 1, 1)],
    "polyint": [s(V)], "polymul": [s(V, V3)], "polysub": [s(V, V3)], "polyval": [s(V3, V)], "prod": [s(X)],
    "ptp": [s(X), s(X, axis=1)], "quantile": [s(X, 0.3)], "ravel": [s(X)],
    "ravel_multi_index": [s((I % 3, I % 4), (3, 4))], "real": [s(C)], "real_if_close": [s(X)],
    "repeat": [s(X, 2, axis=0), s(V, 3)], "reshape": [s(X, (4, 3))], "resize": [s(V, (2, 7))],
    "result_type": [s(X, np.float32)], "roll": [s(X, 1, axis=1), s(V, -2)], "rollaxis": [s(X3, 2)],
    "roots": [s(np.array([1.0, -3.0, 2.0]))], "rot90": [s(X), s(X, 3)], "round": [s(X, 1), s(X * 100, -1)],
    "searchsorted": [s(SORTED, V)], "select": [s([V < 0, V > 0.5], [V, -V])], "setdiff1d": [s(I, I2)],
    "setxor1d": [s(I, I2)], "shape": [s(X)], "sinc": [s(V), s(np.array([0.0, 0.5]))], "size": [s(X)],
    "sort": [s(X)], "sort_complex": [s(V)], "split": [s(V, [1, 3])], "squeeze": [s(X[None])],
    "stack": [s([X, X2])], "std": [s(X)], "sum": [s(X)], "swapaxes": [s(X, 0, 1)], "take": [s(X, I % 3)],
    "take_along_axis": [s(X, IX, 1)], "tensordot": [s(X, XT, 1), s(X3, X, ([1, 2], [0, 1]))],
    "tile": [s(V, 2)], "trace": [s(M), s(X3, 0, 1, 2)], "transpose": [s(X)], "trapezoid": [s(V)],
    "tril": [s(M), s(X, -1)], "tril_indices_from": [s(M)], "trim_zeros": [s(VZ)], "triu": [s(X, 1)],
    "triu_indices_from": [s(M)], "union1d": [s(I, I2)], "unique": [s(I), s(I, return_counts=True)],
    "unique_all": [s(I)], "unique_counts": [s(I)], "unique_inverse": [s(I)], "unique_values": [s(I)],
    "unpackbits": [s(U8)], "unravel_index": [s(I, (3, 4))], "unstack": [s(X)], "unwrap": [s(V * 3)],
    "vander": [s(V3)], "var": [s(X, ddof=1)], "vdot": [s(V, V)], "vsplit": [s(X, 3)], "vstack": [s([V, V])],
    "where": [s(BOOL, X, X2), s(BOOL)], "zeros_like": [s(X)],
}
LINALG_SAMPLES: dict[str, list[Sample]] = {
    "cholesky": [s(M)], "cond": [s(M)], "cross": [s(V3, W3)], "det": [s(M), s(np.stack([M, A]))],
    "diagonal": [s(M)], "eig": [s(M)], "eigh": [s(M)], "eigvals": [s(M)], "eigvalsh": [s(M)], "inv": [s(M)],
    "lstsq": [s(X.T, V[:4])], "matmul": [s(M, A)], "matrix_norm": [s(X)], "matrix_power": [s(M, 3)],
    "matrix_rank": [s(M)], "matrix_transpose": [s(X)], "multi_dot": [s([M, A, M])],
    "norm": [s(V), s(X), s(X, "fro"), s(X, 1), s(X, np.inf), s(V, 1), s(V, np.inf), s(V, 3), s(X, 2),
             s(X, "nuc"), s(X, axis=1), s(X, 1, axis=0)],
    "outer": [s(V, V3)], "pinv": [s(X)], "qr": [s(M)], "slogdet": [s(M)], "solve": [s(M, B3), s(M, X[:, :2])],
    "svd": [s(X)], "svdvals": [s(X)], "tensordot": [s(X, XT, axes=1)], "tensorinv": [s(T6, ind=1)],
    "tensorsolve": [s(M, B3)], "trace": [s(M)], "vecdot": [s(V3, W3)], "vector_norm": [s(V), s(X, ord=1)],
}
_INT_UFUNCS = {"bitwise_and", "bitwise_or", "bitwise_xor", "invert", "bitwise_not", "bitwise_invert", "left_shift",
               "right_shift", "bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm", "bitwise_count"}
_UFUNC_SAMPLES = {"ldexp": [s(X, IX)], "matmul": [s(M, A)], "vecdot": [s(V3, W3)], "matvec": [s(M, V3)],
                  "vecmat": [s(V3, M)]}


def ufunc_samples(name: str, uf) -> list[Sample]:
    if name in _UFUNC_SAMPLES:
        return _UFUNC_SAMPLES[name]
    args = (IX + 1, IX % 3) if name in _INT_UFUNCS else (np.abs(X) + 0.2, X2)
    return [s(*args[:uf.nin])]


def method_samples(uf) -> dict[str, list[Sample]]:
    """reduce, accumulate, outer and reduceat of binary ufunc `uf`."""
    if "dd->?" in uf.types:  # comparisons: reduced over bools
        x = BOOL
    else:
        x = IX + 1 if uf.__name__ in _INT_UFUNCS else np.abs(X) + 0.2
    return {"reduce": [s(x, axis=0)], "accumulate": [s(x, axis=1)], "outer": [s(x[0], x[1, :3])],
            "reduceat": [s(x[0], [0, 2])]}


# --------------------------------------------------------------------------- running a sample

def _placeholders(value, phs: list):
    """`value` with each ndarray replaced by a placeholder (collected in `phs` with its array)."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufc":
        ph = G.placeholder(value.dtype, value.shape)
        phs.append((ph, value))
        return ph
    if isinstance(value, (list, tuple)):
        return type(value)(_placeholders(v, phs) for v in value)
    if isinstance(value, dict):
        return {k: _placeholders(v, phs) for k, v in value.items()}
    return value


def _flatten(value) -> list:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flatten(v)]
    return [value]


def _compare(got, want) -> str | None:
    """None when `got` (the graph's) is numpy's `want`, else what differs."""
    got, want = _flatten(got), _flatten(want)
    if len(got) != len(want):
        return f"{len(got)} results, numpy gives {len(want)}"
    for g, w in zip(got, want, strict=True):
        if isinstance(w, (str, np.dtype, type)) or w is None:
            if g != w:
                return f"{g!r} != numpy's {w!r}"
            continue
        g, w = np.asarray(g), np.asarray(w)
        if g.dtype != w.dtype or g.shape != w.shape:
            return f"{g.dtype}{list(g.shape)} != numpy's {w.dtype}{list(w.shape)}"
        if w.dtype.kind in "fc":
            close = np.allclose(g, w, rtol=1e-12, atol=0, equal_nan=True)
        else:
            close = np.array_equal(g, w)
        if not close:
            return "values differ from numpy's"
    return None


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:150] if text else ''}"


FALLBACK = "works through NumpyCall"


def run_sample(func, sample: Sample, mode: str) -> str | None:
    """None when the sample works on graph ops, FALLBACK when it works through NumpyCall, else the reason."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = func(*sample.args, **sample.kwargs)
        except Exception as e:  # noqa: BLE001
            return "the sample itself fails in numpy: " + _first_line(e)
        g = G.Graph()
        phs: list = []
        with g.as_default():
            args = _placeholders(sample.args, phs)
            kwargs = _placeholders(sample.kwargs, phs)
            try:
                sym = func(*args, **kwargs)
            except Exception as e:  # noqa: BLE001 (the measurement: any failure is recorded)
                return "build: " + _first_line(e)
        fetches = [t for t in _flatten(sym) if isinstance(t, G.Tensor)]
        try:
            values = iter(Session(g, mode=mode).run(fetches, dict(phs)))
        except Exception as e:  # noqa: BLE001
            return "run: " + _first_line(e)
        got = _rebuild(sym, values)
    if func is np.empty_like:  # its values are whatever memory held: only dtype and shape are numpy's
        got, want = [np.asarray(g).dtype.str + str(np.shape(g)) for g in _flatten(got)], \
            [np.asarray(w).dtype.str + str(np.shape(w)) for w in _flatten(want)]
    diff = _compare(got, want)
    if diff is not None:
        return "wrong: " + diff
    return FALLBACK if any(n.op == "NumpyCall" for n in g.nodes) else None


def _rebuild(sym, values):
    if isinstance(sym, (list, tuple)):
        return [_rebuild(v, values) for v in sym]
    return next(values) if isinstance(sym, G.Tensor) else sym


def refuses(func, sample: Sample) -> str | None:
    """None when a function with effects refuses graph tensors with an error, else what it did."""
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (3, 4))
        try:
            func(x, *sample.args, **sample.kwargs)
        except Exception:  # noqa: BLE001
            return None
    return "accepted a graph tensor"


# --------------------------------------------------------------------------- the catalogue

@dataclass(frozen=True)
class Entry:
    name: str
    func: object
    samples: list
    kind: str  # "function", "ufunc", "ufunc method"


def catalogue() -> tuple[list[Entry], list[str], list[str]]:
    """(entries measured, names with effects, names not applicable)."""
    entries, effects, na = [], [], []
    for module, prefix, table in ((np, "np.", SAMPLES), (np.linalg, "np.linalg.", LINALG_SAMPLES)):
        for name in sorted(dir(module)):
            f = getattr(module, name)
            if not isinstance(f, _DISPATCHED):
                continue
            if name in EFFECTS:
                effects.append(prefix + name)
            elif name in NOT_APPLICABLE:
                na.append(f"{prefix}{name} ({NOT_APPLICABLE[name]})")
            else:
                entries.append(Entry(prefix + name, f, table.get(name, []), "function"))
    seen = set()
    for name in sorted(dir(np)):
        uf = getattr(np, name)
        if not isinstance(uf, np.ufunc) or id(uf) in seen:
            continue
        seen.add(id(uf))
        if uf.__name__ in NOT_APPLICABLE:
            na.append(f"np.{uf.__name__} ({NOT_APPLICABLE[uf.__name__]})")
            continue
        entries.append(Entry(f"np.{uf.__name__}", uf, ufunc_samples(uf.__name__, uf), "ufunc"))
        if uf.nin == 2 and uf.nout == 1 and uf.signature is None and uf.__name__ != "ldexp":
            for method, samples in method_samples(uf).items():
                entries.append(Entry(f"np.{uf.__name__}.{method}", getattr(uf, method), samples, "ufunc method"))
    return entries, effects, na


_EFFECT_SAMPLES = {"copyto": s(X), "place": s(BOOL, [1.0]), "put": s([0], [1.0]), "putmask": s(BOOL, X),
                   "put_along_axis": s(IX, X, 1), "fill_diagonal": s(0.0), "save": s(), "savetxt": s(),
                   "savez": s(), "savez_compressed": s()}


def measure(mode: str) -> dict:
    entries, effects, na = catalogue()
    results = {}
    for e in entries:
        if not e.samples:
            results[e.name] = (e.kind, "no sample call is listed")
            continue
        reasons = [run_sample(e.func, smp, mode) for smp in e.samples]
        failures = [r for r in reasons if r is not None and r != FALLBACK]
        results[e.name] = (e.kind, failures[0] if failures else FALLBACK if FALLBACK in reasons else None)
    effect_results = {}
    for name in effects:
        short = name.split(".")[-1]
        if short in ("save", "savetxt", "savez", "savez_compressed"):
            sample = s()
            effect_results[name] = refuses(lambda x, f=getattr(np, short): f(os.devnull, x), sample)
        else:
            effect_results[name] = refuses(getattr(np, short), _EFFECT_SAMPLES[short])
    return {"results": results, "effects": effect_results, "not_applicable": na}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="print the functions that work too")
    parser.add_argument("--json", action="store_true", help="end with one JSON line of the counts")
    parser.add_argument("--mode", default="auto", choices=["auto", "compiled", "dataflow"])
    ns = parser.parse_args()
    out = measure(ns.mode)
    counts: dict[str, list[int]] = {}
    for name, (kind, reason) in sorted(out["results"].items()):
        native, fallback, total = counts.setdefault(kind, [0, 0, 0])
        counts[kind] = [native + (reason is None), fallback + (reason == FALLBACK), total + 1]
        works = reason is None or reason == FALLBACK
        if not works or ns.all:
            print(f"{'ok  ' if works else 'FAIL'} {name}: {'graph ops' if reason is None else reason}")
    for name, reason in sorted(out["effects"].items()):
        print(f"{'ok  ' if reason is None else 'FAIL'} {name} (an effect, must refuse a graph tensor): {reason or 'refused'}")
    print(f"not applicable: {', '.join(out['not_applicable'])}")
    for kind, (native, fallback, total) in counts.items():
        print(f"{kind}s: {native + fallback} of {total} work ({native} as graph ops, {fallback} through NumpyCall; "
              f"{total - native - fallback} fail)")
    refused = sum(r is None for r in out["effects"].values())
    print(f"functions with effects: {refused} of {len(out['effects'])} refuse graph tensors")
    if ns.json:
        print(json.dumps({"mode": ns.mode, "counts": counts, "effects_refused": [refused, len(out["effects"])],
                          "failing": sorted(n for n, (_, r) in out["results"].items() if r not in (None, FALLBACK)),
                          "through_numpy_call": sorted(n for n, (_, r) in out["results"].items() if r == FALLBACK)}))


if __name__ == "__main__":
    main()
