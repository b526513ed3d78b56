"""torch.linalg's matrix functions (inv, det, slogdet, solve, cholesky), with the rules
torch uses, written in pullback's ops so that they differentiate again; and numpy's
``np.linalg`` spellings.

Batches: every op takes ``(*, n, n)`` inputs, as numpy's gufuncs and torch do. The
derivative of ``slogdet`` goes through ``inv``: at a singular matrix it raises torch's
singular-matrix error. ``det``'s is the adjugate, which an SVD gives at a singular matrix
(as torch's does); its own derivative goes through ``inv`` again.
"""

from __future__ import annotations

import numpy as np

from .elementwise import clone, conj, mul
from .linalg import bmm, eye_of, matmul
from .reductions import sum_dim
from .shape import reshape_op, squeeze_dim, transpose_op, unsqueeze_op
from .table import args, batching
from .table.registry import defop, public
from .table.results import return_type

return_types_slogdet = return_type("linalg_slogdet", ("sign", "logabsdet"))


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: a matrix the factorization cannot handle (singular,
    not positive-definite)."""


# ------------------------------------------------------------------ checks and errors
def matrices(name: str, A, square: bool = False) -> None:
    """torch's checks of a ``(*, m, n)`` floating argument (``(*, n, n)``: ``square``)."""
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if args.np_dtype(A).kind not in "fc":
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {args.dtype_name(A)}")


def square(name: str, A) -> None:
    """torch's checks of a ``(*, n, n)`` floating argument."""
    matrices(name, A, square=True)


def _zero_pivot(a: np.ndarray) -> int:
    """LAPACK getrf's info: the 1-based index of the first zero pivot of the LU
    factorization with partial pivoting (0: none)."""
    a = np.array(a, dtype=np.result_type(a, np.float64))
    first = 0
    for k in range(a.shape[0]):
        p = k + int(np.argmax(np.abs(a[k:, k])))
        a[[k, p]] = a[[p, k]]
        if a[k, k] == 0:
            first = first or k + 1
            continue
        a[k + 1:, k:] -= np.outer(a[k + 1:, k] / a[k, k], a[k, k:])
    return first


def _singular(name: str, A: np.ndarray) -> LinAlgError:
    """torch's error for the first singular matrix of the batch ``A``."""
    flat = np.reshape(A, (-1,) + A.shape[-2:])
    for b, m in enumerate(flat):
        k = _zero_pivot(m)
        if k:
            where = f"(Batch element {b}): " if A.ndim > 2 else ""
            return LinAlgError(f"{name}: {where}The diagonal element {k} is zero, the "
                               "inversion could not be completed because the input matrix "
                               "is singular.")
    return LinAlgError(f"{name}: The input matrix is singular.")  # pragma: no cover


def _inv(A):
    try:
        return np.linalg.inv(A)
    except np.linalg.LinAlgError:
        raise _singular("linalg.inv", A) from None


def _solve(A, B):
    try:
        return np.linalg.solve(A, B)
    except np.linalg.LinAlgError:
        raise LinAlgError("torch.linalg.solve: The solver failed because the input matrix "
                          "is singular.") from None


def _cholesky(A):
    try:
        return np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        flat = np.reshape(A, (-1,) + A.shape[-2:])
        for b, m in enumerate(flat):
            for k in range(1, m.shape[-1] + 1):  # the first leading minor that fails
                try:
                    np.linalg.cholesky(m[:k, :k])
                except np.linalg.LinAlgError:
                    where = f"(Batch element {b}): " if A.ndim > 2 else ""
                    raise LinAlgError(
                        f"linalg.cholesky: {where}The factorization could not be completed "
                        "because the input is not positive-definite (the leading minor of "
                        f"order {k} is not positive-definite).") from None
        raise  # pragma: no cover


# ------------------------------------------------------------------ rule helpers
def mT(x):
    """The matrices of ``x`` transposed (its last two dims swapped)."""
    return transpose_op(x, dim0=-1, dim1=-2)


def mH(x):
    """The matrices of ``x`` conjugate-transposed."""
    return conj(mT(x))


def as_matrix(v):
    """``(*)`` -> ``(*, 1, 1)``: one number per matrix, to scale the matrices."""
    return reshape_op(v, shape=tuple(v.shape) + (1, 1))


def _tri_weight(L):
    """1 below the diagonal, 1/2 on it, 0 above (torch's ``phi.tril_().diagonal().mul_
    (0.5)``), in ``L``'s dtype."""
    n = L.shape[-1]
    return np.tri(n, dtype=L.dtype) - np.eye(n, dtype=L.dtype) / 2


tri_weight = defop("tri_weight", _tri_weight,
                   template="np.tri({0}.shape[-1], dtype={0}.dtype) "
                            "- np.eye({0}.shape[-1], dtype={0}.dtype) / 2")


def _cholesky_rule(g, L, A):
    phi = bmm(mH(L), g) * tri_weight(L)
    Linv = inv_op(L)
    gA = bmm(mH(Linv), bmm(phi, Linv))
    return (gA + mH(gA)) * 0.5


def _others_product(S):
    """``prod_{j != i} S_j`` along the last dim, without dividing (exact at zeros)."""
    ones = np.ones(S.shape[:-1] + (1,), S.dtype)
    left = np.cumprod(np.concatenate([ones, S[..., :-1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, S[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return left * right


def _adjugate(A):
    """adj(A) (det(A) inv(A) where A is invertible), also at singular matrices, where
    it comes from the SVD A = U S Vh: det(U) det(Vh) Vh^H diag(prod_{j != i} S_j) U^H,
    as torch's linalg_det_backward does there."""
    A = np.asarray(A)
    d = np.linalg.det(A)
    out = np.empty_like(A, dtype=np.result_type(A, d))
    bad = (d == 0) | ~np.isfinite(d)
    good = ~bad
    if np.any(good):
        out[good] = d[good][..., None, None] * np.linalg.inv(A[good])
    if np.any(bad):
        U, S, Vh = np.linalg.svd(A[bad])
        alpha = np.linalg.det(U) * np.linalg.det(Vh)
        D = _others_product(S).astype(out.dtype) * alpha[..., None]
        out[bad] = np.conj(np.swapaxes(Vh, -1, -2)) @ (D[..., :, None]
                                                       * np.conj(np.swapaxes(U, -1, -2)))
    return out


# adjugate's rule: adj(A) = det(A) inv(A), differentiated as that product (at an
# invertible A; at a singular one inv raises torch's singular-matrix error: a second
# derivative of det there is refused, never wrong)
def _adjugate_rule(g, out, A):
    Ainv = inv_op(A)
    d = det_op(A)
    g_d = sum_dim(g * conj(Ainv), dim=(-2, -1), keepdim=False)
    g_inv = g * as_matrix(conj(d))
    return -bmm(mH(Ainv), bmm(g_inv, mH(Ainv))) + as_matrix(g_d * conj(d)) * mH(Ainv)


# ------------------------------------------------------------------ primitives
inv_op = defop("linalg_inv", _inv, "LinalgInvExBackward0",
               vjp=(lambda g, out, A: -bmm(mH(out), bmm(g, mH(out))),), uses=("out",),
               torch_args=("A",), template="np.linalg.inv({0})", fresh=True, batch=batching.leading)
# det's gradient is g adj(A)^H (g conj(det) inv(A)^H where A is invertible): the adjugate,
# not the inverse, so that it holds at a singular matrix too (torch's and JAX's)
det_op = defop("linalg_det", np.linalg.det, "LinalgDetBackward0",
               vjp=(lambda g, out, A: as_matrix(g) * mH(adjugate_op(A)),),
               uses=("A",), torch_args=("A",), template="np.linalg.det({0})", fresh=True,
               batch=batching.leading)
adjugate_op = defop("linalg_adjugate", _adjugate, "LinalgAdjugateBackward0",
                    vjp=(_adjugate_rule,), uses=("A",), torch_args=("A",), fresh=True,
                    template="rt.adjugate({0})",
                    batch=batching.leading)
slogdet_op = defop("linalg_slogdet", lambda A: tuple(np.linalg.slogdet(A)),
                   "LinalgSlogdetBackward0", outputs=return_types_slogdet,
                   vjp=(lambda g, out, A: as_matrix(g.logabsdet) * mH(inv_op(A)),),
                   uses=("A",), torch_args=("A",), template="np.linalg.slogdet({0})",
                   batch=batching.leading)
solve_op = defop("linalg_solve", _solve, "LinalgSolveExBackward0",
                 vjp=(lambda g, out, A, B: -bmm(solve_op(mH(A), g), mH(out)),
                      lambda g, out, A, B: solve_op(mH(A), g)),
                 uses=("A out", "A"), torch_args=("A", "B"),
                 template="np.linalg.solve({0}, {1})", fresh=True, batch=batching.leading_aligned)
cholesky_op = defop("linalg_cholesky", _cholesky, "LinalgCholeskyExBackward0",
                    vjp=(_cholesky_rule,), uses=("out",), torch_args=("A",),
                    template="np.linalg.cholesky({0})", fresh=True, batch=batching.leading)


# ------------------------------------------------------------------ public functions
@public("linalg.inv", function=("linalg.inv", "inverse"), method="inverse",
        numpy={np.linalg.inv: args.numpy_form(lambda a: inv(args.value(a)))})
def inv(A):
    square("linalg.inv", A)
    return inv_op(A)


@public("linalg.det", function=("linalg.det", "det"), method="det",
        numpy={np.linalg.det: args.numpy_form(lambda a: det(args.value(a)))})
def det(A):
    square("linalg.det", A)
    return det_op(A)


@public("linalg.slogdet", function=("linalg.slogdet", "slogdet"), method="slogdet",
        numpy={np.linalg.slogdet: args.numpy_form(lambda a: slogdet(args.value(a)))})
def slogdet(A):
    square("linalg.slogdet", A)
    return slogdet_op(A)


def _is_vector(A, B) -> bool:
    """torch's rule: B is a (batch of) vector(s) when it is 1-d or has A's batch shape
    with one dim fewer."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


@public("linalg.solve", function=True,
        numpy={np.linalg.solve: args.numpy_form(
            lambda a, b: _numpy_solve(args.value(a), args.value(b)))})
def solve(A, B, *, left=True):
    square("linalg.solve", A)
    if not left:
        return mT(solve(mT(A), mT(B)))
    vector = _is_vector(A, B)
    rhs = unsqueeze_op(B, dim=B.ndim) if vector else B
    if rhs.shape[-2] != A.shape[-1]:
        raise RuntimeError("linalg.solve: Incompatible shapes of A and B for the equation "
                           f"AX = B ({A.shape[-2]}x{A.shape[-1]} and "
                           f"{rhs.shape[-2]}x{rhs.shape[-1]})")
    out = solve_op(A, rhs)
    return squeeze_dim(out, dim=(out.ndim - 1,)) if vector else out


def _numpy_solve(a, b):
    square("linalg.solve", a)
    if b.ndim == 1:  # numpy 2: only a 1-d b is a vector
        return squeeze_dim(solve_op(a, unsqueeze_op(b, dim=1)), dim=(1,))
    return solve_op(a, b)


@public("linalg.cholesky", function=True,
        numpy={np.linalg.cholesky: args.numpy_form(
            lambda a, upper=False: cholesky(args.value(a), upper=upper))})
def cholesky(A, *, upper=False):
    square("linalg.cholesky", A)
    if upper:  # numpy's and torch's (LAPACK uplo='U'): U with A = U^H U, from A's upper
        return mH(cholesky_op(mH(A)))  # triangle, the lower one of A^H
    return cholesky_op(A)


@public("linalg.matrix_power", function=("linalg.matrix_power", "matrix_power"),
        method="matrix_power", numpy={np.linalg.matrix_power: args.numpy_form(
            lambda a, n: matrix_power(args.value(a), n))})
def matrix_power(A, n):
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError("linalg.matrix_power: A must be batches of square matrices, but "
                           f"they are {A.shape[-2] if A.ndim > 1 else 1} by {A.shape[-1]} "
                           "matrices")
    if n == 0:  # the identity (torch's has a zero gradient)
        return eye_of(A) + mul(A, 0)
    if n < 0:
        A, n = inv_op(A), -n
    if n == 1:
        return clone(A)
    result, power = None, A
    while n:  # by squaring, as torch does
        if n & 1:
            result = power if result is None else matmul(result, power)
        n >>= 1
        if n:
            power = matmul(power, power)
    return result
