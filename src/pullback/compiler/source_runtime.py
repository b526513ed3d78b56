"""What code rewritten by the source pass (``source.py``) calls at run time.

Each helper looks at its arguments when it runs. With no traced value inside (no
Tensor that requires grad, none the active tracer recorded) it calls numpy's own
function, so numpy's behaviour is kept exactly; otherwise it builds the value with
pullback's ops, which the tracer records:

- ``np.array([...])``, ``np.asarray``, ``np.stack``, ``np.concatenate``, ``np.hstack``,
  ``np.vstack`` of lists holding traced values: one ``stack`` or ``concatenate`` op
  of the elements (the op table's ``stack`` and ``cat``: ``np.stack([t0, t1], axis=0)``
  in generated code);
- any other numpy function given such a list (``np.sum([1.0, a * a])``): the list
  becomes a traced array first, then numpy's protocols dispatch to pullback;
- ``new_buffer``: ``np.zeros`` & co. whose result the function writes into, inside a
  trace (float and complex dtypes): a fresh local Tensor, so that ``h[t] = x[t]``
  later is an in-place write on a local value;
- ``writable(x)`` at the top of a function that writes into its argument ``x``
  (under ``pb.grad``): the function writes into a copy, and the value it leaves is
  copied back into the caller's array at the end of the generated code.

>>> import numpy as np, pullback as pb
>>> a = pb.tensor(2.0, requires_grad=True)
>>> numpy_call(np.sum, [1.0, a * a])
tensor(5., dtype=pullback.float64, grad_fn=<SumBackward0>)
>>> new_buffer(np.zeros, 2)  # no trace: numpy's result
array([0., 0.])
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Callable

import numpy as np

from ..autograd import record
from ..ops import OpDef
from ..ops.elementwise import clone
from ..ops.joining import cat_op, stack_op
from ..tensor import Tensor
from .tracer import TraceError, Tracer


# ------------------------------------------------------------------ the traced call
class Entry:
    """One traced call of a rewritten function: the tracer recording it and the
    arguments it took copies of to write into (``writable``)."""

    def __init__(self, writable: bool) -> None:
        self.tracer = active_tracer()
        self.writable = writable
        self.copies: list[tuple[Tensor, Tensor, Any]] = []  # (argument, copy, copy's Var)
        self._token: Any = None

    def __enter__(self) -> Entry:
        self._token = _ENTRY.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _ENTRY.reset(self._token)

    def finish(self, out: Any) -> Any:
        """``out``, its first Tensor made to copy the written arguments back into the
        caller's arrays (in generated code: ``np.copyto(x, x_2) or loss``)."""
        var_of = self.tracer.var_of if self.copies else {}
        written = [(a, c, v) for a, c, v in self.copies if var_of.get(id(c)) is not v]
        if not written:
            return out
        for a, _, v in written:
            self._check_only_reader(a, v)
        return _map_first_tensor(out, lambda leaf: self._write_back(leaf, written))

    def _check_only_reader(self, a: Tensor, copy: Any) -> None:
        """The copy must be the argument's only reader: a read before it would see the
        caller's array after the write-back (in the generated backward), a read after
        it would miss the writes."""
        v = self.tracer.var_of[id(a)]
        readers = [e for e in self.tracer.builder.eqns if any(x is v for x in e.inputs)]
        made = next(e for e in readers if e.out is copy)
        other = next((e for e in readers if e is not made), None)
        if other is not None:
            raise TraceError(f"argument '{v.name}' is written into by {_at(made.src)} and "
                             f"also read outside it, {_at(other.src)}; write into an argument "
                             "only in the function that receives it, before anything reads it")

    def _write_back(self, leaf: Tensor, written: list) -> Tensor:
        for a, c, _ in written:
            # the proxy shares the caller's array: the trace writes into a copy, the
            # generated code (run next, on the same arguments) into the array itself
            a._data = a._data.copy()
            leaf = record.apply(WRITE_BACK, (leaf, a, c), {})
            # no source line of its own: it is listed under the function's last line
            self.tracer.builder.eqns[-1].src = None
        return leaf


_ENTRY: ContextVar[Entry | None] = ContextVar("pullback_source_entry", default=None)


def _at(src: Any) -> str:
    return "an unknown line" if src is None else f"{src.function} at {src} ({src.text})"


def active_tracer() -> Tracer | None:
    """The innermost tracer recording (the one ``record.apply`` reports to last)."""
    for hook in reversed(record.trace_hooks()):
        tracer = getattr(hook, "__self__", None)
        if isinstance(tracer, Tracer):
            return tracer
    return None


def _tracer() -> Tracer | None:
    entry = _ENTRY.get()
    return entry.tracer if entry is not None else None


def _write_back_forward(value: Any, into: np.ndarray, new: np.ndarray) -> Any:
    np.copyto(into, new)
    return value


#: ``value``, after copying ``new`` into the argument ``into``: the epilogue of a
#: function that wrote into its argument (not in the op table: only the source pass
#: makes it; impure, so no pass merges or drops it while its value is an output)
WRITE_BACK = OpDef("write_back", _write_back_forward, "WriteBackBackward0",
                   vjp=(lambda g, out, value, into, new: g, None, None), aliases=True,
                   pure=False, fresh=False, template="np.copyto({1}, {2}) or {0}")


def _map_first_tensor(x: Any, fn: Callable) -> Any:
    """``x`` with its first Tensor (depth first through tuples, lists, dicts) as
    ``fn(tensor)``."""
    done = [False]

    def walk(y: Any) -> Any:
        if done[0]:
            return y
        if isinstance(y, Tensor):
            done[0] = True
            return fn(y)
        if isinstance(y, dict):
            return {k: walk(v) for k, v in y.items()}
        if isinstance(y, (list, tuple)):
            items = [walk(v) for v in y]
            return type(y)(*items) if hasattr(y, "_fields") else type(y)(items)
        return y

    return walk(x)


# ----------------------------------------------------------------- traced values
def is_traced(x: Any) -> bool:
    """A Tensor that requires grad or that the active tracer recorded."""
    if not isinstance(x, Tensor):
        return False
    if x._requires_grad or (x._base is not None and x._base._requires_grad):
        return True
    tracer = _tracer()
    return tracer is not None and id(x) in tracer.var_of


def holds_traced(x: Any) -> bool:
    """A (nested) list or tuple with a traced value in it."""
    if isinstance(x, (list, tuple)):
        return any(is_traced(y) or holds_traced(y) for y in x)
    return False


def fresh(value: np.ndarray) -> Tensor:
    """A new Tensor holding a copy of ``value``: inside a trace a local value (a
    ``clone`` of a constant), which in-place writes may change."""
    return record.apply(clone, (value,), {})


def _data(x: Any) -> Any:
    """The numpy value of ``x`` (a Tensor's array, read without a guard)."""
    if isinstance(x, Tensor):
        return x._data
    if isinstance(x, (list, tuple)):
        return [_data(y) for y in x]
    return x


def _operand(x: Any) -> Any:
    """``x`` as an op's input: a traced Tensor as it is, a number as it is (a literal
    in generated code), anything else as the constant array it stands for."""
    if is_traced(x) or isinstance(x, (int, float, complex)):
        return x
    return np.asarray(_data(x))


def _stacked(items: list, axis: int, ref: np.ndarray) -> Tensor:
    """``np.stack(items, axis)`` recorded, as ``ref`` (numpy's result) has it."""
    out = record.apply(stack_op, tuple(_operand(a) for a in items), {"dim": axis % ref.ndim})
    return _cast(out, ref.dtype)


def traced_array(obj: Any, dtype: Any = None) -> Any:
    """``np.array(obj, dtype)`` for nested lists holding traced values: a stack of
    its elements (each a traced value, a traced array, or a constant)."""
    ref = np.array(_data(obj), dtype=dtype)  # numpy's shape and dtype (and errors)
    return _stacked([traced_array(x) if holds_traced(x) else x for x in obj], 0, ref)


def _as_array(x: Any) -> Any:
    return traced_array(x) if holds_traced(x) else x


def _traced_inside(values: Any) -> bool:
    return any(is_traced(v) or holds_traced(v) for v in values)


def _cast(t: Tensor, dtype: Any) -> Tensor:
    if dtype is None or np.dtype(dtype) == t._data.dtype:
        return t
    return t.to(np.dtype(dtype))


def _leading_ones(t: Tensor, ndim: int) -> Tensor:
    """``t`` with leading axes of length 1 up to ``ndim`` axes."""
    if t.ndim >= ndim:
        return t
    return t.reshape((1,) * (ndim - t.ndim) + tuple(t.shape))


# ------------------------------------------------ numpy functions on traced values
# (numpy's own signatures: a wrong argument raises numpy's TypeError)
def _array(object: Any, dtype: Any = None, *, copy: Any = True, order: Any = "K",
           subok: bool = False, ndmin: int = 0, like: Any = None) -> Any:
    if is_traced(object):
        out = _cast(object.clone() if copy else object, dtype)
    else:
        out = traced_array(object, dtype)
    return _leading_ones(out, ndmin)


def _asarray(a: Any, dtype: Any = None, order: Any = None, *, device: Any = None,
             copy: Any = None, like: Any = None) -> Any:
    return _array(a, dtype, copy=bool(copy))


def _ascontiguousarray(a: Any, dtype: Any = None, *, like: Any = None) -> Any:
    return _array(a, dtype, copy=False, ndmin=1)


def _stack(arrays: Any, axis: int = 0, out: Any = None, *, dtype: Any = None,
           casting: str = "same_kind") -> Any:
    if out is not None:
        return np.stack(arrays, axis, out, dtype=dtype, casting=casting)
    items = [_as_array(a) for a in arrays]
    ref = np.stack([_data(a) for a in items], axis, dtype=dtype, casting=casting)
    return _stacked(items, axis, ref)


def _concatenate(arrays: Any, axis: Any = 0, out: Any = None, *, dtype: Any = None,
                 casting: str = "same_kind") -> Any:
    if out is not None:
        return np.concatenate(arrays, axis, out, dtype=dtype, casting=casting)
    items = [_as_array(a) for a in arrays]
    if axis is None:
        items = [a.reshape(-1) if isinstance(a, Tensor) else np.ravel(a) for a in items]
        axis = 0
    ref = np.concatenate([_data(a) for a in items], axis, dtype=dtype, casting=casting)
    axis %= ref.ndim
    out = record.apply(cat_op, tuple(_operand(a) for a in items), {"dim": axis})
    return _cast(out, ref.dtype)


def _atleast(a: Any, ndim: int) -> Any:
    """numpy's atleast_1d/atleast_2d of one value (a traced list becomes an array)."""
    a = _as_array(a)
    if isinstance(a, Tensor):
        return _leading_ones(a, ndim)
    return np.atleast_1d(a) if ndim == 1 else np.atleast_2d(a)


def _hstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    items = [_atleast(a, 1) for a in tup]
    axis = 0 if items and items[0].ndim == 1 else 1
    return _concatenate(items, axis, dtype=dtype, casting=casting)


def _vstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    return _concatenate([_atleast(a, 2) for a in tup], 0, dtype=dtype, casting=casting)


#: numpy function -> its form for arguments holding traced values
_BUILDERS: dict = {np.array: _array, np.asarray: _asarray, np.asanyarray: _asarray,
                   np.ascontiguousarray: _ascontiguousarray, np.stack: _stack,
                   np.concatenate: _concatenate, np.hstack: _hstack, np.vstack: _vstack}

#: creation function -> what computes its value (``empty``: zeros, so that generated
#: code holds no uninitialized memory)
CREATION: dict = {np.zeros: np.zeros, np.ones: np.ones, np.empty: np.zeros, np.full: np.full,
                 np.zeros_like: np.zeros_like, np.ones_like: np.ones_like,
                 np.empty_like: np.zeros_like, np.full_like: np.full_like}


def new_buffer(fn: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` for a creation function of ``CREATION`` whose result the
    function writes into: inside a trace, a float buffer is a local Tensor that traced
    values may be written into; elsewhere (and for other dtypes) numpy's array."""
    if _tracer() is None:
        return fn(*args, **kwargs)
    plain = lambda x: x._data if isinstance(x, Tensor) else x
    value = CREATION[fn](*[plain(a) for a in args], **{k: plain(v) for k, v in kwargs.items()})
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "fc":
        return value
    buf = fresh(value)
    fill = args[1] if len(args) > 1 else kwargs.get("fill_value")
    if fn in (np.full, np.full_like) and is_traced(fill):
        buf[...] = fill
    return buf


def is_creation(fn: Any) -> bool:
    """A numpy function that makes a new array from a shape (``CREATION``)."""
    return _lookup(CREATION, fn) is not None


def _lookup(table: dict, fn: Any) -> Any:
    try:
        return table.get(fn)
    except TypeError:  # an unhashable callable
        return None


def numpy_call(fn: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` for a numpy function ``fn``: numpy's own call unless a
    traced value is inside a list argument."""
    if not (_traced_inside(args) or _traced_inside(kwargs.values())):
        return fn(*args, **kwargs)
    build = _lookup(_BUILDERS, fn)
    if build is not None:
        return build(*args, **kwargs)
    return fn(*[_as_array(a) for a in args], **{k: _as_array(v) for k, v in kwargs.items()})


def writable(x: Any) -> Any:
    """At the top of a function that writes into its argument ``x``: under ``pb.grad``,
    a copy of an argument of the traced call, for the function to write into (``Entry``
    copies what it leaves back into the caller's array); otherwise ``x`` itself."""
    entry = _ENTRY.get()
    if entry is None or not entry.writable or entry.tracer is None or not isinstance(x, Tensor):
        return x
    tracer = entry.tracer
    v = tracer.var_of.get(id(x))
    if v is None or not any(v is i for i in tracer.inputs):
        return x
    copy = record.apply(clone, (x,), {})
    entry.copies.append((x, copy, tracer.var_of[id(copy)]))
    return copy
