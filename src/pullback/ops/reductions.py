"""Reduction primitives (sums, means, extremes, arg-extremes) and the public functions
that choose among them, with numpy's spellings (``axis``, ``keepdims``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .elementwise import (
    isnan,
    logical_and,
    logical_not,
    logical_or,
    maximum,
    minimum,
    ne,
    to_dtype,
    where,
)
from .kernels.summation import count, mean_of, print_mean, print_sum, sum_of
from .shape import expand, reshape, reshape_op
from .table import args, batching
from .table.registry import c_order, defop, public
from .table.results import return_type

return_types_max = return_type("max", ("values", "indices"))
return_types_min = return_type("min", ("values", "indices"))


def _keep_shape(shape: tuple, dim: Any) -> tuple:
    """``shape`` with the reduced ``dim`` axes (a tuple, an int, or None: every axis) kept
    as 1 (for un-reducing a gradient)."""
    found = range(len(shape)) if dim is None else {
        d % len(shape) for d in ((dim,) if isinstance(dim, int) else dim)}
    return tuple(1 if i in found else n for i, n in enumerate(shape))


def _per_result(shape: tuple, dim: Any = None) -> int:
    """A mean's divisor in its gradient: 1 for an empty input (no 0/0: the gradient
    of an empty input is empty)."""
    return max(count(shape, dim), 1)


def _plain_mean(dtype: np.dtype) -> bool:
    """np.mean itself (float16 accumulates in float32 there), not sum / count."""
    return dtype.kind not in "fc" or dtype.itemsize < 4


def fast_mean(x, axis=None, keepdims=False):
    """A mean as ``mean_of`` computes it (sum / count, accurate, NaN over nothing)."""
    x = np.asarray(x)
    if _plain_mean(x.dtype):
        return np.mean(x, axis=axis, keepdims=keepdims)
    return mean_of(x, axis, keepdims)


def _print_mean(e: Any, a: list, lit: Any) -> str:
    x = e.inputs[0]
    if _plain_mean(x.dtype):  # (float16 accumulates in float32 in np.mean)
        dim, keepdim = e.params.get("dim"), e.params.get("keepdim", False)
        return f"np.mean({a[0]}, axis={lit(dim)}, keepdims={lit(keepdim)})"
    return print_mean(x, a[0], lit, e.params.get("dim"), e.params.get("keepdim", False))


# sum_dim's dim: a tuple of axes; the softmax rules pass their own dim, an int or None
# (every axis)
sum_all = defop("sum_all", lambda x: sum_of(x), "SumBackward0",
                vjp=(lambda g, out, x: expand(g, shape=x.shape),),
                jvp=(lambda t, out, x: sum_all(t),),  # linear: the op on the tangent
                template=lambda e, a, lit: print_sum(e.inputs[0], a[0], lit),
                batch=batching.reduce_all)
sum_dim = defop("sum_dim", lambda x, dim, keepdim: c_order(sum_of(x, dim, keepdim)),
                "SumBackward1",
                vjp=(lambda g, out, x, dim, keepdim:
                     expand(reshape_op(g, shape=_keep_shape(x.shape, dim)), shape=x.shape),),
                jvp=(lambda t, out, x, dim, keepdim: sum_dim(t, dim=dim, keepdim=keepdim),),
                template=lambda e, a, lit: print_sum(e.inputs[0], a[0], lit, e.params["dim"],
                                                     e.params["keepdim"]), fresh=True,
                                                     batch=batching.reduction)
mean_all = defop("mean_all", lambda x: fast_mean(x), "MeanBackward0",
                 vjp=(lambda g, out, x: expand(g / _per_result(x.shape), shape=x.shape),),
                 jvp=(lambda t, out, x: mean_all(t),),
                 template=_print_mean, batch=batching.reduce_all)
mean_dim = defop("mean_dim", lambda x, dim, keepdim: c_order(fast_mean(x, dim, keepdim)),
                 "MeanBackward1",
                 vjp=(lambda g, out, x, dim, keepdim:
                      expand(reshape_op(g / _per_result(x.shape, dim),
                                        shape=_keep_shape(x.shape, dim)), shape=x.shape),),
                 jvp=(lambda t, out, x, dim, keepdim: mean_dim(t, dim=dim, keepdim=keepdim),),
                 template=_print_mean, fresh=True, batch=batching.reduction)


def _split(g, out, x):
    """torch's gradient of a full max/min: split evenly over the elements equal to the
    result (NaN ones, when it is NaN), zero elsewhere."""
    mask = logical_or(x == out, logical_and(isnan(x), isnan(out)))
    return where(mask, g / sum_all(mask), 0)  # 0 elsewhere, even for an inf g


def _index_mask(indices, shape, dim, keepdim):
    """True where ``indices`` (an extreme's, along ``dim``; None: over every axis) point."""
    if dim is None:
        return np.arange(count(shape)).reshape(shape) == indices
    if not keepdim:
        indices = np.expand_dims(indices, dim)
    return np.arange(shape[dim]).reshape((-1,) + (1,) * (len(shape) - 1 - dim)) == indices


def _pick(g, out, x, dim, keepdim):
    """max(dim)'s rule: the values' gradient goes to the index the forward returned."""
    return where(index_mask(out.indices, shape=x.shape, dim=dim, keepdim=keepdim),
                 reshape_op(g.values, shape=_keep_shape(x.shape, dim)), 0)


def _extremes(reduce, arg):
    """(values, indices) of max or min along ``dim``: two reductions."""
    return lambda x, dim, keepdim: (c_order(reduce(x, dim, None, keepdim)),
                                    c_order(arg(x, dim, keepdims=keepdim)))


def _print_extremes(name: str):
    return lambda e, a, lit: ", ".join(
        f"{a[0]}.{f}(axis={lit(e.params['dim'])}, keepdims={lit(e.params['keepdim'])})"
        for f in (name, "arg" + name))


# the ops that take one dim: an int, or None (every axis: a 0-d input's only dim)
def _print_index_mask(e: Any, a: list, lit: Any) -> str:
    shape, dim, keepdim = e.params["shape"], e.params["dim"], e.params["keepdim"]
    if dim is None:
        return f"np.arange({count(shape)}).reshape({lit(tuple(shape))}) == {a[0]}"
    at = a[0] if keepdim else f"np.expand_dims({a[0]}, {dim})"
    column = (-1,) + (1,) * (len(shape) - 1 - dim)
    return f"np.arange({shape[dim]}).reshape({lit(column)}) == {at}"


index_mask = defop("index_mask", _index_mask, template=_print_index_mask)
_BY_AXIS = "{0}.%s(axis={dim}, keepdims={keepdim})"
max_all = defop("max_all", lambda x: np.max(x), "MaxBackward1",
                vjp=(_split,), uses=("x out",), template="{0}.max()", batch=batching.reduce_all)
min_all = defop("min_all", lambda x: np.min(x), "MinBackward1",
                vjp=(_split,), uses=("x out",), template="{0}.min()", batch=batching.reduce_all)
# max(dim) and min(dim) return (values, indices); their nodes save the indices, not
# the input, as torch does (a later write to the input is fine)
max_dim = defop("max_dim", _extremes(np.max, np.argmax), "MaxBackward0",
                outputs=return_types_max, vjp=(_pick,), uses=("indices",),
                template=_print_extremes("max"))
min_dim = defop("min_dim", _extremes(np.min, np.argmin), "MinBackward0",
                outputs=return_types_min, vjp=(_pick,), uses=("indices",),
                template=_print_extremes("min"))
argmax_op = defop("argmax", lambda x, dim, keepdim: c_order(np.argmax(x, dim, keepdims=keepdim)),
                  template=_BY_AXIS % "argmax", batch=batching.flat_or_shifted)
argmin_op = defop("argmin", lambda x, dim, keepdim: c_order(np.argmin(x, dim, keepdims=keepdim)),
                  template=_BY_AXIS % "argmin", batch=batching.flat_or_shifted)


def _kept(g: Any, shape: tuple, dim: Any, keepdim: bool) -> Any:
    """A reduction's gradient (or result) with the reduced dims kept as 1 (it broadcasts
    to ``shape``)."""
    if keepdim or g.ndim == len(shape):
        return g
    return reshape_op(g, shape=_keep_shape(shape, dim))


# ------------------------------------------------------------------ amax, amin
def _count_split(g, out, x, dim, keepdim):
    """torch's scale_grad_by_count: g split evenly over the elements equal to the result
    (a product with the mask: where the result is NaN, every gradient is NaN)."""
    mask = x == _kept(out, x.shape, dim, keepdim)
    return _kept(g, x.shape, dim, keepdim) / sum_dim(mask, dim=dim, keepdim=True) * mask


amax_op = defop("amax", lambda x, dim, keepdim: c_order(np.asarray(np.max(x, dim,
                                                                          keepdims=keepdim))),
                "AmaxBackward0", vjp=(_count_split,), uses=("x out",), fresh=True,
                template="np.max({0}, axis={dim}, keepdims={keepdim})", batch=batching.reduction)
amin_op = defop("amin", lambda x, dim, keepdim: c_order(np.asarray(np.min(x, dim,
                                                                          keepdims=keepdim))),
                "AminBackward0", vjp=(_count_split,), uses=("x out",), fresh=True,
                template="np.min({0}, axis={dim}, keepdims={keepdim})", batch=batching.reduction)


def _amax_amin(op: Any, name: str, input: Any, dim: Any, keepdim: bool) -> Any:
    found = args.dims(dim, input.ndim) or None
    for d in range(input.ndim) if found is None else found:
        if input.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    return op(input, dim=found, keepdim=bool(keepdim))


@public("amax", function=True, method=True)
def amax(input, dim=(), keepdim=False):
    return _amax_amin(amax_op, "amax", input, dim, keepdim)


@public("amin", function=True, method=True)
def amin(input, dim=(), keepdim=False):
    return _amax_amin(amin_op, "amin", input, dim, keepdim)


# ------------------------------------------------------------------ aminmax
return_types_aminmax = return_type("aminmax", ("min", "max"))


def _aminmax_rule(g, out, x, dim, keepdim):
    """torch's aminmax backward: amin's rule on the min's gradient plus amax's on the max's."""
    return (_count_split(g.min, out.min, x, dim, keepdim)
            + _count_split(g.max, out.max, x, dim, keepdim))


def _print_aminmax(e: Any, a: list, lit: Any) -> str:
    return ", ".join(f"np.{f}({a[0]}, axis={lit(e.params['dim'])}, "
                     f"keepdims={lit(e.params['keepdim'])})" for f in ("min", "max"))


aminmax_op = defop("aminmax", lambda x, dim, keepdim: (
                       c_order(np.asarray(np.min(x, dim, keepdims=keepdim))),
                       c_order(np.asarray(np.max(x, dim, keepdims=keepdim)))),
                   "AminmaxBackward0", outputs=return_types_aminmax, vjp=(_aminmax_rule,),
                   uses=("x out",), fresh=True, template=_print_aminmax,
                   batch=batching.reduction)


@public("aminmax", function=True, method=True)
def aminmax(input, *, dim=None, keepdim=False):
    if dim is None:
        if 0 in input.shape:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
        return aminmax_op(input, dim=None, keepdim=bool(keepdim))
    d = args.wrap_dim(dim, input.ndim)
    if input.ndim and input.shape[d] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    return aminmax_op(input, dim=(d,) if input.ndim else None, keepdim=bool(keepdim))


# ------------------------------------------------------------- public functions
def _keep_all(x: Any, ndim: int, keepdims: bool) -> Any:
    """A full reduction's result with every axis kept as 1 (numpy's keepdims)."""
    return reshape(x, (1,) * ndim) if keepdims and ndim else x


def _as_dtype(x: Any, dtype: Any) -> Any:
    return x if dtype is None else to_dtype(x, dtype)


def _numpy_sum(a, axis=None, dtype=None, out=None, keepdims=False, **rest):
    args.plain(out, **rest)
    x = args.value(a)
    found = args.axes(axis, x.ndim)
    if found is None:
        return _keep_all(reduce_sum(x, dtype=dtype), x.ndim, keepdims)
    return sum_dim(_as_dtype(x, dtype), dim=found, keepdim=bool(keepdims))  # axis=(): none


def _torch_dims(dim: Any, ndim: int) -> tuple:
    """The dims a sum or mean reduces: an empty list means every dim, as in torch."""
    return args.dims(dim, ndim) or tuple(range(ndim))


@public("sum", function=True, method=True, numpy={np.sum: _numpy_sum})
def reduce_sum(input, dim=None, keepdim=False, *, dtype=None):
    input = _as_dtype(input, dtype)
    if dim is None:
        return sum_all(input)
    return sum_dim(input, dim=_torch_dims(dim, input.ndim), keepdim=bool(keepdim))


def _numpy_mean(a, axis=None, dtype=None, out=None, keepdims=False, **rest):
    args.plain(out, **rest)
    x = args.value(a)
    if dtype is None and np.dtype(args.np_dtype(x)).kind not in "fc":
        dtype = np.float64  # numpy's mean of integers is float64
    found = args.axes(axis, x.ndim)
    if found is None:
        return _keep_all(mean(x, dtype=dtype), x.ndim, keepdims)
    return mean_dim(_as_dtype(x, dtype), dim=found, keepdim=bool(keepdims))


@public("mean", function=True, method=True, numpy={np.mean: _numpy_mean})
def mean(input, dim=None, keepdim=False, *, dtype=None):
    input = _as_dtype(input, dtype)
    if np.dtype(args.np_dtype(input)).kind not in "fc":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating "
            f"point or complex dtype. Got: {args.dtype_name(input)}")
    if dim is None:
        return mean_all(input)
    return mean_dim(input, dim=_torch_dims(dim, input.ndim), keepdim=bool(keepdim))


def _reduction_dim(name: str, input: Any, dim: Any) -> int | None:
    """The one dim max, min, argmax or argmin(dim) reduce (None on a 0-d input), with
    torch's IndexError for an empty one."""
    if dim is None:
        if not count(input.shape):
            raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
        return None
    d = args.dim_or_all(dim, input.ndim)
    if d is not None and input.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    return d


def _along(dim_op, arg_op, x, dim, keepdim) -> tuple:
    """(values, indices) of max or min along one ``dim``."""
    return tuple(dim_op(x, dim=dim, keepdim=keepdim))


def _extreme(input, dim, keepdim, all_op, dim_op, arg_op, pair, result):
    name = result.__name__  # max or min
    if dim is None:
        if not count(input.shape):
            raise RuntimeError(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument.")
        return all_op(input)
    if not isinstance(dim, (int, np.integer)):  # max(a, b): elementwise
        return pair(input, dim)
    d = _reduction_dim(name, input, dim)
    return result(*_along(dim_op, arg_op, input, d, bool(keepdim)))


def _numpy_extreme(op: Any, a: Any, axis: Any, out: Any, keepdims: bool, rest: dict) -> Any:
    """np.max / np.min: amax / amin over numpy's axes (ties split evenly, as in
    numpy-autograd and JAX); numpy's own error for an empty reduction."""
    args.plain(out, **rest)
    x = args.value(a)
    found = args.axes(axis, x.ndim)
    if found is not None and len(found) == x.ndim:
        found = None
    return op(x, dim=found, keepdim=bool(keepdims))


def _numpy_max(a, axis=None, out=None, keepdims=False, **rest):
    return _numpy_extreme(amax_op, a, axis, out, keepdims, rest)


def _numpy_min(a, axis=None, out=None, keepdims=False, **rest):
    return _numpy_extreme(amin_op, a, axis, out, keepdims, rest)


@public("max", function=True, method=True, numpy={np.max: _numpy_max, np.amax: _numpy_max})
def reduce_max(input, dim=None, keepdim=False):
    return _extreme(input, dim, keepdim, max_all, max_dim, argmax_op, maximum, return_types_max)


@public("min", function=True, method=True, numpy={np.min: _numpy_min, np.amin: _numpy_min})
def reduce_min(input, dim=None, keepdim=False):
    return _extreme(input, dim, keepdim, min_all, min_dim, argmin_op, minimum, return_types_min)


def _numpy_arg_extreme(op: Any, a: Any, axis: Any, out: Any, keepdims: bool) -> Any:
    """np.argmax / np.argmin (numpy's signature and errors) on the primitive."""
    args.plain(out)
    x = args.value(a)
    found = args.axes(axis, x.ndim)
    return op(x, dim=found[0] if found else None, keepdim=bool(keepdims))


def _numpy_argmax(a, axis=None, out=None, *, keepdims=False):
    return _numpy_arg_extreme(argmax_op, a, axis, out, keepdims)


def _numpy_argmin(a, axis=None, out=None, *, keepdims=False):
    return _numpy_arg_extreme(argmin_op, a, axis, out, keepdims)


@public("argmax", function=True, method=True, numpy={np.argmax: _numpy_argmax})
def argmax(input, dim=None, keepdim=False):
    return argmax_op(input, dim=_reduction_dim("argmax", input, dim), keepdim=bool(keepdim))


@public("argmin", function=True, method=True, numpy={np.argmin: _numpy_argmin})
def argmin(input, dim=None, keepdim=False):
    return argmin_op(input, dim=_reduction_dim("argmin", input, dim), keepdim=bool(keepdim))


def _numpy_all_any(fn, a, axis, out, keepdims, rest):
    args.plain(out, **rest)
    x = args.value(a)
    found = args.axes(axis, x.ndim)
    if found is None or len(found) == x.ndim:
        return _keep_all(fn(x), x.ndim, keepdims)
    return fn(x, found, bool(keepdims))


@public("all", function=True, method=True,
        numpy={np.all: lambda a, axis=None, out=None, keepdims=False, **rest:
               _numpy_all_any(reduce_all, a, axis, out, keepdims, rest)})
def reduce_all(input, dim=None, keepdim=False):
    """True where no element is zero (composed: no element of ``not x`` is true)."""
    return reduce_sum(logical_not(input), dim, keepdim) == 0


@public("any", function=True, method=True,
        numpy={np.any: lambda a, axis=None, out=None, keepdims=False, **rest:
               _numpy_all_any(reduce_any, a, axis, out, keepdims, rest)})
def reduce_any(input, dim=None, keepdim=False):
    return ne(reduce_sum(ne(input, 0), dim, keepdim), 0)
