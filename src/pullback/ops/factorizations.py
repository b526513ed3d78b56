"""torch.linalg.qr, pinv and matrix_exp with torch's rules (linalg_qr_backward,
pinv_backward, and matrix_exp's gradient as the exponential of a block matrix), written
in pullback's ops; numpy's ``np.linalg.qr`` and ``np.linalg.pinv``.

``matrix_exp`` has no numpy function (scipy's expm is not a dependency): its forward is
the scaling-and-squaring Pade(13) algorithm torch and scipy use, in numpy."""

from __future__ import annotations

import numpy as np

from .decompositions import matrices, mH, solve_op, square, tri_weight
from .elementwise import zeros_like
from .joining import cat_op
from .linalg import bmm, matmul
from .shape import reshape, squeeze_dim, transpose_op, unsqueeze_op
from .subscripts import getitem
from .table import args, batching
from .table.registry import defop, public
from .table.results import return_type

return_types_qr = return_type("linalg_qr", ("Q", "R"))
_QR_MODES = ("reduced", "r", "complete")


def _copyltu(M):
    """The symmetric matrix with ``M``'s lower triangle."""
    lower = M * tri_weight(M)
    return lower + transpose_op(lower, dim0=-1, dim1=-2)


def _qr_tall(gQ, gR, Q, R):
    """gA = [gQ + Q copyltu(M)] R^{-H} with M = R gR^H - gQ^H Q (m >= n)."""
    M = bmm(R, mH(gR)) - bmm(mH(gQ), Q)
    B = gQ + bmm(Q, _copyltu(M))
    return mH(solve_op(R, mH(B)))


def _qr_rule(g, out, A, mode):
    Q, R = out
    gQ, gR = g
    m, n = A.shape[-2], A.shape[-1]
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                           "when mode='r'. Please use linalg.qr(A, mode='reduced') if you are "
                           "going to differentiate through linalg.qr.")
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                           "and nrows > ncols.")
    if m >= n:
        return _qr_tall(gQ, gR, Q, R)
    # A = [X | Y] with X = Q U square: X's gradient as a square QR's, with Y = Q V's
    # gradient through Q added
    first, rest = (Ellipsis, slice(None), slice(0, m)), (Ellipsis, slice(None), slice(m, None))
    U, V, gU, gV = getitem(R, first), getitem(R, rest), getitem(gR, first), getitem(gR, rest)
    gX = _qr_tall(gQ + bmm(bmm(Q, V), mH(gV)), gU, Q, U)
    return cat_op(gX, bmm(Q, gV), dim=A.ndim - 1)


def _qr(A, mode):
    if mode == "r":
        return np.zeros((0,), A.dtype), np.linalg.qr(A, mode="r")
    return tuple(np.linalg.qr(A, mode=mode))


qr_op = defop("linalg_qr", _qr, "LinalgQrBackward0", outputs=return_types_qr,
              vjp=(_qr_rule,), uses=("Q R",), torch_args=("A",),
              template="np.linalg.qr({0}, mode={mode})", batch=batching.leading)


def _numpy_qr(a, mode="reduced"):
    if mode not in ("reduced", "complete"):
        raise args.Unsupported  # numpy's 'r', 'raw' and its errors
    return qr(args.value(a), mode)


@public("linalg.qr", function=True, numpy={np.linalg.qr: args.numpy_form(_numpy_qr)})
def qr(A, mode="reduced"):
    if mode not in _QR_MODES:
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    matrices("linalg.qr", A)
    return qr_op(A, mode=mode)


# ------------------------------------------------------------------ pinv
def _pinv_rule(g, out, A, rtol, hermitian):
    """torch's pinv_backward (the smaller of two equivalent products)."""
    m, n = A.shape[-2], A.shape[-1]
    pinvAh, gh = mH(out), mH(g)
    if m <= n:
        K = bmm(gh, out)
        KpinvAh = bmm(K, pinvAh)
        return (-mH(bmm(out, K)) + KpinvAh - bmm(bmm(A, out), KpinvAh)
                + bmm(bmm(pinvAh, out), gh - bmm(K, A)))
    K = bmm(out, gh)
    pinvAhK = bmm(pinvAh, K)
    return (-mH(bmm(K, out)) + bmm(bmm(gh - bmm(A, K), out), pinvAh) + pinvAhK
            - bmm(bmm(pinvAhK, out), A))


pinv_op = defop("linalg_pinv", lambda A, rtol, hermitian: np.linalg.pinv(
                    A, rtol=rtol, hermitian=hermitian),
                "LinalgPinvBackward0", vjp=(_pinv_rule,), uses=("A out",), torch_args=("A",),
                template="np.linalg.pinv({0}, rtol={rtol}, hermitian={hermitian})",
                fresh=True, batch=batching.leading)


@public("linalg.pinv", function=("linalg.pinv", "pinverse"), method="pinverse",
        numpy={np.linalg.pinv: args.numpy_form(
            lambda a, rcond=None, hermitian=False, *, rtol=None: pinv(
                args.value(a), rtol=rcond if rtol is None else rtol, hermitian=hermitian))})
def pinv(A, *, atol=None, rtol=None, hermitian=False):
    matrices("linalg.pinv", A)
    if atol is not None:
        raise NotImplementedError("linalg.pinv: atol= is not supported by pullback; use rtol=")
    return pinv_op(A, rtol=rtol, hermitian=bool(hermitian))


# ------------------------------------------------------------------ matrix_exp
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
           1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
           33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _expm(A):
    """Scaling and squaring with the Pade(13) approximant (Higham 2005), batched."""
    A = np.asarray(A)
    if A.shape[-1] == 0:
        return A.copy()
    norm = np.max(np.sum(np.abs(A), axis=-2), axis=-1)  # the 1-norm of each matrix
    s = np.maximum(0, np.ceil(np.log2(np.maximum(norm, 1e-300) / _THETA13))).astype(int)
    X = A / (2.0 ** s)[..., None, None]
    b, eye = _PADE13, np.eye(A.shape[-1], dtype=A.dtype)
    X2 = X @ X
    X4 = X2 @ X2
    X6 = X4 @ X2
    U = X @ (X6 @ (b[13] * X6 + b[11] * X4 + b[9] * X2) + b[7] * X6 + b[5] * X4 + b[3] * X2
             + b[1] * eye)
    V = X6 @ (b[12] * X6 + b[10] * X4 + b[8] * X2) + b[6] * X6 + b[4] * X4 + b[2] * X2 \
        + b[0] * eye
    E = np.linalg.solve(V - U, V + U)
    for k in range(int(s.max(initial=0))):  # square each matrix its own number of times
        E = np.where((s > k)[..., None, None], E @ E, E)
    return E.astype(A.dtype, copy=False)


def _matrix_exp_rule(g, out, A):
    """The upper-right block of exp([[A^H, g], [0, A^H]]) (Mathias 1996)."""
    n = A.shape[-1]
    Ah = mH(A)
    top = cat_op(Ah, g, dim=A.ndim - 1)
    bottom = cat_op(zeros_like(g), Ah, dim=A.ndim - 1)
    big = matrix_exp_op(cat_op(top, bottom, dim=A.ndim - 2))
    return getitem(big, (Ellipsis, slice(0, n), slice(n, None)))


matrix_exp_op = defop("linalg_matrix_exp", _expm, "LinalgMatrixExpBackward0",
                      vjp=(_matrix_exp_rule,), uses=("A",), torch_args=("A",), fresh=True,
                      template="rt.matrix_exp({0})")


@public("linalg.matrix_exp", function=("linalg.matrix_exp", "matrix_exp"), method="matrix_exp")
def matrix_exp(A):
    square("linalg.matrix_exp", A)
    return matrix_exp_op(A)



# ------------------------------------------------------------------ lstsq, matrix_rank
return_types_lstsq = return_type("linalg_lstsq",
                                 ("solution", "residuals", "rank", "singular_values"))
matrix_rank_op = defop("linalg_matrix_rank",
                       lambda A, rtol, hermitian: np.asarray(np.linalg.matrix_rank(
                           A, rtol=rtol, hermitian=hermitian), dtype=np.int64),
                       template="np.linalg.matrix_rank({0}, rtol={rtol}, hermitian={hermitian})",
                       batch=batching.leading)


@public("linalg.matrix_rank", function=True)
def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    matrices("linalg.matrix_rank", A)
    if atol is not None:
        raise NotImplementedError("linalg.matrix_rank: atol= is not supported by pullback; "
                                  "use rtol=")
    return matrix_rank_op(A, rtol=rtol, hermitian=bool(hermitian))


@public("linalg.lstsq", function=True)
def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution as pinv(A) @ B: torch's gradient (its lstsq backward is
    pinv's); residuals and singular_values empty and the rank given, as torch's default
    CPU driver (gelsy) returns them."""
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    matrices("torch.linalg.lstsq", A)
    vector = B.ndim == A.ndim - 1
    rhs = unsqueeze_op(B, dim=B.ndim) if vector else B
    if rhs.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    X = matmul(pinv_op(A, rtol=rcond, hermitian=False), rhs)
    X = squeeze_dim(X, dim=(X.ndim - 1,)) if vector else X
    empty = zeros_like(getitem(reshape(A, -1), slice(0, 0)))
    return return_types_lstsq(X, empty, matrix_rank_op(A, rtol=rcond, hermitian=False), empty)
