"""numpy's ufunc methods on Tensors: ``outer``, ``reduce``, ``accumulate`` and
``reduceat`` of a two-operand ufunc the op table maps, composed of the ufunc's own
call and existing ops (so their gradients, tangents, batching and generated code are
those ops').

- ``ufunc.outer(a, b)`` is the call on ``a`` reshaped to ``a.shape + (1,) * b.ndim``
  (broadcasting gives numpy's ``a.shape + b.shape``).
- ``reduce`` of ``add``, ``multiply``, ``maximum``, ``minimum`` and ``logaddexp`` is the
  matching reduction (``np.sum``, ``np.prod``, ``np.max``, ``np.min``, ``logsumexp``),
  for any ``axis`` numpy allows; positions ``where=`` leaves out hold the ufunc's
  identity (or ``initial``); ``initial`` joins the result by one more call. Another
  reorderable ufunc (``hypot``, ``fmax``, ``logaddexp2``...) combines halves in
  ``log2(n)`` calls; any other (``subtract``, ``divide``...) is a fold along the axis,
  one call per element, in numpy's order (``where=`` too).
- ``accumulate``: ``np.cumsum`` / ``np.cumprod``; ``maximum``, ``minimum``, ``fmax``,
  ``fmin``, ``logaddexp`` and ``logaddexp2`` are a scan of ``log2(n)`` calls of the
  ufunc on shifted copies (no read of the values; a tie's gradient is split as the
  ufunc's is); others fold (one call per element).
- ``reduceat(x, indices)``: one ``reduce`` per segment (``x[indices[i]]`` where the
  next index is not larger, as numpy), joined by ``np.concatenate``.

numpy's own method first runs on zeros of the operands' shapes and dtypes, so its
errors (an axis out of range, a tuple of axes for a ufunc that is not reorderable, an
empty reduction with no identity...), the result's dtype and its shape are numpy's.
Results that are not floats (no gradient) and keywords not covered here (a traced
``where=`` mask, ``casting=`` of ``outer``) go to numpy itself, refused when a gradient
would be lost.

>>> import numpy as np, pullback as pb
>>> x = pb.tensor([1., 2., 4.], requires_grad=True)
>>> np.subtract.outer(x, x)
tensor([[ 0., -1., -3.],
        [ 1.,  0., -2.],
        [ 3.,  2.,  0.]], grad_fn=<SubBackward0>)
>>> np.maximum.accumulate(x[::-1])
tensor([4., 4., 4.], grad_fn=<MaximumBackward0>)
>>> np.add.reduceat(x, [0, 2])
tensor([3., 4.], grad_fn=<CatBackward0>)
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .elementwise import to_dtype
from .elementwise import where as where_op
from .shape import detach, reshape
from .statistics import logsumexp
from .table import args
from .table.registry import is_traced

_NO = np._NoValue

#: ufunc -> its reduction (x, axes or None, keepdims) as one op
_REDUCTIONS: dict = {
    np.add: lambda x, axis, keep: np.sum(x, axis=axis, keepdims=keep),
    np.multiply: lambda x, axis, keep: np.prod(x, axis=axis, keepdims=keep),
    np.maximum: lambda x, axis, keep: np.max(x, axis=axis, keepdims=keep),
    np.minimum: lambda x, axis, keep: np.min(x, axis=axis, keepdims=keep),
    np.logaddexp: lambda x, axis, keep: logsumexp(x, axis, keep),
}
#: ufuncs whose accumulate is a log-step scan -> the identity the first elements meet
#: (None: themselves, for idempotent ones)
_SCANS: dict = {np.maximum: None, np.minimum: None, np.fmax: None, np.fmin: None,
                np.logaddexp: -np.inf, np.logaddexp2: -np.inf}


def _shape(v: Any) -> tuple:
    return tuple(v.shape) if is_traced(v) else np.shape(v)


def _numpy_result(ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> np.ndarray:
    """numpy's method on zeros standing for the traced operands: numpy's errors, and
    the result's dtype and shape (float results only: others go to numpy, as do traced
    keywords: a ``where=`` mask)."""
    if any(is_traced(v) for v in kwargs.values()):
        raise args.Unsupported
    stand = [np.broadcast_to(np.zeros((), args.np_dtype(v)), _shape(v)) if is_traced(v)
             else v for v in inputs]
    with np.errstate(all="ignore"):
        result = np.asarray(getattr(ufunc, method)(*stand, **kwargs))
    if result.dtype.kind not in "fc":
        raise args.Unsupported
    return result


def _cast(x: Any, dtype: Any) -> Any:
    if dtype is None or args.np_dtype(x) == np.dtype(dtype):
        return x
    return to_dtype(x, np.dtype(dtype)) if is_traced(x) else np.asarray(x, dtype)


def _fitted(r: Any, like: np.ndarray) -> Any:
    """``r`` with numpy's result's shape and dtype."""
    if _shape(r) != like.shape:
        r = reshape(r, like.shape) if is_traced(r) else np.reshape(r, like.shape)
    return _cast(r, like.dtype)


def _at(axis: int, i: Any) -> tuple:
    return (slice(None),) * axis + (i,)


def outer(ufunc: np.ufunc, a: Any, b: Any, **kwargs: Any) -> Any:
    """``ufunc.outer(a, b)``: the call on ``a`` with one new axis per axis of ``b``."""
    like = _numpy_result(ufunc, "outer", a, b, **kwargs)
    if set(kwargs) - {"dtype"} or not (is_traced(a) or is_traced(b)):
        raise args.Unsupported
    a, b = (_cast(args.value(v), kwargs.get("dtype")) for v in (a, b))
    grown = _shape(a) + (1,) * len(_shape(b))
    return _fitted(ufunc(reshape(a, grown) if is_traced(a) else np.reshape(a, grown), b),
                   like)


def _fold(ufunc: np.ufunc, x: Any, axis: int, start: Any, mask: Any) -> Any:
    """``ufunc`` applied along ``axis`` in order, from ``start`` (None: the first
    element); a position ``mask`` leaves out keeps the running value."""
    acc = start
    for i in range(_shape(x)[axis]):
        item = x[_at(axis, i)]
        if acc is None:
            acc = item
        elif mask is None:
            acc = ufunc(acc, item)
        else:
            acc = np.where(mask[_at(axis, i)], ufunc(acc, item), acc)
    return acc


def _reorderable(ufunc: np.ufunc, dtype: np.dtype) -> bool:
    """Whether numpy lets ``ufunc.reduce`` take several axes (its operands may be
    combined in any order)."""
    try:
        with np.errstate(all="ignore"):
            ufunc.reduce(np.zeros((1, 1), dtype), axis=(0, 1))
    except ValueError:
        return False
    return True


def _tree(ufunc: np.ufunc, x: Any, axis: int) -> Any:
    """A reorderable ``ufunc`` along ``axis`` in ``log2(n)`` calls, each combining one
    half with the other (the axis kept, of length one)."""
    while (n := _shape(x)[axis]) > 1:
        half = n // 2
        y = ufunc(x[_at(axis, slice(0, half))], x[_at(axis, slice(half, 2 * half))])
        x = y if n % 2 == 0 else np.concatenate([y, x[_at(axis, slice(n - 1, n))]], axis)
    return x


def reduce(ufunc: np.ufunc, x: Any, axis: Any = 0, dtype: Any = None,
           keepdims: bool = False, initial: Any = _NO, where: Any = True) -> Any:
    """``ufunc.reduce``: the matching reduction, halves combined, or a fold."""
    like = _numpy_result(ufunc, "reduce", x, axis=axis, dtype=dtype, keepdims=keepdims,
                         initial=initial, where=where)
    if not is_traced(x):
        raise args.Unsupported
    x = _cast(x, dtype if dtype is not None or args.np_dtype(x).kind in "fc"
              else like.dtype)  # (integers: in numpy's float dtype of the result)
    shape = _shape(x)
    found = tuple(range(len(shape))) if axis is None else args.axes(axis, len(shape))
    if any(shape[a] == 0 for a in found):
        return like  # (the identity or initial: no value of x is read)
    start = None if initial is _NO else np.asarray(initial, like.dtype)
    mask = None if where is True else np.broadcast_to(np.asarray(where), shape)
    if ufunc in _REDUCTIONS:
        if mask is not None:
            fill = start if ufunc.identity is None else ufunc.identity
            if fill is None:
                raise args.Unsupported
            x = np.where(mask, x, np.asarray(fill, like.dtype))
        r = _REDUCTIONS[ufunc](x, found or None, keepdims)
        r = r if start is None else ufunc(start, r)
    elif len(found) > 1 or mask is None and _reorderable(ufunc, like.dtype):
        if mask is not None:
            raise args.Unsupported
        r = x
        for a in found:
            r = _tree(ufunc, r, a)
        r = r if start is None else ufunc(start, r)
    else:
        if mask is not None and start is None:
            start = np.asarray(ufunc.identity, like.dtype)  # (numpy refused None)
        r = _fold(ufunc, x, found[0], start, mask) if found else x
    return _fitted(r, like)


def _scan(ufunc: np.ufunc, x: Any, axis: int) -> Any:
    """``accumulate`` of an associative ufunc in ``log2(n)`` steps: step ``k`` combines
    each element with the one ``2 ** k`` before it (Hillis and Steele's scan); the
    first ``2 ** k`` combine with themselves (an idempotent ufunc) or the identity."""
    n, pad = _shape(x)[axis], _SCANS[ufunc]
    y, k = x, 1
    while k < n:
        head = y[_at(axis, slice(0, k))]
        if pad is not None:
            head = np.full_like(head, pad)
        y = ufunc(y, np.concatenate([head, y[_at(axis, slice(0, n - k))]], axis=axis))
        k *= 2
    return y


def accumulate(ufunc: np.ufunc, x: Any, axis: int = 0, dtype: Any = None) -> Any:
    """``ufunc.accumulate``: ``np.cumsum`` / ``np.cumprod``, the triangle's reduction,
    or a fold keeping every step."""
    like = _numpy_result(ufunc, "accumulate", x, axis=axis, dtype=dtype)
    if not is_traced(x):
        raise args.Unsupported
    x = _cast(x, dtype if dtype is not None or args.np_dtype(x).kind in "fc"
              else like.dtype)  # (integers: in numpy's float dtype of the result)
    axis = args.axes(axis, len(_shape(x)))[0]
    if _shape(x)[axis] == 0:
        return like
    if ufunc is np.add:
        r = np.cumsum(x, axis=axis)
    elif ufunc is np.multiply:
        r = np.cumprod(x, axis=axis)
    elif ufunc in _SCANS:
        r = _scan(ufunc, x, axis)
    else:
        steps = [x[_at(axis, 0)]]
        for i in range(1, _shape(x)[axis]):
            steps.append(ufunc(steps[-1], x[_at(axis, i)]))
        r = np.stack(steps, axis=axis)
    return _fitted(r, like)


def reduceat(ufunc: np.ufunc, x: Any, indices: Any, axis: int = 0,
             dtype: Any = None) -> Any:
    """``ufunc.reduceat``: a ``reduce`` per segment ``indices[i]:indices[i + 1]`` (the
    element ``indices[i]`` alone where the next index is not larger)."""
    if is_traced(indices):  # (data: its values are read, a guard of a trace)
        indices = np.asarray(detach(indices))
    like = _numpy_result(ufunc, "reduceat", x, indices, axis=axis, dtype=dtype)
    if not is_traced(x):
        raise args.Unsupported
    x = _cast(x, dtype if dtype is not None or args.np_dtype(x).kind in "fc"
              else like.dtype)  # (integers: in numpy's float dtype of the result)
    axis = args.axes(axis, len(_shape(x)))[0]
    idx = np.asarray(indices).reshape(-1)
    ends = list(idx[1:]) + [_shape(x)[axis]]
    parts = []
    for lo, hi in zip(idx, ends):
        seg = x[_at(axis, slice(lo, hi if lo < hi else lo + 1))]
        parts.append(reduce(ufunc, seg, axis=axis, keepdims=True) if lo < hi else seg)
    return _fitted(np.concatenate(parts, axis=axis), like)


#: ``ufunc(...)`` keywords ``call`` follows (``casting``, ``order`` and ``subok`` only
#: decide numpy's errors and the memory layout: numpy's run on stand-ins checks them)
CALL_KEYWORDS = frozenset({"where", "dtype", "casting", "order", "subok"})


def _stand_in(v: Any) -> Any:
    return np.broadcast_to(np.zeros((), args.np_dtype(v)), _shape(v)) if is_traced(v) else v


def call(fn: Any, ufunc: np.ufunc, inputs: tuple, old: Any = None, **kwargs: Any) -> Any:
    """``ufunc(*inputs, out=old, where=..., dtype=...)`` by ``fn``, the table's form of
    ``ufunc``, as a value written into ``out`` (``old``: its values before the write).

    ``dtype=``: the operands cast to it first (numpy's loop of that dtype). ``where=``:
    the ufunc's result where the mask holds, ``old`` elsewhere. Each array operand goes
    to ``fn`` as ``where(mask, x, safe)``, ``safe`` a number at which the ufunc is finite
    and quiet (``_safe``): the gradient of the ufunc's rule reaches ``x`` selected by the
    mask, never multiplied by it (the rule's inf or nan at a position left out, ``a / b``
    at ``b == 0``, is never formed, and ``where``'s rule selects, so it would be dropped
    rather than give ``0 * inf``), and neither the value nor the generated code warns of
    a division by zero numpy did not compute. ``where=`` with no ``out=`` leaves numpy's
    result uninitialized there: refused (a TypeError naming the ufunc) rather than
    differentiate unspecified values.

    >>> import pullback as pb
    >>> a, b = pb.tensor([1., 2.]), pb.tensor([0., 4.], requires_grad=True)
    >>> r = np.divide(a, b, out=np.zeros_like(a), where=b != 0)
    >>> r
    tensor([0.0000, 0.5000], grad_fn=<CopyBackwards>)
    >>> r.sum().backward(); b.grad
    tensor([ 0.0000, -0.1250])
    """
    if set(kwargs) - CALL_KEYWORDS or kwargs.get("subok", True) is not True:
        raise args.Unsupported
    mask = kwargs.pop("where", True)
    if mask is not True and old is None:
        raise TypeError(f"numpy.{ufunc.__name__} with where= and no out= leaves the "
                        "positions where the mask is False uninitialized (numpy's "
                        "documentation), values no gradient can be taken of: pass out= "
                        "(np.zeros_like(x), np.full_like(x, np.nan)...) or use np.where")
    kept = mask if is_traced(mask) else np.asarray(mask)
    with np.errstate(all="ignore"):
        like = np.asarray(ufunc(*map(_stand_in, inputs), **kwargs, where=_stand_in(kept),
                                out=None if old is None else np.zeros(_shape(old),
                                                                       args.np_dtype(old))))
    if like.dtype.kind not in "fc":
        raise args.Unsupported
    dtype = kwargs.get("dtype")
    if dtype is not None:
        inputs = tuple(_cast(x, dtype) if is_traced(x) or isinstance(x, np.ndarray) else x
                       for x in inputs)
    if mask is not True:
        safe = _safe(ufunc, tuple(args.np_dtype(x) if hasattr(x, "dtype") else None
                                  for x in inputs))
        inputs = tuple(x if not hasattr(x, "dtype") else where_op(kept, x, detach(x))
                       if safe is None else where_op(kept, x, np.asarray(safe, args.np_dtype(x)))
                       for x in inputs)
    r = _cast(fn(*inputs), like.dtype)
    return r if mask is True else where_op(kept, r, old)


@functools.cache
def _safe(ufunc: np.ufunc, dtypes: tuple) -> Any:
    """A number the ufunc takes as every operand of these dtypes (None: a Python
    number, kept) with a finite result and no floating-point error; None if none of a
    few does."""
    for c in (1, 0.5, 2):
        try:
            with np.errstate(all="raise"):
                r = ufunc(*(np.asarray(c, d) if d is not None else c for d in dtypes))
        except (FloatingPointError, TypeError, ValueError):
            continue
        if all(np.all(np.isfinite(v)) for v in (r if isinstance(r, tuple) else (r,))):
            return c
    return None
