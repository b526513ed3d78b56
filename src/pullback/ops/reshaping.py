"""Rearranging a tensor's elements: ``flip`` (and fliplr/flipud), ``roll``, ``repeat``
(torch's tile-like one, and ``tile``), ``repeat_interleave`` and numpy's ``repeat``,
``movedim``/``moveaxis``, ``rot90`` and ``tril``/``triu``, with torch's and numpy's
spellings.

>>> import pullback as pb
>>> x = pb.tensor([[1., 2.], [3., 4.]], requires_grad=True)
>>> pb.flip(x, [0]).grad_fn, x.repeat(2, 1).shape
(<FlipBackward0 object at ...>, (4, 2))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .joining import atleast
from .reductions import sum_dim
from .shape import expand, expand_to, permute, reshape, reshape_op, view
from .subscripts import slice_view
from .table import args, batching
from .table.registry import defop, public


def _axis_text(dims: Any, lit: Any) -> str:
    """numpy's axis argument as one reads it: ``0`` for one axis, ``(0, 1)`` for more."""
    return lit(dims[0]) if dims is not None and len(dims) == 1 else lit(dims)


def _print_flip(e: Any, a: list, lit: Any) -> str:
    return f"np.flip({a[0]}, axis={_axis_text(e.params['dims'], lit)})"


def _print_roll(e: Any, a: list, lit: Any) -> str:
    shifts, dims = e.params["shifts"], e.params["dims"]
    shift = lit(shifts[0]) if len(shifts) == 1 else lit(shifts)
    return f"np.roll({a[0]}, {shift}, axis={_axis_text(dims, lit)})"


# flip and roll make new arrays in torch: the eager forward copies (numpy's flip is a
# view), generated code may keep numpy's view (``aliases``)
flip_op = defop("flip", lambda x, dims: np.array(np.flip(x, dims), order="C"),
                "FlipBackward0", vjp=(lambda g, out, x, dims: flip_op(g, dims=dims),),
                template=_print_flip, aliases=True, fresh=False)
roll_op = defop("roll", lambda x, shifts, dims: np.roll(x, shifts, dims), "RollBackward0",
                vjp=(lambda g, out, x, shifts, dims: roll_op(
                    g, shifts=tuple(-s for s in shifts), dims=dims),),
                template=_print_roll, fresh=True)


rot90_op = defop("rot90", lambda x, k, dims: np.array(np.rot90(x, k, dims), order="C"),
                 "Rot90Backward0", vjp=(lambda g, out, x, k, dims: rot90_op(
                     g, k=(4 - k) % 4, dims=dims),),
                 template="np.rot90({0}, {k}, axes={dims})", aliases=True, fresh=False)


def _repeat_rule(g, out, x, repeats):
    """Each copy's gradient added up: ``g`` seen as (r0, n0, r1, n1, ...), summed over
    the copies' axes, then in ``x``'s shape."""
    padded = (1,) * (len(repeats) - len(x.shape)) + tuple(x.shape)
    split = tuple(n for pair in zip(repeats, padded) for n in pair)
    summed = sum_dim(reshape_op(g, shape=split), dim=tuple(range(0, len(split), 2)),
                     keepdim=False)
    return reshape_op(summed, shape=tuple(x.shape))


repeat_op = defop("repeat", lambda x, repeats: np.tile(x, repeats), "RepeatBackward0",
                  vjp=(_repeat_rule,), template="np.tile({0}, {repeats})", fresh=True)


def _tri(name: str, fn: Any, grad_fn: str) -> Any:
    op = defop(name, lambda x, diagonal=0: fn(x, diagonal), grad_fn,
               vjp=(lambda g, out, x, diagonal: op(g, diagonal=diagonal),),
               template=f"np.{name}({{0}}, {{diagonal}})", fresh=True, inplace=name + "_",
               batch=batching.leading)
    return op


tril_op = _tri("tril", np.tril, "TrilBackward0")
triu_op = _tri("triu", np.triu, "TriuBackward0")


# ------------------------------------------------------------------- numpy's spellings
def _axis_list(axes: Any, ndim: int) -> tuple:
    """numpy's axes, in their order, non-negative (numpy's AxisError out of range)."""
    for a in axes:
        if not -ndim <= a < ndim:
            raise args.AxisError(a, ndim)
    return tuple(int(a) % ndim for a in axes)


def _numpy_tri(op: Any, m: Any, k: int) -> Any:
    x = args.value(m)
    if x.ndim < 2:  # numpy reads a vector as the rows of a square
        n = x.shape[0] if x.ndim else 1
        x = expand(reshape(x, (1, n)), shape=(n, n))
    return op(x, diagonal=int(k))


def _numpy_flip(m, axis=None):
    x = args.value(m)
    found = args.axes(axis, x.ndim)
    return flip_op(x, dims=tuple(range(x.ndim)) if found is None else found)


def _numpy_fliplr(m):
    x = args.value(m)
    if x.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip_op(x, dims=(1,))


def _numpy_flipud(m):
    x = args.value(m)
    if x.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip_op(x, dims=(0,))


def _numpy_roll(a, shift, axis=None):
    x = args.value(a)
    if axis is None:
        return roll_op(x, shifts=(sum(_ints(shift)),), dims=None)
    shifts, axes = np.broadcast_arrays(np.array(_ints(shift)), np.array(_ints(axis)))
    total: dict = {}  # numpy adds up the shifts of an axis named twice
    for s, a in zip(shifts.tolist(), _axis_list(axes.tolist(), x.ndim)):
        total[a] = total.get(a, 0) + s
    return roll_op(x, shifts=tuple(total.values()), dims=tuple(total))


def _numpy_tile(A, reps):
    x = args.value(A)
    reps = _ints(reps)
    return repeat_op(x, repeats=(1,) * (x.ndim - len(reps)) + reps)


def _numpy_moveaxis(a, source, destination):
    x = args.value(a)
    src, dst = _axis_list(_ints(source), x.ndim), _axis_list(_ints(destination), x.ndim)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of "
                         "elements")
    return movedim(x, src, dst)


def _numpy_rot90(m, k=1, axes=(0, 1)):
    x = args.value(m)
    axes = _ints(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    if x.ndim < 2:
        raise ValueError("Axes must be different.")
    d0, d1 = _axis_list(axes, x.ndim)
    if d0 == d1:
        raise ValueError("Axes must be different.")
    return _rot90(x, int(k), d0, d1)


# ------------------------------------------------------------------- torch's spellings
def _dims_list(dims: tuple) -> tuple:
    """``flip(0, 1)``, ``flip((0, 1))`` and ``flip(0)`` as a tuple of ints."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        return tuple(dims[0])
    return tuple(dims)


@public("flip", function=True, method=True, numpy={np.flip: _numpy_flip})
def flip(input, *dims, **kwargs):
    if kwargs:  # torch's keyword form: flip(x, dims=[0, 1])
        if set(kwargs) != {"dims"} or dims:
            raise TypeError(f"flip() got an unexpected keyword argument '{next(iter(kwargs))}'"
                            if set(kwargs) != {"dims"} else "flip() got multiple values for "
                            "argument 'dims'")
        if not isinstance(kwargs["dims"], (tuple, list)):
            raise TypeError("flip(): argument 'dims' must be tuple of ints, not "
                            f"{type(kwargs['dims']).__name__}")
        dims = (kwargs["dims"],)
    return flip_op(input, dims=args.dims(_dims_list(dims), input.ndim))


@public("fliplr", function=True, method=True, numpy={np.fliplr: _numpy_fliplr})
def fliplr(input):
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip_op(input, dims=(1,))


@public("flipud", function=True, method=True, numpy={np.flipud: _numpy_flipud})
def flipud(input):
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip_op(input, dims=(0,))


def _ints(v: Any) -> tuple:
    return tuple(int(s) for s in v) if isinstance(v, (tuple, list)) else (int(v),)


@public("roll", function=True, method=True, numpy={np.roll: _numpy_roll})
def roll(input, shifts, dims=None):
    shifts = _ints(shifts)
    if dims is None or dims == () or dims == []:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                               "dims:0")
        return roll_op(input, shifts=shifts, dims=None)
    dims = _ints(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    return roll_op(input, shifts=shifts, dims=tuple(args.wrap_dim(d, input.ndim) for d in dims))


@public("repeat", method=True)
def repeat(input, *sizes):
    reps = args.shape_arg(sizes)
    if len(reps) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than "
                           "number of dimensions of tensor")
    if any(r < 0 for r in reps):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(reps)}: "
                           f"{list(reps)}")
    return repeat_op(input, repeats=reps)


@public("tile", function=True, method=True, numpy={np.tile: _numpy_tile})
def tile(input, dims):
    reps = _ints(dims)
    return repeat(input, (1,) * (input.ndim - len(reps)) + reps)


@public("movedim", function=("movedim", "moveaxis"), method=("movedim", "moveaxis"),
        numpy={np.moveaxis: _numpy_moveaxis})
def movedim(input, source, destination):
    nd = input.ndim
    src = tuple(args.wrap_dim(d, nd) for d in _ints(source))
    dst = tuple(args.wrap_dim(d, nd) for d in _ints(destination))
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({list(dst)} dims)")
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(_ints(source))})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` "
                           f"({list(_ints(destination))})")
    order = [d for d in range(nd) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(input, tuple(order)) if nd else permute(input, ())


def _rot90(x: Any, k: int, d0: int, d1: int) -> Any:
    return rot90_op(x, k=k % 4, dims=(d0, d1))


@public("rot90", function=True, method=True, numpy={np.rot90: _numpy_rot90})
def rot90(input, k=1, dims=(0, 1)):
    dims = _ints(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = (args.wrap_dim(d, input.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    return _rot90(input, int(k), d0, d1)


def _tri_public(op: Any, name: str) -> Any:
    def fn(input, diagonal=0):
        if input.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        return op(input, diagonal=int(diagonal))
    return fn


tril = public("tril", function=True, method=True,
              numpy={np.tril: lambda m, k=0: _numpy_tri(tril_op, m, k)})(
    _tri_public(tril_op, "tril"))
triu = public("triu", function=True, method=True,
              numpy={np.triu: lambda m, k=0: _numpy_tri(triu_op, m, k)})(
    _tri_public(triu_op, "triu"))




# ------------------------------------------------------------- views, as torch's
@public("narrow", function=True, method=True)
def narrow(input, dim, start, length):
    d = args.wrap_dim(dim, input.ndim)
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    n = input.shape[d]
    start = int(start)
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but "
                         f"got {start})")
    start %= n if start < 0 else n + 1
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return slice_view(input, index=(slice(None),) * d + (slice(start, start + int(length)),))


@public("expand_as", method=True)
def expand_as(input, other):
    return expand_to(input, tuple(other.shape))


@public("broadcast_to", function=True, method=True)
def broadcast_to(input, size):
    return expand_to(input, tuple(size))


@public("unflatten", function=True, method=True)
def unflatten(input, dim, sizes):
    d = args.wrap_dim(dim, input.ndim)
    sizes = args.shape_arg((sizes,))
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = input.shape[d] if input.ndim else 1
    known = int(np.prod([s for s in sizes if s != -1]))
    inner = tuple(n // known if s == -1 and known else s for s in sizes)
    if int(np.prod(inner)) != n or sizes.count(-1) > 1:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({n}) in the input tensor")
    # splitting one dim is a view whatever the strides (torch's ViewBackward0)
    return view(input, shape=tuple(input.shape[:d]) + inner + tuple(input.shape[d + 1:]))


def _atleast(n: int):
    def fn(*tensors):
        items = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) \
            else tensors
        out = [atleast(args.value(t), n) for t in items]
        return out[0] if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)) \
            else tuple(out)
    return fn


atleast_1d = public("atleast_1d", function=True, numpy={np.atleast_1d: _atleast(1)})(_atleast(1))
atleast_2d = public("atleast_2d", function=True, numpy={np.atleast_2d: _atleast(2)})(_atleast(2))
atleast_3d = public("atleast_3d", function=True, numpy={np.atleast_3d: _atleast(3)})(_atleast(3))
