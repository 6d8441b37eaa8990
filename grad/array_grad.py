"""Gradients of shape and array ops (graph/ops/array.py)."""
from __future__ import annotations
