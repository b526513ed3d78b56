"""Order statistics and the index functions: medians (torch's lower median; numpy's
mean of the two middle elements), count_nonzero, argsort (stable, NaN the largest),
nonzero and ``torch.where(condition)``.

median and argsort take one dim (an int, or None on a 0-d input); count_nonzero a
tuple of non-negative axes, or None for every axis.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .elementwise import to_dtype, where
from .reductions import _pick, _split
from .shape import reshape
from .statistics import _dims, _numpy_axes
from .table import args, batching
from .table.registry import c_order, defop, public, rt_call
from .table.results import return_type

return_types_median = return_type("median", ("values", "indices"))


# ------------------------------------------------------------------ median
def _lower_median(x):
    """torch's median of every element: the lower of the two middle ones, NaN if any is
    NaN (or there are none)."""
    flat = x.reshape(-1)
    if not flat.size or (flat.dtype.kind in "fc" and np.isnan(flat).any()):
        return np.asarray(np.nan, dtype=x.dtype if x.dtype.kind in "fc" else np.float64)
    k = (flat.size - 1) // 2
    return np.asarray(np.partition(flat, k)[k])


# torch's evenly_distribute_backward: split over the elements equal to the median
median_all = defop("median_all", _lower_median, "MedianBackward0", vjp=(_split,),
                   uses=("x out",), fresh=True, batch=batching.reduce_all,
                   template="rt.median({0})")


def _argmedian(x, dim, keepdim):
    """The index of the lower median along ``dim`` (of the first NaN, where there is one):
    the stable sort's, so among equal elements the first."""
    n = x.shape[dim]
    order = np.argsort(x, axis=dim, kind="stable")
    idx = np.take(order, [(n - 1) // 2], axis=dim)
    if x.dtype.kind in "fc":
        nan = np.isnan(x)
        idx = np.where(nan.any(axis=dim, keepdims=True),
                       np.argmax(nan, axis=dim, keepdims=True), idx)
    return c_order(idx if keepdim else np.squeeze(idx, dim))


def _take_along(x, indices, dim, keepdim):
    i = indices if keepdim else np.expand_dims(indices, dim)
    v = np.take_along_axis(x, i, axis=dim)
    return c_order(v if keepdim else np.squeeze(v, dim))


argmedian = defop("argmedian", _argmedian, fresh=True, batch=batching.flat_or_shifted,
                  template=rt_call("argmedian", "axis=dim", "keepdims=keepdim"))


def _medians(x, dim, keepdim):
    """(values, indices) of the lower median along ``dim``."""
    indices = _argmedian(x, dim, keepdim)
    return _take_along(x, indices, dim, keepdim), indices


# median(dim)'s node saves the indices, not the input, as max(dim)'s does
median_dim = defop("median_dim", _medians, "MedianBackward1", outputs=return_types_median,
                   vjp=(_pick,), uses=("indices",), fresh=True,
                   template=rt_call("median_along", "axis=dim", "keepdims=keepdim"))


@public("median", function=True, method=True,
        numpy={np.median: lambda a, axis=None, out=None, overwrite_input=False,
               keepdims=False: _numpy_median(a, axis, out, keepdims)})
def median(input, dim=None, keepdim=False):
    if dim is None:
        return median_all(input)
    d = args.dim_or_all(dim, input.ndim)
    if d is None:  # a 0-d input
        return return_types_median(median_all(input), argmedian(reshape(input, 1), dim=0,
                                                                keepdim=False)[0])
    if input.shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    return median_dim(input, dim=d, keepdim=bool(keepdim))


# ------------------------------------------------------------------ nanmedian
return_types_nanmedian = return_type("nanmedian", ("values", "indices"))


def _lower_nanmedian(x):
    """torch's nanmedian of every element: the lower of the two middle ones among those
    that are not NaN (NaN if there are none)."""
    flat = x.reshape(-1)
    if flat.dtype.kind in "fc":
        flat = flat[~np.isnan(flat)]
    if not flat.size:
        return np.asarray(np.nan, dtype=x.dtype if x.dtype.kind in "fc" else np.float64)
    k = (flat.size - 1) // 2
    return np.asarray(np.partition(flat, k)[k])


def _argnanmedian(x, dim, keepdim):
    """The index of the lower median of the elements that are not NaN along ``dim``: the
    stable sort's, which puts NaN last (a slice of NaN only: its first, where torch's
    choice is its selection algorithm's)."""
    order = np.argsort(x, axis=dim, kind="stable")
    valid = x.shape[dim]
    if x.dtype.kind in "fc":
        valid = np.sum(~np.isnan(x), axis=dim, keepdims=True)
    middle = np.broadcast_to((np.maximum(valid, 1) - 1) // 2, np.take(order, [0], dim).shape)
    idx = np.take_along_axis(order, middle, axis=dim)
    return c_order(idx if keepdim else np.squeeze(idx, dim))


def _nanmedians(x, dim, keepdim):
    """(values, indices) of the lower median of the elements not NaN along ``dim``."""
    indices = _argnanmedian(x, dim, keepdim)
    return _take_along(x, indices, dim, keepdim), indices


nanmedian_all = defop("nanmedian_all", _lower_nanmedian, "NanmedianBackward0",
                      vjp=(_split,), uses=("x out",), fresh=True,
                      batch=batching.reduce_all, template="rt.nanmedian({0})")
nanmedian_dim = defop("nanmedian_dim", _nanmedians, "NanmedianBackward1",
                      outputs=return_types_nanmedian, vjp=(_pick,), uses=("indices",),
                      fresh=True, template=rt_call("nanmedian_along", "dim", "keepdim"))


@public("nanmedian", function=True, method=True)
def nanmedian(input, dim=None, keepdim=False):
    if dim is None:
        return nanmedian_all(input)
    d = args.dim_or_all(dim, input.ndim)
    if d is None:  # a 0-d input
        return return_types_nanmedian(nanmedian_all(input), argmedian(
            reshape(input, 1), dim=0, keepdim=False)[0])
    if input.shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    return nanmedian_dim(input, dim=d, keepdim=bool(keepdim))


def _numpy_median(a, axis, out, keepdims):
    """numpy's median: the mean of the two middle elements where their count is even."""
    args.plain(out)
    x = args.value(a)
    if np.dtype(args.np_dtype(x)).kind not in "fc":
        x = to_dtype(x, np.float64)
    nd = x.ndim
    found = _numpy_axes(axis, nd)
    if found is None:
        flat, d = reshape(x, -1), 0
    else:
        kept = [i for i in range(nd) if i not in found]
        flat = reshape(x.permute(*kept, *found), *[x.shape[i] for i in kept], -1)
        d = len(kept)
    n = flat.shape[d]
    lower = median_dim(flat, dim=d, keepdim=False)[0]
    y = lower if n % 2 else (lower - median_dim(-flat, dim=d, keepdim=False)[0]) / 2
    if keepdims:
        y = reshape(y, tuple(1 if found is None or i in found else s
                             for i, s in enumerate(x.shape)))
    return y


# ------------------------------------------------------------------ counting
count_nonzero_op = defop("count_nonzero",
                         lambda x, dim: np.asarray(np.count_nonzero(x, axis=dim), np.int64),
                         template="np.count_nonzero({0}, axis={dim})", batch=batching.reduction)


def _numpy_count_nonzero(a, axis=None, *, keepdims=False):
    x = args.value(a)
    found = _numpy_axes(axis, x.ndim)
    y = count_nonzero_op(x, dim=found)
    if keepdims:
        y = reshape(y, tuple(1 if found is None or i in found else s
                             for i, s in enumerate(x.shape)))
    return y


@public("count_nonzero", function=True, method=True,
        numpy={np.count_nonzero: _numpy_count_nonzero})
def count_nonzero(input, dim=None):
    return count_nonzero_op(input, dim=_dims(dim, input.ndim))


# ------------------------------------------------------------------ ordering
def _argsort(x, dim, descending, stable):
    """torch's argsort: stable order (equal elements keep their order, also descending),
    NaN the largest."""
    if dim is None:
        return np.zeros(x.shape, np.int64)
    if not descending:
        return np.argsort(x, axis=dim, kind="stable")
    key = -x.astype(np.float64) if x.dtype.kind in "biu" else -x
    if x.dtype.kind in "fc":
        nan = np.isnan(x)
        # NaN first, then by -x, each stably: argsort of a moved axis, moved back
        keys = (np.moveaxis(np.where(nan, 0, key), dim, -1), np.moveaxis(~nan, dim, -1))
        return c_order(np.moveaxis(np.lexsort(keys, axis=-1), -1, dim))
    return np.argsort(key, axis=dim, kind="stable")


def _print_argsort(e: Any, a: list, lit: Callable) -> str:
    dim = e.params["dim"]
    if dim is None:
        return f"np.zeros({lit(e.out.shape)}, np.int64)"
    if e.params["descending"]:
        return f"rt.argsort_descending({a[0]}, axis={dim})"
    return f"np.argsort({a[0]}, axis={dim}, kind='stable')"


argsort_op = defop("argsort", _argsort, fresh=True, batch=batching.shifted_dims,
                   template=_print_argsort)


@public("argsort", function=True, method=True,
        numpy={np.argsort: lambda a, axis=-1, kind=None, order=None, *, stable=None:
               _numpy_argsort(a, axis, order)})
def argsort(input, dim=-1, descending=False, *, stable=False):
    return argsort_op(input, dim=args.dim_or_all(dim, input.ndim),
                      descending=bool(descending), stable=bool(stable))


def _numpy_argsort(a, axis, order):
    if order is not None:
        raise args.Unsupported
    x = args.value(a)
    if axis is None:
        x, axis = reshape(x, -1), 0
    return argsort_op(x, dim=args.axes(axis, x.ndim)[0] if x.ndim else None,
                      descending=False, stable=True)


# the result's shape depends on the input's values: the compiler refuses it (a trace
# is specialized on shapes), so it runs eagerly only
nonzero_op = defop("nonzero", lambda x: np.argwhere(x).astype(np.int64),
                   template="np.argwhere({0})", shape_from_data=True)


@public("nonzero", function=True, method=True)
def nonzero(input, *, as_tuple=False):
    found = nonzero_op(input)
    if not as_tuple:
        return found
    if not input.ndim:  # a 0-d tensor counts as one element: (tensor([0]),) when true
        return (nonzero_op(reshape(input, (1,)))[:, 0],)
    return tuple(found[:, i] for i in range(input.ndim))


@public("where", function=True)
def where_function(condition, input=None, other=None):
    """torch.where(condition, input, other) chooses elementwise (the ``where`` op);
    torch.where(condition) is ``nonzero(condition, as_tuple=True)`` (eager only)."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() received an invalid combination of arguments - got "
                        "(condition, input) or (condition, other=): pass both input and "
                        "other, or neither")
    return where(condition, input, other)
