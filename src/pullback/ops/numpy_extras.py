"""numpy functions torch has no counterpart of, by their numpy names on Tensors and in
``pb.grad``: ``cbrt`` (a primitive), and ``rollaxis``, ``choose``, ``partition``,
``convolve``, ``polyval``, ``real_if_close`` and ``full`` / ``full_like`` with a traced
fill value, composed of existing ops; ``spacing`` is a primitive with a zero gradient
(a step function of x, as ``floor``).

- ``partition`` returns the sorted array, which is one of the partitions numpy's
  contract allows (numpy's own order of the other elements is introselect's choice);
  its gradient is sort's, as numpy-autograd's is.
- ``convolve`` is a conv1d of the zero-padded longer sequence with the flipped shorter
  one, cut to numpy's ``mode`` (full, same, valid).
- ``choose`` takes the index array as data (it gets no gradient) and gathers from the
  stacked, broadcast choices; ``mode='raise'`` only.
- ``real_if_close`` reads the values (the imaginary parts decide the result's dtype,
  as in numpy); under ``pb.grad`` that reading is a guard of the trace.
- ``np.full(shape, t)`` does not dispatch on its fill value, so a Tensor fill reaches
  pullback only through ``pb.grad``'s source pass (``compiler/source/runtime.py``); ``np.full_like``
  dispatches on its first argument, so ``np.full_like(tensor, t)`` works eagerly too.

>>> import numpy as np, pullback as pb
>>> x = pb.tensor([1., 8., 27.], requires_grad=True)
>>> np.cbrt(x)
tensor([1.0000, 2.0000, 3.0000], grad_fn=<CbrtBackward0>)
>>> np.convolve(x, pb.tensor([1., -1.]), mode="valid")
tensor([ 7., 19.], grad_fn=<SliceBackward0>)
"""

from __future__ import annotations

import numpy as np

from .convolution import conv1d
from .elementwise import absolute, clone, imag, is_complex, real, to_dtype, where, zeros_like
from .indexing import take_along_dim
from .joining import stack_op
from .padding import constant_pad
from .reductions import amax
from .reshaping import flip_op
from .selection import _numpy_sort
from .shape import expand, permute_op, reshape
from .subscripts import slice_view
from .table import args
from .table.registry import defop, is_traced, public

cbrt = defop("cbrt", np.cbrt, "CbrtBackward0", vjp=(lambda g, out, x: g / (3 * out * out),),
             uses=("out",), template="np.cbrt({0})", elementwise=True, fresh=True,
             numpy=np.cbrt)

#: the distance to the next float: a step function of x (constant between powers of
#: two), so its gradient is zero, as floor's and sign's are
spacing = defop("spacing", np.spacing, "SpacingBackward0",
                vjp=(lambda g, out, x: zeros_like(g),), template="np.spacing({0})",
                elementwise=True, fresh=True, numpy=np.spacing)


def _numpy_rollaxis(a, axis, start=0):
    x = args.value(a)
    n = x.ndim
    axis = args.axes(axis, n)[0]
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise args.AxisError(f"'start' arg requires {-n} <= start < {n + 1}, but {start} was "
                             "passed in")
    start -= axis < start
    order = [d for d in range(n) if d != axis]
    order.insert(start, axis)
    return permute_op(x, dims=tuple(order))


public("rollaxis", numpy={np.rollaxis: _numpy_rollaxis})(_numpy_rollaxis)


def _numpy_choose(a, choices, out=None, mode="raise"):
    args.plain(out)
    if is_traced(choices) and len(choices.shape) > 0:  # an array: its rows are the choices
        choices = [choices[k] for k in range(choices.shape[0])]
    if mode != "raise" or is_traced(a) or not isinstance(choices, (list, tuple)):
        raise args.Unsupported
    index = np.asarray(a)
    if index.dtype.kind not in "iu" or not all(0 <= i < len(choices) for i in index.flat):
        raise args.Unsupported  # numpy's own error
    values = [c if is_traced(c) else np.asarray(c) for c in choices]
    shape = np.broadcast_shapes(index.shape, *(np.shape(v) for v in values))
    dtype = np.result_type(*(args.np_dtype(v) for v in values))
    picked = stack_op(*[expand(to_dtype(v, dtype), shape=shape) for v in values], dim=0)
    at = np.broadcast_to(index, shape)[None].astype(np.int64)
    return reshape(take_along_dim(picked, at, 0), shape)


public("choose", numpy={np.choose: _numpy_choose})(_numpy_choose)


def _numpy_partition(a, kth, axis=-1, kind="introselect", order=None):
    x = args.value(a)
    if axis is None:
        n = int(np.prod(x.shape))
    else:
        n = x.shape[args.axes(axis, x.ndim)[0]] if x.ndim else 1
    if order is not None or any(not -n <= k < n for k in np.ravel(kth)):
        raise args.Unsupported  # numpy's own error
    return _numpy_sort(x, axis=axis)


public("partition", numpy={np.partition: _numpy_partition})(_numpy_partition)


def _numpy_convolve(a, v, mode="full"):
    a, v = args.value(a), args.value(v)
    if np.ndim(a) != 1 or np.ndim(v) != 1 or 0 in (a.shape[0], v.shape[0]) \
            or mode not in ("full", "same", "valid"):
        raise args.Unsupported  # numpy's own error (or numpy's other forms)
    if v.shape[0] > a.shape[0]:
        a, v = v, a
    n, m = a.shape[0], v.shape[0]
    dtype = np.result_type(args.np_dtype(a), args.np_dtype(v))
    a, v = to_dtype(a, dtype), to_dtype(v, dtype)
    padded = constant_pad(a, pads=((m - 1, m - 1),), value=0)
    full = reshape(conv1d(reshape(padded, 1, 1, -1), reshape(flip_op(v, dims=(0,)), 1, 1, m)),
                   -1)
    start, length = {"full": (0, n + m - 1), "same": ((m - 1) // 2, n),
                     "valid": (m - 1, n - m + 1)}[mode]
    return full if mode == "full" else slice_view(full, index=(slice(start, start + length),))


public("convolve", numpy={np.convolve: _numpy_convolve})(_numpy_convolve)


def _numpy_polyval(p, x):
    """Horner's rule, as numpy's polyval."""
    p, x = args.value(p), args.value(x)
    if np.ndim(p) != 1:
        raise args.Unsupported
    y = x * 0
    for k in range(p.shape[0]):
        y = y * x + p[k]
    return y


public("polyval", numpy={np.polyval: _numpy_polyval})(_numpy_polyval)


def _numpy_real_if_close(a, tol=100):
    x = args.value(a)
    if not is_complex(x):
        return x
    d = args.np_dtype(x)
    limit = tol * np.finfo(d).eps if tol > 1 else tol
    return real(x) if bool(amax(absolute(imag(x))) < limit) else x


public("real_if_close", numpy={np.real_if_close: _numpy_real_if_close})(_numpy_real_if_close)


def _numpy_select(condlist, choicelist, default=0):
    """numpy's select: where the first true condition holds, its choice, else default
    (a chain of ``where`` from the last pair to the first). A list the source pass
    stacked into one traced array is taken row by row."""
    condlist, choicelist = _rows(condlist), _rows(choicelist)
    if condlist is None or choicelist is None or len(condlist) != len(choicelist) \
            or not condlist:
        raise args.Unsupported  # numpy's own error
    conds = [c if is_traced(c) else np.asarray(c) for c in condlist]
    if any(args.np_dtype(c) != np.bool_ for c in conds):
        raise args.Unsupported  # numpy's TypeError
    values = [args.value(v) for v in choicelist]
    default = args.value(default)
    dtype = np.result_type(*(args.np_dtype(v) for v in values),
                           args.np_dtype(default) if is_traced(default) else default)
    if not is_traced(default):  # (a Python number: numpy's weak scalar, in the dtype)
        default = np.asarray(default, dtype=dtype)
    out = to_dtype(default, dtype)
    for c, v in reversed(list(zip(conds, values))):
        out = where(c, to_dtype(v, dtype), out)
    return out


def _rows(x):
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x[i] for i in range(x.shape[0])] if is_traced(x) and x.ndim else None


public("select", numpy={np.select: _numpy_select})(_numpy_select)


def _numpy_linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0,
                    *, device=None):
    """numpy's linspace with traced endpoints: ``start + i * step``, the last point
    ``stop`` itself (as numpy's), so each point is linear in start and stop."""
    num = int(num)
    if num < 0 or device not in (None, "cpu"):
        raise args.Unsupported  # numpy's own error
    start, stop = args.value(start), args.value(stop)
    shape = np.broadcast_shapes(np.shape(start), np.shape(stop))
    div = num - 1 if endpoint else num
    dt = np.result_type(*(v if isinstance(v, (int, float)) else args.np_dtype(v)
                          for v in (start, stop)), float(num))  # (numpy's: float32 stays)
    i = np.arange(num, dtype=dt if dt.kind in "fc" else np.float64)
    i = i.reshape((-1,) + (1,) * len(shape))
    delta = stop - start
    step = delta / div if div > 0 else delta * np.nan
    y = start + i * step if div > 0 else start + i * delta
    if endpoint and num > 1:
        last = np.zeros(i.shape, bool)
        last[-1] = True
        y = where(last, stop, y)
    y = expand(y, shape=(num,) + shape)
    if axis != 0:
        y = permute_op(y, dims=_moved(len(shape) + 1, args.axes(axis, len(shape) + 1)[0]))
    if dtype is not None:
        y = to_dtype(y, np.dtype(dtype))
    return (y, step) if retstep else y


def _moved(n: int, axis: int) -> tuple:
    """The permutation moving axis 0 of ``n`` axes to ``axis``."""
    order = list(range(1, n))
    order.insert(axis, 0)
    return tuple(order)


public("linspace_numpy", numpy={np.linspace: _numpy_linspace})(_numpy_linspace)


def numpy_full(shape, fill_value, dtype=None, order="C", **kw):
    """``np.full`` with a traced fill value: the fill expanded, as a new array."""
    if not is_traced(fill_value):
        return np.full(shape, fill_value, dtype, order, **kw)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    fill = to_dtype(fill_value, np.dtype(dtype)) if dtype is not None else fill_value
    return clone(expand(fill, shape=shape))


def numpy_full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kw):
    """``np.full_like`` with a traced fill value (creation.py registers np.full_like:
    creation functions are not ops)."""
    if not is_traced(fill_value):
        return np.full_like(a, fill_value, dtype, order, subok, shape)
    out = shape if shape is not None else np.shape(a)
    out = (out,) if isinstance(out, (int, np.integer)) else tuple(out)
    d = np.dtype(dtype) if dtype is not None else args.np_dtype(a)
    return clone(expand(to_dtype(fill_value, d), shape=out))
