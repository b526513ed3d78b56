"""Reductions beyond sums, means and extremes: products, variance and standard deviation,
logsumexp, and the NaN-ignoring sums and means (cumulative sums and products are
cumulative.py's; medians, sorting and the index functions ordering.py's).

A ``dim`` param here is a tuple of non-negative axes, or None for every axis (a 0-d
input's only dim).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .elementwise import (
    conj,
    exp,
    is_complex,
    isnan,
    logical_not,
    real,
    to_dtype,
    where,
)
from .kernels.summation import count, print_sum, sum_of
from .reductions import (
    _keep_all,
    _keep_shape,
    _kept,
    mean_dim,
    reduce_sum,
    sum_dim,
)
from .shape import expand
from .table import args, batching
from .table.registry import c_order, defop, public, rt_call


def _dims(dim: Any, ndim: int) -> tuple | None:
    """torch's dim argument of a multi-dim reduction: None (or an empty list) is every
    dim (None: also a 0-d input's dims 0 and -1)."""
    found = None if dim is None else args.dims(dim, ndim)
    return found or None


def _numpy_axes(axis: Any, ndim: int) -> tuple | None:
    """numpy's axis argument (None: every axis)."""
    found = args.axes(axis, ndim)
    return None if found is None or len(found) == ndim else found


def _as_dtype(x: Any, dtype: Any) -> Any:
    return x if dtype is None else to_dtype(x, dtype)


def _float_only(name: str, x: Any) -> None:
    if np.dtype(args.np_dtype(x)).kind not in "fc":
        raise RuntimeError(f"{name}(): expected input to have floating point or complex dtype "
                           f"but got {args.dtype_name(x)}")


# ------------------------------------------------------------------------ prod
def _prod_others(x, dim):
    """The product of the other elements of each reduced slice, at each element: Q / x
    without zeros, Q (the product of the nonzero ones) at a slice's only zero, else 0."""
    z = x == 0
    y = np.where(z, 1, x)
    q = np.prod(y, axis=dim, keepdims=True)
    c = np.sum(z, axis=dim, keepdims=True)
    return np.where(c == 0, q / y, np.where(z & (c == 1), q, 0)).astype(q.dtype, copy=False)


def _prod_others_rule(g, out, x, dim):
    """d/dx of sum(g * prod_others(x)): at k, sum over i != k of g_i times the product of
    the elements other than i and k (exact with zeros: one, two, or more in a slice)."""
    z = x == 0
    y = where(z, 1, x)
    q = prod_dim(y, dim=dim, keepdim=True)
    c = sum_dim(z, dim=dim, keepdim=True)
    s = sum_dim(where(z, 0, g / y), dim=dim, keepdim=True)   # over the nonzero i
    gz = sum_dim(where(z, g, 0), dim=dim, keepdim=True)      # g at the zeros
    none = q / y * (s - g / y)
    one = where(z, q * s, gz * q / y)
    two = where(z, (gz - g) * q, 0)
    return conj(where(c == 0, none, where(c == 1, one, where(c == 2, two, 0))))


prod_others = defop("prod_others", _prod_others, "ProdBackward1",
                    vjp=(_prod_others_rule,), uses=("x",), fresh=True,
                    template=rt_call("prod_others", "axis=dim"))
def _prod_rule(g, out, x, dim=None, keepdim=False):
    """torch's prod_backward: g * result / x in a slice without zeros (divided by x with
    its zeros as 1, so that the branch not taken has no 0 / 0 for the second order), the
    product of the other elements where there are zeros (prod_safe_zeros_backward)."""
    z = x == 0
    zeros = sum_dim(z, dim=dim, keepdim=True)
    others = where(zeros == 0, _kept(out, x.shape, dim, keepdim) / where(z, 1, x),
                   prod_others(x, dim=dim))
    return _kept(g, x.shape, dim, keepdim) * conj(others)


prod_all = defop("prod_all", lambda x: np.asarray(np.prod(x)), "ProdBackward0",
                 vjp=(_prod_rule,), uses=("x out",), template="np.prod({0})", fresh=True,
                 batch=batching.reduce_all)
prod_dim = defop("prod_dim", lambda x, dim, keepdim: c_order(np.prod(x, dim, keepdims=keepdim)),
                 "ProdBackward1", vjp=(_prod_rule,), uses=("x out",),
                 template="np.prod({0}, axis={dim}, keepdims={keepdim})", fresh=True)


def _numpy_prod(a, axis=None, dtype=None, out=None, keepdims=False, **rest):
    args.plain(out, **rest)
    x = _as_dtype(args.value(a), dtype)
    found = _numpy_axes(axis, x.ndim)
    if found is None:
        return _keep_all(prod_all(x), x.ndim, keepdims)
    return prod_dim(x, dim=found, keepdim=bool(keepdims))


@public("prod", function=True, method=True, numpy={np.prod: _numpy_prod})
def prod(input, dim=None, keepdim=False, *, dtype=None):
    input = _as_dtype(input, dtype)
    if dim is None:
        return prod_all(input)
    d = args.wrap_dim(dim, input.ndim)
    return prod_dim(input, dim=(d,) if input.ndim else None, keepdim=bool(keepdim))


# ------------------------------------------------------------ var, std
def _dof(shape: tuple, dim: Any, correction: float) -> float:
    return count(shape, dim) - correction


def _var_factor(shape: tuple, dim: Any, correction: float) -> float:
    """2 / (N - correction), inf at 0 degrees of freedom (torch's double division)."""
    dof = _dof(shape, dim, correction)
    return 2 / dof if dof else math.inf


def _var_rule(g, out, x, dim, correction, keepdim):
    """torch's var_backward: 2 / (N - correction) g (x - mean(x))."""
    centered = x - mean_dim(x, dim=dim, keepdim=True)
    return _kept(g, x.shape, dim, keepdim) * _var_factor(x.shape, dim, correction) * centered


def _var(x, dim, correction, keepdim):
    return c_order(np.asarray(np.var(x, axis=dim, ddof=correction, keepdims=keepdim)))


def _var_jvp(t, out, x, dim, correction, keepdim):
    """2 / (N - correction) sum(Re(conj(x - mean(x)) t)): the variance's tangent."""
    centered = x - mean_dim(x, dim=dim, keepdim=True)
    if is_complex(centered):
        centered = real(conj(centered) * t)
    else:
        centered = centered * t
    return sum_dim(centered, dim=dim, keepdim=keepdim) * _var_factor(x.shape, dim,
                                                                          correction)


var_op = defop("var", _var, "VarBackward0", vjp=(_var_rule,), uses=("x",), fresh=True,
               jvp=(_var_jvp,), batch=batching.reduction,
               template="np.var({0}, axis={dim}, ddof={correction}, keepdims={keepdim})")
def _over_twice(g, out):
    """g / (2 std), 0 where std == 0; divided by 1 there, so that a second derivative
    finds no 0 * inf either."""
    zero = out == 0
    return where(zero, 0, g / (where(zero, 1, out) * 2))


# torch's std_backward: the variance's rule on g / (2 std), 0 where std == 0
std_op = defop("std", lambda x, dim, correction, keepdim: np.sqrt(_var(x, dim, correction,
                                                                         keepdim)),
               "StdBackward0",
               template="np.std({0}, axis={dim}, ddof={correction}, keepdims={keepdim})",
               vjp=(lambda g, out, x, dim, correction, keepdim:
                    _var_rule(_over_twice(g, out), out, x, dim, correction, keepdim),),
               # (declared: the rule transposed would divide a masked zero by std == 0)
               jvp=(lambda t, out, x, dim, correction, keepdim: _over_twice(
                   _var_jvp(t, out, x, dim, correction, keepdim), out),),
               uses=("x out",), fresh=True, batch=batching.reduction)


def _correction(unbiased: Any, correction: Any) -> float:
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


def _var_std(op: Any, name: str, input: Any, dim: Any, unbiased: Any, keepdim: bool,
             correction: Any) -> Any:
    if isinstance(dim, bool):  # var(x, unbiased)
        dim, unbiased = None, dim
    if np.dtype(args.np_dtype(input)).kind not in "fc":
        raise RuntimeError(f"{name}(): std and var only support floating point and complex "
                           f"dtypes")
    return op(input, dim=_dims(dim, input.ndim), correction=_correction(unbiased, correction),
              keepdim=bool(keepdim))


def _numpy_var_std(op: Any) -> Callable:
    """np.var's or np.std's implementation (numpy's signature) over ``op``."""
    def numpy_var_std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *,
                      correction=None, **rest):
        args.plain(out, **rest)
        x = args.value(a)
        if dtype is None and np.dtype(args.np_dtype(x)).kind not in "fc":
            dtype = np.float64
        x = _as_dtype(x, dtype)
        c = ddof if correction is None else correction
        found = _numpy_axes(axis, x.ndim)
        if found is None:
            return _keep_all(op(x, dim=None, correction=c, keepdim=False), x.ndim, keepdims)
        return op(x, dim=found, correction=c, keepdim=bool(keepdims))
    return numpy_var_std


@public("var", function=True, method=True, numpy={np.var: _numpy_var_std(var_op)})
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _var_std(var_op, "var", input, dim, unbiased, keepdim, correction)


@public("std", function=True, method=True, numpy={np.std: _numpy_var_std(std_op)})
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _var_std(std_op, "std", input, dim, unbiased, keepdim, correction)


# ------------------------------------------------------------------ logsumexp
def _logsumexp(x, dim, keepdim):
    """torch's: max + log(sum(exp(x - max))), the max taken as 0 where it is infinite
    (so that all -inf gives -inf, an inf gives inf)."""
    if x.size:
        m = np.max(x, axis=dim, keepdims=True)
        m = np.where(np.isinf(m), 0, m)
    else:
        m = np.zeros(_keep_shape(x.shape, dim), x.dtype)
    s = np.log(sum_of(np.exp(x - m), dim, True)) + m
    if not keepdim:  # (generated code passes a one-dim tuple as an int)
        gone = range(x.ndim) if dim is None else dim if isinstance(dim, tuple) else (dim,)
        s = s.reshape([n for i, n in enumerate(s.shape) if i not in gone])
    return c_order(np.asarray(s))


logsumexp_op = defop("logsumexp", _logsumexp, "LogsumexpBackward0",
                     vjp=(lambda g, out, x, dim, keepdim: _kept(g, x.shape, dim, keepdim)
                          * exp(x - _kept(out, x.shape, dim, keepdim)),),
                     uses=("x out",), fresh=True, batch=batching.reduction,
                     template=rt_call("logsumexp", "axis=dim", "keepdims=keepdim"))


@public("logsumexp", function=True, method=True)
def logsumexp(input, dim, keepdim=False):
    if np.dtype(args.np_dtype(input)).kind not in "fc":
        input = to_dtype(input, np.float32)  # torch: integers as the default float dtype
    return logsumexp_op(input, dim=_dims(dim, input.ndim), keepdim=bool(keepdim))


# ------------------------------------------------------------ nansum, nanmean
def _nansum(x, dim, keepdim):
    if x.dtype.kind in "fc":
        x = np.where(np.isnan(x), 0, x)
    return c_order(np.asarray(sum_of(x, dim, keepdim)))


# torch: the gradient times not isnan(x) (a product)
nansum_op = defop("nansum", _nansum, "NansumBackward0",
                  vjp=(lambda g, out, x, dim, keepdim:
                       expand(_kept(g, x.shape, dim, keepdim), shape=x.shape)
                       * logical_not(isnan(x)),),
                  # torch's forward formula: the tangent with x's NaN places filled with 0
                  # (a product would carry a NaN tangent there into every sum)
                  jvp=(lambda t, out, x, dim, keepdim:
                       sum_dim(where(isnan(x), 0, t), dim=dim, keepdim=keepdim),),
                  uses=("x",), fresh=True, batch=batching.reduction,
                  template=lambda e, a, lit: print_sum(
                      e.inputs[0], f"np.where(np.isnan({a[0]}), 0, {a[0]})"
                      if np.dtype(e.inputs[0].dtype).kind in "fc" else a[0], lit,
                      e.params["dim"], e.params["keepdim"]))


@public("nansum", function=True, method=True,
        numpy={np.nansum: lambda a, axis=None, dtype=None, out=None, keepdims=False, **rest:
               _numpy_nan(nansum, a, axis, dtype, out, keepdims, rest)})
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    input = _as_dtype(input, dtype)
    return nansum_op(input, dim=_dims(dim, input.ndim), keepdim=bool(keepdim))


@public("nanmean", function=True, method=True,
        numpy={np.nanmean: lambda a, axis=None, dtype=None, out=None, keepdims=False, **rest:
               _numpy_nan(nanmean, a, axis, dtype, out, keepdims, rest)})
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """torch's: nansum over the count of the elements that are not NaN (DivBackward0)."""
    input = _as_dtype(input, dtype)
    _float_only("nanmean", input)
    return nansum(input, dim, keepdim) / reduce_sum(logical_not(isnan(input)),
                                                    _dims(dim, input.ndim), keepdim)


def _numpy_nan(fn, a, axis, dtype, out, keepdims, rest):
    args.plain(out, **rest)
    x = _as_dtype(args.value(a), dtype)
    if fn is nanmean and np.dtype(args.np_dtype(x)).kind not in "fc":
        x = to_dtype(x, np.float64)
    found = _numpy_axes(axis, x.ndim)
    if found is None:
        return _keep_all(fn(x, None, False), x.ndim, keepdims)
    return fn(x, found, bool(keepdims))
