"""Per-session resources kernels use: variable values, random streams, output."""
from __future__ import annotations

import sys
import threading

import numpy as np


class Runtime:
    """Session state that outlives a single run: random-number streams, output stream."""

    def __init__(self, out=None):
        self.rngs: dict[str, np.random.Generator] = {}
        self.out = out
        self.lock = threading.Lock()
        self.memory = None  # device memory manager (exec.memory), set by the session

    def write(self, text: str) -> None:
        stream = self.out if self.out is not None else sys.stdout
        stream.write(text)
        stream.flush()

    def rng(self, key: str, seed: int) -> np.random.Generator:
        g = self.rngs.get(key)
        if g is None:
            g = self.rngs[key] = np.random.Generator(np.random.PCG64(seed))
        return g
