"""Indexing by tensors of indices and masks: ``gather``/``take_along_dim`` (numpy's
``take_along_axis``), ``index_select`` (numpy's ``take``), ``repeat_interleave``
(numpy's ``repeat``), ``index_add``/``index_copy``/``index_fill``, ``scatter`` and
``scatter_add``, ``masked_fill``; torch's node names, numpy's spellings.

>>> import pullback as pb
>>> x = pb.tensor([[1., 2.], [3., 4.]], requires_grad=True)
>>> x.index_select(0, pb.tensor([1, 1])).grad_fn
<IndexSelectBackward0 object at ...>
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .elementwise import add_op, mul, where
from .gathering import index_gather
from .reductions import sum_all
from .selection import take_along
from .shape import expand, reshape, reshape_op
from .subscripts import slice_view
from .table import args, batching
from .table.registry import defop, is_traced, public, rt_call


def _along(dim: int, index: Any) -> tuple:
    """The basic index that puts ``index`` at ``dim``: ``(:, :, index)``."""
    return (slice(None),) * dim + (index,)


def _written(x, where, value):
    """A C-ordered copy of ``x`` with ``value`` written at ``where``."""
    out = np.array(x, copy=True, order="C")
    out[where] = value
    return out


def _added(x, where, value):
    """A C-ordered copy of ``x`` with ``value`` added at ``where`` (repeats add up)."""
    out = np.array(x, copy=True, order="C")
    np.add.at(out, where, value)
    return out


def _print_index_add(e: Any, a: list, lit: Any) -> str:
    alpha = e.params["alpha"]
    source = a[2] if alpha == 1 else f"{a[2]} * {lit(alpha)}"
    return f"rt.index_add({a[0]}, {e.params['dim']}, {a[1]}, {source})"


def _index_add(x, index, source, dim, alpha):
    return _added(x, _along(dim, index), source * alpha if alpha != 1 else source)


def _index_copy(x, index, source, dim):
    return _written(x, _along(dim, index), source)


def _index_fill(x, index, dim, value):
    return _written(x, _along(dim, index), value)


def _scaled(g: Any, alpha: Any) -> Any:
    return g if alpha == 1 else mul(g, alpha)


def _index_select_batch(op, inputs, batched, dim):
    """index_select over a batch. A batched index (each example its own indices) picks
    along the flattened (example, dim) axis, offset by each example's start."""
    (x, index), size = inputs, batching.size_of(inputs, batched)
    if not batched[1]:
        return op(x, index, dim=batching.shift(dim, x.ndim - 1))
    k = index.shape[1]
    if not batched[0]:
        x = batching.with_batch(x, size)
    d = batching.shift(dim, x.ndim - 1)
    front = batching.moved(x, d, 1)  # (batch, n, rest...)
    n = front.shape[1]
    rows = reshape_op(front, shape=(size * n,) + tuple(front.shape[2:]))
    starts = np.arange(size, dtype=np.int64).reshape(size, 1) * n
    picked = op(rows, reshape_op(add_op(index, starts), shape=(-1,)), dim=0)
    return batching.moved(reshape_op(picked, shape=(size, k) + tuple(front.shape[2:])), 1, d)


index_select_op = defop(
    "index_select", lambda x, index, dim: np.take(x, index, axis=dim), "IndexSelectBackward0",
    torch_args=("self", "index"), uses=("index", ""), fresh=True,
    vjp=(lambda g, out, x, index, dim: index_add_op(
        fill_op(g, value=0, shape=x.shape), index, g, dim=dim, alpha=1), None),
    template="np.take({0}, {1}, axis={dim})", batch=_index_select_batch)
# the zeros an index_select's gradient is added into, in x's shape and g's dtype
fill_op = defop("new_zeros", lambda like, value, shape: np.full(shape, value, np.result_type(
    like)), fresh=True, template="np.full({shape}, {value}, {0}.dtype)",
    batch=batching.example_shaped)
def _index_into_batch(op, inputs, batched, dim, **params):
    """index_add/index_copy/index_fill over a batch (inputs ``x, index`` and, but for
    index_fill, ``source``): every example's rows of x one after the other, each
    example's indices offset by its start (x and source as batched views if not)."""
    (x, index, *source), size = inputs, batching.size_of(inputs, batched)
    x, *source = (a if b else batching.with_batch(a, size)
                  for a, b in zip((x, *source), batched[:1] + batched[2:]))
    d = batching.shift(dim, x.ndim - 1)
    if not batched[1]:
        return op(x, index, *source, dim=d, **params)
    front, src = batching.moved(x, d, 1), [batching.moved(a, d, 1) for a in source]
    n, k = front.shape[1], index.shape[1]
    starts = np.arange(size, dtype=np.int64).reshape(size, 1) * n
    out = op(reshape_op(front, shape=(size * n,) + tuple(front.shape[2:])),
             reshape_op(add_op(index, starts), shape=(-1,)),
             *[reshape_op(a, shape=(size * k,) + tuple(a.shape[2:])) for a in src],
             dim=0, **params)
    return batching.moved(reshape_op(out, shape=tuple(front.shape)), 1, d)


index_add_op = defop(
    "index_add", _index_add, "IndexAddBackward0", torch_args=("self", "index", "source"),
    uses=("", "", "index"), fresh=True, template=_print_index_add,
    vjp=(lambda g, out, x, index, source, dim, alpha: g, None,
         lambda g, out, x, index, source, dim, alpha: _scaled(
             index_select_op(g, index, dim=dim), alpha)), batch=_index_into_batch)
index_fill_op = defop(
    "index_fill", _index_fill, "IndexFillBackward0", torch_args=("self", "index"),
    uses=("index", ""), fresh=True,
    template=lambda e, a, lit: f"rt.index_copy({a[0]}, {e.params['dim']}, {a[1]}, "
                               f"{lit(e.params['value'])})",
    vjp=(lambda g, out, x, index, dim, value: index_fill_op(g, index, dim=dim, value=0), None),
    batch=_index_into_batch)
index_copy_op = defop(
    "index_copy", _index_copy, "IndexCopyBackward0", torch_args=("self", "index", "source"),
    uses=("index", "", "index"), fresh=True,
    template=lambda e, a, lit: f"rt.index_copy({a[0]}, {e.params['dim']}, {a[1]}, {a[2]})",
    vjp=(lambda g, out, x, index, source, dim: index_fill_op(g, index, dim=dim, value=0), None,
         lambda g, out, x, index, source, dim: index_select_op(g, index, dim=dim)),
    batch=_index_into_batch)


def _grid(index, dim):
    """The advanced index that puts ``index`` at ``dim`` and counts the other dims."""
    where_ = list(np.indices(np.shape(index), sparse=True))
    where_[dim] = index
    return tuple(where_)


def _scatter(x, index, src, dim):
    return _written(x, _grid(index, dim), src)


def _scatter_add(x, index, src, dim):
    return _added(x, _grid(index, dim), src)


def _scatter_value(x, index, dim, value):
    return _written(x, _grid(index, dim), value)


def _scatter_reduced(x, index, src, dim, reduce):
    """torch's legacy ``scatter(..., reduce="add"|"multiply")``: src accumulated into x."""
    out = np.array(x, copy=True)
    vals = src[tuple(slice(0, n) for n in np.shape(index))] if np.ndim(src) else src
    (np.add if reduce == "add" else np.multiply).at(out, _grid(index, dim), vals)
    return out


def _no_scatter_derivative(*_: Any, **__: Any) -> Any:
    raise RuntimeError("derivative for aten::scatter is not implemented")


SCATTER_REDUCE_DEPRECATED = (
    "The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in "
    "a future PyTorch release. Use torch.scatter_reduce instead for more reduction options.")


def _picked(g: Any, index: Any, dim: int) -> Any:
    """``g`` gathered at a scatter's index (the part of ``g`` the index covers)."""
    return take_along(_trimmed(g, tuple(index.shape), dim), index, dim=dim)


scatter_value_op = defop(
    "scatter_value", _scatter_value, "ScatterBackward1", torch_args=("self", "index"),
    uses=("index", ""), fresh=True,
    template=lambda e, a, lit: f"rt.scatter({a[0]}, {a[1]}, {lit(e.params['value'])}, "
                               f"axis={e.params['dim']})",
    vjp=(lambda g, out, x, index, dim, value: scatter_value_op(g, index, dim=dim, value=0),
         None), batch=batching.aligned_dim)
scatter_op = defop(
    "scatter", _scatter, "ScatterBackward0", torch_args=("self", "index", "src"),
    uses=("index", "", "index"), fresh=True, template=rt_call("scatter", "axis=dim"),
    vjp=(lambda g, out, x, index, src, dim: scatter_value_op(g, index, dim=dim, value=0), None,
         lambda g, out, x, index, src, dim: _picked(g, index, dim)), batch=batching.aligned_dim)
# torch computes it but has no derivative: its backward raises, as torch's does
scatter_reduced_op = defop(
    "scatter_reduced", _scatter_reduced, "NotImplemented", torch_args=("self", "index", "src"),
    uses=("", "", ""), fresh=True, template=rt_call("scatter_reduced", "axis=dim", "reduce"),
    vjp=(_no_scatter_derivative, None, _no_scatter_derivative))
scatter_add_op = defop(
    "scatter_add", _scatter_add, "ScatterAddBackward0", torch_args=("self", "index", "src"),
    uses=("", "", "index"), fresh=True, template=rt_call("scatter_add", "axis=dim"),
    vjp=(lambda g, out, x, index, src, dim: g, None,
         lambda g, out, x, index, src, dim: _picked(g, index, dim)), batch=batching.aligned_dim)


def _masked_fill(x, mask, value):
    return np.where(mask, np.asarray(value, np.result_type(x)), x)


masked_fill_op = defop(
    "masked_fill", _masked_fill, "MaskedFillBackward0", torch_args=("self", "mask"),
    uses=("mask", ""), fresh=True, inplace="masked_fill_",
    vjp=(lambda g, out, x, mask, value: where(mask, 0, g), None),
    template="np.where({1}, {value}, {0})", batch=batching.batch_first)
# a 0-d tensor value takes the gradient of every position it fills
masked_fill_tensor_op = defop(
    "masked_fill_tensor", lambda x, mask, value: _masked_fill(x, mask, value),
    "MaskedFillBackward1", torch_args=("self", "mask", "value"), uses=("mask", "", "mask"),
    fresh=True, vjp=(lambda g, out, x, mask, value: where(mask, 0, g), None,
                     lambda g, out, x, mask, value: sum_all(where(mask, g, 0))),
    template="np.where({1}, {2}, {0})", batch=batching.batch_first)


# ----------------------------------------------------------------------- checks
def _index_dtype(fn: str, index: Any, what: str = "index") -> None:
    if args.np_dtype(index) not in (np.int64, np.int32):
        raise RuntimeError(f"{fn}(): Expected dtype int32/int64 for {what}")


def _vector(fn: str, index: Any) -> Any:
    """A 0-d or 1-d index as 1-d (torch keeps the dim a 0-d index selects)."""
    if index.ndim > 1:
        raise IndexError(f"{fn}(): Index is supposed to be a vector")
    return reshape(index, (1,)) if index.ndim == 0 else index


def _trimmed(x: Any, like: tuple, dim: int | None) -> Any:
    """``x`` sliced to ``like`` in every dim but ``dim`` (torch's gather and scatter
    read only the part of ``self``/``src`` that the index covers)."""
    if all(n == m or d == dim for d, (n, m) in enumerate(zip(x.shape, like))):
        return x
    return slice_view(x, index=tuple(slice(None) if d == dim else slice(0, n)
                                     for d, n in enumerate(like)))


def _check_gather(fn: str, input: Any, dim: int, index: Any, src: Any = None) -> None:
    if args.np_dtype(index) != np.int64:
        raise RuntimeError(f"{fn}(): Expected dtype int64 for index")
    if index.ndim != input.ndim and index.size:
        raise RuntimeError("Index tensor must have the same number of dimensions as "
                           f"{'self' if src is not None else 'input'} tensor")
    for d, (n, m) in enumerate(zip(index.shape, input.shape)):
        if d != dim and n > m:
            raise RuntimeError(f"Size does not match at dimension {d} expected index "
                               f"{list(index.shape)} to be no larger than self "
                               f"{list(input.shape)} apart from dimension {dim}")


# ------------------------------------------------------------------- torch's spellings
@public("gather", function=True, method=True)
def gather(input, dim, index, *, sparse_grad=False):
    d = args.wrap_dim(dim, input.ndim)
    _check_gather("gather", input, d, index)
    return take_along(_trimmed(input, tuple(index.shape), d), index, dim=d)


def _broadcast_along(input: Any, indices: Any, dim: int) -> tuple:
    """take_along_dim's broadcast of ``input`` and ``indices`` in every dim but ``dim``."""
    shape = list(np.broadcast_shapes(
        tuple(n if d != dim else 1 for d, n in enumerate(input.shape)),
        tuple(n if d != dim else 1 for d, n in enumerate(indices.shape))))
    x_shape = tuple(shape[:dim] + [input.shape[dim]] + shape[dim + 1:])
    i_shape = tuple(shape[:dim] + [indices.shape[dim]] + shape[dim + 1:])
    x = input if tuple(input.shape) == x_shape else expand(input, shape=x_shape)
    i = indices if tuple(indices.shape) == i_shape else expand(indices, shape=i_shape)
    return x, i


@public("take_along_dim", function=True, method=True)
def take_along_dim(input, indices, dim=None):
    if args.np_dtype(indices) not in (np.int64,):
        raise RuntimeError("torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{args.dtype_name(indices)}")
    if dim is None:
        return take_along(reshape(input, -1), reshape(indices, -1), dim=0)
    if input.ndim != indices.ndim:
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input.ndim} dimensions for input, "
                           f"and {indices.ndim} dimensions for indices")
    d = args.wrap_dim(dim, input.ndim)
    x, i = _broadcast_along(input, indices, d)
    return take_along(x, i, dim=d)


@public("index_select", function=True, method=True)
def index_select(input, dim, index):
    _index_dtype("index_select", index)
    d = args.wrap_dim(dim, input.ndim)
    index = _vector("index_select", index)
    if input.ndim == 0:
        return reshape(index_select_op(reshape(input, (1,)), index, dim=0), ())
    return index_select_op(input, index, dim=d)


def _check_source(fn: str, input: Any, d: int, index: Any, source: Any) -> None:
    want = tuple(input.shape[:d]) + (index.shape[0],) + tuple(input.shape[d + 1:])
    if source.ndim and tuple(source.shape) != want:
        raise RuntimeError(f"{fn}(): Source/destination tensor must have same slice shapes. "
                           f"Destination slice shape: {list(want)} at dimension {d} and "
                           f"source slice shape: {list(source.shape)} at dimension 0.")


# torch's signature puts ``dim`` first; each function's ``operands`` gives the op and its
# operands, which Tensor's in-place form writes into ``input`` (``inplace=``)
def _index_add_operands(input, dim, index, source, *, alpha=1):
    d = args.wrap_dim(dim, input.ndim)
    index = _vector("index_add", index)
    _check_source("index_add", input, d, index, source)
    return index_add_op, (input, index, source), {"dim": d, "alpha": alpha}


def _index_copy_operands(input, dim, index, source):
    d = args.wrap_dim(dim, input.ndim)
    index = _vector("index_copy", index)
    _check_source("index_copy", input, d, index, source)
    return index_copy_op, (input, index, source), {"dim": d}


def _index_fill_operands(input, dim, index, value):
    d = args.wrap_dim(dim, input.ndim)
    return index_fill_op, (input, _vector("index_fill", index)), {"dim": d, "value": float(value)}


@public("index_add", function=True, method=True, inplace="index_add_",
        operands=_index_add_operands)
def index_add(input, dim, index, source, *, alpha=1):
    op, inputs, params = _index_add_operands(input, dim, index, source, alpha=alpha)
    return op(*inputs, **params)


@public("index_copy", function=True, method=True, inplace="index_copy_",
        operands=_index_copy_operands)
def index_copy(input, dim, index, source):
    op, inputs, params = _index_copy_operands(input, dim, index, source)
    return op(*inputs, **params)


@public("index_fill", function=True, method=True, inplace="index_fill_",
        operands=_index_fill_operands)
def index_fill(input, dim, index, value):
    op, inputs, params = _index_fill_operands(input, dim, index, value)
    return op(*inputs, **params)


@public("scatter", function=True, method=True)
def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    d = args.wrap_dim(dim, input.ndim)
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
        _check_gather("scatter", input, d, index, src)
        fill = value if src is None else src
        if is_traced(fill):
            warnings.warn(SCATTER_REDUCE_DEPRECATED, UserWarning, stacklevel=3)
        else:
            fill = float(fill)
        return scatter_reduced_op(input, index, fill, dim=d, reduce=reduce)
    _check_gather("scatter", input, d, index, src)
    if src is None or not is_traced(src):
        fill = value if src is None else src
        return scatter_value_op(input, index, dim=d, value=float(fill))
    return scatter_op(input, index, _trimmed(src, tuple(index.shape), None), dim=d)


@public("scatter_add", function=True, method=True)
def scatter_add(input, dim, index, src):
    d = args.wrap_dim(dim, input.ndim)
    _check_gather("scatter_add", input, d, index, src)
    return scatter_add_op(input, index, _trimmed(src, tuple(index.shape), None), dim=d)


@public("masked_fill", function=True, method=True)
def masked_fill(input, mask, value):
    if args.np_dtype(mask) != np.bool_:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{args.dtype_name(mask).lower()}")
    if np.broadcast_shapes(tuple(input.shape), tuple(mask.shape)) != tuple(input.shape):
        raise RuntimeError(f"The size of tensor a ({input.shape[-1] if input.ndim else 1}) "
                           f"must match the size of tensor b ({mask.shape[-1]}) at "
                           "non-singleton dimension")
    if is_traced(value):
        if value.ndim:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value.ndim} dimension(s).")
        return masked_fill_tensor_op(input, mask, value)
    return masked_fill_op(input, mask, value=value)


def _repeat_index(repeats: Any, n: int) -> np.ndarray:
    reps = np.broadcast_to(np.asarray(repeats, np.int64).reshape(-1), (n,)) if np.ndim(
        repeats) == 0 or np.size(repeats) == 1 else np.asarray(repeats, np.int64)
    if reps.shape != (n,):
        raise RuntimeError("repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {reps.size} and input.size(0) = {n}")
    if (reps < 0).any():
        raise RuntimeError("repeats can not be negative")
    return np.repeat(np.arange(n), reps)


@public("repeat_interleave", function=True, method=True)
def repeat_interleave(input, repeats, dim=None, *, output_size=None):
    """torch's repeat_interleave as an index_select of the repeated positions (torch's
    own node for a tensor of repeats: IndexSelectBackward0)."""
    if is_traced(repeats):
        repeats = repeats.numpy(force=True) if hasattr(repeats, "numpy") else repeats
    x = reshape(input, -1) if dim is None else input
    d = 0 if dim is None else args.wrap_dim(dim, input.ndim)
    if x.ndim == 0:
        x = reshape(x, (1,))
    return index_select_op(x, _repeat_index(repeats, x.shape[d]), dim=d)


# ------------------------------------------------------------------- numpy's spellings
def _numpy_take_along_axis(arr, indices, axis=-1):
    x = args.value(arr)
    if axis is None:
        if np.ndim(indices) != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        return take_along(reshape(x, -1), indices, dim=0)
    if np.ndim(indices) != x.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    d = args.axes(axis, x.ndim)[0]
    x, i = _broadcast_along(x, indices if is_traced(indices) else np.asarray(indices), d)
    return take_along(x, i, dim=d)


def _numpy_take(a, indices, axis=None, out=None, mode="raise"):
    if out is not None or mode != "raise":
        raise args.Unsupported
    x = args.value(a)
    if axis is None:
        x, axis = reshape(x, -1), 0
    d = args.axes(axis, x.ndim)[0]
    if is_traced(indices):
        return _taken_by_tensor(x, indices, d)
    idx = np.asarray(indices)
    n = x.shape[d]
    if idx.size and not (-n <= idx.min() and idx.max() < n):
        raise IndexError(f"index {idx.max() if idx.max() >= n else idx.min()} is out of "
                         f"bounds for axis {d} with size {n}")
    picked = index_select_op(x, np.where(idx < 0, idx + n, idx).reshape(-1), dim=d)
    shape = tuple(x.shape[:d]) + idx.shape + tuple(x.shape[d + 1:])
    return picked if tuple(picked.shape) == shape else reshape(picked, shape)


def _taken_by_tensor(x: Any, indices: Any, d: int) -> Any:
    """``np.take`` by an integer Tensor, ``x[:, ..., indices]`` as its subscript reads
    it: an index_gather that reads the index at run time (a new index is not a new
    trace), numpy's wrapping and IndexError included."""
    if np.dtype(args.np_dtype(indices)).kind not in "iu":
        raise args.Unsupported
    return index_gather(x, indices, index=(slice(None),) * d + (0,), slots=(d,))


def _numpy_repeat(a, repeats, axis=None):
    x = args.value(a)
    if axis is None:
        x, axis = reshape(x, -1), 0
    if x.ndim == 0:
        x = reshape(x, (1,))
    d = args.axes(axis, x.ndim)[0]
    return index_select_op(x, _repeat_index(repeats, x.shape[d]), dim=d)


public("take_along_axis", numpy={np.take_along_axis: _numpy_take_along_axis,
                                 np.take: _numpy_take, np.repeat: _numpy_repeat})(
    _numpy_take_along_axis)
