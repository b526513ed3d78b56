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
- ``stored``: a value that needs a gradient written into a numpy array is refused
  with the user's line (numpy would drop the gradient).

>>> import numpy as np, pullback as pb
>>> a = pb.tensor(2.0, requires_grad=True)
>>> numpy_call(np.sum, [1.0, a * a])
tensor(5., dtype=pullback.float64, grad_fn=<SumBackward0>)
>>> new_buffer(np.zeros, 2)  # no trace: numpy's result
array([0., 0.])
"""

from __future__ import annotations

import functools
import types
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ...autograd import edges, forward_ad, function, record
from ...autograd.grad_mode import no_grad
from ...numpy_face import NumpyTensor, adopt, to_face
from ...ops import OpDef
from ...ops.elementwise import clone
from ...ops.joining import cat_op, stack_op
from ...ops.numpy_extras import numpy_full, numpy_full_like
from ...pytree import tree_leaves
from ...tensor import Tensor
from ...tensor_methods import traced_gather
from ..tracer import Tracer, active_tracer
from ..user_lines import TraceError, source_of, user_frame


# ------------------------------------------------------------------ the traced call
def in_traced_entry() -> bool:
    """Whether converted code runs as a front door's trace (not eagerly: a transform
    run eagerly inside another function's trace follows eager rules, loops unrolled)."""
    entry = _ENTRY.get()
    return entry is not None and entry.traced


class Entry:
    """One run of a converted function by a front door: the tracer recording it (None
    when it runs eagerly), the call's argument Tensors, and the copies of them the
    function writes into (``writable``). With ``numpy_semantics`` (``pb.grad``'s, not
    ``pb.compile``'s) the function may write into its arguments, and the elements it
    reads are copies (``subscript``).

    The entry of a trace (``traced``: ``trace_call``'s) leaves the writes to generated
    code: its ``finish`` makes the first output copy them into the caller's arrays. Any
    other entry (eager, or a transform the traced function calls) copies them back
    itself when it exits, after the gradients it computes inside: those are with
    respect to the values passed in."""

    def __init__(self, numpy_semantics: bool, args: tuple = (), traced: bool = False) -> None:
        self.tracer = active_tracer()
        self.traced = traced
        self.numpy_semantics = numpy_semantics
        self.args = {id(t): t for t in tree_leaves(args) if isinstance(t, Tensor)}
        self.copies: list[Copy] = []
        self._token: Any = None

    def __enter__(self) -> Entry:
        self._token = _ENTRY.set(self)
        return self

    def __exit__(self, kind: Any, *exc: object) -> None:
        _ENTRY.reset(self._token)
        if kind is not None or self.traced:
            return
        for c in self.copies:
            if c.written:
                self._copy_back(c)
            else:
                self._forget(c)

    def copy_of(self, x: Tensor) -> Tensor:
        """A copy of argument ``x`` for the function to write into, made once."""
        made = next((c.copy for c in self.copies if c.arg is x), None)
        if made is None:
            made = adopt(record.apply(clone, (x,), {}), (x,))
            var = self.tracer.var_of[id(made)] if self.tracer is not None else None
            self.copies.append(Copy(x, made, var, made._vc.value, source_of(user_frame())))
        return made

    def finish(self, out: Any) -> Any:
        """``out``, its first Tensor made to copy the written arguments back into the
        caller's arrays (in generated code: ``np.copyto(x, x_2) or loss``)."""
        if not self.traced or not self.copies:
            return out
        for c in self.copies:
            if not c.written:
                self._forget(c)
        written = [c for c in self.copies if c.written]
        if not written:
            return out
        for c in written:
            self._check_only_reader(c)
        return _map_first_tensor(out, lambda leaf: self._write_back(leaf, written))

    def _forget(self, c: Copy) -> None:
        """A copy nothing wrote into: traced code reads the argument itself."""
        if self.tracer is not None:
            self.tracer.read_as_source(c.copy)

    def _check_only_reader(self, c: Copy) -> None:
        """The copy must be the argument's only reader: a read before it would see the
        caller's array after the write-back (in the generated backward), a read after it
        would miss the writes."""
        var_of = self.tracer.var_of
        v = var_of[id(c.arg)]
        readers = [e for e in self.tracer.builder.eqns if any(x is v for x in e.inputs)]
        made = next(e for e in readers if e.out is c.var)
        other = next((e for e in readers if e is not made), None)
        if other is not None:
            raise TraceError(f"argument '{v.name}' is written into by {_at(made.src)} and "
                             f"also read outside it, {_at(other.src)}; write into an argument "
                             "only in the function that receives it, before anything reads it")

    def _write_back(self, leaf: Tensor, written: list) -> Tensor:
        for c in written:
            # the proxy shares the caller's array: the trace writes into a copy, the
            # generated code (run next, on the same arguments) into the array itself
            c.arg._data = c.arg._data.copy()
            leaf = adopt(record.apply(WRITE_BACK, (leaf, c.arg, c.copy), {}), (leaf,))
            # no source line of its own: it is listed under the function's last line
            self.tracer.builder.eqns[-1].src = None
        return leaf

    def _copy_back(self, c: Copy) -> None:
        """The caller's argument takes what the function left in its copy: recorded by
        an enclosing trace, with a gradient; eagerly, as data (the gradients are taken)."""
        if self.tracer is None:
            with no_grad():
                c.arg.copy_(c.copy)
            return
        root = c.arg
        if root._base is not None and root._fw_tangent is not None:
            root = root._base  # (a dual tensor: forward mode's view of the argument)
        if root._grad_fn is None and root._base is None and root._requires_grad:
            raise TraceError(f"{_at(c.src)} writes into its argument, a tensor the traced "
                             "function may not change (its argument, or one from outside "
                             "it); pass the transform a copy (np.copy(x))")
        c.arg.copy_(c.copy)


@dataclass
class Copy:
    """``copy``: the copy of argument ``arg`` a function writes into, made by the ``def``
    line ``src`` (traced as ``var``), at the copy's version ``version``."""

    arg: Tensor
    copy: Tensor
    var: Any
    version: int
    src: Any

    @property
    def written(self) -> bool:
        return self.copy._vc.value != self.version


_ENTRY: ContextVar[Entry | None] = ContextVar("pullback_source_entry", default=None)


def _at(src: Any) -> str:
    return "an unknown line" if src is None else f"{src.function} at {src} ({src.text})"


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
    """A Tensor that requires grad, has a tangent (forward mode), or that the active
    tracer recorded."""
    return is_recorded(x) or (isinstance(x, Tensor) and x._fw_tangent is not None)


def is_recorded(x: Any) -> bool:
    """A Tensor that requires grad or that the active tracer recorded: one a reverse
    derivative may be taken of."""
    if not isinstance(x, Tensor):
        return False
    if x._requires_grad or (x._base is not None and x._base._requires_grad):
        return True
    tracer = _tracer()
    return tracer is not None and id(x) in tracer.var_of


def _in_front_door() -> bool:
    return _ENTRY.get() is not None or active_tracer() is not None


def check_function_args(cls: type, args: tuple, kwargs: dict) -> None:
    """``cls.apply(*args, **kwargs)`` inside a front door: a traced value inside a list,
    tuple or dict argument, or passed by keyword, is refused. torch's ``apply`` tracks
    only the Tensors passed to it directly (and says nothing of the others: eagerly,
    outside the front doors, pullback does the same); inside ``pb.grad`` its gradient
    would be zero, and ``pb.compile``'s generated code would keep the traced call's
    value."""
    if not _in_front_door():
        return
    where = [(f"argument {i + 1}", a) for i, a in enumerate(args) if not isinstance(a, Tensor)]
    where += [(f"keyword argument {k!r}", v) for k, v in kwargs.items()]
    for name, value in where:
        if any(is_traced(leaf) for leaf in tree_leaves(value)):
            raise TraceError(
                f"{cls.__qualname__}.apply: {name} holds a traced Tensor (one that requires "
                "grad or comes from the transformed function's inputs) inside a "
                f"{type(value).__name__}; an autograd.Function tracks only the Tensors passed "
                "to apply directly, as torch's does, so its gradient would be lost and "
                "compiled code would keep this call's value. Pass each Tensor as an "
                f"argument of its own ({cls.__qualname__}.apply(x, *ws)) and return one "
                "gradient for each from backward.")


function.check_args = check_function_args


def holds_traced(x: Any) -> bool:
    """A (nested) list or tuple with a traced value in it."""
    if isinstance(x, (list, tuple)):
        return any(is_traced(y) or holds_traced(y) for y in x)
    return False


def fresh(value: np.ndarray) -> Tensor:
    """A new numpy-face Tensor holding a copy of ``value`` (numpy made it): inside a
    trace a local value (a ``clone`` of a constant), which in-place writes may change."""
    return to_face(record.apply(clone, (value,), {}))


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
    operands = tuple(_operand(a) for a in items)
    out = record.apply(stack_op, operands, {"dim": axis % ref.ndim})
    return _cast(adopt(out, operands), ref.dtype)


def traced_array(obj: Any, dtype: Any = None) -> Any:
    """``np.array(obj, dtype)`` for nested lists holding traced values: a stack of
    its elements (each a traced value, a traced array, or a constant)."""
    ref = np.array(_data(obj), dtype=dtype)  # numpy's shape and dtype (and errors)
    return _stacked([traced_array(x) if holds_traced(x) else x for x in obj], 0, ref)


def array_like(x: Any) -> Any:
    """``x``, a (nested) list or tuple holding traced values that numpy would take as
    one numeric array (``[mu0, mu1]``, ``[[a, 0.1], [0.1, b]]``), as one traced array;
    anything else (a pytree such as ``(c, lower)``, a value) as it is."""
    if not holds_traced(x):
        return x
    try:
        ref = np.array(_data(x))
    except (ValueError, TypeError):
        return x
    return traced_array(x) if ref.dtype.kind in "biufc" else x


def _as_array(x: Any) -> Any:
    return traced_array(x) if holds_traced(x) else x


def traced_inside(values: Any) -> bool:
    return any(is_traced(v) or holds_traced(v) for v in values)


def traced_leaf(values: Any) -> bool:
    """A traced value among ``values`` or anywhere in their lists, tuples and dicts
    (odeint's ``args=({"w": [w]},)``)."""
    return any(is_traced(leaf) for leaf in tree_leaves(list(values)))


def closes_over_traced(values: Any, depth: int = 3) -> bool:
    """Whether a function among ``values`` (a callback handed to a library, such as
    odeint's field or quad's integrand) holds a traced value in its closure cells or
    defaults, its bound object's attributes, or (``depth`` levels down) in those of
    the functions it holds there (``lambda x: helper(x)`` with ``helper`` a closure)."""
    for v in values:
        fn = getattr(v, "__func__", v)
        inner: list = []
        if isinstance(fn, functools.partial):
            inner = [*fn.args, *fn.keywords.values(), fn.func]
        elif isinstance(fn, types.FunctionType):
            inner = _cell_values(fn) + list(fn.__defaults__ or ())
            owner = getattr(v, "__self__", None)
            inner += list(getattr(owner, "__dict__", {}).values())
        if traced_leaf(inner) or (depth > 1 and closes_over_traced(
                [c for c in inner if callable(c) and not isinstance(c, type)], depth - 1)):
            return True
    return False


def _cell_values(fn: types.FunctionType) -> list:
    """The values in ``fn``'s closure cells (not the empty ones)."""
    values = []
    for cell in fn.__closure__ or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:  # a name not bound yet
            pass
    return values


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
    operands = tuple(_operand(a) for a in items)
    out = record.apply(cat_op, operands, {"dim": axis})
    return _cast(adopt(out, operands), ref.dtype)


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
                   np.concatenate: _concatenate, np.hstack: _hstack, np.vstack: _vstack,
                   np.full: numpy_full, np.full_like: numpy_full_like,
                   # their dispatchers look inside the lists (numpy's protocol finds the
                   # traced choices): called as written, lists of any shapes kept
                   np.choose: np.choose, np.select: np.select}
if hasattr(np, "row_stack"):  # (numpy 2 deprecates it: vstack's alias)
    _BUILDERS[np.row_stack] = _vstack

#: creation function -> what computes its value (``empty``: zeros, so that generated
#: code holds no uninitialized memory)
CREATION: dict = {np.zeros: np.zeros, np.ones: np.ones, np.empty: np.zeros, np.full: np.full,
                 np.zeros_like: np.zeros_like, np.ones_like: np.ones_like,
                 np.empty_like: np.zeros_like, np.full_like: np.full_like}


def new_buffer(fn: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` for a creation function of ``CREATION`` whose result the
    function writes into: inside a trace, a float buffer is a local Tensor that traced
    values may be written into; elsewhere (and for other dtypes) numpy's array."""
    if _ENTRY.get() is None:
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


def as_buffer(out: Any, args: tuple, kwargs: dict) -> Any:
    """The result of a numpy function (``np.eye(2)``, ``np.array([0., 1.])``) the function
    writes into: inside an entry, a new float array (one sharing no memory with the
    arrays it was made from) becomes a local Tensor, as ``new_buffer``'s do."""
    if _ENTRY.get() is None or type(out) is not np.ndarray or out.dtype.kind not in "fc":
        return out
    if any(np.may_share_memory(out, a) for a in _arrays_in((args, kwargs))):
        return out  # a view: writes into it are writes into its source
    return fresh(out)


def _arrays_in(x: Any) -> list:
    if isinstance(x, np.ndarray):
        return [x]
    if isinstance(x, dict):
        x = list(x.values())
    if isinstance(x, (list, tuple)):
        return [a for y in x for a in _arrays_in(y)]
    return []


def stored(target: Any, value: Any) -> Any:
    """``value``, about to be written into ``target[...]`` by converted code: refused when
    ``target`` is a numpy array and ``value`` needs a gradient, which numpy would drop."""
    if isinstance(target, np.ndarray) and target.dtype != object and _needs_grad(value) \
            and _ENTRY.get() is not None:
        raise TraceError(f"{_at(source_of(user_frame()))}: a value that needs a gradient is "
                         "written into a numpy array, which would drop the gradient; make "
                         "the array in this function (np.zeros, np.empty, np.array...) or "
                         "write into a copy of it (np.copy)")
    return value


def _needs_grad(x: Any) -> bool:
    if isinstance(x, Tensor):
        return x._requires_grad or (x._base is not None and x._base._requires_grad)
    if isinstance(x, (list, tuple)):
        return any(_needs_grad(y) for y in x)
    return False


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
    if not (traced_inside(args) or traced_inside(kwargs.values())):
        return fn(*args, **kwargs)
    build = _lookup(_BUILDERS, fn)
    if build is not None:
        return build(*args, **kwargs)
    return fn(*[_as_array(a) for a in args], **{k: _as_array(v) for k, v in kwargs.items()})


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
    if type(x) is NumpyTensor and isinstance(out, Tensor) and out._base is not None \
            and out._data.ndim == 0 and not _keeps_array(index):
        entry = _ENTRY.get()
        if entry is not None and entry.numpy_semantics:
            return _element(out)
    return out


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
    tracer = _tracer()
    if tracer is not None and id(view) not in tracer.var_of:
        return view  # (of a tensor from outside the function: read anew on every call)
    t = type(view)._make(view._data.copy(), grad_fn=node)
    t._output_nr = nr
    if tracer is not None:
        tracer.same_value(t, view)
    if view._fw_tangent is not None:  # (forward mode: the element's tangent comes along)
        return forward_ad.make_dual(t, view._fw_tangent)
    return t


def writable(x: Any) -> Any:
    """At the top of a function that writes into its argument ``x`` or hands it to a
    function that may: under ``pb.grad``, a copy of an argument of the front door's call
    for the function to write into (``Entry`` copies what it leaves back into the
    caller's array, and forgets a copy nothing wrote into); otherwise ``x`` itself."""
    entry = _ENTRY.get()
    # (``x`` may be None, a default such as ``ax=None``: ``args.get`` says None too)
    if entry is None or not entry.numpy_semantics or not isinstance(x, Tensor) \
            or entry.args.get(id(x)) is not x:
        return x
    return entry.copy_of(x)


# ------------------------------------------------------------------ np.r_ and np.c_
class _IndexConcat:
    """``np.r_[...]`` / ``np.c_[...]`` from rewritten code (``concat_index``): numpy's own
    when no traced value is among the items, else one concatenate of the items made
    arrays as numpy makes them (r_: at least 1-d, along axis 0; c_: 1-d items as columns,
    at least 2-d, along the last axis)."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __getitem__(self, key: Any) -> Any:
        items = key if isinstance(key, tuple) else (key,)
        if not traced_inside(items):
            return self.obj[key]
        name = "np.c_" if self.obj is np.c_ else "np.r_"
        if any(isinstance(i, str) for i in items):
            raise TraceError(f"{name}[...] with a string directive on values that need a "
                             f"gradient is not supported; call np.concatenate instead ("
                             f"{_at(source_of(user_frame()))})")
        parts = [self._part(i, name == "np.c_") for i in items]
        return np.concatenate(parts, axis=-1 if name == "np.c_" else 0)

    def _part(self, item: Any, columns: bool) -> Any:
        if isinstance(item, slice):
            item = self.obj[item] if not columns else np.r_[item]
        if not is_traced(item):
            item = np.asarray(item)
        if item.ndim == 0:
            item = item.reshape(1)
        if columns and item.ndim == 1:
            item = item.reshape(-1, 1)
        return item


def concat_index(obj: Any) -> Any:
    """What ``np.r_`` / ``np.c_`` read in rewritten code (``_IndexConcat``)."""
    return _IndexConcat(obj) if obj is np.r_ or obj is np.c_ else obj
