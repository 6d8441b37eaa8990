"""The PythonRound kernel (graph/ops/python_math.py): Python's own round(x, n) of the float value."""
from __future__ import annotations

import numpy as np

from exec.kernels.registry import kernel


@kernel("PythonRound")
def _python_round(node, rt):
    ndigits = node.attrs["ndigits"]
    return lambda x: np.float64(round(float(x), ndigits))
