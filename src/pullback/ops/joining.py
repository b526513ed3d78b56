"""Joining tensors: the variadic primitives ``cat`` and ``stack`` (one input per list
element, one edge each, torch's CatBackward0 and StackBackward0), the functions that
join through them (``hstack``, ``vstack``, ``dstack``, ``column_stack``) and
``meshgrid`` (views, as torch makes them), with torch's and numpy's spellings.

>>> import pullback as pb
>>> a = pb.ones(2, 3, requires_grad=True)
>>> pb.cat([a, a * 2], dim=1).grad_fn
<CatBackward0 object at ...>
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np

from .elementwise import clone, to_dtype
from .shape import expand, reshape
from .subscripts import select, slice_view
from .table import args, batching
from .table.promotion import promote_types
from .table.registry import defop, is_traced, public


def dtype_of(x: Any) -> np.dtype:
    """The dtype numpy gives ``x`` in a list it joins (a Python float: float64)."""
    d = getattr(x, "dtype", None)
    return np.asarray(x).dtype if d is None else np.dtype(getattr(d, "np", d))


def common_dtype(values: Any) -> np.dtype:
    """torch's dtype of a join (promote_types of them all: int64 with float32 is float32)."""
    return functools.reduce(promote_types, map(dtype_of, values))


def skipped(tensors: Any) -> list:
    """Whether torch's cat leaves each tensor out: a 1-d empty one (legacy: any list
    may hold it), unless every tensor is one."""
    legacy = [tuple(np.shape(t)) == (0,) for t in tensors]
    return [False] * len(legacy) if all(legacy) else legacy


def _cat(*tensors, dim):
    kept = [t for t, skip in zip(tensors, skipped(tensors)) if not skip]
    return np.concatenate(kept, dim, dtype=common_dtype(tensors))


def _stack(*tensors, dim):
    return np.stack(tensors, dim, dtype=common_dtype(tensors))


def _cat_rule(g, out, tensors, i, dim):
    """The gradient of ``tensors[i]``: its slice of ``g`` along ``dim`` (an empty one
    for a tensor cat left out)."""
    skip = skipped(tensors)
    if skip[i]:
        return reshape(slice_view(g, index=(slice(None),) * dim + (slice(0, 0),)), 0)
    lo = sum(t.shape[dim] for t, s in zip(tensors[:i], skip) if not s)
    return slice_view(g, index=(slice(None),) * dim + (slice(lo, lo + tensors[i].shape[dim]),))


def _print_join(fn: str):
    """``np.concatenate([a, b], axis=0)``, with ``dtype=`` where numpy's own promotion
    would not give torch's dtype (float32 with int64: float32, not float64); cat's
    legacy empty tensors left out."""
    def write(e: Any, a: list, lit: Any) -> str:
        skip = skipped(e.inputs) if e.op.name == "cat" else [False] * len(a)
        a = [x for x, s in zip(a, skip) if not s]
        text = f"{fn}([{', '.join(a)}], axis={lit(e.params['dim'])}"
        if np.result_type(*map(dtype_of, e.inputs)) != e.out.dtype:
            text += f", dtype={lit(e.out.dtype)}"
        return text + ")"
    return write


cat_op = defop("cat", _cat, "CatBackward0", variadic=True, vjp=(_cat_rule,),
               template=_print_join("np.concatenate"), fresh=True, batch=batching.joined)
stack_op = defop("stack", _stack, "StackBackward0", variadic=True, fresh=True,
                 vjp=(lambda g, out, tensors, i, dim:
                      select(g, index=(slice(None),) * dim + (i,)),),
                 template=_print_join("np.stack"), batch=batching.joined)


# ------------------------------------------------------------------------- helpers
def tensor_list(fn: str, tensors: Any) -> list:
    """``tensors`` as a list, with torch's TypeErrors for a lone tensor or a non-tensor."""
    if is_traced(tensors) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not is_traced(t):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    return list(tensors)


def atleast(x: Any, n: int) -> Any:
    """numpy's (and torch's) atleast_1d/2d/3d of one value: (k,) is (1, k) and
    (1, k, 1); (m, k) is (m, k, 1)."""
    shape = tuple(x.shape)
    if len(shape) >= n:
        return x
    if n == 3 and len(shape) == 2:
        return reshape(x, shape + (1,))
    return reshape(x, (1,) * n if not shape else ((1,) + shape + (1,))[:n])


def _column(x: Any) -> Any:
    """column_stack's column: a 0-d or 1-d value as (n, 1)."""
    return reshape(x, (int(np.prod(x.shape)), 1)) if x.ndim <= 1 else x


def _grids(items: list, swap: bool) -> tuple:
    """Each of ``items`` (0-d or 1-d) viewed along its own axis and expanded to the
    grid (``swap``: 'xy' indexing, the first two axes swapped)."""
    n = len(items)
    shape = [int(np.prod(t.shape)) for t in items]
    axes = list(range(n))
    if swap and n > 1:
        shape[0], shape[1] = shape[1], shape[0]
        axes[0], axes[1] = 1, 0
    return tuple(expand(reshape(t, tuple(-1 if k == a else 1 for k in range(n))),
                        shape=tuple(shape)) for t, a in zip(items, axes))


# ------------------------------------------------------------------- numpy's spellings
def numpy_items(arrays: Any, dtype: Any = None) -> list:
    """numpy's list argument: traced values and arrays, all cast to numpy's common dtype
    (or ``dtype``), as numpy joins them."""
    items = [x if is_traced(x) else np.asarray(x) for x in arrays]
    if not items:
        return items
    target = np.dtype(dtype) if dtype is not None else np.result_type(*map(dtype_of, items))
    return [x if dtype_of(x) == target else to_dtype(x, target) for x in items]


def _numpy_concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    args.plain(out)
    items = numpy_items(arrays, dtype)
    if not items:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        items, axis = [reshape(x, -1) for x in items], 0
    if any(x.ndim == 0 for x in items):
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    return cat_op(*items, dim=args.axes(axis, items[0].ndim)[0])


def _numpy_stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    args.plain(out)
    items = numpy_items(arrays, dtype)
    if not items:
        raise ValueError("need at least one array to stack")
    if len({tuple(x.shape) for x in items}) > 1:
        raise ValueError("all input arrays must have the same shape")
    return stack_op(*items, dim=args.axes(axis, items[0].ndim + 1)[0])


def _numpy_hstack(tup, *, dtype=None, casting="same_kind"):
    items = [atleast(x, 1) for x in numpy_items(tup, dtype)]
    return _numpy_concatenate(items, 0 if items and items[0].ndim == 1 else 1)


def _numpy_vstack(tup, *, dtype=None, casting="same_kind"):
    return _numpy_concatenate([atleast(x, 2) for x in numpy_items(tup, dtype)], 0)


def _numpy_dstack(tup):
    return _numpy_concatenate([atleast(x, 3) for x in numpy_items(tup)], 2)


def _numpy_column_stack(tup):
    return _numpy_concatenate([_column(x) for x in numpy_items(tup)], 1)


def _numpy_meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    items = [reshape(x, -1) for x in numpy_items(xi)]
    if sparse:
        n = len(items)
        swap = [1, 0] if indexing == "xy" and n > 1 else []
        axes = swap + list(range(len(swap), n))
        return tuple(reshape(x, tuple(-1 if k == a else 1 for k in range(n)))
                     for x, a in zip(items, axes))
    grids = _grids(items, indexing == "xy")
    return tuple(clone(g) for g in grids) if copy else grids


# ------------------------------------------------------------------- torch's spellings
def _check_cat(items: list, dim: int) -> None:
    """torch's checks of cat's tensors (but for the 1-d empty ones it leaves out)."""
    for i, t in enumerate(items):
        if t.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
    kept = [(i, t) for (i, t), s in zip(enumerate(items), skipped(items)) if not s]
    ref = kept[0][1]
    for i, t in kept[1:]:
        if t.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} "
                               f"and {t.ndim}")
        for d, (m, n) in enumerate(zip(ref.shape, t.shape)):
            if d != dim and m != n:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {dim}. "
                                   f"Expected size {m} but got size {n} for tensor number "
                                   f"{i} in the list.")


@public("cat", function=("cat", "concat"), numpy={np.concatenate: _numpy_concatenate})
def cat(tensors, dim=0, *, axis=None):
    items = tensor_list("cat", tensors)
    if not items:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    dim = dim if axis is None else axis
    ref = next(t for t, s in zip(items, skipped(items)) if not s)
    d = args.wrap_dim(dim, ref.ndim)
    _check_cat(items, d)
    return cat_op(*items, dim=d)


@public("concatenate", function=True)
def concatenate(tensors, axis=0, *, dim=None):
    return cat(tensors, axis if dim is None else dim)


@public("stack", function=True, numpy={np.stack: _numpy_stack})
def stack(tensors, dim=0):
    items = tensor_list("stack", tensors)
    if not items:
        raise RuntimeError("stack expects a non-empty TensorList")
    d = args.wrap_dim(dim, items[0].ndim + 1)
    for i, t in enumerate(items[1:], 1):
        if tuple(t.shape) != tuple(items[0].shape):
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(items[0].shape)} at entry 0 and {list(t.shape)} at "
                               f"entry {i}")
    return stack_op(*items, dim=d)


def _nonempty(fn: str, tensors: Any) -> list:
    items = tensor_list(fn, tensors)
    if not items:
        raise RuntimeError(f"{fn} expects a non-empty TensorList")
    return items


@public("hstack", function=True, numpy={np.hstack: _numpy_hstack})
def hstack(tensors):
    items = [atleast(t, 1) for t in _nonempty("hstack", tensors)]
    return cat(items, 0 if items[0].ndim == 1 else 1)


@public("vstack", function=("vstack", "row_stack"), numpy={np.vstack: _numpy_vstack} | (
    {np.row_stack: _numpy_vstack} if hasattr(np, "row_stack") else {}))  # (numpy 2's alias)
def vstack(tensors):
    return cat([atleast(t, 2) for t in _nonempty("vstack", tensors)], 0)


@public("dstack", function=True, numpy={np.dstack: _numpy_dstack})
def dstack(tensors):
    return cat([atleast(t, 3) for t in _nonempty("dstack", tensors)], 2)


@public("column_stack", function=True, numpy={np.column_stack: _numpy_column_stack})
def column_stack(tensors):
    return hstack([_column(t) for t in _nonempty("column_stack", tensors)])


_INDEXING_WARNING = ("torch.meshgrid: in an upcoming release, it will be required to pass "
                     "the indexing argument.")


@public("meshgrid", function=True, numpy={np.meshgrid: _numpy_meshgrid})
def meshgrid(*tensors, indexing=None):
    one_list = len(tensors) == 1 and isinstance(tensors[0], (list, tuple))
    items = tensor_list("meshgrid", tensors[0] if one_list else tensors)
    if indexing is None:
        warnings.warn(_INDEXING_WARNING, UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError('torch.meshgrid: indexing must be one of "xy" or "ij", but '
                           f"received: {indexing}")
    if not items:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in items:
        if t.ndim > 1:
            raise RuntimeError("torch.meshgrid: Expected 0D or 1D tensor in the tensor list "
                               f"but got: {t}")
        if args.np_dtype(t) != args.np_dtype(items[0]):
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    return _grids(items, indexing == "xy")
