"""numpy's protocols for Tensors: unmodified numpy code on Tensors records pullback ops.

``np.tanh(x) @ w``, ``np.sum(h, axis=1)``, ``np.maximum(z, 0)`` or ``ndarray - Tensor``
dispatch here (``Tensor.__array_ufunc__`` / ``__array_function__``) and run the pullback
op with numpy's semantics (``axis``/``keepdims``, numpy's dtype rules), so the result is a
Tensor with a ``grad_fn``. Anything not mapped, ``out=`` and extra ufunc keywords run
plainly on the arrays when no gradient is needed and give Tensors; when a gradient
would be needed they raise a TypeError rather than lose it.

>>> import numpy as np, pullback as pb
>>> x = pb.tensor([[1., -2.], [3., 4.]], requires_grad=True)
>>> y = np.sum(np.maximum(x, 0) * np.array([1., 2.], dtype=np.float32), axis=1)
>>> y
tensor([ 1., 11.], grad_fn=<SumBackward1>)
>>> y.sum().backward()
>>> x.grad
tensor([[1., 0.],
        [1., 2.]])
"""

from __future__ import annotations

import builtins
from typing import Any, Callable

import numpy as np

from .autograd import messages
from .autograd.grad_mode import STATE
from .ops import api, math
from .tensor import Tensor, _notify_concrete


class _Unsupported(Exception):
    """A mapped function got arguments its pullback form does not cover."""


# ------------------------------------------------------------------------ values
def _val(x: Any) -> Any:
    """Tensors and scalars as they are; anything array-like as an ndarray."""
    if isinstance(x, (Tensor, np.ndarray, int, float, bool, np.generic)):
        return x
    return np.asarray(x)


def _wrap(result: Any) -> Any:
    """numpy results as Tensors (also inside tuples and lists)."""
    if isinstance(result, Tensor):
        return result
    if isinstance(result, (np.ndarray, np.generic)):
        return Tensor._make(np.asarray(result))
    if isinstance(result, (tuple, list)):
        return type(result)(_wrap(r) for r in result)
    return result


def _unwrap(x: Any) -> Any:
    """Tensors (also inside tuples, lists and dicts) as arrays; a tracer is told that
    the value leaves the graph."""
    if isinstance(x, Tensor):
        _notify_concrete(x, "__array__")
        return x._data
    if isinstance(x, (tuple, list)):
        return type(x)(_unwrap(v) for v in x)
    if isinstance(x, dict):
        return {k: _unwrap(v) for k, v in x.items()}
    return x


def _needs_grad(x: Any) -> bool:
    if isinstance(x, Tensor):
        return x._requires_grad
    if isinstance(x, (tuple, list)):
        return builtins.any(_needs_grad(v) for v in x)
    if isinstance(x, dict):
        return builtins.any(_needs_grad(v) for v in x.values())
    return False


def _has_float(x: Any) -> bool:
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype.kind in "fc"
    if isinstance(x, (tuple, list)):
        return builtins.any(_has_float(v) for v in x)
    return isinstance(x, (float, complex))


def _fallback(name: str, fn: Callable, args: tuple, kwargs: dict) -> Any:
    """Run ``fn`` on the arrays; refuse when a gradient would have been needed."""
    grad = STATE.grad_enabled and (_needs_grad(args) or _needs_grad(kwargs))
    out = kwargs.get("out")
    if grad and out is not None:
        raise TypeError(messages.NUMPY_NOT_DIFFERENTIABLE.format(name=name + " with out="))
    result = fn(*_unwrap(args), **_unwrap(kwargs))
    if grad and _has_float(result):
        raise TypeError(messages.NUMPY_NOT_DIFFERENTIABLE.format(name=name))
    if out is None:
        return _wrap(result)
    # numpy returns the out= objects themselves: give back the user's Tensors, whose
    # storage was written in place (a new version, as for any in-place op)
    outs = out if isinstance(out, tuple) else (out,)
    for o in outs:
        if isinstance(o, Tensor):
            o._vc.value += 1
    return outs[0] if len(outs) == 1 else outs


# ------------------------------------------------------------------------ ufuncs
def _square(x):
    return api.pow(x, 2)


def _positive(x):
    return math.clone(x) if isinstance(x, Tensor) else x


def _matmul(a, b):
    for i, v in enumerate((a, b)):
        if np.ndim(v) == 0:
            raise ValueError(f"matmul: Input operand {i} does not have enough dimensions (has 0,"
                             " gufunc core with signature (n?,k),(k,m?)->(n?,m?) requires 1)")
    return api.matmul(a, b)


UFUNCS: dict = {
    np.add: math.add, np.subtract: math.sub, np.multiply: math.mul,
    np.true_divide: math.div, np.negative: math.neg, np.positive: _positive,
    np.power: api.pow, np.square: _square, np.reciprocal: math.reciprocal,
    np.sqrt: math.sqrt, np.exp: math.exp, np.log: math.log, np.sin: math.sin,
    np.cos: math.cos, np.tanh: math.tanh, np.absolute: math.abs, np.sign: math.sign,
    np.maximum: math.maximum, np.minimum: math.minimum, np.matmul: _matmul,
    np.greater: math.gt, np.greater_equal: math.ge, np.less: math.lt,
    np.less_equal: math.le, np.equal: math.eq, np.not_equal: math.ne,
    np.logical_and: math.logical_and, np.logical_or: math.logical_or,
    np.logical_not: math.logical_not,
}


def _reduce(ufunc: np.ufunc, x: Any, axis: Any = 0, dtype: Any = None, out: Any = None,
            keepdims: bool = False, **rest: Any) -> Any:
    """``np.add.reduce`` and ``np.maximum/minimum.reduce`` (default axis 0)."""
    if rest or out is not None or (dtype is not None and ufunc is not np.add):
        raise _Unsupported
    if ufunc is np.add:
        return _sum(x, axis, dtype, keepdims=keepdims)
    if ufunc is np.maximum:
        return _max(x, axis, keepdims=keepdims)
    if ufunc is np.minimum:
        return _min(x, axis, keepdims=keepdims)
    raise _Unsupported


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """``Tensor.__array_ufunc__``: a numpy ufunc with a Tensor among its operands."""
    name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
    try:
        if method == "__call__" and not kwargs and ufunc in UFUNCS:
            return _wrap(UFUNCS[ufunc](*(_val(x) for x in inputs)))
        if method == "reduce" and len(inputs) == 1:
            return _wrap(_reduce(ufunc, _val(inputs[0]), **kwargs))
    except _Unsupported:
        pass
    return _fallback(name, getattr(ufunc, method), inputs, kwargs)


# --------------------------------------------------------------------- functions
FUNCTIONS: dict = {}
_AxisError = getattr(np, "exceptions", np).AxisError


def implements(*fns: Callable) -> Callable:
    def register(handler: Callable) -> Callable:
        for fn in fns:
            FUNCTIONS[fn] = handler
        return handler
    return register


def array_function(func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
    """``Tensor.__array_function__``: a numpy function with a Tensor among its arguments."""
    if not builtins.all(issubclass(t, (Tensor, np.ndarray)) for t in types):
        return NotImplemented
    handler = FUNCTIONS.get(func)
    if handler is not None:
        try:
            return _wrap(handler(*args, **kwargs))
        except _Unsupported:
            pass
    return _fallback(func.__name__, func, args, kwargs)


def _axes(axis: Any, ndim: int) -> tuple | None:
    """numpy's axis argument as a tuple of non-negative axes (None: all)."""
    if axis is None:
        return None
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    for a in axes:
        if not -builtins.max(ndim, 1) <= a < builtins.max(ndim, 1):
            raise _AxisError(a, ndim)
    return tuple(sorted(a % builtins.max(ndim, 1) for a in axes))


def _plain(out: Any = None, **rest: Any) -> None:
    if out is not None or rest:
        raise _Unsupported


def _keep_all(x: Any, ndim: int, keepdims: bool) -> Any:
    return api.reshape(x, (1,) * ndim) if keepdims and ndim else x


@implements(np.sum)
def _sum(a, axis=None, dtype=None, out=None, keepdims=False, **rest):
    _plain(out, **rest)
    x = _val(a)
    axes = _axes(axis, x.ndim)
    if axes is None:
        return _keep_all(api.sum(x, dtype=dtype), x.ndim, keepdims)
    return api.sum(x, axes, bool(keepdims), dtype=dtype)


@implements(np.mean)
def _mean(a, axis=None, dtype=None, out=None, keepdims=False, **rest):
    _plain(out, **rest)
    x = _val(a)
    if dtype is None and np.dtype(api._np_dtype(x)).kind not in "fc":
        dtype = np.float64  # numpy's mean of integers is float64
    axes = _axes(axis, x.ndim)
    if axes is None:
        return _keep_all(api.mean(x, dtype=dtype), x.ndim, keepdims)
    return api.mean(x, axes, bool(keepdims), dtype=dtype)


def _extreme(a, axis, keepdims, all_op: Callable, dim_op: Callable) -> Any:
    x = _val(a)
    nd = x.ndim
    axes = _axes(axis, nd)
    if axes is None or len(axes) == nd:
        return _keep_all(all_op(x), nd, keepdims)
    if len(axes) == 1:
        return dim_op(x, dim=axes[0], keepdim=bool(keepdims))
    # several axes: move them last, flatten them into one, reduce that
    kept = [d for d in range(nd) if d not in axes]
    flat = api.reshape(api.permute(x, *kept, *axes), *[x.shape[d] for d in kept], -1)
    y = dim_op(flat, dim=len(kept), keepdim=False)
    if keepdims:
        y = api.reshape(y, tuple(1 if d in axes else n for d, n in enumerate(x.shape)))
    return y


@implements(np.max, np.amax)
def _max(a, axis=None, out=None, keepdims=False, **rest):
    _plain(out, **rest)
    return _extreme(a, axis, keepdims, math.max_all, math.max_dim)


@implements(np.min, np.amin)
def _min(a, axis=None, out=None, keepdims=False, **rest):
    _plain(out, **rest)
    return _extreme(a, axis, keepdims, math.min_all, math.min_dim)


def _arg_extreme(fn: Callable) -> Callable:
    """np.argmax / np.argmin (numpy's signature) over api.argmax / api.argmin."""
    def impl(a, axis=None, out=None, *, keepdims=False):
        _plain(out)
        x = _val(a)
        if axis is None:
            return _keep_all(fn(x), x.ndim, keepdims)
        return fn(x, axis, keepdims)
    return impl


implements(np.argmax)(_arg_extreme(api.argmax))
implements(np.argmin)(_arg_extreme(api.argmin))


@implements(np.dot)
def _dot(a, b, out=None):
    _plain(out)
    a, b = _val(a), _val(b)
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return math.mul(a, b)
    if np.ndim(b) > 2 or (np.ndim(b) == 2 and np.ndim(a) > 2):
        raise _Unsupported  # np.dot's N-d contraction differs from matmul's
    return api.matmul(_as_operand(a), _as_operand(b))


def _as_operand(x: Any) -> Any:
    return x if isinstance(x, (Tensor, np.ndarray)) else np.asarray(x)


@implements(np.where)
def _where(condition, *xy):
    if len(xy) != 2:
        raise _Unsupported  # np.where(condition): indices, not values
    return math.where(_val(condition), _val(xy[0]), _val(xy[1]))


@implements(np.reshape)
def _reshape(a, *args, **kw):
    shape = args[0] if args else kw.pop("shape", kw.pop("newshape", None))
    order = args[1] if len(args) > 1 else kw.pop("order", "C")
    if shape is None or order != "C" or kw.pop("copy", None) is not None or kw:
        raise _Unsupported
    return api.reshape(_val(a), (shape,) if isinstance(shape, (int, np.integer)) else shape)


@implements(np.ravel)
def _ravel(a, order="C"):
    if order != "C":
        raise _Unsupported
    return api.reshape(_val(a), -1)


@implements(np.transpose)
def _transpose(a, axes=None):
    x = _val(a)
    if axes is None:
        axes = tuple(range(x.ndim - 1, -1, -1))
    return api.permute(x, tuple(axes))


@implements(np.swapaxes)
def _swapaxes(a, axis1, axis2):
    return api.transpose(_val(a), axis1, axis2)


@implements(np.squeeze)
def _squeeze(a, axis=None):
    x = _val(a)
    axes = _axes(axis, x.ndim)
    if axes is not None and builtins.any(x.shape[d] != 1 for d in axes):
        raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return api.squeeze(x, axes)


@implements(np.expand_dims)
def _expand_dims(a, axis):
    x = _val(a)
    n = len(axis) if isinstance(axis, (tuple, list)) else 1
    for d in _axes(axis, x.ndim + n):
        x = api.unsqueeze(x, d)
    return x


@implements(np.broadcast_to)
def _broadcast_to(array, shape, subok=False):
    x = _val(array)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    np.broadcast_shapes(x.shape, shape)  # numpy's error for shapes that do not broadcast
    if len(shape) < x.ndim:
        raise ValueError("input operand has more dimensions than allowed by the axis remapping")
    return api.expand(x, shape)


_NOVALUE = getattr(np, "_NoValue", None)


@implements(np.clip)
def _clip(a, a_min=_NOVALUE, a_max=_NOVALUE, out=None, *, min=_NOVALUE, max=_NOVALUE,
          **kw):
    _plain(out, **kw)
    lo = None if a_min is _NOVALUE else a_min
    hi = None if a_max is _NOVALUE else a_max
    lo = lo if min is _NOVALUE else min
    hi = hi if max is _NOVALUE else max
    if lo is None and hi is None:
        raise ValueError("One of max or min must be given")
    x = _val(a)
    if builtins.all(v is None or np.ndim(v) == 0 and not isinstance(v, Tensor)
                    for v in (lo, hi)):
        return api.clamp(x, lo, hi)
    if lo is not None:
        x = math.maximum(x, _val(lo))
    return x if hi is None else math.minimum(x, _val(hi))


@implements(np.copy)
def _copy(a, order="K", subok=False):
    return math.clone(_val(a))


def _like(fn: Callable) -> Callable:
    """zeros_like & co: a new constant Tensor (no gradient flows into it)."""
    def make(a, *args, **kw):
        return fn(a._data if isinstance(a, Tensor) else a, *args, **kw)  # shape and dtype
    return make


for _f in (np.zeros_like, np.ones_like, np.empty_like, np.full_like):
    FUNCTIONS[_f] = _like(_f)
