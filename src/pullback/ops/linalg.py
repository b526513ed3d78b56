"""Matrix products, and the public functions that choose among them: torch names the
node after the product it ran (mm, mv, dot, bmm, addmm)."""

from __future__ import annotations

import numpy as np

from . import args
from .elementwise import conj, mul
from .registry import defop, public
from .shape import squeeze_dim, t_op, transpose_op, unsqueeze_op

_PRODUCT = dict(template="{0} @ {1}", fresh=True)

mm_op = defop("mm", np.matmul, "MmBackward0",
              vjp=(lambda g, out, x, y: mm_op(g, conj(t_op(y))),
                   lambda g, out, x, y: mm_op(conj(t_op(x)), g)),
              uses=("y", "x"), torch_args=("self", "mat2"), **_PRODUCT)
mv = defop("mv", np.matmul, "MvBackward0",
           vjp=(lambda g, out, x, v: mm_op(unsqueeze_op(g, dim=1), conj(unsqueeze_op(v, dim=0))),
                lambda g, out, x, v: mv(conj(t_op(x)), g)),
           uses=("v", "x"), torch_args=("self", "vec"), **_PRODUCT)
dot = defop("dot", np.dot, "DotBackward0",
            vjp=(lambda g, out, x, y: g * conj(y),
                 lambda g, out, x, y: g * conj(x)),
            uses=("y", "x"), torch_args=("self", "tensor"), template="{0} @ {1}")
# batched (and broadcast-batched) products; the caller sums the batch dims away
bmm = defop("bmm", np.matmul, "BmmBackward0",
            vjp=(lambda g, out, x, y: bmm(g, conj(transpose_op(y, dim0=-1, dim1=-2))),
                 lambda g, out, x, y: bmm(conj(transpose_op(x, dim0=-1, dim1=-2)), g)),
            uses=("y", "x"), torch_args=("self", "mat2"), **_PRODUCT)
addmm = defop("addmm", lambda b, x, w: np.add(b, np.matmul(x, w)), "AddmmBackward0",
              vjp=(lambda g, out, b, x, w: g,
                   lambda g, out, b, x, w: mm_op(g, conj(t_op(w))),
                   lambda g, out, b, x, w: mm_op(conj(t_op(x)), g)),
              uses=("", "w", "x"), torch_args=("self", "mat1", "mat2"),
              template="{0} + {1} @ {2}", fresh=True)


def _numpy_matmul(a, b):
    for i, v in enumerate((a, b)):
        if np.ndim(v) == 0:
            raise ValueError(f"matmul: Input operand {i} does not have enough dimensions (has 0,"
                             " gufunc core with signature (n?,k),(k,m?)->(n?,m?) requires 1)")
    return matmul(a, b)


def _as_operand(x):
    return x if args.is_traced(x) or isinstance(x, np.ndarray) else np.asarray(x)


def _numpy_dot(a, b, out=None):
    args.plain(out)
    a, b = args.value(a), args.value(b)
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return mul(a, b)
    if np.ndim(b) > 2 or (np.ndim(b) == 2 and np.ndim(a) > 2):
        raise args.Unsupported  # np.dot's N-d contraction differs from matmul's
    return matmul(_as_operand(a), _as_operand(b))


@public("matmul", function=True, method=("matmul", "dot"),
        numpy={np.matmul: _numpy_matmul, np.dot: _numpy_dot})
def matmul(input, other):
    a, b = input.ndim, other.ndim
    if a == 0 or b == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                           f"{a}D and {b}D")
    if a == 1 and b == 1:
        return dot(input, other)
    if a == 2 and b == 2:
        return mm_op(input, other)
    if a == 2 and b == 1:
        return mv(input, other)
    if a == 1 and b == 2:
        return squeeze_dim(mm_op(unsqueeze_op(input, dim=0), other), dim=(0,))
    if b == 1:
        return squeeze_dim(bmm(input, unsqueeze_op(other, dim=1)), dim=(b + a - 2,))
    if a == 1:
        return squeeze_dim(bmm(unsqueeze_op(input, dim=0), other), dim=(b - 2,))
    return bmm(input, other)


@public("mm", function=True, method=True)
def mm(input, mat2):
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError("self must be a matrix" if input.ndim != 2 else "mat2 must be a matrix")
    return mm_op(input, mat2)


@public("linear", functional=True)
def linear(input, weight, bias=None):
    if weight.ndim == 2 and input.ndim >= 1 and input.shape[-1] != weight.shape[1]:
        rows = int(np.prod(input.shape[:-1]))  # torch's message: input as a matrix, weight.T
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x"
                           f"{input.shape[-1]} and {weight.shape[1]}x{weight.shape[0]})")
    if bias is not None and input.ndim == 2:
        return addmm(bias, input, t_op(weight))
    out = matmul(input, t_op(weight) if weight.ndim == 2 else weight)
    return out if bias is None else out + bias
