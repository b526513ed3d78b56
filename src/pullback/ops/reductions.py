"""Reduction primitives (sums, means, extremes, arg-extremes) and the public functions
that choose among them, with numpy's spellings (``axis``, ``keepdims``)."""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

import numpy as np

from . import args
from .elementwise import logical_not, maximum, minimum, ne, to_dtype
from .registry import defop, public
from .shape import expand, reshape, reshape_op

return_types_max = namedtuple("max", ["values", "indices"])
return_types_min = namedtuple("min", ["values", "indices"])


def _keep_shape(shape: tuple, dim: tuple) -> tuple:
    """``shape`` with the reduced ``dim`` axes kept as 1 (for un-reducing a gradient)."""
    found = {d % len(shape) for d in dim}
    return tuple(1 if i in found else n for i, n in enumerate(shape))


def _numel(shape: tuple, dim: tuple | None = None) -> int:
    idx = range(len(shape)) if dim is None else dim
    return int(np.prod([shape[d] for d in idx], dtype=np.int64))


def fast_mean(x, axis=None, keepdims=False):
    """np.mean's value; for float32/float64 as sum / count, which skips numpy's
    Python-level mean wrapper (several microseconds per call on small arrays)."""
    x = np.asarray(x)
    if x.dtype.kind != "f" or x.dtype.itemsize < 4:
        return np.mean(x, axis=axis, keepdims=keepdims)
    count = x.size if axis is None else _numel(
        x.shape, axis if isinstance(axis, tuple) else (axis,))
    return x.sum(axis=axis, keepdims=keepdims) / max(count, 1) if count else np.mean(
        x, axis, keepdims=keepdims)


def _print_mean(e: Any, a: list, lit: Any) -> str:
    """Float means as sum / count with the count known at codegen."""
    x = e.inputs[0]
    if x.dtype.kind != "f" or x.dtype.itemsize < 4:
        params = "".join(f", {k}={lit(v)}" for k, v in e.params.items())
        return f"ops.{e.op.name}({a[0]}{params})"
    if "dim" not in e.params:
        return f"{a[0]}.sum() / {max(math.prod(x.shape), 1)}"
    found = e.params["dim"]
    count = max(math.prod(x.shape[d] for d in found), 1)
    keep = ", keepdims=True" if e.params["keepdim"] else ""
    return f"{a[0]}.sum(axis={lit(found[0] if len(found) == 1 else found)}{keep}) / {count}"


def _axis(e: Any, lit: Any) -> str:
    found = e.params["dim"]
    return lit(found[0] if isinstance(found, tuple) and len(found) == 1 else found)


sum_all = defop("sum_all", lambda x: np.sum(x), "SumBackward0",
                vjp=(lambda g, out, x: expand(g, shape=x.shape),), template="{0}.sum()")
sum_dim = defop("sum_dim", lambda x, dim, keepdim: np.sum(x, axis=dim, keepdims=keepdim),
                "SumBackward1",
                vjp=(lambda g, out, x, dim, keepdim:
                     expand(reshape_op(g, shape=_keep_shape(x.shape, dim)), shape=x.shape),),
                template=lambda e, a, lit:
                f"{a[0]}.sum(axis={_axis(e, lit)}, keepdims={e.params['keepdim']})", fresh=True)
mean_all = defop("mean_all", lambda x: fast_mean(x), "MeanBackward0",
                 vjp=(lambda g, out, x: expand(g / _numel(x.shape), shape=x.shape),),
                 template=_print_mean)
mean_dim = defop("mean_dim", lambda x, dim, keepdim: fast_mean(x, axis=dim, keepdims=keepdim),
                 "MeanBackward1",
                 vjp=(lambda g, out, x, dim, keepdim:
                      expand(reshape_op(g / _numel(x.shape, dim),
                                        shape=_keep_shape(x.shape, dim)), shape=x.shape),),
                 template=_print_mean, fresh=True)


def _ties(x, out):
    """The even split of a full max/min's gradient over tied elements."""
    mask = x == out
    return mask / sum_all(mask)


def _first_extreme_mask(x, dim, argfn):
    idx = argfn(x, axis=dim, keepdims=True)
    return np.arange(x.shape[dim]).reshape((-1,) + (1,) * (x.ndim - 1 - dim % x.ndim)) == idx


argmax_mask = defop("argmax_mask", lambda x, dim: _first_extreme_mask(x, dim, np.argmax))
argmin_mask = defop("argmin_mask", lambda x, dim: _first_extreme_mask(x, dim, np.argmin))
_BY_AXIS = "{0}.%s(axis={dim}, keepdims={keepdim})"
max_all = defop("max_all", lambda x: np.max(x), "MaxBackward1",
                vjp=(lambda g, out, x: g * _ties(x, out),), uses=("x out",),
                template="{0}.max()")
min_all = defop("min_all", lambda x: np.min(x), "MinBackward1",
                vjp=(lambda g, out, x: g * _ties(x, out),), uses=("x out",),
                template="{0}.min()")
max_dim = defop("max_dim", lambda x, dim, keepdim: np.max(x, axis=dim, keepdims=keepdim),
                "MaxBackward0",
                vjp=(lambda g, out, x, dim, keepdim: reshape_op(
                    g, shape=_keep_shape(x.shape, (dim,))) * argmax_mask(x, dim=dim),),
                uses=("x",), template=_BY_AXIS % "max")
min_dim = defop("min_dim", lambda x, dim, keepdim: np.min(x, axis=dim, keepdims=keepdim),
                "MinBackward0",
                vjp=(lambda g, out, x, dim, keepdim: reshape_op(
                    g, shape=_keep_shape(x.shape, (dim,))) * argmin_mask(x, dim=dim),),
                uses=("x",), template=_BY_AXIS % "min")
argmax_op = defop("argmax", lambda x, dim, keepdim: np.argmax(x, axis=dim, keepdims=keepdim),
                  template=_BY_AXIS % "argmax")
argmin_op = defop("argmin", lambda x, dim, keepdim: np.argmin(x, axis=dim, keepdims=keepdim),
                  template=_BY_AXIS % "argmin")


# ------------------------------------------------------------- public functions
def _keep_all(x: Any, ndim: int, keepdims: bool) -> Any:
    """A full reduction's result with every axis kept as 1 (numpy's keepdims)."""
    return reshape(x, (1,) * ndim) if keepdims and ndim else x


def _numpy_sum(a, axis=None, dtype=None, out=None, keepdims=False, **rest):
    args.plain(out, **rest)
    x = args.value(a)
    found = args.axes(axis, x.ndim)
    if found is None:
        return _keep_all(reduce_sum(x, dtype=dtype), x.ndim, keepdims)
    return reduce_sum(x, found, bool(keepdims), dtype=dtype)


@public("sum", function=True, method=True, numpy={np.sum: _numpy_sum})
def reduce_sum(input, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        input = to_dtype(input, dtype)
    if dim is None:
        return sum_all(input)
    return sum_dim(input, dim=args.dims(dim, input.ndim), keepdim=bool(keepdim))


def _numpy_mean(a, axis=None, dtype=None, out=None, keepdims=False, **rest):
    args.plain(out, **rest)
    x = args.value(a)
    if dtype is None and np.dtype(args.np_dtype(x)).kind not in "fc":
        dtype = np.float64  # numpy's mean of integers is float64
    found = args.axes(axis, x.ndim)
    if found is None:
        return _keep_all(mean(x, dtype=dtype), x.ndim, keepdims)
    return mean(x, found, bool(keepdims), dtype=dtype)


@public("mean", function=True, method=True, numpy={np.mean: _numpy_mean})
def mean(input, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        input = to_dtype(input, dtype)
    if np.dtype(args.np_dtype(input)).kind not in "fc":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating "
            f"point or complex dtype. Got: {args.dtype_name(input)}")
    if dim is None:
        return mean_all(input)
    return mean_dim(input, dim=args.dims(dim, input.ndim), keepdim=bool(keepdim))


def _extreme(input, dim, keepdim, all_op, dim_op, arg_op, pair, result):
    if dim is None:
        return all_op(input)
    if not isinstance(dim, (int, np.integer)):  # max(a, b): elementwise
        return pair(input, dim)
    d = int(dim) % max(input.ndim, 1)
    values = dim_op(input, dim=d, keepdim=bool(keepdim))
    return result(values, arg_op(input, dim=d, keepdim=bool(keepdim)))


def _numpy_extreme(a, axis, keepdims, all_op, dim_op) -> Any:
    x = args.value(a)
    nd = x.ndim
    found = args.axes(axis, nd)
    if found is None or len(found) == nd:
        return _keep_all(all_op(x), nd, keepdims)
    if len(found) == 1:
        return dim_op(x, dim=found[0], keepdim=bool(keepdims))
    # several axes: move them last, flatten them into one, reduce that
    kept = [d for d in range(nd) if d not in found]
    from_shape = [x.shape[d] for d in kept]
    flat = reshape(x.permute(*kept, *found), *from_shape, -1)
    y = dim_op(flat, dim=len(kept), keepdim=False)
    if keepdims:
        y = reshape(y, tuple(1 if d in found else n for d, n in enumerate(x.shape)))
    return y


def _numpy_max(a, axis=None, out=None, keepdims=False, **rest):
    args.plain(out, **rest)
    return _numpy_extreme(a, axis, keepdims, max_all, max_dim)


def _numpy_min(a, axis=None, out=None, keepdims=False, **rest):
    args.plain(out, **rest)
    return _numpy_extreme(a, axis, keepdims, min_all, min_dim)


@public("max", function=True, method=True, numpy={np.max: _numpy_max, np.amax: _numpy_max})
def reduce_max(input, dim=None, keepdim=False):
    return _extreme(input, dim, keepdim, max_all, max_dim, argmax_op, maximum, return_types_max)


@public("min", function=True, method=True, numpy={np.min: _numpy_min, np.amin: _numpy_min})
def reduce_min(input, dim=None, keepdim=False):
    return _extreme(input, dim, keepdim, min_all, min_dim, argmin_op, minimum, return_types_min)


def _numpy_arg_extreme(fn: Any) -> Any:
    """np.argmax / np.argmin (numpy's signature) over the torch-signature function."""
    def impl(a, axis=None, out=None, *, keepdims=False):
        args.plain(out)
        x = args.value(a)
        if axis is None:
            return _keep_all(fn(x), x.ndim, keepdims)
        return fn(x, axis, keepdims)
    return impl


@public("argmax", function=True, method=True)
def argmax(input, dim=None, keepdim=False):
    if dim is None:
        return argmax_op(reshape(input, -1), dim=0, keepdim=False)
    return argmax_op(input, dim=int(dim), keepdim=bool(keepdim))


@public("argmin", function=True, method=True)
def argmin(input, dim=None, keepdim=False):
    if dim is None:
        return argmin_op(reshape(input, -1), dim=0, keepdim=False)
    return argmin_op(input, dim=int(dim), keepdim=bool(keepdim))


public("argmax", numpy={np.argmax: _numpy_arg_extreme(argmax)})(argmax)
public("argmin", numpy={np.argmin: _numpy_arg_extreme(argmin)})(argmin)


@public("all", method=True)
def reduce_all(input, dim=None, keepdim=False):
    """True where no element is zero (composed: no element of ``not x`` is true)."""
    return reduce_sum(logical_not(input), dim, keepdim) == 0


@public("any", method=True)
def reduce_any(input, dim=None, keepdim=False):
    return ne(reduce_sum(ne(input, 0), dim, keepdim), 0)
