"""The parts of an in-place op after its checks (``record.apply_inplace`` runs them):
the target's old value for the graph, the write into its storage with torch's checks,
and the new history of the target (and of its base, when it is a view).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from . import messages
from .edges import grad_edge, set_grad_fn, view_node
from .graph import CopySlices, OpNode, SavedOutput

Tensor: Any = None  # the Tensor class (record.use_tensor_class)

def old_value(op, args: tuple) -> Any:
    """The target's value before an in-place write, at the graph position it had
    (copied only if a rule of an input that needs grad reads it)."""
    self = args[0]
    reads_self = any(0 in op.uses[i] for i, a in enumerate(args)
                     if isinstance(a, Tensor) and a._requires_grad)
    old = Tensor._make(self._data.copy() if reads_self else self._data,
                       grad_fn=self._grad_fn, requires_grad=self._requires_grad)
    old._output_nr = self._output_nr
    return old


def write_into(t: Any, new: np.ndarray) -> None:
    """Copy an in-place op's result into ``t``'s storage, with torch's checks."""
    dst = t._data
    if new.shape != dst.shape and _broadcast(new.shape, dst.shape) != dst.shape:
        raise RuntimeError(f"output with shape {messages.size_str(dst.shape)} doesn't match "
                           f"the broadcast shape {messages.size_str(new.shape)}")
    if new.dtype != dst.dtype and not np.can_cast(new.dtype, dst.dtype, "same_kind"):
        raise RuntimeError(f"result type {dtypes.as_dtype(new.dtype)._scalar_name} can't be "
                           "cast to the desired output type "
                           f"{dtypes.as_dtype(dst.dtype)._scalar_name}")
    np.copyto(dst, new, casting="unsafe")


def _broadcast(a: tuple, b: tuple) -> tuple | None:
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        return None


def rebase(t: Any, node: OpNode) -> None:
    set_grad_fn(t, node)
    t._requires_grad = True
    node.saved_out = SavedOutput(t) if node.saved_out else None


def rebase_view(view: Any, inner: OpNode) -> None:
    """An in-place write through a view: the base's grad_fn becomes CopySlices."""
    base = view._base
    inner.saved_out = SavedOutput(view) if inner.saved_out else None
    node = CopySlices(grad_edge(base), inner, view._view_chain)
    set_grad_fn(base, node)
    base._requires_grad = True
    set_grad_fn(view, view_node(base, view._view_chain))
    view._requires_grad = True
    view._view_version = view._vc.value
