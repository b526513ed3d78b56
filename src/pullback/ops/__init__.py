"""The op table: primitives with their VJP rules, and the public functions over them.

``OPS`` maps a primitive's name to its ``OpDef``; ``PUBLIC`` lists every public
binding (functions, methods, in-place methods, nn.functional and numpy names).
Importing this package declares them all, family by family.

The package has three parts: ``table/``, the machinery that declares ops and applies
their rules (``defop``, the bindings, argument parsing, promotion, VJP and JVP
application); ``kernels/``, numeric kernels that declare no op (special functions,
accurate sums); and the op families, one module each directly in ``ops/``.
"""

from .table import bindings as _bindings  # noqa: F401  (first: it checks every name)
from .table import methods as _methods  # noqa: F401
from . import (  # noqa: F401
    activations,
    attention,
    bessel,
    bitwise,
    convolution,
    cross_entropy,
    cumulative,
    decompositions,
    diagonals,
    distribution_functions,
    dropout,
    einsum,
    embedding,
    elementwise,
    erf_gamma,
    factorizations,
    fourier,
    gathering,
    indexing,
    items,
    joining,
    linalg,
    losses,
    masking,
    neural,
    normalization,
    norms,
    numpy_arrays,
    numpy_calculus,
    numpy_extras,
    numpy_fitting,
    numpy_floats,
    numpy_histograms,
    numpy_linalg,
    numpy_polynomials,
    numpy_series,
    numpy_sets,
    numpy_statistics,
    ordering,
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
    sylvester,
    spectral,
    splitting,
    statistics,
    subscripts,
    torch_extras,
    torch_linalg_names,
    torch_more,
    torch_scatters,
    torch_statistics,
    triangular,
    writes,
)
from .table.jvp import apply_jvp, fit_out
from .table.registry import OPS, PUBLIC, Meta, OpDef, Public, defop, public, subscribe
from .table.vjp import apply_vjp, complete, fit_to, vjp_per_input

__all__ = ["OPS", "PUBLIC", "Meta", "OpDef", "Public", "apply_jvp", "apply_vjp", "complete",
           "defop", "fit_out", "fit_to", "public", "subscribe", "vjp_per_input"]
