"""Linear algebra numpy lacks or computes differently (pullback's own numpy forwards)."""

from __future__ import annotations

import numpy as np

from ..decompositions import _adjugate
from ..factorizations import _expm
from ..sylvester import _solve_sylvester, _sqrtm
from ..triangular import _solve_triangular


def adjugate(A):
    """adj(A): det(A) inv(A) where A is invertible, from the SVD at singular matrices
    (torch's linalg_det_backward)."""
    return _adjugate(A)


def matrix_exp(A):
    """exp(A) of each matrix: scaling and squaring with the Pade(13) approximant."""
    return _expm(A)


def eig(A):
    """(eigenvalues, eigenvectors) of each matrix, always complex (torch's)."""
    L, V = np.linalg.eig(A)
    c = np.result_type(A.dtype, np.complex64)
    return L.astype(c, copy=False), V.astype(c, copy=False)


def solve_triangular(A, B, upper, left, unitriangular):
    """X with A X = B (``left``) or X A = B, A triangular, by substitution."""
    return _solve_triangular(A, B, upper, left, unitriangular)


def solve_sylvester(A, B, Q):
    """X with A X + X B = Q (scipy's solve_sylvester)."""
    return _solve_sylvester(A, B, Q)


def sqrtm(A):
    """The principal square root of a matrix (scipy's sqrtm)."""
    return _sqrtm(A)
