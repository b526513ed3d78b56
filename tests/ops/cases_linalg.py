"""Op cases of torch.linalg's matrix functions (ops/decompositions.py): well-conditioned
inputs (``invertible``, ``spd``), batches, 1x1 and 0x0 matrices."""

from __future__ import annotations

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
