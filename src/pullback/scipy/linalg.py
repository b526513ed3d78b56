"""``scipy.linalg`` with derivatives: scipy's names, parameters and conventions
(``cholesky`` gives the upper factor unless ``lower=True``, ``cho_factor`` returns
``(c, lower)`` for ``cho_solve``, ``solve_triangular`` reads one triangle of ``a``), on
pullback Tensors, numpy arrays and lists (plain arrays, as scipy gives).

Each function is the op table's (``linalg_cholesky``, ``linalg_solve_triangular``,
``linalg_solve``, ``linalg_inv``, ``linalg_det``, ``linalg_matrix_exp``), so it runs
eagerly, under ``pb.grad`` and in generated code alike, and differentiates with torch's
rules. Failures raise scipy's ``LinAlgError`` (numpy's), so that ``except
np.linalg.LinAlgError`` (adding jitter to a kernel matrix, say) works as with scipy.

>>> import numpy as np
>>> import pullback as pb
>>> from pullback.scipy import linalg
>>> K = pb.tensor([[4.0, 2.0], [2.0, 3.0]], dtype=pb.float64, requires_grad=True)
>>> y = np.array([1.0, 2.0])
>>> q = y @ linalg.cho_solve(linalg.cho_factor(K, lower=True), y)   # y^T K^-1 y
>>> q.backward()
>>> K.grad                                    # -K^-1 y y^T K^-1
tensor([[-0.0156,  0.0937],
        [ 0.0937, -0.5625]], dtype=pullback.float64)
>>> linalg.solve_triangular([[2.0, 0.0], [1.0, 4.0]], [2.0, 9.0], lower=True)
array([1., 2.])
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, Iterator

import numpy as np

from ..ops import decompositions as _dec
from ..ops import factorizations as _fac
from ..ops.elementwise import to_dtype, where
from ..ops.reshaping import tril_op, triu_op
from ..ops.shape import squeeze_dim, unsqueeze_op
from ..ops.sylvester import solve_sylvester_op, sqrtm_op
from ..ops.table.args import np_dtype, value
from ..ops.triangular import solve_triangular_op

__all__ = ["cho_factor", "cho_solve", "cholesky", "det", "expm", "inv", "solve",
           "solve_banded", "solve_sylvester", "solve_triangular", "sqrtm"]

_TRANS = {0: "N", 1: "T", 2: "C", "N": "N", "T": "T", "C": "C", "n": "N", "t": "T",
          "c": "C"}
_ASSUME = {"gen": "gen", "general": "gen", "sym": "sym", "symmetric": "sym",
           "her": "her", "hermitian": "her", "diagonal": "gen", "tridiagonal": "gen",
           "banded": "gen", "pos": "pos", "positive definite": "pos",
           "upper triangular": "upper", "lower triangular": "lower"}


def _matrix(a: Any, name: str = "a") -> Any:
    """``a`` as a float (or complex) array or Tensor of at least two dims, as scipy's
    functions take it (integers as float64)."""
    a = value(a)
    if np.ndim(a) < 2:
        raise ValueError("The input array must be at least two-dimensional.")
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"Expected square matrix, got shape {tuple(a.shape)}."
                         if name == "a" else "expected square matrix")
    return a if np_dtype(a).kind in "fc" else to_dtype(a, np.float64)


def _rhs(b: Any, a: Any) -> tuple:
    """``b`` as (*, n, k) matrices (a 1-d ``b`` is one vector, as scipy has it), and
    whether it was a vector."""
    b = value(b)
    b = b if np_dtype(b).kind in "fc" else to_dtype(b, np.float64)
    vector = np.ndim(b) == 1
    b = unsqueeze_op(b, dim=1) if vector else b
    if b.shape[-2] != a.shape[-1]:
        raise ValueError(f"shapes of a {tuple(a.shape)} and b {tuple(b.shape)} are "
                         "incompatible")
    return b, vector


def _as_given(x: Any, vector: bool) -> Any:
    return squeeze_dim(x, dim=(x.ndim - 1,)) if vector else x


@contextlib.contextmanager
def _scipy_errors() -> Iterator[None]:
    """pullback's LinAlgError (torch's text) as scipy's: numpy's LinAlgError."""
    try:
        yield
    except _dec.LinAlgError as e:
        text = str(e)
        order = re.search(r"leading minor of order (\d+)", text)
        batch = re.search(r"Batch element (\d+)", text)
        if order:
            message = f"{order.group(1)}-th leading minor of the array is not positive definite"
        else:
            message = (f"A singular matrix detected: slice(s) [{batch.group(1)}] are "
                       "singular." if batch else "A singular matrix detected.")
        raise np.linalg.LinAlgError(message) from None


# ------------------------------------------------------------------ Cholesky
def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False,
             check_finite: bool = True) -> Any:
    """The Cholesky factor of a Hermitian positive-definite ``a``: upper ``U`` with
    ``a = U^H U`` (scipy's default), or lower ``L`` with ``a = L L^H``.

    >>> cholesky([[4.0, 2.0], [2.0, 3.0]])
    array([[2.        , 1.        ],
           [0.        , 1.41421356]])
    """
    a = _matrix(a)
    with _scipy_errors():  # (the upper triangle of a is the lower one of a^H)
        L = _dec.cholesky_op(a if lower else _dec.mH(a))
    return L if lower else _dec.mH(L)


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple:
    """``(c, lower)`` for ``cho_solve``: ``c`` is ``cholesky(a, lower)`` (zeros in the
    other triangle, where scipy leaves whatever was there; neither is read)."""
    return cholesky(a, lower=lower), bool(lower)


def cho_solve(c_and_lower: tuple, b: Any, overwrite_b: bool = False,
              check_finite: bool = True) -> Any:
    """x with ``a x = b``, given ``(c, lower) = cho_factor(a)``: two triangular solves.

    >>> cho_solve(cho_factor([[4.0, 2.0], [2.0, 3.0]]), [8.0, 7.0])
    array([1.25, 1.5 ])
    """
    c, lower = c_and_lower
    c = _matrix(c, "c")
    b, vector = _rhs(b, c)
    if lower:  # L L^H x = b
        y = solve_triangular_op(c, b, upper=False, left=True, unitriangular=False)
        x = solve_triangular_op(_dec.mH(c), y, upper=True, left=True, unitriangular=False)
    else:  # U^H U x = b
        y = solve_triangular_op(_dec.mH(c), b, upper=False, left=True, unitriangular=False)
        x = solve_triangular_op(c, y, upper=True, left=True, unitriangular=False)
    return _as_given(x, vector)


# ------------------------------------------------------------------ solves
def solve_triangular(a: Any, b: Any, trans: Any = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False,
                     check_finite: bool = True) -> Any:
    """x with ``a x = b`` (``trans``: 1 or "T" ``a^T x = b``, 2 or "C" ``a^H x = b``),
    reading only the lower (``lower``) or upper triangle of ``a``, and taking its
    diagonal as ones with ``unit_diagonal``. The gradient of ``a`` is zero on the
    other triangle."""
    if trans not in _TRANS:
        raise ValueError("invalid trans argument")
    a = _matrix(a)
    b, vector = _rhs(b, a)
    how = _TRANS[trans]
    if how != "N":  # the transpose of a lower triangle is an upper one
        a = _dec.mT(a) if how == "T" else _dec.mH(a)
        lower = not lower
    x = solve_triangular_op(a, b, upper=not lower, left=True,
                            unitriangular=bool(unit_diagonal))
    return _as_given(x, vector)


def solve(a: Any, b: Any, lower: bool = False, overwrite_a: bool = False,
          overwrite_b: bool = False, check_finite: bool = True, assume_a: Any = None,
          transposed: bool = False) -> Any:
    """x with ``a x = b`` (``a^T x = b`` when ``transposed``). ``assume_a``: "pos"
    (positive definite) solves with ``cholesky`` (of the ``lower`` or upper triangle),
    "upper triangular" and "lower triangular" with ``solve_triangular``, "sym" and
    "her" with the general solver on the symmetric (Hermitian) matrix of that
    triangle; "gen" and the other structures scipy knows ("diagonal", "banded"...)
    with the general solver, which reads all of ``a``.

    >>> solve([[3.0, 1.0], [1.0, 2.0]], [9.0, 8.0])
    array([2., 3.])
    """
    kind = _ASSUME.get(assume_a if assume_a is not None else "gen")
    if kind is None:
        raise ValueError(f"{assume_a} is not a recognized matrix structure")
    a = _matrix(a)
    if kind in ("upper", "lower"):
        return solve_triangular(a, b, trans=int(transposed), lower=kind == "lower")
    if transposed:  # (the other triangle of a^T is the same of a)
        a = _dec.mT(a)
        lower = not lower
    if kind == "pos":
        return cho_solve(cho_factor(a, lower=lower), b)
    if kind in ("sym", "her"):
        a = _from_triangle(a, lower, kind == "her")
    b, vector = _rhs(b, a)
    with _scipy_errors():
        return _as_given(_dec.solve_op(a, b), vector)


def _from_triangle(a: Any, lower: bool, hermitian: bool) -> Any:
    """The symmetric (Hermitian) matrix of ``a``'s lower or upper triangle, the part
    scipy's symmetric solvers read."""
    if lower:
        tri, off = tril_op(a, diagonal=0), tril_op(a, diagonal=-1)
    else:
        tri, off = triu_op(a, diagonal=0), triu_op(a, diagonal=1)
    return tri + (_dec.mH(off) if hermitian else _dec.mT(off))


def inv(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """The inverse of ``a``.

    >>> inv([[2.0, 0.0], [0.0, 4.0]])
    array([[0.5 , 0.  ],
           [0.  , 0.25]])
    """
    a = _matrix(a)
    with _scipy_errors():
        return _dec.inv_op(a)


def det(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """The determinant of ``a`` (a number for one matrix, an array for a batch)."""
    return _dec.det_op(_matrix(a))


def expm(A: Any) -> Any:
    """The matrix exponential of ``A`` (its gradient: the exponential of a block
    matrix).

    >>> expm(np.zeros((2, 2)))
    array([[1., 0.],
           [0., 1.]])
    """
    return _fac.matrix_exp_op(_matrix(A))


def sqrtm(A: Any, disp: Any = True, blocksize: Any = 64) -> Any:
    """The principal square root of ``A`` (complex when a real ``A`` has a negative
    eigenvalue, as scipy's); its gradient solves a Sylvester equation
    (``ops/sylvester.py``). ``disp`` and ``blocksize`` are accepted and ignored.

    >>> sqrtm([[4.0, 0.0], [0.0, 1.0]])
    array([[2., 0.],
           [0., 1.]])
    """
    a = _matrix(A)
    if np.ndim(a) != 2:
        raise ValueError("sqrtm: pullback takes one matrix (2-D), not a batch")
    return sqrtm_op(a)


def solve_sylvester(a: Any, b: Any, q: Any) -> Any:
    """X with ``a X + X b = q``; differentiable in all three (the gradient is another
    Sylvester solve).

    >>> solve_sylvester([[1.0]], [[2.0]], [[6.0]])
    array([[2.]])
    """
    a, b = _matrix(a, "a"), _matrix(b, "b")
    q = value(q)
    if np.ndim(a) != 2 or np.ndim(b) != 2 or np.shape(q) != (a.shape[0], b.shape[0]):
        raise ValueError(f"solve_sylvester: a {tuple(np.shape(a))}, b {tuple(np.shape(b))} "
                         f"and q {tuple(np.shape(q))} do not fit (q must be "
                         f"a.shape[0] x b.shape[0])")
    if np_dtype(q).kind not in "fc":
        q = to_dtype(q, np.float64)
    return solve_sylvester_op(a, b, q)


def solve_banded(l_and_u: Any, ab: Any, b: Any, overwrite_ab: bool = False,
                 overwrite_b: bool = False, check_finite: bool = True) -> Any:
    """x with ``A x = b`` for the banded A stored in ``ab`` (LAPACK's band storage:
    ``A[i, j] = ab[u + i - j, j]``, ``l`` bands below the diagonal, ``u`` above);
    forward and gradients through the dense solve (the gradient of ``ab`` is that of A
    read back into band storage).

    >>> solve_banded((1, 1), [[0.0, 1.0, 1.0], [2.0, 2.0, 2.0], [1.0, 1.0, 0.0]], [3.0, 4.0, 3.0])
    array([1., 1., 1.])
    """
    lo, up = (int(k) for k in l_and_u)
    ab = value(ab)
    if np_dtype(ab).kind not in "fc":
        ab = to_dtype(ab, np.float64)
    rows, n = np.shape(ab)
    if rows != lo + up + 1:
        raise ValueError(f"invalid values for the number of lower and upper diagonals: "
                         f"l+u+1 ({lo + up + 1}) does not equal ab.shape[0] ({rows})")
    i, j = np.indices((n, n))
    band = (i - j <= lo) & (j - i <= up)
    dense = where(band, ab[np.clip(up + i - j, 0, rows - 1), j], 0.0)
    return solve(dense, b)
