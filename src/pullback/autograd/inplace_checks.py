"""torch's refusals of an in-place op (before any data is written): into a leaf that
requires grad, a view of one, an output of a multi-output view op, a view taken under
no_grad, or memory that overlaps what the op reads. ``record.apply_inplace`` calls them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import messages
from .grad_mode import STATE

Tensor: Any = None  # the Tensor class (``record.use_tensor_class`` sets it)


def check_unread_view(t: Any) -> None:
    """torch's refusal of an in-place op on a view taken before its base came to require
    grad (by an in-place op with a value that does), when nothing read the view since
    (its grad_fn, is_leaf, an op on it): torch has not renewed its grad_fn yet, so it
    takes the view for a leaf that requires grad."""
    base = t._base
    if (t._stale_view_refused and t._grad_fn is None and not t._view_no_grad
            and base._requires_grad
            and base._grad_fn is not None and STATE.grad_enabled and not STATE.inference):
        raise RuntimeError(messages.LEAF_INPLACE)


def check_multi_view(t: Any, args: tuple) -> None:
    """torch's refusal of an in-place op that records, with grad mode on, into an output
    of a multi-output view op (split, unbind, chunk) or a view of one."""
    if not STATE.grad_enabled or STATE.inference:
        return
    if any(isinstance(a, Tensor) and (a._requires_grad or a._base is not None
                                      and a._base._requires_grad) for a in args):
        raise RuntimeError(messages.multi_view(t, indirect=False))


def check_inplace(t: Any) -> None:
    """torch's refusals for an in-place op on ``t`` (before any data is written)."""
    if t._is_inference and not STATE.inference:
        raise RuntimeError(messages.INFERENCE_INPLACE)
    if not STATE.grad_enabled or STATE.inference:
        return
    base = t._base
    if base is None:
        if t._requires_grad and t._grad_fn is None:
            raise RuntimeError(messages.LEAF_INPLACE)
        return
    if t._view_no_grad and base._requires_grad:
        fn = getattr(t._grad_fn, "_forward_cls", None)
        if fn is not None:  # an input a custom Function returned as it is
            raise RuntimeError(messages.custom_function_view(t._output_nr, fn.__name__))
        raise RuntimeError(messages.NO_GRAD_VIEW_INPLACE)
    if base._requires_grad and base._grad_fn is None:
        raise RuntimeError(messages.VIEW_LEAF_INPLACE)


def check_overlap(t: Any, operands: tuple, full: bool = False) -> None:
    """torch's refusals of an in-place write into ``t`` that reads memory it writes: ``t``
    with elements that share memory (an expanded view), or an operand that overlaps ``t``
    without being exactly ``t``'s elements (``y.add_(y[0])``; ``full``: any overlap, as
    index_put_ refuses). Operands too irregular to tell (not dense) pass, as in torch."""
    dst = t._data
    view = dst.base is not None
    if view and not dst.flags.writeable and any(
            s == 0 and n > 1 for s, n in zip(dst.strides, dst.shape)):
        raise RuntimeError(messages.INTERNAL_OVERLAP)
    for a in operands:
        if not isinstance(a, Tensor):
            continue
        src = a._data
        if src is dst:
            status = "full"
        elif (view or src.base is not None) and np.may_share_memory(src, dst):
            status = _overlap(dst, src)
        else:  # (two arrays that own their memory do not overlap)
            continue
        if status == "partial" or full and status == "full":
            raise RuntimeError(messages.PARTIAL_OVERLAP)


def _overlap(a: np.ndarray, b: np.ndarray) -> str:
    """torch's get_overlap_status of two arrays whose memory bounds meet: 'full' (the
    same elements, the same way), 'partial', 'none' or 'unknown' (not dense)."""
    if a.size == 0 or b.size == 0:
        return "none"
    if not (_dense(a) and _dense(b)):
        return "unknown"
    a0, b0 = a.__array_interface__["data"][0], b.__array_interface__["data"][0]
    a1, b1 = a0 + a.size * a.itemsize, b0 + b.size * b.itemsize
    if (a0, a1) == (b0, b1):
        return "full" if a.strides == b.strides else "partial"
    return "partial" if a0 < b1 and b0 < a1 else "none"


def _dense(a: np.ndarray) -> bool:
    """torch's is_non_overlapping_and_dense: in some order of its dims (size-1 dims
    aside), each stride is the product of the sizes before it."""
    expected = a.itemsize
    for stride, n in sorted((s, n) for s, n in zip(a.strides, a.shape) if n != 1):
        if stride != expected:
            return False
        expected *= n
    return True
