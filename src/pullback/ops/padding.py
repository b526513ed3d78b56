"""Padding and differences: torch's ``F.pad`` (constant, reflect, replicate, circular)
and numpy's ``pad`` (constant, edge, reflect, symmetric, wrap), ``diff`` (torch's and
numpy's), numpy's ``gradient`` (uniform spacings, edge_order=1) and numpy's ``append``.

A constant pad is a primitive (torch's ConstantPadNdBackward0, whose gradient is the
slice of the padded region); the other modes repeat elements of the input, so they are
index_selects of the input along each padded dim, at the positions numpy's own pad
gives (their gradient adds the repeats up).

>>> import pullback as pb
>>> pb.nn.functional.pad(pb.ones(2, requires_grad=True), (1, 2)).grad_fn
<ConstantPadNdBackward0 object at ...>
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .indexing import index_select_op
from .joining import cat, cat_op
from .shape import reshape
from .subscripts import slice_view
from .table import args
from .table.registry import defop, public


def _unpadded(g: Any, x: Any, pads: tuple) -> Any:
    return slice_view(g, index=tuple(slice(b, b + n) for (b, _), n in zip(pads, x.shape)))


def _pad_batch(op: Any, args: tuple, batched: tuple, pads: tuple, value: Any) -> Any:
    return op(args[0], pads=((0, 0),) + tuple(pads), value=value)  # (no pad on the batch)


constant_pad = defop(
    "constant_pad", lambda x, pads, value: np.pad(x, pads, constant_values=value),
    "ConstantPadNdBackward0", vjp=(lambda g, out, x, pads, value: _unpadded(g, x, pads),),
    template="np.pad({0}, {pads}, constant_values={value})", fresh=True, batch=_pad_batch)

#: torch's modes as numpy's
_TORCH_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _repeat_pad(x: Any, pads: tuple, mode: str) -> Any:
    """``x`` padded by repeating its elements (numpy's mode), one dim at a time."""
    for d, (b, a) in enumerate(pads):
        if b or a:
            where = np.pad(np.arange(x.shape[d]), (b, a), mode=mode)
            x = index_select_op(x, where, dim=d)
    return x


def _numpy_pad(array, pad_width, mode="constant", **kw):
    x = args.value(array)
    pads = tuple(tuple(int(v) for v in p) for p in np.broadcast_to(
        np.asarray(pad_width, dtype=np.int64), (x.ndim, 2)))
    if mode == "constant":
        value = kw.pop("constant_values", 0)
        if kw or np.ndim(value):
            raise args.Unsupported
        return constant_pad(x, pads=pads, value=value)
    if mode not in ("edge", "reflect", "symmetric", "wrap") or kw:
        raise args.Unsupported
    if any(n == 0 and (b or a) for n, (b, a) in zip(x.shape, pads)):
        raise ValueError("can't extend empty axis using modes other than 'constant' or "
                         "'empty'")
    return _repeat_pad(x, pads, mode)


@public("pad", functional=True, numpy={np.pad: _numpy_pad})
def pad(input, pad, mode="constant", value=None):
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the "
                           "input dimension but got padding length "
                           f"{len(pad)} and input of dimension {input.ndim}")
    pairs = [(int(pad[2 * k]), int(pad[2 * k + 1])) for k in range(len(pad) // 2)]
    pads = tuple([(0, 0)] * (input.ndim - len(pairs)) + pairs[::-1])
    if mode == "constant":
        if any(b < 0 or a < 0 for b, a in pads):
            raise NotImplementedError("pad: negative (cropping) pads are not supported")
        return constant_pad(input, pads=pads, value=0.0 if value is None else float(value))
    if mode not in _TORCH_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    for d, (b, a) in enumerate(pads):
        n = input.shape[d]
        if mode == "reflect" and (b >= n or a >= n) and (b or a):
            raise RuntimeError(f"Argument #4: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({b}, {a}) "
                               f"at dimension {d} of input {list(input.shape)}")
        if mode == "circular" and (b > n or a > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
    return _repeat_pad(input, pads, _TORCH_MODES[mode])


# -------------------------------------------------------------------------- diff
def _differences(x: Any, n: int, d: int) -> Any:
    for _ in range(n):
        k = x.shape[d]
        x = (slice_view(x, index=(slice(None),) * d + (slice(1, None),))
             - slice_view(x, index=(slice(None),) * d + (slice(0, max(k - 1, 0)),)))
    return x


@public("diff", function=True, method=True)
def diff(input, n=1, dim=-1, prepend=None, append=None):
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    d = args.wrap_dim(dim, input.ndim)
    parts = [t for t in (prepend, input, append) if t is not None]
    x = cat(parts, d) if len(parts) > 1 else input
    return _differences(x, int(n), d)


def _numpy_diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    x = args.value(a)
    if n == 0:
        return x
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    if x.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    d = args.axes(axis, x.ndim)[0]
    parts = []
    for extra in (prepend, None, append):
        if extra is None:
            parts.append(x)
        elif extra is not np._NoValue:
            e = args.value(extra)
            shape = tuple(1 if k == d else s for k, s in enumerate(x.shape))
            parts.append(e if np.ndim(e) else np.broadcast_to(e, shape))
    return _differences(cat_op(*parts, dim=d) if len(parts) > 1 else x, int(n), d)


def _numpy_append(arr, values, axis=None):
    x, v = args.value(arr), args.value(values)
    if axis is None:
        return cat_op(reshape(x, -1) if np.ndim(x) != 1 else x,
                      reshape(v, -1) if np.ndim(v) != 1 else v, dim=0)
    return cat_op(x, v, dim=args.axes(axis, np.ndim(x))[0])


def _along(x: Any, d: int, part: slice) -> Any:
    return slice_view(x, index=(slice(None),) * d + (part,))


def _gradient_along(x: Any, d: int, h: float) -> Any:
    """numpy's gradient along ``d`` with spacing ``h`` (edge_order=1): central
    differences inside, one-sided ones at the two ends."""
    n = x.shape[d]
    if n < 2:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                         "least (edge_order + 1) elements are required.")
    first = (_along(x, d, slice(1, 2)) - _along(x, d, slice(0, 1))) / h
    last = (_along(x, d, slice(n - 1, n)) - _along(x, d, slice(n - 2, n - 1))) / h
    if n == 2:
        return cat_op(first, last, dim=d)
    inner = (_along(x, d, slice(2, None)) - _along(x, d, slice(0, n - 2))) / (2 * h)
    return cat_op(first, inner, last, dim=d)


def _numpy_gradient(f, *varargs, axis=None, edge_order=1):
    x = args.value(f)
    axes = tuple(range(x.ndim)) if axis is None else tuple(
        a % x.ndim for a in ((axis,) if np.ndim(axis) == 0 else axis))
    args.axes(axes, x.ndim)
    if edge_order != 1 or len(varargs) > 1 and len(varargs) != len(axes) or any(
            np.ndim(h) for h in varargs):
        raise args.Unsupported  # second-order edges, coordinate arrays: numpy's own
    steps = [float(varargs[k] if len(varargs) > 1 else varargs[0]) if varargs else 1.0
             for k in range(len(axes))]
    out = tuple(_gradient_along(x, d, h) for d, h in zip(axes, steps))
    return out[0] if len(out) == 1 else out


public("numpy_diff", numpy={np.diff: _numpy_diff, np.append: _numpy_append,
                            np.gradient: _numpy_gradient})(_numpy_diff)
