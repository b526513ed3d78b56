"""What code rewritten by the source pass (``source.py``) calls at run time: its rooms
are numpy_builders.py (numpy's functions on traced values, buffers), entry.py (a front
door's run of a converted function, the arguments it writes into), traced_values.py
(which values are traced), and this file (element reads and writes into arrays).

Each helper looks at its arguments when it runs. With no traced value inside (no
Tensor that requires grad, none the active tracer recorded) it calls numpy's own
function, so numpy's behaviour is kept exactly; otherwise it builds the value with
pullback's ops, which the tracer records:

- ``np.array([...])``, ``np.asarray``, ``np.stack``, ``np.concatenate``, ``np.hstack``,
  ``np.vstack`` of lists holding traced values: one ``stack`` or ``concatenate`` op
  of the elements (the op table's ``stack`` and ``cat``: ``np.stack([t0, t1], axis=0)``
  in generated code);
- any other numpy function given such a list (``np.sum([1.0, a * a])``): the list
  becomes a traced array first, then numpy's protocols dispatch to pullback.

The other helpers act only inside an ``Entry``: a front door (``pb.grad``,
``pb.compile``...) running a converted function, traced or eagerly:

- ``new_buffer`` and ``as_buffer``: ``np.zeros`` & co., and numpy functions making a
  new array (``np.eye``, ``np.array`` of numbers), whose result the function writes
  into (float and complex dtypes): a fresh local Tensor, so that ``h[t] = x[t]``
  later is an in-place write on a local value;
- ``writable(x)`` at the top of a function that writes into its argument ``x`` or hands
  it on (under ``pb.grad``): the function writes into a copy, and the value it leaves
  is copied back into the caller's array (by the generated code when traced);
- ``subscript``: an element read (``x[i]``, a 0-d result) under ``pb.grad`` is a copy,
  as numpy's scalar is, not torch's view;
- ``stored``: a value that needs a gradient written into a numpy array the function
  did not make is refused with the user's line, the array and the way out (numpy
  would drop the gradient).
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from ...autograd import edges, forward_ad, record
from ...numpy_face import NumpyTensor
from ...tensor import Tensor
from ...tensor_methods import traced_gather
from ..user_lines import TraceError, source_of, user_frame
from .entry import ENTRY, at_line, entry_tracer


def stored(target: Any, value: Any) -> Any:
    """``value``, about to be written into ``target[...]`` by converted code: refused when
    ``target`` is a numpy array and ``value`` needs a gradient, which numpy would drop."""
    if isinstance(target, np.ndarray) and target.dtype != object and _needs_grad(value) \
            and ENTRY.get() is not None:
        raise _kept_array_write(source_of(user_frame()), ENTRY.get().numpy_semantics)
    return value


def _kept_array_write(src: Any, numpy_semantics: bool) -> TraceError:
    """The refusal of a write of a value that needs a gradient into a numpy array the
    function did not make (an attribute, a global, an array from an enclosing scope:
    one made or received by the function is a traced value), saying the way out."""
    name = _written(src.text) if src is not None else None
    what = f"{name!r}, a numpy array" if name else "a numpy array"
    copy = f"np.copy({name})" if name else "np.copy"
    out = ("pass it as an argument (pb.grad writes into it as numpy does), or make it in "
           f"the function (np.zeros, {copy}...) and return it beside the value "
           "(has_aux=True)") if numpy_semantics else \
        (f"make it in the function (np.zeros, {copy}...) and return it from the compiled "
         "function, assigning it where it is kept after the call")
    return TraceError(f"{at_line(src)}: writes a value that needs a gradient into {what} "
                      "the function did not make (an attribute, a global or an enclosing "
                      "function's array): numpy stores only numbers in it, so what is read "
                      "back from it would carry no gradient (pullback follows one through "
                      f"the arrays a function makes or is passed); {out}")


def _written(text: str) -> str | None:
    """The array a one-line ``a[...] = v`` or ``a[...] op= v`` (or ``a op= v``) writes
    into, as written (``self.buf``)."""
    try:
        stmt = ast.parse(text.strip()).body[0]
    except (SyntaxError, IndexError):
        return None
    targets = stmt.targets if isinstance(stmt, ast.Assign) else \
        [stmt.target] if isinstance(stmt, ast.AugAssign) else []
    if len(targets) != 1:
        return None
    target = targets[0].value if isinstance(targets[0], ast.Subscript) else targets[0]
    return ast.unparse(target) if isinstance(target, (ast.Name, ast.Attribute)) else None


def _needs_grad(x: Any) -> bool:
    if isinstance(x, Tensor):
        return x._requires_grad or (x._base is not None and x._base._requires_grad)
    if isinstance(x, (list, tuple)):
        return any(_needs_grad(y) for y in x)
    return False


def subscript(x: Any, index: Any) -> Any:
    """``x[index]`` read by converted code: with numpy's semantics an element of a
    numpy-face value (a 0-d result) is a copy, as numpy's scalar is, not a view that a
    later write into ``x`` would change (a Tensor's element stays torch's view). A
    constant array indexed by traced index arrays gathers at run time, as a Tensor does."""
    if type(x) is np.ndarray and record.TRACING:
        out = traced_gather(x, index)
        if out is not None:
            return out
    out = x[index]
    if isinstance(out, Tensor) and out._base is not None and out._data.ndim == 0 \
            and copies_elements(x, index):
        return _element(out)
    return out


def copies_elements(x: Any, index: Any) -> bool:
    """Whether ``subscript(x, index)`` copies a 0-d result (numpy's scalar), not a
    view (torch's element). A numpy-face value reads as numpy's array does under every
    front door, ``pb.compile``'s too: it is an ndarray in the user's code."""
    return type(x) is NumpyTensor and not _keeps_array(index)


def _keeps_array(index: Any) -> bool:
    """An index with an Ellipsis: numpy gives a 0-d array (a view), not a scalar."""
    return index is Ellipsis or isinstance(index, tuple) and any(i is Ellipsis for i in index)


def _element(view: Tensor) -> Tensor:
    """A copy of the 0-d ``view``, with the view's history and traced value (no op: it is
    the same value), so that a later write into the view's base leaves it alone."""
    node, nr = edges.grad_edge(view)
    if node is None and view._requires_grad:
        return view
    if node is not None and node is not view._grad_fn:
        return view  # (a view with a gradient sink of its own)
    tracer = entry_tracer()
    if tracer is not None and id(view) not in tracer.var_of:
        return view  # (of a tensor from outside the function: read anew on every call)
    t = type(view)._make(view._data.copy(), grad_fn=node)
    t._output_nr = nr
    if tracer is not None:
        tracer.same_value(t, view)
    if view._fw_tangent is not None:  # (forward mode: the element's tangent comes along)
        return forward_ad.make_dual(t, view._fw_tangent)
    return t


