"""torch.linalg.solve_triangular: ``A X = B`` (``X A = B`` with ``left=False``) for a
triangular ``A``, with torch's rule (linalg_solve_triangular_backward) written in
pullback's ops.

Only ``A``'s triangle is read (``upper``), and its diagonal is taken as ones with
``unitriangular``; so the gradient of ``A`` is masked to the part that is read. The
forward is a substitution, row by row over the whole batch (numpy has no triangular
solver): a zero on the diagonal gives inf and nan, as torch does, rather than an error.

>>> import pullback as pb
>>> A = pb.tensor([[2.0, 0.0], [1.0, 4.0]], requires_grad=True)
>>> X = pb.linalg.solve_triangular(A, pb.tensor([[2.0], [9.0]]), upper=False)
>>> X
tensor([[1.],
        [2.]], grad_fn=<LinalgSolveTriangularBackward0>)
>>> X.sum().backward()
>>> A.grad                                   # zero above the diagonal
tensor([[-0.3750,  0.0000],
        [-0.2500, -0.5000]])
"""

from __future__ import annotations

import numpy as np

from .decompositions import mH
from .linalg import bmm
from .reshaping import tril_op, triu_op
from .table import args, batching
from .table.registry import defop, public, rt_call


def _substitute(A: np.ndarray, B: np.ndarray, upper: bool, unitriangular: bool):
    """X with A X = B for (*, n, n) A and (*, n, k) B, forward (lower) or back (upper)
    substitution; the rows not yet solved are zeros, so each row is one matmul."""
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    A = np.broadcast_to(A, batch + A.shape[-2:])
    B = np.broadcast_to(B, batch + B.shape[-2:])
    off = np.triu(A, 1) if upper else np.tril(A, -1)
    X = np.zeros(B.shape, A.dtype)  # (torch casts B to A's dtype)
    n = A.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in (range(n - 1, -1, -1) if upper else range(n)):
            row = B[..., i, :] - (off[..., i:i + 1, :] @ X)[..., 0, :]
            X[..., i, :] = row if unitriangular else row / A[..., i, i, None]
    return X


def _solve_triangular(A, B, upper, left, unitriangular):
    if left:
        return _substitute(A, B, upper, unitriangular)
    # X A = B is A^T X^T = B^T, with the other triangle
    Xt = _substitute(np.swapaxes(A, -1, -2), np.swapaxes(B, -1, -2), not upper,
                     unitriangular)
    return np.swapaxes(Xt, -1, -2)


def _mask(gA, upper, unitriangular):
    """The gradient of ``A`` on the triangle the solve reads."""
    if upper:
        return triu_op(gA, diagonal=1 if unitriangular else 0)
    return tril_op(gA, diagonal=-1 if unitriangular else 0)


def _grad_B(g, out, A, B, upper, left, unitriangular):
    return solve_triangular_op(mH(A), g, upper=not upper, left=left,
                               unitriangular=unitriangular)


def _grad_A(g, out, A, B, upper, left, unitriangular):
    gB = _grad_B(g, out, A, B, upper, left, unitriangular)
    gA = -bmm(gB, mH(out)) if left else -bmm(mH(out), gB)
    return _mask(gA, upper, unitriangular)


solve_triangular_op = defop("linalg_solve_triangular", _solve_triangular,
                            "LinalgSolveTriangularBackward0", vjp=(_grad_A, _grad_B),
                            uses=("A out", "A"), torch_args=("self", "B"), fresh=True,
                            template=rt_call("solve_triangular", "upper", "left",
                                             "unitriangular"),
                            batch=batching.leading_aligned)


@public("linalg.solve_triangular", function=True)
def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """X with A X = B (X A = B unless ``left``), reading A's upper or lower triangle;
    B is a (batch of) matrix, never a vector, as in torch."""
    for name, M in (("A", A), ("B", B)):
        if M.ndim < 2:
            raise RuntimeError(f"linalg.solve_triangular: The input tensor {name} must have "
                               "at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError("linalg.solve_triangular: A must be batches of square matrices, "
                           f"but they are {A.shape[-2]} by {A.shape[-1]} matrices")
    if args.np_dtype(A).kind not in "fc":
        raise NotImplementedError(
            f"\"triangular_solve_cpu\" not implemented for '{args.dtype_name(A)}'")
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError("linalg.solve_triangular: Incompatible shapes of A and B for the "
                           f"equation {'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    return solve_triangular_op(A, B, upper=bool(upper), left=bool(left),
                               unitriangular=bool(unitriangular))
