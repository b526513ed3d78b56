"""The op table: primitives with their VJP rules, and the public functions over them.

``OPS`` maps a primitive's name to its ``OpDef``; ``PUBLIC`` lists every public
binding (functions, methods, in-place methods, nn.functional and numpy names).
Importing this package declares them all, family by family.
"""

from . import (  # noqa: F401
    bindings,
    convolution,
    decompositions,
    diagonals,
    einsum,
    elementwise,
    factorizations,
    fourier,
    indexing,
    joining,
    linalg,
    masking,
    methods,
    neural,
    numpy_extras,
    norms,
    padding,
    pointwise,
    pooling,
    reductions,
    resampling,
    reshaping,
    sampling,
    scatter_reduce,
    selection,
    shape,
    special,
    spectral,
    splitting,
    statistics,
)
from .registry import OPS, PUBLIC, Meta, OpDef, Public, defop, public, subscribe
from .vjp import apply_vjp, complete, fit_to, vjp_per_input

__all__ = ["OPS", "PUBLIC", "Meta", "OpDef", "Public", "apply_vjp", "complete", "defop", "fit_to",
           "public", "subscribe", "vjp_per_input"]
