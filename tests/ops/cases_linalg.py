"""Op cases of torch.linalg's matrix functions (ops/decompositions.py): well-conditioned
inputs (``invertible``, ``spd``), batches, 1x1 and 0x0 matrices."""

from __future__ import annotations

import numpy as np

from .case_types import A, _c

_INV = A((3, 3), "invertible")
_NEG_DET = A(values=[[0.5, 2.0], [1.5, -0.25]])  # det < 0: slogdet's sign is -1

DECOMPOSITION_CASES = [
    _c("linalg_inv", _INV, torch=lambda T, a: T.linalg.inv(a)),
    _c("linalg_inv", A((2, 3, 3), "invertible"), torch=lambda T, a: T.linalg.inv(a)),
    _c("linalg_inv", A((1, 1), "invertible"), torch=lambda T, a: T.linalg.inv(a)),
    _c("linalg_inv", A((0, 0)), torch=lambda T, a: T.linalg.inv(a)),
    _c("linalg_det", _INV, torch=lambda T, a: T.linalg.det(a)),
    _c("linalg_det", A((2, 1, 2, 2), "invertible"), torch=lambda T, a: T.linalg.det(a)),
    _c("linalg_det", A((1, 1), "invertible"), torch=lambda T, a: T.linalg.det(a)),
    _c("linalg_det", _NEG_DET, torch=lambda T, a: T.linalg.det(a)),
    # det's gradient: det(A) inv(A) where A is invertible, an SVD's form where it is not
    # (its own gradient there raises torch's singular-matrix error)
    _c("linalg_adjugate", _INV, torch_name=False,
       torch=lambda T, a: T.linalg.det(a)[..., None, None] * T.linalg.inv(a)),
    _c("linalg_adjugate", A((2, 2, 2), "invertible"), torch_name=False,
       torch=lambda T, a: T.linalg.det(a)[..., None, None] * T.linalg.inv(a)),
    _c("linalg_adjugate", A(values=[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]],
                            grad=False), tag="singular",
       torch=lambda T, a: T.tensor([[-3.0, 6.0, -3.0], [6.0, -12.0, 6.0], [-3.0, 6.0, -3.0]],
                                   dtype=a.dtype)),
    _c("linalg_slogdet", _INV, torch=lambda T, a: T.linalg.slogdet(a)),
    _c("linalg_slogdet", _NEG_DET, torch=lambda T, a: T.linalg.slogdet(a)),
    _c("linalg_slogdet", A((3, 2, 2), "invertible"), torch=lambda T, a: T.linalg.slogdet(a)),
    _c("linalg_solve", _INV, A((3, 2)), torch=lambda T, a, b: T.linalg.solve(a, b)),
    _c("linalg_solve", A((2, 3, 3), "invertible"), A((3, 1)),  # B broadcast over the batch
       torch=lambda T, a, b: T.linalg.solve(a, b)),
    _c("linalg_solve", A((1, 1), "invertible"), A((2, 1, 4)),  # A broadcast
       torch=lambda T, a, b: T.linalg.solve(a, b)),
    _c("linalg_solve", _INV, A((3, 0)), torch=lambda T, a, b: T.linalg.solve(a, b)),
    # torch's rule symmetrizes the gradient (A is taken as Hermitian), where a finite
    # difference of the lower triangle is not symmetric: test_linalg checks cholesky(sym(X))
    _c("linalg_cholesky", A((3, 3), "spd"), torch=lambda T, a: T.linalg.cholesky(a), fd=False),
    _c("linalg_cholesky", A((2, 2, 2), "spd"), torch=lambda T, a: T.linalg.cholesky(a),
       fd=False),
    _c("linalg_cholesky", A((1, 1), "spd"), torch=lambda T, a: T.linalg.cholesky(a)),
    _c("linalg_cholesky", A((3, 1, 1), "spd"), torch=lambda T, a: T.linalg.cholesky(a)),
    # only A's triangle is read: the finite difference of the other is zero, as is the rule's
    _c("linalg_solve_triangular", _INV, A((3, 2)),
       p={"upper": False, "left": True, "unitriangular": False},
       torch=lambda T, a, b: T.linalg.solve_triangular(a, b, upper=False)),
    _c("linalg_solve_triangular", A((2, 3, 3), "invertible"), A((4, 3)),  # X A = B, batched
       p={"upper": True, "left": False, "unitriangular": False},
       torch=lambda T, a, b: T.linalg.solve_triangular(a, b, upper=True, left=False)),
    _c("linalg_solve_triangular", _INV, A((2, 3, 1)),
       p={"upper": True, "left": True, "unitriangular": True},
       torch=lambda T, a, b: T.linalg.solve_triangular(a, b, upper=True, unitriangular=True)),
    _c("tri_weight", A((3, 3), grad=False),
       torch=lambda T, a: T.ones(3, 3, dtype=a.dtype).tril() - T.eye(3, dtype=a.dtype) / 2),
]

PRODUCT_CASES = [
    _c("vdot", A((4,)), A((4,)), torch=lambda T, x, y: T.vdot(x, y)),
    _c("vdot", A((0,)), A((0,)), torch=lambda T, x, y: T.vdot(x, y)),
    _c("trace", A((3, 4)), torch=lambda T, x: T.trace(x)),
    _c("trace", A((3, 3)), torch=lambda T, x: x.trace()),
    _c("trace", A((0, 2)), torch=lambda T, x: x.trace()),
    _c("eye_of", A((2, 3), grad=False), torch=lambda T, x: T.eye(2, 3, dtype=x.dtype)),
    _c("linalg_cross", A((4, 3)), A((4, 3)), p={"dim": -1},
       torch=lambda T, x, y: T.linalg.cross(x, y)),
    _c("linalg_cross", A((3, 2)), A((3, 1)), p={"dim": -2},  # broadcast
       torch=lambda T, x, y: T.linalg.cross(x, y, dim=0)),
    _c("linalg_cross", A((1, 3)), A((2, 3)), p={"dim": -1},
       torch=lambda T, x, y: T.linalg.cross(x, y)),
]


def _norm(shape, ord, dim, keepdim=False, **kw):
    return _c("linalg_vector_norm", A(shape, kw.pop("domain", "away")),
              p={"ord": float(ord), "dim": dim, "keepdim": keepdim},
              torch=lambda T, x: T.linalg.vector_norm(x, ord, dim, keepdim), **kw)


_SPREAD = A(values=[[3.0, -1.0, 0.5, 2.0], [0.25, 1.5, -4.0, 0.75], [1.0, 2.5, -0.5, -1.25]])
# distinct singular values and eigenvalues: the vectors' gradients are finite there
NORM_CASES = [
    _norm((3, 4), 2, None), _norm((3, 4), 2, (1,), True), _norm((2, 3, 4), 2, (0, 2)),
    _norm((3, 4), 1, (0,)), _norm((3, 4), 3, (1,)), _norm((3, 4), 1.5, None),
    _norm((3, 4), 0.5, (1,)), _norm((3, 4), -1, (1,)),
    _norm((3, 4), 0, (1,)),
    _norm((), 2, None), _norm((0, 3), 2, (0,)),
    _c("linalg_vector_norm", _SPREAD, p={"ord": float("inf"), "dim": (1,), "keepdim": False},
       torch=lambda T, x: T.linalg.vector_norm(x, float("inf"), 1)),
    _c("linalg_vector_norm", _SPREAD, p={"ord": -float("inf"), "dim": None, "keepdim": False},
       torch=lambda T, x: T.linalg.vector_norm(x, -float("inf"))),
    # ties: split evenly; a zero vector: a zero gradient for the 2-norm (torch's mask)
    _c("linalg_vector_norm", A(values=[[2.0, -2.0, 1.0]]),
       p={"ord": float("inf"), "dim": None, "keepdim": False}, tag="ties", fd=False,
       torch=lambda T, x: T.linalg.vector_norm(x, float("inf"))),
    _c("linalg_vector_norm", A(values=[[0.0, 0.0], [1.0, 2.0]]),
       p={"ord": 2.0, "dim": (1,), "keepdim": False}, tag="zero", fd=False,
       torch=lambda T, x: T.linalg.vector_norm(x, 2, 1)),
    # renorm: the rows above maxnorm scaled to it, the others as they are
    _c("renorm", _SPREAD, p={"p": 2.0, "dims": (1,), "maxnorm": 3.0},
       torch=lambda T, x: x.renorm(2, 0, 3.0)),
    _c("renorm", A((2, 3, 4), "away"), p={"p": 1.0, "dims": (0, 2), "maxnorm": 2.5},
       torch=lambda T, x: T.renorm(x, 1, 1, 2.5)),
    _c("renorm", A((3, 4), "away"), p={"p": 3.0, "dims": (0,), "maxnorm": 1.0},
       torch=lambda T, x: x.renorm(3, -1, 1.0)),
]

def _svd(values, full_matrices, **kw):
    """svd's signs of the singular vectors are LAPACK's choice (numpy's and torch's float32
    may differ): the table checks it against finite differences and numpy; test_linalg
    checks sign-free functions of it against torch."""
    return _c("linalg_svd", A(values=values), p={"full_matrices": full_matrices},
              reference=lambda a: tuple(np.linalg.svd(a, full_matrices=full_matrices)), **kw)


_TALL = [[3.0, 1.0, 0.5], [-1.0, 2.0, 1.5], [0.5, 0.25, -1.0], [1.0, -0.5, 0.75]]
SPECTRAL_CASES = [
    _svd(_SPREAD.values, False), _svd(_TALL, False), _svd([[2.0, 1.0], [0.5, -1.0]], True),
    # U, Vh past the first k columns and rows: any orthonormal completion, no gradient
    _svd(_TALL, True, fd=False),
    _svd([[[2.0, 1.5, -0.5], [0.5, -1.0, 3.0]], [[1.0, 0.25, 0.5], [-0.75, -2.0, 1.0]]],
         False),
    # torch's svdvals is output 1 of its LinalgSvdBackward0
    _c("linalg_svdvals", _SPREAD, torch=lambda T, a: T.linalg.svdvals(a) * 1, torch_name=False),
    _c("linalg_svdvals", A((2, 4, 3)), torch=lambda T, a: T.linalg.svdvals(a) * 1,
       torch_name=False),
    # eigh reads the lower triangle and its rule gives the gradient of a symmetric argument:
    # finite differences hold for 1x1 matrices; test_linalg checks eigh(sym(X)) and, with
    # sign-free functions of the eigenvectors, torch
    _c("linalg_eigh", A((3, 3), "spd"), p={"UPLO": "L"}, fd=False,
       reference=lambda a: tuple(np.linalg.eigh(a))),
    _c("linalg_eigh", A((2, 3, 3), "spd"), p={"UPLO": "U"}, fd=False,
       reference=lambda a: tuple(np.linalg.eigh(a, UPLO="U"))),
    _c("linalg_eigh", A((2, 1, 1), "spd"), p={"UPLO": "L"},
       torch=lambda T, a: T.linalg.eigh(a)),
    # eig: real distinct eigenvalues, so real eigenvectors whose phase (a sign, LAPACK's
    # choice: torch's float32 signs differ from numpy's) does not move under a small change:
    # finite differences hold; test_numpy_extras checks complex eigenvalues and torch with
    # phase-free losses
    _c("linalg_eig", A(values=[[2.0, 1.0, 0.5], [0.3, -1.0, 0.7], [0.2, 0.4, 0.5]]),
       reference=lambda a: _eig(a)),
    _c("linalg_eig", A(values=[[[1.5, 0.3], [0.2, -0.5]], [[0.0, 1.0], [2.0, 0.5]]]),
       reference=lambda a: _eig(a)),
]


def _eig(a):
    return tuple(x.astype(np.result_type(a.dtype, np.complex64)) for x in np.linalg.eig(a))


def _qr(shape, mode="reduced"):
    return _c("linalg_qr", A(shape), p={"mode": mode}, torch=lambda T, a: T.linalg.qr(a, mode))


def _expm(shape, **kw):
    return _c("linalg_matrix_exp", A(shape), torch=lambda T, a: T.linalg.matrix_exp(a), **kw)


FACTORIZATION_CASES = [
    _qr((4, 3)), _qr((3, 3)), _qr((3, 5)), _qr((2, 4, 3)), _qr((3, 4), "complete"),
    _qr((1, 1)),
    _c("linalg_pinv", A((3, 4)), p={"rtol": None, "hermitian": False},
       torch=lambda T, a: T.linalg.pinv(a)),
    _c("linalg_pinv", A((2, 4, 3)), p={"rtol": None, "hermitian": False},
       torch=lambda T, a: T.linalg.pinv(a)),
    _c("linalg_pinv", A((3, 3), "spd"), p={"rtol": None, "hermitian": True},
       torch=lambda T, a: T.linalg.pinv(a, hermitian=True), fd=False),  # (reads one triangle)
    _c("linalg_pinv", A((1, 1), "spd"), p={"rtol": None, "hermitian": True},
       torch=lambda T, a: T.linalg.pinv(a, hermitian=True)),
    _expm((3, 3)), _expm((2, 2, 2)), _expm((1, 1)), _expm((0, 0)),
    _c("linalg_matrix_rank", A(values=[[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 1.0]]),
       p={"rtol": None, "hermitian": False}, torch=lambda T, a: T.linalg.matrix_rank(a)),
    _c("linalg_matrix_rank", A((2, 3, 4)), p={"rtol": None, "hermitian": False},
       torch=lambda T, a: T.linalg.matrix_rank(a)),
    _c("linalg_matrix_exp", A(values=[[8.0, -3.0], [2.5, 6.0]]),  # squared 3 times
       torch=lambda T, a: T.linalg.matrix_exp(a)),
]
