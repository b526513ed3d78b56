"""scipy.linalg's ``solve_sylvester`` and ``sqrtm`` as ops (numpy has neither; scipy
is not a dependency), for 2-D matrices, real or complex.

- ``solve_sylvester(A, B, Q)``: X with A X + X B = Q, from the Kronecker form
  (kron(A, I) + kron(I, B^T)) vec(X) = vec(Q) (row-major vec), one dense solve of order
  n m (so meant for matrices of up to a few dozen rows). Its rule: M solving
  A^H M + M B^H = G (another Sylvester equation) is Q's gradient, -M X^H is A's and
  -X^H M is B's.
- ``sqrtm(A)``: the principal square root, by the Denman-Beavers iteration
  Y <- (Y + Z^-1) / 2, Z <- (Z + Y^-1) / 2 (Y -> A^(1/2), Z -> A^(-1/2)); through the
  eigendecomposition (complex) for a singular A and one with a negative real eigenvalue
  (scipy's result is complex then too; a defective one of those is out of reach). Its
  rule: the gradient M solves X^H M + M X^H = G, X = sqrtm(A) (from X dX + dX X = dA).

>>> import numpy as np
>>> from pullback.ops.sylvester import sqrtm_op
>>> sqrtm_op(np.array([[4.0, 0.0], [0.0, 9.0]]))
array([[2., 0.],
       [0., 3.]])
"""

from __future__ import annotations

import numpy as np

from .decompositions import mH
from .linalg import matmul
from .table.registry import defop


def _wide(dtype: np.dtype) -> np.dtype:
    """float64 or complex128: float32 inputs are computed in double and rounded once."""
    return np.result_type(dtype, np.float64)


def _solve_sylvester(A: np.ndarray, B: np.ndarray, Q: np.ndarray) -> np.ndarray:
    n, m = Q.shape
    dtype = np.result_type(A, B, Q)
    wide = _wide(dtype)
    K = np.kron(A.astype(wide), np.eye(m, dtype=wide)) + np.kron(np.eye(n, dtype=wide), B.T)
    return np.linalg.solve(K, Q.reshape(-1).astype(wide)).reshape(n, m).astype(dtype)


def _sylvester_rules():
    def grad_q(g, out, A, B, Q):
        return solve_sylvester_op(mH(A), mH(B), g)

    def grad_a(g, out, A, B, Q):
        return -matmul(grad_q(g, out, A, B, Q), mH(out))

    def grad_b(g, out, A, B, Q):
        return -matmul(mH(out), grad_q(g, out, A, B, Q))

    return grad_a, grad_b, grad_q


solve_sylvester_op = defop("scipy_solve_sylvester", _solve_sylvester,
                           "ScipySolveSylvesterBackward0", vjp=_sylvester_rules(),
                           uses=("A B out", "A B out", "A B"), torch_args=("A", "B", "Q"),
                           fresh=True, template="rt.solve_sylvester({0}, {1}, {2})")


def _sqrtm_eig(A: np.ndarray) -> np.ndarray:
    w, V = np.linalg.eig(A)
    return V @ (np.sqrt(w.astype(complex))[:, None] * np.linalg.inv(V))


def _sqrtm(A: np.ndarray) -> np.ndarray:
    dtype = A.dtype
    A = A.astype(_wide(dtype))
    w = np.linalg.eigvals(A)
    real = not np.iscomplexobj(A)
    negative = np.any((np.abs(w.imag) <= 1e-14 * np.abs(w)) & (w.real < 0))
    singular = np.any(np.abs(w) <= 1e-14 * max(np.max(np.abs(w)), 1e-300))
    if negative or singular:  # (the iteration stays real, or needs an inverse)
        out = _sqrtm_eig(A)
    else:
        Y, Z = A, np.eye(A.shape[0], dtype=A.dtype)
        for _ in range(100):
            Y, Z, last = (Y + np.linalg.inv(Z)) / 2, (Z + np.linalg.inv(Y)) / 2, Y
            if np.linalg.norm(Y - last) <= 1e-15 * np.linalg.norm(Y):
                break
        out = Y
    if real and not negative:
        return np.ascontiguousarray(out.real.astype(dtype))
    return np.ascontiguousarray(out.astype(np.result_type(dtype, np.complex64)))


sqrtm_op = defop("scipy_sqrtm", _sqrtm, "ScipySqrtmBackward0",
                 vjp=(lambda g, out, A: solve_sylvester_op(mH(out), mH(out), g),),
                 uses=("out",), torch_args=("A",), fresh=True, template="rt.sqrtm({0})")
