"""`lists[k].append(v)`: an append to an item of a list of lists, also at a graph-tensor index `k`."""
from __future__ import annotations

from transpile.operators.conditionals import if_stmt
from transpile.operators.data_structures import list_append
from transpile.operators.leaves import describe, is_tensor
from transpile.operators.staging import StagingError


def append_at(target, key, value, name: str = "the list"):
    """`target[key].append(value)`; returns `target`::

        target[key].append(value)

    With a graph-tensor `key` (e.g. `clusters[np.argmin(d)].append(i)`),
    which list grows is decided when the graph runs: each item `j` of the list
    `target` is appended to under a graph cond on `key == j` (in a graph loop,
    each then grows as a TensorArray). `name` names `target` in errors.
    """
    if not is_tensor(key):
        target[key] = list_append(target[key], value)
        return target
    if not isinstance(target, list):
        raise StagingError(f"`{name}[k].append(...)` with a graph-tensor index k needs {name} to be a list of lists "
                           f"(its length known while the graph is built); it is {describe(target)}")
    grown = list(target)
    for j in range(len(grown)):
        grown[j] = if_stmt(key == j, lambda item: list_append(item, value), lambda item: item, (grown[j],),
                           (f"{name}[{j}]",))
    return grown
