"""The op table: primitives with their VJP rules, and the public functions over them.

``OPS`` maps a primitive's name to its ``OpDef``; ``PUBLIC`` lists every public
binding (functions, methods, in-place methods, nn.functional and numpy names).
Importing this package declares them all, family by family.
"""

from . import (  # noqa: F401
    activations,
    attention,
    bindings,
    convolution,
    decompositions,
    diagonals,
    dropout,
    einsum,
    embedding,
    elementwise,
    factorizations,
    fourier,
    indexing,
    joining,
    linalg,
    losses,
    masking,
    methods,
    neural,
    normalization,
    norms,
    numpy_extras,
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
    special_bessel,
    special_more,
    sylvester,
    spectral,
    splitting,
    statistics,
    triangular,
)
from .jvp import apply_jvp, fit_out
from .registry import OPS, PUBLIC, Meta, OpDef, Public, defop, public, subscribe
from .vjp import apply_vjp, complete, fit_to, vjp_per_input

__all__ = ["OPS", "PUBLIC", "Meta", "OpDef", "Public", "apply_jvp", "apply_vjp", "complete",
           "defop", "fit_out", "fit_to", "public", "subscribe", "vjp_per_input"]
