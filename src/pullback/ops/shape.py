"""Shape primitives: views, broadcasting, indexing, writes through views and the
broadcast reduction; and the public functions that choose among them."""

from __future__ import annotations

from typing import Any

import numpy as np

from .elementwise import zeros_like
from .kernels.summation import print_sum, sum_of
from .table import args, batching
from .table.registry import c_order, defop, public, reduced_axes


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


# ------------------------------------------------------------------------ indexing
def _index_backward(g, shape, index):
    """Advanced indexing's backward: repeated indices add up."""
    out = np.zeros(shape, dtype=np.result_type(g))
    np.add.at(out, index, g)
    return out


def _view_backward(g, shape, index):
    """Basic indexing's backward: the gradient written into the viewed region."""
    out = np.zeros(shape, dtype=np.result_type(g))
    _view_get(out, index)[...] = g
    return out


def _view_get(x, index):
    """Basic indexing that always returns a view (a 0-d array, never a scalar)."""
    parts = index if isinstance(index, tuple) else (index,)
    if not any(p is Ellipsis for p in parts):
        parts = parts + (Ellipsis,)
    return x[parts]


def _print_view_get(e: Any, a: list, lit: Any) -> str:
    """``_view_get`` in generated code: ``x[None, 1:]``, ``x[0, ...]`` (an Ellipsis last
    where the index has only integers: a view, never a scalar; a slice or a None keeps
    the result an array without it)."""
    return f"{a[0]}[{_subscript(e.params['index'], lit, True)}]"


def _subscript(index: Any, lit: Any, view: bool) -> str:
    """A basic index as subscript text (``view``: an Ellipsis last where it has only
    integers, so that the result is a view)."""
    parts = index if isinstance(index, tuple) else (index,)
    if view and not any(p is Ellipsis or p is None or type(p) is slice for p in parts):
        parts = parts + (Ellipsis,)
    colon = lambda p: ":".join("" if v is None else lit(v)  # noqa: E731
                               for v in (p.start, p.stop) + ((p.step,) if p.step else ()))
    return ", ".join(colon(p) if type(p) is slice else lit(p) for p in parts) or "()"


def _one_index(chain: tuple) -> Any:
    """The index of a chain of one basic index op (``R[1, :]``), else None."""
    if len(chain) == 1 and chain[0][0].name in BASIC_INDEX_OPS:
        return chain[0][1].get("index")
    return None


def _print_view_chain(e: Any, a: list, lit: Any) -> str:
    """``x[1, :]`` for a chain of one index; else the chain's call."""
    index = _one_index(e.params["chain"])
    if index is None:
        return f"ops.view_chain({a[0]}, chain={lit(e.params['chain'])})"
    return f"{a[0]}[{_subscript(index, lit, True)}]"


def _print_view_scatter(e: Any, a: list, lit: Any) -> str:
    """A copy with ``src`` written at one index, as numpy's ``x[1, :] = src`` writes it
    (``rt.index_put(x, np.s_[1, :], src)``); else the chain's call."""
    index = _one_index(e.params["chain"])
    if index is None:
        return f"ops.view_scatter({a[0]}, {a[1]}, chain={lit(e.params['chain'])})"
    return f"rt.index_put({a[0]}, np.s_[{_subscript(index, lit, False)}], {a[1]})"


def _basic_index_op(name: str, grad_fn: str, backward_grad_fn: str, template: Any) -> tuple:
    """``x[index]`` for basic indices (a view) and its backward, each the other's rule;
    torch names both after the last view op the index applies."""
    fwd = defop(name, _view_get, grad_fn, is_view=True, template=template,
                vjp=(lambda g, out, x, index: bwd(g, shape=x.shape, index=index),),
                batch=batching.batch_index)
    bwd = defop(name + "_backward", _view_backward, backward_grad_fn, fresh=True,
                template="rt.zeros_set({shape}, np.s_[{index}], {0})",
                vjp=(lambda g, out, x, shape, index: fwd(g, index=index),),
                batch=batching.batch_index)
    return fwd, bwd


select, select_backward = _basic_index_op("select", "SelectBackward0",
                                          "SelectBackwardBackward0", "{0}[{index}]")
slice_view, slice_backward = _basic_index_op("slice", "SliceBackward0",
                                             "SliceBackwardBackward0", "{0}[{index}]")
index_unsqueeze, index_unsqueeze_backward = _basic_index_op(
    "index_unsqueeze", "UnsqueezeBackward0", "SqueezeBackward1", _print_view_get)
alias, alias_backward = _basic_index_op("alias", "AliasBackward0", "AliasBackwardBackward0",
                                        _print_view_get)


def _take(x, index):
    """Advanced indexing: contiguous when ``x`` is, as torch's (numpy's result of
    ``x[:, [0, 1]]`` is not)."""
    out = x[index]
    return c_order(out) if type(x) is np.ndarray and x.flags.c_contiguous else out


take_index = defop("index", _take, "IndexBackward0",
                   vjp=(lambda g, out, x, index: index_backward(g, shape=x.shape, index=index),),
                   template="{0}[{index}]", batch=batching.batch_index)
index_backward = defop("index_backward", _index_backward, "IndexPutImplBackward0", fresh=True,
                       template="rt.zeros_add({shape}, np.s_[{index}], {0})",
                       vjp=(lambda g, out, x, shape, index: take_index(g, index=index),),
                       batch=batching.batch_index)
BASIC_INDEX_OPS = {"select": select, "slice": slice_view, "index_unsqueeze": index_unsqueeze,
                   "alias": alias}


def _is_full(p: Any, shape: tuple | None, dim: int) -> bool:
    if p == slice(None):
        return True
    return shape is not None and dim < len(shape) and p.indices(shape[dim]) == (0, shape[dim], 1)


def basic_index_kind(idx: Any, shape: tuple | None = None) -> str | None:
    """The view op torch names ``x[idx]`` after (the last one the index applies:
    'select', 'slice', 'index_unsqueeze' or 'alias'), or None for advanced indexing.
    A lone slice is always a slice; in a tuple, full slices apply nothing.

    >>> basic_index_kind(0), basic_index_kind((slice(None), 1)), basic_index_kind([0, 1])
    ('select', 'select', None)
    >>> basic_index_kind((0, slice(1, None))), basic_index_kind((1, None))
    ('slice', 'index_unsqueeze')
    >>> basic_index_kind((slice(None),)), basic_index_kind(slice(None))
    ('alias', 'slice')
    """
    if isinstance(idx, slice):
        return "slice"
    parts = idx if isinstance(idx, tuple) else (idx,)
    for p in parts:
        if isinstance(p, (bool, np.bool_)) or not (
                p is None or p is Ellipsis or isinstance(p, (int, np.integer, slice))):
            return None
    kind, dim = "alias", 0
    consumed = sum(1 for p in parts if p is not None and p is not Ellipsis)
    for p in parts:
        if p is Ellipsis:
            dim += len(shape) - consumed if shape is not None else 0
        elif p is None:
            kind = "index_unsqueeze"
        else:
            if isinstance(p, slice):
                if not _is_full(p, shape, dim):
                    kind = "slice"
            else:
                kind = "select"
            dim += 1
    return kind


def getitem(input: Any, index: Any) -> Any:
    """``input[index]``: the basic-index view torch would name, or advanced indexing."""
    kind = basic_index_kind(index, tuple(input.shape))
    return take_index(input, index=index) if kind is None else BASIC_INDEX_OPS[kind](
        input, index=index)


# ---- writes through views: a view is its base's chain of view ops -----------------
def _apply_chain(x, chain):
    for op, params in chain:
        x = op.forward(x, **params)
    return x


def _write_region(out, chain, src, accumulate):
    """Write ``src`` into the region of ``out`` (C-contiguous) that ``chain`` views: in
    place where the chain replayed on ``out`` is a view of it, else at the positions the
    chain picks (a reshape that views the base's own layout but not a C-contiguous one; a
    broadcast, which sees positions more than once: ``accumulate`` adds them up)."""
    region = _apply_chain(out, chain)
    if region.flags.writeable and np.may_share_memory(region, out):
        region[...] = src
        return out
    seen = _apply_chain(np.arange(out.size).reshape(out.shape), chain)
    src = np.broadcast_to(src, seen.shape)
    if accumulate:
        np.add.at(out.reshape(-1), seen, src)
    else:
        out.reshape(-1)[seen] = src
    return out


def _embed(g, shape, chain):
    """The gradient of a view, in its base's shape (0 outside the view)."""
    return _write_region(np.zeros(shape, dtype=np.result_type(g)), chain, g, True)


def _view_scatter(base, src, chain):
    return _write_region(np.array(base, copy=True, order="C"), chain, src, False)


class _Taken:
    """A view op standing in for itself while its batching rule runs on a probe array:
    it keeps the params the rule calls it with (the view of the batched base)."""

    def __init__(self, op: Any) -> None:
        self.op, self.params, self.seen, self.out = op, None, None, None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.op, name)

    def __call__(self, x: Any, **params: Any) -> Any:
        self.params, self.seen, self.out = params, x, self.op.forward(x, **params)
        return self.out


def batched_chain(chain: tuple, shape: tuple) -> tuple:
    """``chain`` as views of a base of ``shape`` with the batch in front: each view's
    batching rule, where it is one call of the view itself (an index with a full slice
    in front, a shape with the batch...); else NoRule (a rule that reshapes its input
    first, or whose result is not the view's own)."""
    x, out = np.zeros(shape), []
    for op, params in chain:
        rule, taken = batching.rule_of(op), _Taken(op)
        if rule is None or rule(taken, (x,), (True,), **dict(params)) is not taken.out \
                or taken.out is None or taken.seen is not x:
            raise batching.NoRule
        out.append((op, taken.params))
        x = taken.out
    return tuple(out)


def _batch_embed(op, args, batched, shape, chain):
    """A batched gradient of a view, in its batched base."""
    full = (batching.size_of(args, batched),) + tuple(shape)
    return op(args[0], shape=full, chain=batched_chain(chain, full))


def _batch_view_scatter(op, args, batched, chain):
    """A write through a view of a batched base (the same base for every example where
    only the value is batched); a batched value aligned to the view's example axes."""
    size = batching.size_of(args, batched)
    base, src = args
    base = base if batched[0] else batching.with_batch(base, size)
    full = batching.shape(base)
    views = batched_chain(chain, full)
    if batched[1]:
        src = batching.align(src, np.ndim(_apply_chain(np.zeros(full[1:]), chain)))
    return op(base, src, chain=views)


view_chain = defop("view_chain", _apply_chain, "AsStridedBackward0", aliases=True,
                   template=_print_view_chain,
                   vjp=(lambda g, out, x, chain: embed(g, shape=x.shape, chain=chain),),
                   batch=batching.chained)
embed = defop("embed", _embed, "AsStridedScatterBackward0", fresh=True,
              vjp=(lambda g, out, x, shape, chain: view_chain(g, chain=chain),),
              batch=_batch_embed)
# torch's node for a write through a view is CopySlices (no "Backward" suffix)
view_scatter = defop("view_scatter", _view_scatter, "CopySlices", fresh=True,
                     template=_print_view_scatter,
                     vjp=(lambda g, out, base, src, chain: view_scatter(g, 0, chain=chain),
                          lambda g, out, base, src, chain: view_chain(g, chain=chain)),
                     batch=_batch_view_scatter)


def _index_put(x, v, index):
    out = np.array(x, copy=True)
    out[index] = v
    return out


index_put = defop("index_put", _index_put, "IndexPutBackward0",
                  template="rt.index_put({0}, np.s_[{index}], {1})",
                  vjp=(lambda g, out, x, v, index: index_put(g, 0, index=index),
                       lambda g, out, x, v, index: take_index(g, index=index)))
def _print_copy(e: Any, a: list, lit: Any) -> str:
    """``dst.copy_(src)`` as a new value: ``src.copy()`` of dst's shape and dtype
    already, a scalar of dst's dtype for a 0-d one (``np.broadcast_to`` costs some
    microseconds a call, a loop's written table and ``R[0, 0] = 0.0`` pay it once a
    call), else ``src`` broadcast and cast."""
    dst, src = e.inputs
    dtype = np.dtype(dst.dtype)
    shape = getattr(src, "shape", None)
    if tuple(dst.shape) == () and (type(src) in (int, float, bool) or shape == ()):
        return f"{lit(dtype)}({a[1]})"
    if shape is not None and tuple(shape) == tuple(dst.shape) and src.dtype == dtype:
        return f"{a[1]}.copy()"
    return f"np.broadcast_to({a[1]}, np.shape({a[0]})).astype({lit(dtype)})"


copy = defop("copy", lambda dst, src: np.broadcast_to(src, np.shape(dst)).astype(
    np.result_type(dst)), "CopyBackwards", template=_print_copy,
             vjp=(lambda g, out, dst, src: zeros_like(g),
                  lambda g, out, dst, src: g), inplace="copy_", batch=batching.batch_first)
# the in-place x.fill_(value) and x.zero_(): the old value gets a zero gradient
fill = defop("fill", lambda x, value: np.full_like(x, value), "FillBackward2",
             template="np.full_like({0}, {value})",
             vjp=(lambda g, out, x, value: zeros_like(g),), inplace="fill_", batch=batching.as_is)
# the zero gradient of an output of a multi-output op that no gradient reached
zeros = defop("zeros", lambda shape, dtype: np.zeros(shape, dtype), fresh=True,
              template="np.zeros({shape}, {dtype})")
zero = defop("zero", np.zeros_like, "ZeroBackward0", vjp=(lambda g, out, x: zeros_like(g),),
             template="np.zeros_like({0})",
             inplace="zero_", batch=batching.as_is)
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


@public("transpose", function=True, method=True,
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
