"""numpy's protocols for Tensors: unmodified numpy code on Tensors records pullback ops.

``np.tanh(x) @ w``, ``np.sum(h, axis=1)``, ``np.maximum(z, 0)`` or ``ndarray - Tensor``
dispatch here (``Tensor.__array_ufunc__`` / ``__array_function__``) and run the function
the op table declares for that numpy name (``numpy=`` in ``pullback.ops``), with numpy's
semantics (``axis``/``keepdims``, numpy's dtype rules), so the result is a Tensor with a
``grad_fn``. Anything not mapped and extra ufunc keywords run plainly on the arrays
(read-only: a function writing into a Tensor's data raises) when no gradient is
needed and give Tensors; when a gradient would be needed they raise a TypeError
rather than lose it. numpy's functions that write into an argument (``ufunc.at``,
``np.copyto``, ``np.put``..., ``out=``) are in-place ops (numpy_inplace.py).

>>> import numpy as np, pullback as pb
>>> x = pb.tensor([[1., -2.], [3., 4.]], requires_grad=True)
>>> y = np.sum(np.maximum(x, 0) * np.array([1., 2.], dtype=np.float32), axis=1)
>>> y
tensor([ 1., 11.], grad_fn=<SumBackward1>)
>>> y.sum().backward()
>>> x.grad
tensor([[1., 0.],
        [1., 2.]])
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .autograd import messages, record
from .autograd.grad_mode import STATE
from .ops import Public, numpy_ufuncs, subscribe
from .ops.elementwise import clone
from .ops.table.args import Kept, Unsupported, value
from .ops.writes import copy


# ------------------------------------------------------------------------ values
def _wrap(result: Any) -> Any:
    """numpy results as Tensors (also inside tuples and lists)."""
    Tensor = record.Tensor
    if isinstance(result, Tensor):
        return result
    if isinstance(result, Kept):
        return result.value
    if isinstance(result, (np.ndarray, np.generic)):
        return Tensor._make(np.asarray(result))
    if isinstance(result, (tuple, list)):
        items = [_wrap(r) for r in result]
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    return result


def _unwrap(x: Any) -> Any:
    """Tensors (also inside tuples, lists and dicts) as arrays; a tracer is told that
    the value leaves the graph."""
    if isinstance(x, record.Tensor):
        record.notify_concrete(x, "__array__")
        return x._data
    if isinstance(x, (tuple, list)):
        return type(x)(_unwrap(v) for v in x)
    if isinstance(x, dict):
        return {k: _unwrap(v) for k, v in x.items()}
    return x


def _any_tensor(x: Any, test: Callable) -> bool:
    """Whether some Tensor in ``x`` (also inside tuples, lists and dicts) passes ``test``."""
    if isinstance(x, record.Tensor):
        return test(x)
    if isinstance(x, (tuple, list)):
        return any(_any_tensor(v, test) for v in x)
    if isinstance(x, dict):
        return any(_any_tensor(v, test) for v in x.values())
    return False


def _needs_grad(x: Any) -> bool:
    return _any_tensor(x, lambda t: t._requires_grad)


def _has_tangent(x: Any) -> bool:
    """Whether ``x`` holds a dual tensor (forward mode's level is open)."""
    return _any_tensor(x, lambda t: t._fw_tangent is not None)


def _has_float(x: Any) -> bool:
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype.kind in "fc"
    if isinstance(x, (tuple, list)):
        return any(_has_float(v) for v in x)
    return isinstance(x, (float, complex))


def _frozen(x: Any, views: list) -> Any:
    """``_unwrap``, with each Tensor's data given as a read-only view (kept in ``views``):
    a numpy function that writes into an argument this module does not know raises."""
    if isinstance(x, record.Tensor):
        record.notify_concrete(x, "__array__")
        v = x._data.view()
        v.flags.writeable = False
        views.append(v)
        return v
    if isinstance(x, (tuple, list)):
        return type(x)(_frozen(v, views) for v in x)
    if isinstance(x, dict):
        return {k: _frozen(v, views) for k, v in x.items()}
    return x


def _thawed(result: Any, views: list) -> Any:
    """A result that is a read-only view of a Tensor's data (``_frozen``): a copy."""
    if isinstance(result, np.ndarray) and not result.flags.writeable and any(
            np.may_share_memory(result, v) for v in views):
        return result.copy()
    if isinstance(result, (tuple, list)) and not hasattr(result, "_fields"):
        return type(result)(_thawed(r, views) for r in result)
    return result


def _tensor_args(args: tuple, kwargs: dict) -> str:
    where = [f"argument {i}" for i, a in enumerate(args) if isinstance(a, record.Tensor)]
    where += [f"'{k}'" for k, a in kwargs.items() if isinstance(a, record.Tensor)]
    return ", ".join(where) or "an argument"


def _fallback(name: str, fn: Callable, args: tuple, kwargs: dict, hint: str = "") -> Any:
    """Run ``fn`` on the arrays; refuse when a gradient would have been needed (``name``:
    the function's qualified name, ``hint``: the pullback function to use instead).
    The Tensors' data is read-only to ``fn``; ``out=`` Tensors are written by an
    in-place copy (recorded, as any in-place op)."""
    grad = STATE.grad_enabled and (_needs_grad(args) or _needs_grad(kwargs))
    # forward mode refuses as reverse mode does: a tangent would be lost silently
    tangent = record.FORWARD is not None and (_has_tangent(args) or _has_tangent(kwargs))
    text = messages.NUMPY_NOT_DIFFERENTIABLE if grad else messages.NUMPY_NO_TANGENT
    out = kwargs.get("out")
    hint = f"Use {hint} instead. " if hint else ""
    if (grad or tangent) and out is not None:
        raise TypeError(text.format(name=name + " with out=", hint=hint))
    outs = out if isinstance(out, tuple) else (out,)
    if out is not None and record.trace_hooks() and any(
            isinstance(o, np.ndarray) for o in outs):
        raise TypeError(f"{name} writes into its argument 'out', a numpy array, in traced "
                        "code: the write would happen only while tracing. Make the array "
                        "in the function (np.zeros, np.empty...) or drop out=")
    temps = tuple(o._data.copy() if isinstance(o, record.Tensor) else o for o in outs)
    rest = {k: v for k, v in kwargs.items() if k != "out"}
    if rest.get("overwrite_input"):
        rest["overwrite_input"] = False  # (numpy may leave the input as it was)
    views: list = []
    call_kwargs = _frozen(rest, views)
    if out is not None:
        call_kwargs["out"] = temps if isinstance(out, tuple) else temps[0]
    try:
        result = fn(*_frozen(args, views), **call_kwargs)
    except ValueError as e:
        if "read-only" not in str(e):
            raise
        raise TypeError(f"{name} writes into its argument, a Tensor ({_tensor_args(args, rest)})"
                        ", a write pullback cannot record; write with an assignment "
                        "(x[...] = ...) or call it on a numpy array (np.array(x))") from None
    if (grad or tangent) and (_has_float(result) or result is None and out is None):
        # (None: the values left, into a file or a buffer (np.save), their gradient too)
        raise TypeError(text.format(name=name, hint=hint))
    if out is None:
        return _wrap(_thawed(result, views))
    # numpy returns the out= objects themselves: give back the user's Tensors, which
    # take numpy's result by an in-place copy (a new version, seen by a trace)
    for o, t in zip(outs, temps):
        if isinstance(o, record.Tensor):
            record.apply_inplace(copy, (o, t), {})
    return outs[0] if len(outs) == 1 else outs


def _out_tensor(out: Any) -> Any:
    """The one Tensor ``out=`` names (None: none, or several outputs)."""
    o = out[0] if isinstance(out, tuple) and len(out) == 1 else out
    return o if isinstance(o, record.Tensor) else None


def _unaliased(values: Any, out: Any) -> Any:
    """``values`` with each Tensor sharing memory with the ``out=`` Tensor cloned: the
    result's history must not save memory the write into ``out`` changes (as torch's
    in-place ops save the original ``self``)."""
    o = _out_tensor(out)
    if o is None:
        return values

    def fresh(v: Any) -> Any:
        if isinstance(v, record.Tensor) and np.may_share_memory(v._data, o._data):
            return clone(v)
        return v
    if isinstance(values, dict):
        return {k: fresh(v) for k, v in values.items()}
    return tuple(fresh(v) for v in values)


def _into_out(result: Any, out: Any) -> Any:
    """``result`` (computed by the table) written into ``out=``, a Tensor, in place;
    anything numpy would decide otherwise (broadcasting into ``out``, a cast it refuses,
    several outputs) goes to numpy (``Unsupported``)."""
    o = _out_tensor(out)
    if not (o is not None and isinstance(result, record.Tensor)) \
            or tuple(o.shape) != tuple(result.shape) \
            or not np.can_cast(result._data.dtype, o._data.dtype, "same_kind"):
        raise Unsupported
    record.apply_inplace(copy, (o, result), {})
    return o


# -------------------------------------------------- the tables, from the op table
#: numpy ufunc -> the pullback function with its signature (for ``__call__``)
UFUNCS: dict = {}
#: numpy function -> the pullback implementation with numpy's signature
FUNCTIONS: dict = {}
#: ufuncs of other libraries (scipy.special's) -> (qualified name, the pullback function
#: to suggest in errors, or "")
FOREIGN: dict = {}
#: numpy function -> its form writing into a Tensor argument (``np.copyto``, ``np.put``...;
#: numpy_inplace.py fills it)
WRITERS: dict = {}
#: gufuncs whose table form takes these keywords as numpy's (``np.vecdot(a, b, axis=0)``)
KEYWORDS: dict = {np.vecdot: {"axis"}}
_NONE: frozenset = frozenset()
#: ufunc method (``"at"``) -> its form writing into a Tensor (numpy_inplace.py)
UFUNC_METHODS: dict = {}
#: called with a ufunc that is in neither table: may add it to both (pullback.scipy
#: registers scipy.special's ufuncs this way, once the program has imported scipy)
RESOLVERS: list = []


def _install(entry: Public) -> None:
    for np_fn, impl in entry.numpy.items():
        (UFUNCS if isinstance(np_fn, np.ufunc) else FUNCTIONS)[np_fn] = impl


subscribe(_install)


def _method(fn: Callable) -> Callable:
    """A ufunc method of ``ops/numpy_ufuncs.py`` (``outer``, ``reduce``...), with
    ``out=`` written as the other ``out=`` forms are (``_into_out``)."""
    def run(ufunc: np.ufunc, *inputs: Any, out: Any = None, **kwargs: Any) -> Any:
        if out is None:
            return _wrap(fn(ufunc, *(value(x) for x in inputs), **kwargs))
        return _into_out(fn(ufunc, *(value(x) for x in _unaliased(inputs, out)), **kwargs),
                         out)
    return run


UFUNC_METHODS.update({name: _method(getattr(numpy_ufuncs, name))
                      for name in ("outer", "reduce", "accumulate", "reduceat")})


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """``Tensor.__array_ufunc__``: a numpy ufunc with a Tensor among its operands."""
    if ufunc not in UFUNCS and ufunc not in FOREIGN:
        for resolve in RESOLVERS:
            resolve(ufunc)
    qualified, hint = FOREIGN.get(ufunc, (f"numpy.{ufunc.__name__}", ""))
    name = qualified if method == "__call__" else f"{qualified}.{method}"
    try:
        keywords = {k: v for k, v in kwargs.items() if k != "out"} if kwargs else kwargs
        if method == "__call__" and ufunc in UFUNCS \
                and (not keywords or keywords.keys() <= KEYWORDS.get(ufunc, _NONE)):
            result = UFUNCS[ufunc](*(value(x) for x in _unaliased(inputs, kwargs.get("out"))),
                                   **keywords)
            return _into_out(result, kwargs["out"]) if "out" in kwargs else _wrap(result)
        if method == "__call__" and ufunc in UFUNCS \
                and set(keywords) <= numpy_ufuncs.CALL_KEYWORDS:
            out = kwargs.get("out")
            if out is not None and _out_tensor(out) is None:
                if _needs_grad(inputs) or _needs_grad(keywords):
                    raise TypeError(f"{name} writes into 'out', a numpy array, which cannot "
                                    "hold a result that needs a gradient: make out from a "
                                    "Tensor operand (np.zeros_like(x)) instead")
                raise Unsupported  # (numpy's, into the array)
            result = numpy_ufuncs.call(UFUNCS[ufunc], ufunc, tuple(
                value(x) for x in _unaliased(inputs, out)), _out_tensor(out), **keywords)
            return _wrap(result) if out is None else _into_out(result, out)
        if method in UFUNC_METHODS:
            return UFUNC_METHODS[method](ufunc, *inputs, **kwargs)
    except Unsupported:
        pass
    return _fallback(name, getattr(ufunc, method), inputs, kwargs, hint)


def array_function(func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
    """``Tensor.__array_function__``: a numpy function with a Tensor among its arguments."""
    if not all(issubclass(t, (record.Tensor, np.ndarray)) for t in types):
        return NotImplemented
    writer = WRITERS.get(func)
    handler = FUNCTIONS.get(func)
    try:
        if writer is not None:
            return writer(*args, **kwargs)
    except Unsupported:
        pass
    if handler is not None:
        try:
            if kwargs.get("out") is not None:
                rest = {k: v for k, v in kwargs.items() if k != "out"}
                out = kwargs["out"]
                return _into_out(handler(*_unaliased(args, out), **_unaliased(rest, out)),
                                 out)
            return _wrap(handler(*args, **kwargs))
        except Unsupported:
            pass
    return _fallback(f"numpy.{func.__name__}", func, args, kwargs)


# creation functions are not ops: creation.py registers np.zeros_like & co., which make
# new tensors from an argument's shape and dtype


def _metadata(fn: Callable) -> Callable:
    """np.ndim / np.shape / np.size of a Tensor: they read no values (so a traced
    argument gets no guard)."""
    def read(a, *args, **kw):
        return fn(getattr(a, "_data", a), *args, **kw)
    return read


for _f in (np.ndim, np.shape, np.size):
    FUNCTIONS[_f] = _metadata(_f)

