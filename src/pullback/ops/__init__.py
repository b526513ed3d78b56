"""The op table (registry) and the primitives it holds, by family."""

from . import linalg, math, nn, random, shape  # noqa: F401  (importing declares the ops)
from .registry import OPS, OpDef, call, defop

__all__ = ["OPS", "OpDef", "call", "defop"]
