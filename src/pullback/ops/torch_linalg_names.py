"""torch's older linear-algebra names, still in real code, over the ``linalg`` ops (their
gradients are those ops'): ``svd`` (``some=``, V rather than Vh), ``qr`` (``some=``),
``cholesky`` (``upper=``), ``cholesky_solve``, ``cholesky_inverse`` and
``triangular_solve`` (b first, then A), as functions and Tensor methods.

>>> import pullback as pb
>>> L = pb.tensor([[2.0, 0.0], [1.0, 1.0]])
>>> pb.cholesky_solve(pb.tensor([[4.0], [3.0]]), L)
tensor([[0.5000],
        [1.0000]])
"""

from __future__ import annotations

import numpy as np

from .decompositions import cholesky as linalg_cholesky
from .factorizations import qr as linalg_qr
from .spectral import svd as linalg_svd
from .spectral import svdvals
from .table import args
from .table.registry import public
from .table.results import return_type
from .triangular import solve_triangular

Svd = return_type("svd", ("U", "S", "V"))
Qr = return_type("qr", ("Q", "R"))
TriangularSolve = return_type("triangular_solve", ("solution", "cloned_coefficient"))


@public("svd", function=True, method=True)
def svd(input, some=True, compute_uv=True):
    """(U, S, V) with input = U diag(S) V^H (reduced where ``some``); without
    ``compute_uv``, U and V are zeros of the full shapes, as torch's."""
    if not compute_uv:
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        return Svd(input.new_zeros(batch + (m, m)), svdvals(input),
                   input.new_zeros(batch + (n, n)))
    U, S, Vh = linalg_svd(input, full_matrices=not some)
    return Svd(U, S, Vh.mH)


@public("qr", function=True, method=True)
def qr(input, some=True):
    """(Q, R) with input = Q R (reduced where ``some``, complete otherwise)."""
    Q, R = linalg_qr(input, "reduced" if some else "complete")
    return Qr(Q, R)


@public("cholesky", function=True, method=True)
def cholesky(input, upper=False):
    """L with input = L L^H (U with input = U^H U where ``upper``)."""
    return linalg_cholesky(input, upper=upper)


def _check_cholesky_solve(B, L) -> None:
    if B.ndim < 2 or L.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B.ndim} dimensions "
                           "instead" if B.ndim < 2 else
                           f"u should have at least 2 dimensions, but has {L.ndim} dimensions "
                           "instead")


@public("cholesky_solve", function=True, method=True)
def cholesky_solve(input, input2, upper=False):
    """X with A X = input, A given by its Cholesky factor ``input2`` (A = L L^H, or
    U^H U where ``upper``)."""
    _check_cholesky_solve(input, input2)
    first, second = (input2.mH, input2) if upper else (input2, input2.mH)
    y = solve_triangular(first, input, upper=False)
    return solve_triangular(second, y, upper=True)


@public("cholesky_inverse", function=True, method=True)
def cholesky_inverse(input, upper=False):
    """The inverse of A = L L^H (U^H U where ``upper``) from its factor ``input``."""
    if input.ndim < 2:
        raise RuntimeError("cholesky_inverse: The input tensor A must have at least 2 "
                           "dimensions.")
    n = input.shape[-1]
    eye = input.new_tensor(np.eye(n, dtype=args.np_dtype(input))).expand(tuple(input.shape))
    return cholesky_solve(eye, input, upper)


@public("triangular_solve", function=True, method=True)
def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False):
    """(X, a copy of A) with A X = input (A^T X = input where ``transpose``), reading A's
    upper or lower triangle."""
    M = A.mT if transpose else A
    X = solve_triangular(M, input, upper=upper != transpose, unitriangular=unitriangular)
    return TriangularSolve(X, A.clone())
