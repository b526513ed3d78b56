"""Spectral decompositions: torch.linalg.svd (reduced or full), svdvals, eigh and eig,
with torch's rules (svd_backward, linalg_eig_backward) written in pullback's ops, and
numpy's ``np.linalg.svd`` / ``eigh`` / ``eigvalsh`` / ``eig`` / ``eigvals``.

The rules divide by the differences of the (squared) singular values or eigenvalues:
as torch's, a gradient through ``U``, ``Vh`` or the eigenvectors is finite only when
those are distinct (a degenerate eigenvalue has no unique eigenvectors: inf or NaN
there, as in torch); the singular values' and eigenvalues' own gradients are always
finite. ``eigh`` reads the lower triangle and its gradient is that of a symmetric
(Hermitian) argument, as torch's is.
"""

from __future__ import annotations

import numpy as np

from .decompositions import matrices, mH, solve_op, square
from .elementwise import absolute, conj, imag, is_complex, real
from .linalg import bmm, eye_of
from .reductions import amax, sum_dim
from .shape import unsqueeze_op
from .subscripts import getitem
from .table import args, batching
from .table.registry import defop, public
from .table.results import return_type

return_types_svd = return_type("linalg_svd", ("U", "S", "Vh"))
return_types_eigh = return_type("linalg_eigh", ("eigenvalues", "eigenvectors"))
return_types_eig = return_type("linalg_eig", ("eigenvalues", "eigenvectors"))


def _svd_grad(gU, gS, gVh, U, S, Vh):
    """torch's svd_backward for the reduced factors (U: m x k, Vh: k x n)."""
    m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
    S2 = S * S
    E = unsqueeze_op(S2, dim=S2.ndim - 1) - unsqueeze_op(S2, dim=S2.ndim)
    eye = eye_of(E)
    E = E + eye  # 1 on the diagonal, where the skew parts below are 0
    UhgU = bmm(mH(U), gU)
    VhgV = bmm(Vh, mH(gVh))
    gA = ((UhgU - mH(UhgU)) * unsqueeze_op(S, dim=S.ndim - 1)
          + unsqueeze_op(S, dim=S.ndim) * (VhgV - mH(VhgV))) / E
    gA = gA + unsqueeze_op(gS, dim=gS.ndim - 1) * eye
    if is_complex(UhgU):  # the phase of each pair of singular vectors: i Im(U^H gU)_jj / S_j
        d = imag(sum_dim(UhgU * eye, dim=-1, keepdim=False)) / S
        gA = gA + unsqueeze_op(d * 1j, dim=d.ndim - 1) * eye
    if m > k:
        gUSinv = gU / unsqueeze_op(S, dim=S.ndim - 1)
        gA = bmm(U, gA) + gUSinv - bmm(U, bmm(mH(U), gUSinv))
        return bmm(gA, Vh)
    if n > k:
        SinvgVh = gVh / unsqueeze_op(S, dim=S.ndim)
        gA = bmm(gA, Vh) + SinvgVh - bmm(bmm(SinvgVh, mH(Vh)), Vh)
        return bmm(U, gA)
    return bmm(U, bmm(gA, Vh))


def _svd_rule(g, out, A, full_matrices):
    U, S, Vh = out
    gU, gS, gVh = g
    if full_matrices:  # the columns of U and rows of Vh past k get no gradient
        k = S.shape[-1]
        U, gU = (getitem(x, (Ellipsis, slice(0, k))) for x in (U, gU))
        Vh, gVh = (getitem(x, (Ellipsis, slice(0, k), slice(None))) for x in (Vh, gVh))
    return _svd_grad(gU, gS, gVh, U, S, Vh)


svd_op = defop("linalg_svd",
               lambda A, full_matrices: tuple(np.linalg.svd(A, full_matrices=full_matrices)),
               "LinalgSvdBackward0", outputs=return_types_svd, vjp=(_svd_rule,),
               uses=("U S Vh",), torch_args=("A",),
               template="np.linalg.svd({0}, full_matrices={full_matrices})", batch=batching.leading)


def _svdvals_rule(g, out, A):
    U, S, Vh = svd_op(A, full_matrices=False)
    return bmm(U * unsqueeze_op(g, dim=g.ndim - 1), Vh)


svdvals_op = defop("linalg_svdvals", lambda A: np.linalg.svd(A, compute_uv=False),
                   "LinalgSvdBackward0", vjp=(_svdvals_rule,), uses=("A",), torch_args=("A",),
                   template="np.linalg.svd({0}, compute_uv=False)", fresh=True,
                   batch=batching.leading)


def _eigh_rule(g, out, A, UPLO):
    L, V = out
    gL, gV = g
    VhgV = bmm(mH(V), gV)
    E = unsqueeze_op(L, dim=L.ndim - 1) - unsqueeze_op(L, dim=L.ndim)
    eye = eye_of(E)
    inner = (VhgV - mH(VhgV)) * 0.5 / (E + eye) + unsqueeze_op(gL, dim=gL.ndim - 1) * eye
    return bmm(V, bmm(inner, mH(V)))


eigh_op = defop("linalg_eigh", lambda A, UPLO: tuple(np.linalg.eigh(A, UPLO=UPLO)),
                "LinalgEighBackward0", outputs=return_types_eigh, vjp=(_eigh_rule,),
                uses=("eigenvalues eigenvectors",), torch_args=("A",),
                template="np.linalg.eigh({0}, UPLO={UPLO})", batch=batching.leading)


def _numpy_svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    a = args.value(a)
    if hermitian:
        raise args.Unsupported
    matrices("linalg.svd", a)
    return svd_op(a, full_matrices=bool(full_matrices)) if compute_uv else svdvals_op(a)


@public("linalg.svd", function=True, numpy={np.linalg.svd: args.numpy_form(_numpy_svd)})
def svd(A, full_matrices=True, *, driver=None):
    matrices("linalg.svd", A)
    return svd_op(A, full_matrices=bool(full_matrices))


@public("linalg.svdvals", function=True, numpy={np.linalg.svdvals: args.numpy_form(
    lambda x: svdvals(args.value(x)))})
def svdvals(A, *, driver=None):
    matrices("linalg.svdvals", A)
    return svdvals_op(A)


@public("linalg.eigh", function=True,
        numpy={np.linalg.eigh: args.numpy_form(
            lambda a, UPLO="L": eigh(args.value(a), UPLO=UPLO))})
def eigh(A, UPLO="L"):
    square("linalg.eigh", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return eigh_op(A, UPLO=UPLO)


@public("linalg.eigvalsh", function=True,
        numpy={np.linalg.eigvalsh: args.numpy_form(
            lambda a, UPLO="L": eigvalsh(args.value(a), UPLO=UPLO))})
def eigvalsh(A, UPLO="L"):
    return eigh(A, UPLO)[0]


# ---------------------------------------------------------------------------- eig
def _eig(A):
    L, V = np.linalg.eig(A)
    c = np.result_type(A.dtype, np.complex64)  # torch's: always complex
    return L.astype(c, copy=False), V.astype(c, copy=False)


def _eig_rule(g, out, A):
    """torch's linalg_eig_backward: V^-H (diag(gL) + (V^H gV - V^H V Re(diag(V^H gV)))
    / conj(L_j - L_i)) V^H. As torch's it assumes the loss does not depend on the
    eigenvectors' phases (their norm is 1, their phase LAPACK's choice)."""
    L, V = out
    gL, gV = g
    Vh = mH(V)
    VhgV = bmm(Vh, gV)
    eye = eye_of(VhgV)
    re_diag = sum_dim(real(VhgV * eye), dim=(VhgV.ndim - 2,), keepdim=True)
    inner = VhgV - bmm(Vh, V * re_diag)
    Lc = conj(L)
    E = unsqueeze_op(Lc, dim=Lc.ndim - 1) - unsqueeze_op(Lc, dim=Lc.ndim) + eye
    inner = inner / E * (1 - eye) + unsqueeze_op(gL, dim=gL.ndim - 1) * eye
    return solve_op(Vh, bmm(inner, Vh))


eig_op = defop("linalg_eig", _eig, "LinalgEigBackward0", outputs=return_types_eig,
               vjp=(_eig_rule,), uses=("eigenvalues eigenvectors",), torch_args=("A",),
               template="rt.eig({0})",
               batch=batching.leading)


@public("linalg.eig", function=True)
def eig(A):
    square("linalg.eig", A)
    return eig_op(A)


@public("linalg.eigvals", function=True)
def eigvals(A):
    return eig(A)[0]


def _all_real(L) -> bool:
    """numpy's eig returns real arrays when every eigenvalue is real (a value read)."""
    return bool(amax(absolute(imag(L))) == 0) if L.shape[-1] else True


def _numpy_eig(a):
    A = args.value(a)
    if args.np_dtype(A).kind == "c":
        return eig(A)
    L, V = eig(A)
    return return_types_eig(real(L), real(V)) if _all_real(L) else eig(A)


def _numpy_eigvals(a):
    A = args.value(a)
    L = eigvals(A)
    return real(L) if args.np_dtype(A).kind != "c" and _all_real(L) else L


public("eig_numpy", numpy={np.linalg.eig: args.numpy_form(_numpy_eig),
                           np.linalg.eigvals: args.numpy_form(_numpy_eigvals)})(_numpy_eig)
