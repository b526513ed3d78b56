"""Changes a transformed function makes to Python state outside it, made again by
generated code on every call, as eager code makes them.

A trace runs the function once; a counter it increments or a list it appends to
would change on that call only, and the guard taken after the trace would hold the
changed value. So the source pass (``source/state.py``) routes each change to state
the function did not make itself through these helpers:

- ``rebind``: ``step += 1``, ``total += loss``, ``best = x`` for a name the function
  declares ``global`` or ``nonlocal``;
- ``attr_value``: ``self.n += 1``, ``obj.last = x`` on an object the function was given
  or captured;
- ``item_value``: ``cache[k] = v``, ``counts[k] += 1`` into a captured list or dict;
- ``mutate``: ``history.append(loss)`` and the other methods that change a list, dict,
  set or deque (``MUTATORS``).

Outside a trace each does what the statement does. Inside one it makes the change
(the rest of the trace sees it), records a ``Write`` (``effects.py``): a ``callback``
equation whose generated code makes the change again with the call's values (``step
= step + 1``, ``history.append(loss)``, in program order), and has the tracer put the
state back when the trace ends (``Tracer.will_change``), since the call that traced
runs the generated code too. A relative change (``+=``, ``append``) is made relative
to the state at run time. Where the function reads that state only to change it
(``source/state.py`` finds out), its guard is left out (``Tracer.unguard``), so a
counter does not retrace every call; state the function also reads stays guarded,
with the value it had before the call, and a call that finds it changed traces again.
In-place arithmetic on an array or Tensor (``self.W += g``) is the tracer's business
(a write into a captured Tensor is written back; into a numpy array, refused).

Values stored are the call's values without their history: an ndarray (a 0-d one as
numpy's scalar) on the numpy face, a Tensor otherwise.
"""

from __future__ import annotations

import collections
import operator
import types
from typing import Any, Callable

import numpy as np

from ..tensor import Tensor
from .effects import Write, recorded
from .source.runtime import stored
from .tracer import active_tracer
from .user_lines import TraceError, source_of, user_frame

#: the operator of ``name op= value`` (and of ``name = name op value``)
OPERATORS = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul,
             "/=": operator.itruediv, "//=": operator.ifloordiv, "%=": operator.imod,
             "**=": operator.ipow, "@=": operator.imatmul, "&=": operator.iand,
             "|=": operator.ior, "^=": operator.ixor, "<<=": operator.ilshift,
             ">>=": operator.irshift, "+": operator.add, "-": operator.sub,
             "*": operator.mul, "/": operator.truediv, "//": operator.floordiv,
             "%": operator.mod, "**": operator.pow, "@": operator.matmul,
             "&": operator.and_, "|": operator.or_, "^": operator.xor,
             "<<": operator.lshift, ">>": operator.rshift}
#: the containers whose changing methods are replayed, and those methods
CONTAINERS = (list, dict, set, collections.deque, bytearray)
MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "sort",
                      "reverse", "update", "setdefault", "popitem", "add", "discard",
                      "difference_update", "intersection_update",
                      "symmetric_difference_update", "appendleft", "extendleft",
                      "popleft", "rotate"})
_ARRAYS = (np.ndarray, Tensor)
#: the ``key`` of a change to a container a call returned (``d.setdefault(k, []).append``)
RETURNED = "returned:"
_MISSING = object()


# ------------------------------------------------------------------ names
def rebind(get: Callable, value: Any, op: str | None) -> Any:
    """``name = value`` (``op`` None) or ``name op= value``, for a ``global`` or
    ``nonlocal`` name that ``get`` (``lambda: name``) reads: the name's new value."""
    tracer = active_tracer()
    old = get()
    # ``name += e`` writes into a numpy array; ``name = name + e`` binds a new one (numpy
    # leaves the old array as it was, for whoever else holds it)
    rebound = op is not None and not op.endswith("=") and _numpy_array(old)
    if tracer is not None and op is not None and _numpy_array(old) and not rebound:
        tracer.unguard(("name", _name_of(get), "value"), True)
        _array_item(tracer, old, Ellipsis, value, op, None)
        return old
    if tracer is None or (op is not None and isinstance(old, _ARRAYS) and not rebound):
        if tracer is not None:
            tracer.unguard(("name", _name_of(get), "value"), False)
        return value if op is None else OPERATORS[op](old, value)
    holder, name = _holder(get)
    if isinstance(holder, dict):
        tracer.will_change(("global", id(holder), name), holder, _put_global,
                           (name, holder.get(name, _MISSING)))
        apply = _global_setter(name, op)
    else:
        tracer.will_change(("cell", id(holder)), holder, _put_cell, _cell_value(holder))
        apply = _cell_setter(op)
    if op is not None and isinstance(old, CONTAINERS):  # (``+=`` changes a list in place)
        _will_change_contents(tracer, old)
    new = value if op is None else OPERATORS[op](old, value)
    _record(tracer, f"set_{name}", holder, apply, (value,))
    tracer.unguard(("name", name, "value"), True)
    return new


def _name_of(get: Callable) -> str:
    code = get.__code__
    return (code.co_freevars or code.co_names)[0]


def _holder(get: Callable) -> tuple:
    """The module globals (a ``global`` name) or the cell (a ``nonlocal`` one) that
    ``get`` reads, and the name."""
    code = get.__code__
    if code.co_freevars:
        return get.__closure__[0], code.co_freevars[0]
    return get.__globals__, code.co_names[0]


def _put_global(g: dict, before: tuple) -> None:
    name, value = before
    if value is _MISSING:
        g.pop(name, None)
    else:
        g[name] = value


def _cell_value(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # not bound yet
        return _MISSING


def _put_cell(cell: types.CellType, value: Any) -> None:
    if value is _MISSING:
        del cell.cell_contents
    else:
        cell.cell_contents = value


def _global_setter(name: str, op: str | None) -> Callable:
    def apply(g: dict, value: Any) -> None:
        g[name] = value if op is None else OPERATORS[op](g[name], value)
    return apply


def _cell_setter(op: str | None) -> Callable:
    def apply(cell: types.CellType, value: Any) -> None:
        cell.cell_contents = value if op is None else OPERATORS[op](cell.cell_contents, value)
    return apply


# ------------------------------------------------------------------ attributes
def attr_value(obj: Any, name: str, value: Any, op: str | None, key: str | None) -> Any:
    """What ``obj.name = value`` or ``obj.name op= value`` stores (``obj`` the function's
    argument or a captured object; ``key``: the attribute's, when the function reads it
    only to change it); the statement stores it."""
    tracer = active_tracer()
    old = getattr(obj, name) if op is not None else None
    if tracer is None or isinstance(old, _ARRAYS) or isinstance(obj, type):
        if tracer is not None:
            tracer.unguard(("attr", name, "value"), False)
        return value if op is None else OPERATORS[op](old, value)
    tracer.will_change(("attr", id(obj), name), obj, _put_attr, _attr_value(obj, name))
    if op is not None and isinstance(old, CONTAINERS):
        _will_change_contents(tracer, old)
    _record(tracer, f"set_{name}", obj, _attr_setter(name, op), (value,))
    tracer.unguard(("attr", name, "value"), key is not None)
    return value if op is None else OPERATORS[op](old, value)


def _attr_value(obj: Any, name: str) -> tuple:
    """How to put ``obj.name`` back: (name, "dict", value) when ``obj`` holds it in its
    ``__dict__``, (name, "attr", value) when found otherwise (a Module's parameter, a
    property), (name, "none", None) when it has none of its own."""
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict) and name in d:
        return name, "dict", d[name]
    on_class = getattr(type(obj), name, _MISSING)
    if isinstance(d, dict) and not hasattr(on_class, "__set__") and (
            on_class is not _MISSING or not hasattr(obj, name)):
        return name, "none", None  # (a class's value the trace shadowed, or nothing)
    return (name, "attr", getattr(obj, name)) if hasattr(obj, name) else (name, "none", None)


def _put_attr(obj: Any, before: tuple) -> None:
    name, how, value = before
    d = getattr(obj, "__dict__", None)
    if how == "dict":
        d[name] = value
    elif how == "attr":
        setattr(obj, name, value)
    elif isinstance(d, dict) and name in d:
        del d[name]
    elif hasattr(obj, name):
        delattr(obj, name)


def _attr_setter(name: str, op: str | None) -> Callable:
    def apply(obj: Any, value: Any) -> None:
        setattr(obj, name, value if op is None else OPERATORS[op](getattr(obj, name), value))
    return apply


# ------------------------------------------------------------------ items
def item_value(target: Any, index: Any, value: Any, op: str | None, key: str | None) -> Any:
    """What ``target[index] = value`` or ``target[index] op= value`` stores (``target``
    captured or reached from an argument; ``key``: its name or attribute, when the
    function reads it only to change it); the statement stores it."""
    tracer = active_tracer()
    if tracer is not None and _numpy_array(target):
        return _array_item(tracer, target, index, value, op, key)
    if tracer is None or not isinstance(target, (list, dict, collections.deque, bytearray)) \
            or (op is not None and isinstance(target[index], _ARRAYS)):
        if tracer is not None and key is not None:
            tracer.unguard(_content(key), False)
        return value if op is None else OPERATORS[op](target[index], value)
    _will_change_contents(tracer, target)
    _record(tracer, "setitem", target, _item_setter(op), (index, value))
    if key is not None:
        tracer.unguard(_content(key), True)
    return value if op is None else OPERATORS[op](target[index], value)


def _numpy_array(x: Any) -> bool:
    return isinstance(x, np.ndarray) and x.dtype != object


def _array_item(tracer: Any, target: np.ndarray, index: Any, value: Any, op: str | None,
                key: str | None) -> Any:
    """``item_value`` into a numpy array the function did not make (``calls[0] += 1``):
    written now and by generated code on every call; what the statement then stores
    is the array's new item (a self-assignment)."""
    stored(target, value)  # (a value that needs a gradient: refused)
    _will_change_array(tracer, target)
    setter = _item_setter(op)
    setter(target, index, value)
    _record(tracer, "setitem", target, setter, (index, value))
    if key is not None:
        tracer.unguard(_content(key), True)
    return target[index]


def _will_change_array(tracer: Any, a: np.ndarray) -> None:
    tracer.will_change(("array", id(a)), a, _put_array, a.copy())


def _put_array(a: np.ndarray, before: np.ndarray) -> None:
    np.copyto(a, before)


def _item_setter(op: str | None) -> Callable:
    def apply(target: Any, index: Any, value: Any) -> None:
        target[index] = value if op is None else OPERATORS[op](target[index], value)
    return apply


# ------------------------------------------------------------------ methods
def is_mutation(method: Any) -> bool:
    """A bound method of a list, dict, set or deque that changes it (``MUTATORS``)."""
    return isinstance(getattr(method, "__self__", None), CONTAINERS) and \
        getattr(method, "__name__", None) in MUTATORS


def mutate(method: Any, args: tuple, kwargs: dict, key: str | None) -> Any:
    """``method(*args, **kwargs)`` for a changing method of a container (``is_mutation``)
    the function did not make (``key``: its name or attribute, when the function only
    changes it)."""
    tracer = active_tracer()
    if tracer is None:
        return method(*args, **kwargs)
    owner = method.__self__
    if key == RETURNED:
        raise _refused(f"{method.__name__} changes a {type(owner).__name__} that a "
                       "call returned, which the compiled function could not find again "
                       "on every call; change the container by its name (d[k] = "
                       "d.get(k, []) + [x]), return the value instead, or keep this state "
                       "outside the compiled function")
    _will_change_contents(tracer, owner)
    out = method(*args, **kwargs)
    name = method.__name__
    _record(tracer, name, owner, _method_caller(name), args, kwargs)
    if key is not None:
        tracer.unguard(_content(key), True)
    return out


def not_replayed(key: str | None) -> None:
    """A call at a place where the function changes a container, which did not change
    one (a method of another object): its guards stay."""
    tracer = active_tracer()
    if tracer is not None and key is not None:
        tracer.unguard(_content(key), False)


def _method_caller(name: str) -> Callable:
    def apply(owner: Any, *args: Any, **kwargs: Any) -> None:
        getattr(owner, name)(*args, **kwargs)
    return apply


def _content(key: str) -> tuple:
    kind, _, name = key.partition(":")
    return (kind, name, "content")


def _will_change_contents(tracer: Any, c: Any) -> None:
    tracer.will_change(("contents", id(c)), c, _put_contents,
                       dict(c) if isinstance(c, dict) else list(c))


def _put_contents(c: Any, before: Any) -> None:
    if isinstance(c, list):
        c[:] = before
    elif isinstance(c, bytearray):
        c[:] = bytes(before)
    else:
        c.clear()
        c.update(before) if isinstance(c, (dict, set)) else c.extend(before)


# ------------------------------------------------------------------ recording
def _record(tracer: Any, name: str, target: Any, apply: Callable, args: tuple,
            kwargs: dict | None = None) -> None:
    recorded(Write(name, target, apply, args, kwargs))
    tracer.wrote(target)


def _refused(what: str) -> TraceError:
    """The TraceError refusing ``what`` at the user's line being traced."""
    src = source_of(user_frame())
    at = "a traced function" if src is None else f"{src} ({src.text})"
    return TraceError(f"{at}: {what}")


def unreplayable(name: str, how: str) -> None:
    """Before a statement that binds the ``global`` or ``nonlocal`` ``name`` in a way
    generated code cannot repeat (``for name in ...``, unpacking, ``with ... as name``):
    refused inside a trace."""
    if active_tracer() is None:
        return
    raise _refused(f"{how} binds {name!r}, a global or nonlocal name, which the "
                   "compiled function would do only while it is traced; assign it alone "
                   f"({name} = ... or {name} += ...), return the value instead, or keep "
                   "this state outside the compiled function")


def unreplayed_write(target: Any, how: str) -> Any:
    """``target``, about to be written into by a numpy function (``how``: ``np.copyto``,
    ``ufunc.at``, ``out=``): refused inside a trace when it is a numpy array the
    function did not make, which generated code would not write again."""
    if active_tracer() is not None and _numpy_array(target):
        raise _refused(f"{how} writes into a numpy array the function did not "
                       "make, which the compiled function would do only while it is "
                       "traced; write its items by assignment (b[0] = b[0] + 1 and "
                       "b[...] += v are made again on every call), keep the count in a "
                       "Python number (global n; n += 1) or a pb Tensor buffer, or "
                       "return the new value")
    return target


__all__ = ["CONTAINERS", "MUTATORS", "OPERATORS", "RETURNED", "attr_value", "is_mutation",
           "item_value", "mutate", "not_replayed", "rebind", "unreplayable",
           "unreplayed_write"]
