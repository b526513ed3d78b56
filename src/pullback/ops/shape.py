"""Shape ops: reshaping views (``view``, ``reshape``, ``squeeze``/``unsqueeze``,
``transpose``, ``permute``), broadcasting (``expand`` and its reduction ``sum_to``),
the alias ``detach``; and the public functions that choose among them. Subscripts are
in ``subscripts.py``, writes through views in ``writes.py``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .kernels.summation import print_sum, sum_of
from .table import args, batching
from .table.registry import defop, public, reduced_axes


def _sum_to(x, shape):
    axes = reduced_axes(np.shape(x), shape)
    if axes:
        x = sum_of(x, axis=axes, keepdims=True)
    return x.reshape(shape) if np.ndim(x) != len(shape) else x


#: ops whose gradient is reshaped back: generated code spells them as a reshape to the
#: (static) result shape, which numpy may return as a view
_RESHAPING = dict(template="{0}.reshape({out_shape})", aliases=True)


def _print_sum_to(e: Any, a: list, lit: Any) -> str:
    """Static axes: a plain sum when only leading axes go, else keepdims and reshape."""
    x, target = e.inputs[0], tuple(e.params["shape"])
    axes = reduced_axes(x.shape, target)
    lead = x.ndim - len(target)
    if all(k < lead for k in axes):
        return print_sum(x, a[0], lit, axes) if axes else a[0]
    out = print_sum(x, a[0], lit, axes, keepdims=True)
    return out + (f".reshape({lit(target)})" if lead else "")


def _print_expand(e: Any, a: list, lit: Any) -> str:
    shape = lit(tuple(e.params["shape"]))
    if e.inputs[0].shape == ():  # a scalar filled out is cheaper than a broadcast view
        return f"np.full({shape}, {a[0]})"
    return f"np.broadcast_to({a[0]}, {shape})"


# the one broadcast reduction every binary rule's result goes through (torch's sum_to is
# a keepdim sum, named SumBackward1, followed by a view when leading dims go away)
sum_to = defop("sum_to", _sum_to, "SumBackward1",
               vjp=(lambda g, out, x, shape: expand(g, shape=x.shape),),
               template=_print_sum_to, batch=batching.batch_shape)
# a broadcast view, except that generated code fills a new array from a scalar
expand = defop("expand", lambda x, shape: np.broadcast_to(x, shape), "ExpandBackward0",
               vjp=(lambda g, out, x, shape: g,), is_view=True, template=_print_expand,
               fresh=lambda e: e.inputs[0].shape == () and e.out.shape != (),
               batch=batching.batch_shape)
view = defop("view", lambda x, shape: np.reshape(x, shape), "ViewBackward0",
             vjp=(lambda g, out, x, shape: reshape_op(g, shape=x.shape),), is_view=True,
             **_RESHAPING, batch=batching.batch_shape)
# torch's reshape: a view of a contiguous tensor, an alias of one whose strides allow the
# new shape (_reshape_alias), else a copy (_unsafe_view of a contiguous clone)
reshape_alias = defop("reshape_alias", lambda x, shape: np.reshape(x, shape),
                      "ReshapeAliasBackward0", is_view=True,
                      vjp=(lambda g, out, x, shape: reshape_op(g, shape=x.shape),), **_RESHAPING,
                      batch=batching.batch_shape)
reshape_op = defop("reshape", lambda x, shape: np.reshape(x, shape), "UnsafeViewBackward0",
                   vjp=(lambda g, out, x, shape: reshape_op(g, shape=x.shape),), **_RESHAPING,
                   batch=batching.batch_shape)
unsqueeze_op = defop("unsqueeze", lambda x, dim: np.expand_dims(x, dim), "UnsqueezeBackward0",
                     vjp=(lambda g, out, x, dim: reshape_op(g, shape=x.shape),), is_view=True,
                     **_RESHAPING, batch=batching.shifted_out_dims)
# squeeze(dim) / squeeze() / squeeze(dims): torch names the three forms differently
squeeze_dim = defop("squeeze", lambda x, dim: np.squeeze(x, dim), "SqueezeBackward1",
                    vjp=(lambda g, out, x, dim: reshape_op(g, shape=x.shape),), is_view=True,
                    **_RESHAPING)
squeeze_all = defop("squeeze_all", lambda x, dim: np.squeeze(x, dim), "SqueezeBackward0",
                    vjp=(lambda g, out, x, dim: reshape_op(g, shape=x.shape),), is_view=True,
                    **_RESHAPING)
squeeze_dims = defop("squeeze_dims", lambda x, dim: np.squeeze(x, dim), "SqueezeBackward2",
                     vjp=(lambda g, out, x, dim: reshape_op(g, shape=x.shape),), is_view=True,
                     **_RESHAPING)
def _swapaxes(x, dim0, dim1):
    return np.swapaxes(x, dim0, dim1) if np.ndim(x) else x[...]  # a 0-d tensor: itself


def _print_swapaxes(e: Any, a: list, lit: Any) -> str:
    if not e.inputs[0].shape:
        return f"{a[0]}[...]"
    return f"{a[0]}.swapaxes({lit(e.params['dim0'])}, {lit(e.params['dim1'])})"


transpose_op = defop("transpose", _swapaxes, "TransposeBackward0",
                     vjp=(lambda g, out, x, dim0, dim1: transpose_op(g, dim0=dim0, dim1=dim1),),
                     is_view=True, template=_print_swapaxes)
def _t_batch(op, args, batched):
    x = args[0]
    return x if x.ndim < 3 else transpose_op(x, dim0=1, dim1=2)


def _permute_batch(op, args, batched, dims):
    rank = args[0].ndim - 1
    return permute_op(args[0], dims=(0,) + tuple(int(d) % rank + 1 for d in dims))


t_op = defop("t", np.transpose, "TBackward0", vjp=(lambda g, out, x: t_op(g),), is_view=True,
             batch=_t_batch,
             template="{0}.T")
permute_op = defop("permute", lambda x, dims: np.transpose(x, dims), "PermuteBackward0",
                   vjp=(lambda g, out, x, dims: permute_op(g, dims=tuple(np.argsort(dims))),),
                   is_view=True, template="{0}.transpose({dims})", batch=_permute_batch)

# x.detach() / x.data inside a traced function: the value, with no gradient through it
detach = defop("detach", lambda x: x, template="{0}", aliases=True, batch=batching.as_is)


# ------------------------------------------------------------- public functions
def _is_contiguous(x: Any) -> bool:
    flags = getattr(getattr(x, "_data", x), "flags", None)
    return flags is None or flags.c_contiguous


def _viewable(x: Any, shape: tuple) -> bool:
    """Whether ``x`` can be viewed as ``shape``: torch's rule (computeStride), that its
    strides allow one. Its dims fall in chunks, each contiguous in itself; ``shape`` must
    split where the chunks end. (A value without strides, an IR value, always can.)"""
    if _is_contiguous(x):
        return True
    data = getattr(x, "_data", x)
    if data.size == 0:
        return True
    old, strides = data.shape, data.strides
    view_d, base = len(shape) - 1, strides[-1]
    numel = view_numel = 1
    for d in range(len(old) - 1, -1, -1):
        numel *= old[d]
        if d == 0 or old[d - 1] != 1 and strides[d - 1] != numel * base:  # a chunk ends
            while view_d >= 0 and (view_numel < numel or shape[view_d] == 1):
                view_numel *= shape[view_d]
                view_d -= 1
            if view_numel != numel:
                return False
            if d > 0:
                base, numel, view_numel = strides[d - 1], 1, 1
    return view_d == -1


def _numpy_reshape(a, *rest, **kw):
    shape = rest[0] if rest else kw.pop("shape", kw.pop("newshape", None))
    order = rest[1] if len(rest) > 1 else kw.pop("order", "C")
    if shape is None or order != "C" or kw.pop("copy", None) is not None or kw:
        raise args.Unsupported
    return reshape(args.value(a), (shape,) if isinstance(shape, (int, np.integer)) else shape)


def _numpy_ravel(a, order="C"):
    if order != "C":
        raise args.Unsupported
    return reshape(args.value(a), -1)


@public("reshape", function=True, method=True,
        numpy={np.reshape: _numpy_reshape, np.ravel: _numpy_ravel})
def reshape(input, *size):
    """A view where the strides allow one (as torch's), else a copy."""
    shp = args.resolve_shape(args.shape_arg(size), input.shape)
    if _is_contiguous(input):
        return view(input, shape=shp)
    if _viewable(input, shp):
        return reshape_alias(input, shape=shp)
    return reshape_op(input, shape=shp)


@public("view", method=True)
def view_as_shape(input, *size):
    shp = args.resolve_shape(args.shape_arg(size), input.shape)
    if not _viewable(input, shp):
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return view(input, shape=shp)


@public("flatten", function=True, method=True)
def flatten(input, start_dim=0, end_dim=-1):
    nd = input.ndim
    s, e = args.wrap_dim(start_dim, nd), args.wrap_dim(end_dim, nd)
    if nd == 0:
        return reshape(input, 1)
    if s == e:  # torch returns the tensor itself
        return input
    n = int(np.prod(input.shape[s:e + 1]))  # (not -1: that is ambiguous for empty tensors)
    return reshape(input, tuple(input.shape[:s]) + (n,) + tuple(input.shape[e + 1:]))


@public("transpose", function=("transpose", "swapaxes", "swapdims"),
        method=("transpose", "swapaxes", "swapdims"),
        numpy={np.swapaxes: lambda a, axis1, axis2: transpose(args.value(a), axis1, axis2)})
def transpose(input, dim0, dim1):
    nd = input.ndim
    return transpose_op(input, dim0=args.wrap_dim(dim0, nd), dim1=args.wrap_dim(dim1, nd))


@public("t", function=True, method=True)
def t(input):
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return t_op(input)


def _numpy_transpose(a, axes=None):
    x = args.value(a)
    return permute(x, tuple(range(x.ndim - 1, -1, -1)) if axes is None else tuple(axes))


@public("permute", function=True, method=True, numpy={np.transpose: _numpy_transpose})
def permute(input, *dims):
    dims = tuple(args.wrap_dim(d, input.ndim) for d in args.shape_arg(dims))
    if len(dims) != input.ndim:
        raise RuntimeError("permute(sparse_coo): number of dimensions in the tensor input does "
                           "not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {input.ndim} is not equal to len(dims) = {len(dims)}")
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return permute_op(input, dims=dims)


def _numpy_expand_dims(a, axis):
    x = args.value(a)
    n = len(axis) if isinstance(axis, (tuple, list)) else 1
    for d in args.axes(axis, x.ndim + n):
        x = unsqueeze(x, d)
    return x


@public("unsqueeze", function=True, method=True, numpy={np.expand_dims: _numpy_expand_dims})
def unsqueeze(input, dim):
    return unsqueeze_op(input, dim=args.wrap_dim(dim, input.ndim + 1))


def _numpy_squeeze(a, axis=None):
    x = args.value(a)
    found = args.axes(axis, x.ndim)
    if found is not None and any(x.shape[d] != 1 for d in found):
        raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return squeeze(x, found)


@public("squeeze", function=True, method=True, numpy={np.squeeze: _numpy_squeeze})
def squeeze(input, dim=None):
    if dim is None:
        return squeeze_all(input, dim=tuple(i for i, n in enumerate(input.shape) if n == 1))
    op = squeeze_dims if isinstance(dim, (tuple, list)) else squeeze_dim
    return op(input, dim=tuple(d for d in args.dims(dim, input.ndim) if input.shape[d] == 1))


def _numpy_broadcast_to(array, shape, subok=False):
    x = args.value(array)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    np.broadcast_shapes(x.shape, shape)  # numpy's error for shapes that do not broadcast
    if len(shape) < x.ndim:
        raise ValueError("input operand has more dimensions than allowed by the axis remapping")
    return expand_to(x, shape)


@public("expand", method=True, numpy={np.broadcast_to: _numpy_broadcast_to})
def expand_to(input, *size):
    size = args.shape_arg(size)
    lead = len(size) - input.ndim
    full = tuple(input.shape[i - lead] if s == -1 else s for i, s in enumerate(size))
    return expand(input, shape=full)
