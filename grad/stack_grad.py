"""Gradients of stack ops (second order)."""
from __future__ import annotations
