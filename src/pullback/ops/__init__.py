"""The op table: primitives with their VJP rules, and the public functions over them.

``OPS`` maps a primitive's name to its ``OpDef``; ``PUBLIC`` lists every public
binding (functions, methods, in-place methods, nn.functional and numpy names).
Importing this package declares them all, family by family.
"""

from . import elementwise, linalg, methods, neural, reductions, sampling, shape  # noqa: F401
from .registry import OPS, PUBLIC, Meta, OpDef, Public, call, defop, public, subscribe
from .vjp import apply_vjp, fit_to

__all__ = ["OPS", "PUBLIC", "Meta", "OpDef", "Public", "apply_vjp", "call", "defop",
           "fit_to", "public", "subscribe"]
