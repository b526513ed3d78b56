"""numpy's array-API linear algebra and its products of several operands with traced
arrays, composed of existing ops: ``np.linalg.matmul`` / ``diagonal``, the gufuncs
``vecdot`` / ``matvec`` / ``vecmat`` (and ``np.linalg.vecdot``), ``multi_dot``,
``cond``, ``tensorsolve``, ``tensorinv`` and ``matrix_transpose`` (``np.linalg``'s too:
``swapaxes`` of the last two axes).

- ``vecdot`` conjugates its first operand, ``vecmat`` its vector (numpy's); all three
  are ``matmul`` of the operands as stacks of rows or columns, broadcast as numpy's.
- ``multi_dot`` multiplies in numpy's order (the cheapest parenthesization, as numpy
  computes it from the shapes), so the values are numpy's to the last bit.
- ``cond`` with ``p`` None, 2 or -2 is the ratio of the extreme singular values
  (svdvals' gradient); any other ``p`` is ``norm(x, p) * norm(inv(x), p)``.
- ``tensorsolve`` / ``tensorinv`` reshape to ``solve`` / ``inv`` as numpy does.

>>> import numpy as np, pullback as pb
>>> a = pb.tensor([[2., 1.], [0., 4.]], requires_grad=True)
>>> np.vecdot(a, a)
tensor([ 5., 16.], grad_fn=<SelectBackward0>)
>>> np.linalg.cond(a, "fro")
tensor(2.6250, grad_fn=<MulBackward0>)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .diagonals import _numpy_diagonal
from .elementwise import conj
from .linalg import _numpy_matmul
from .table import args
from .table.registry import is_traced, public

#: numpy's choice of the order of a chain of products (from the shapes alone)
_chain_order = np.linalg._linalg._multi_dot_matrix_chain_order


def _operand(x: Any) -> Any:
    x = args.value(x)
    return x if is_traced(x) else np.asarray(x)


def _conj(x: Any) -> Any:
    return conj(x) if args.np_dtype(x).kind == "c" else x


def _core(*xs: Any, ndims: tuple) -> None:
    """numpy's gufunc checks (too few dimensions, loop dimensions that do not
    broadcast): numpy's own error."""
    if any(np.ndim(x) < n for x, n in zip(xs, ndims)):
        raise args.Unsupported
    try:
        np.broadcast_shapes(*(tuple(x.shape[:x.ndim - n]) for x, n in zip(xs, ndims)))
    except ValueError:
        raise args.Unsupported from None


def _vecdot(x1, x2):
    x1, x2 = _operand(x1), _operand(x2)
    _core(x1, x2, ndims=(1, 1))
    if x1.shape[-1] != x2.shape[-1]:
        raise args.Unsupported
    return np.matmul(_conj(x1)[..., None, :], x2[..., :, None])[..., 0, 0]


def _matvec(x1, x2):
    x1, x2 = _operand(x1), _operand(x2)
    _core(x1, x2, ndims=(2, 1))
    if x1.shape[-1] != x2.shape[-1]:
        raise args.Unsupported
    return np.matmul(x1, x2[..., :, None])[..., 0]


def _vecmat(x1, x2):
    x1, x2 = _operand(x1), _operand(x2)
    _core(x1, x2, ndims=(1, 2))
    if x1.shape[-1] != x2.shape[-2]:
        raise args.Unsupported
    return np.matmul(_conj(x1)[..., None, :], x2)[..., 0, :]


def _linalg_vecdot(x1, x2, /, *, axis=-1):
    x1, x2 = _operand(x1), _operand(x2)
    _core(x1, x2, ndims=(1, 1))
    return _vecdot(np.moveaxis(x1, axis, -1), np.moveaxis(x2, axis, -1))


public("vecdot numpy", numpy={np.vecdot: _linalg_vecdot,  # (the gufunc's axis= too)
                              np.linalg.vecdot: _linalg_vecdot})(_vecdot)
public("matvec", numpy={np.matvec: _matvec})(_matvec)
public("vecmat", numpy={np.vecmat: _vecmat})(_vecmat)
public("linalg.matmul numpy", numpy={
    np.linalg.matmul: lambda x1, x2, /: _numpy_matmul(_operand(x1), _operand(x2))})(
        _numpy_matmul)
public("linalg.diagonal numpy", numpy={
    np.linalg.diagonal: lambda x, /, *, offset=0: _numpy_diagonal(x, offset, -2, -1)})(
        _numpy_diagonal)


def _chain(arrays: list, order: Any, i: int, j: int) -> Any:
    if i == j:
        return arrays[i]
    k = int(order[i, j])
    return np.dot(_chain(arrays, order, i, k), _chain(arrays, order, k + 1, j))


def _multi_dot(arrays, *, out=None):
    args.plain(out)
    arrays = [_operand(a) for a in arrays]
    n = len(arrays)
    if n < 3:
        raise args.Unsupported  # numpy's error, or its dot
    first, last = np.ndim(arrays[0]), np.ndim(arrays[-1])
    if first == 1:
        arrays[0] = arrays[0][None, :]
    if last == 1:
        arrays[-1] = arrays[-1][:, None]
    if any(np.ndim(a) != 2 for a in arrays):
        raise args.Unsupported  # numpy's LinAlgError
    if n == 3:
        (p, q), (_, r), (_, s) = (a.shape for a in arrays)
        a, b, c = arrays
        y = np.dot(np.dot(a, b), c) if p * q * r + p * r * s <= q * r * s + p * q * s \
            else np.dot(a, np.dot(b, c))  # (numpy's costs, ties to the left)
    else:
        stand_ins = [np.broadcast_to(np.zeros(()), a.shape) for a in arrays]
        y = _chain(arrays, _chain_order(stand_ins), 0, n - 1)
    if first == 1 and last == 1:
        return y[0, 0]
    return np.reshape(y, -1) if 1 in (first, last) else y


def _matrix_transpose(x, /):
    x = _operand(x)
    if x.ndim < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {x.ndim}")
    return np.swapaxes(x, -1, -2)


public("matrix_transpose", numpy={np.matrix_transpose: _matrix_transpose,
                                  np.linalg.matrix_transpose: _matrix_transpose})(
    _matrix_transpose)
public("linalg.multi_dot numpy", numpy={np.linalg.multi_dot: _multi_dot})(_multi_dot)


def _cond(x, p=None):
    x = _operand(x)
    if np.ndim(x) < 2 or 0 in x.shape[-2:]:
        raise args.Unsupported  # numpy's LinAlgError
    if p is None or (not isinstance(p, str) and p in (2, -2)):
        s = np.linalg.svd(x, compute_uv=False)
        return s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
    if x.shape[-1] != x.shape[-2]:
        raise args.Unsupported
    return np.linalg.norm(x, p, axis=(-2, -1)) * np.linalg.norm(np.linalg.inv(x), p,
                                                                axis=(-2, -1))


public("linalg.cond numpy", numpy={np.linalg.cond: _cond})(_cond)


def _tensorsolve(a, b, axes=None):
    a, b = _operand(a), _operand(b)
    if axes is not None:
        moved = [int(k) for k in axes]
        if any(not 0 <= k < a.ndim for k in moved) or len(set(moved)) < len(moved):
            raise args.Unsupported  # numpy's own error
        a = np.transpose(a, [k for k in range(a.ndim) if k not in moved] + moved)
    rest = tuple(a.shape[np.ndim(b):])
    n = int(np.prod(rest, dtype=np.int64))
    if int(np.prod(a.shape, dtype=np.int64)) != n * n:
        raise args.Unsupported  # numpy's LinAlgError
    return np.reshape(np.linalg.solve(np.reshape(a, (n, n)), np.reshape(b, (n,))), rest)


def _tensorinv(a, ind=2):
    a = _operand(a)
    if ind <= 0:
        raise args.Unsupported  # numpy's ValueError
    front, back = tuple(a.shape[:ind]), tuple(a.shape[ind:])
    n = int(np.prod(front, dtype=np.int64))
    if int(np.prod(back, dtype=np.int64)) != n:
        raise args.Unsupported
    return np.reshape(np.linalg.inv(np.reshape(a, (n, n))), back + front)


public("linalg.tensorsolve numpy", numpy={np.linalg.tensorsolve: _tensorsolve})(
    _tensorsolve)
public("linalg.tensorinv numpy", numpy={np.linalg.tensorinv: _tensorinv})(_tensorinv)
