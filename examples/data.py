"""Training data present on every machine: standard-library docstrings, and the adding problem."""
from __future__ import annotations

import ast
import os
import sysconfig

import numpy as np


def stdlib_docstrings(max_chars: int = 2_000_000, seed: int = 0) -> str:
    """Docstrings of the standard library's modules, classes and functions, as one text.

    Read from the source files with `ast` (nothing is imported), in a fixed file
    order, so the corpus is the same on every machine with the same Python.
    """
    root = sysconfig.get_paths()["stdlib"]
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in ("test", "tests", "idlelib", "site-packages",
                                                               "lib2to3", "__pycache__", "turtledemo"))
        files.extend(os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".py"))
    rng = np.random.default_rng(seed)
    rng.shuffle(files)
    parts, total = [], 0
    for path in files:
        try:
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc and len(doc) > 40:
                    parts.append(doc.strip() + "\n\n")
                    total += len(parts[-1])
        if total >= max_chars:
            break
    text = "".join(parts)[:max_chars]
    return "".join(ch if ch.isprintable() or ch == "\n" else " " for ch in text)


class CharCorpus:
    """A character vocabulary over a text, with train/validation splits and batches.

    Characters seen fewer than `min_count` times map to one "unknown" id (0).
    """

    def __init__(self, text: str, min_count: int = 20, valid_fraction: float = 0.05):
        chars, counts = np.unique(np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32), return_counts=True)
        keep = chars[counts >= min_count]
        self.chars = ["\x00"] + [chr(c) for c in keep]
        lookup = np.zeros(int(chars.max()) + 1, np.int32)
        lookup[keep] = np.arange(1, len(keep) + 1)
        ids = lookup[np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)]
        split = int(len(ids) * (1 - valid_fraction))
        self.train, self.valid = ids[:split], ids[split:]
        self.vocab_size = len(self.chars)

    def encode(self, text: str) -> np.ndarray:
        index = {c: i for i, c in enumerate(self.chars)}
        return np.array([index.get(c, 0) for c in text], np.int32)

    def decode(self, ids) -> str:
        return "".join(self.chars[int(i)] if int(i) else "?" for i in ids)

    def unigram_entropy(self) -> float:
        """Cross-entropy (nats/char) of the best context-free model: the bar to beat."""
        p = np.bincount(self.train, minlength=self.vocab_size) / len(self.train)
        p = p[p > 0]
        return float(-(p * np.log(p)).sum())

    def batch(self, rng: np.random.Generator, batch_size: int, length: int, split: str = "train"):
        """Inputs and next-character targets, both [length, batch] int32 (time major)."""
        data = self.train if split == "train" else self.valid
        starts = rng.integers(0, len(data) - length - 1, size=batch_size)
        idx = starts[None, :] + np.arange(length)[:, None]
        return data[idx], data[idx + 1]


def adding_problem(rng: np.random.Generator, batch_size: int, length: int):
    """The adding problem (Hochreiter & Schmidhuber 1997): a sequence of (value, marker)
    pairs with exactly two markers; the target is the sum of the two marked values.

    Returns x [length, batch, 2] float32 (time major) and y [batch, 1] float32.
    Predicting the mean (1.0) gives MSE ~0.167; solving it means MSE well below that.
    """
    values = rng.uniform(0, 1, size=(length, batch_size)).astype(np.float32)
    markers = np.zeros((length, batch_size), np.float32)
    half = max(length // 2, 1)
    first = rng.integers(0, half, size=batch_size)
    second = rng.integers(half, length, size=batch_size) if length > 1 else first
    cols = np.arange(batch_size)
    markers[first, cols] = 1.0
    markers[second, cols] = 1.0
    y = (values[first, cols] + values[second, cols]).reshape(batch_size, 1)
    return np.stack([values, markers], axis=-1), y.astype(np.float32)
