"""numpy's `np.random` functions as graph random ops: the same distributions, drawn when the graph runs.

`np.random.rand(3)` in a traced function must draw new numbers at every run,
not once while the graph is built: `BUILDERS` maps each supported np.random
function to a builder with its signature, made of the seeded random ops of
graph/ops/random.py. The seed of each op is drawn from numpy's global random
state when the op is built, so `np.random.seed(s)` before a function is traced
makes its runs reproducible (a fresh trace of the same program under the same
seed draws the same numbers; the numbers differ from numpy's own).
"""
from __future__ import annotations

import numpy as np

from graph.errors import UnsupportedError
from graph.node import Tensor
from graph.ops import array as A
from graph.ops import math as M
from graph.ops import random as R
from graph.ops import reduce as Red
from graph.ops.conversion import convert


def _seed() -> int:
    return int(np.random.randint(0, 2 ** 62))


def _shape(size) -> tuple | Tensor:
    """numpy's `size` argument as a shape: None is a scalar draw."""
    if size is None:
        return ()
    if isinstance(size, (int, np.integer)) or isinstance(size, Tensor) and size.shape == ():
        return (size,)
    return size


def _count(shape):
    """The number of draws of a `_shape`: a Python int, or a scalar tensor when a dim is one."""
    if isinstance(shape, Tensor):
        return Red.reduce_prod(M.cast(shape, np.int64))
    if any(isinstance(d, Tensor) for d in shape):
        return Red.reduce_prod(A.stack([M.cast(convert(d), np.int64) for d in shape]))
    return int(np.prod(shape, dtype=np.int64))


def rand(*shape) -> Tensor:
    """`np.random.rand(d0, d1, ...)`: uniform in [0, 1)."""
    return R.random_uniform(shape, seed=_seed())


def randn(*shape) -> Tensor:
    """`np.random.randn(d0, d1, ...)`: standard normal."""
    return R.random_normal(shape, seed=_seed())


def random_sample(size=None) -> Tensor:
    """`np.random.random(size)` (also random_sample, ranf, sample): uniform in [0, 1)."""
    return R.random_uniform(_shape(size), seed=_seed())


def uniform(low=0.0, high=1.0, size=None) -> Tensor:
    """`np.random.uniform(low, high, size)`."""
    return R.random_uniform(_shape(size), low, high, seed=_seed())


def normal(loc=0.0, scale=1.0, size=None) -> Tensor:
    """`np.random.normal(loc, scale, size)`."""
    return R.random_normal(_shape(size), loc, scale, seed=_seed())


def standard_normal(size=None) -> Tensor:
    """`np.random.standard_normal(size)`."""
    return R.random_normal(_shape(size), seed=_seed())


def exponential(scale=1.0, size=None) -> Tensor:
    """`np.random.exponential(scale, size)`: -scale * log(1 - u) for u uniform in [0, 1)."""
    u = R.random_uniform(_shape(size), seed=_seed())
    return M.mul(M.neg(M.log1p(M.neg(u))), scale)


def randint(low, high=None, size=None, dtype=int) -> Tensor:
    """`np.random.randint(low, high, size, dtype)`: integers in [low, high) ([0, low) without high)."""
    if high is None:
        low, high = 0, low
    return R.random_uniform(_shape(size), low, high, dtype=np.dtype(dtype), seed=_seed())


def choice(a, size=None, replace=True, p=None) -> Tensor:
    """`np.random.choice(a, size, replace, p)`: items of `a` (or of range(a) for an int), with
    probabilities `p` (uniform without). Only draws with replacement (or a single draw)."""
    if not replace and size is not None and size != 1 and size != (1,):
        raise UnsupportedError("np.random.choice(..., replace=False) of more than one item is not supported on "
                               "graph tensors; draw the items one by one, or shuffle outside the function")
    population = None
    if isinstance(a, range):
        if a.step != 1 or a.start != 0:
            population = convert(np.asarray(a))
        n = len(a)
    elif isinstance(a, (int, np.integer)) or isinstance(a, Tensor) and a.shape == ():
        n = a
    else:
        population = convert(a)
        if population.ndim != 1:
            raise UnsupportedError("np.random.choice: `a` must be an int or a 1-D array")
        n = population.shape[0] if population.shape[0] is not None else A.shape(population)[0]
    shape = _shape(size)
    if p is None:
        index = R.random_uniform(shape, 0, n, dtype=np.int64, seed=_seed())
    else:
        logits = M.log(M.maximum(convert(p, np.float64), 1e-300))  # log(0): never drawn
        drawn = R.categorical(A.reshape(logits, [1, -1]), _count(shape), seed=_seed())
        index = A.reshape(drawn, shape)
    return index if population is None else A.gather(population, index)


_BY_NAME = {"rand": rand, "randn": randn, "random": random_sample, "random_sample": random_sample,
            "ranf": random_sample, "sample": random_sample, "uniform": uniform, "normal": normal,
            "standard_normal": standard_normal, "exponential": exponential, "randint": randint, "choice": choice}
# np.random's functions (those of its global RandomState) -> their graph builders
BUILDERS = {getattr(np.random, name): fn for name, fn in _BY_NAME.items() if hasattr(np.random, name)}
NAMES = frozenset(_BY_NAME)

__all__: list[str] = []
