"""What a transformed function does besides computing: random draws from numpy's
generators, and calls such as ``print`` and ``logging``. Generated code must do them
on every call, in program order, with that call's values, as eager code does; a
trace that ran them once would freeze the draws and print only while tracing.

- A draw (``rs.randn(3)``, ``gen.normal(size=n)``, ``np.random.rand()``) made while
  tracing is the op ``draw``, impure: the generated code calls the generator's method
  (``randn(3)``: the bound method is a constant of the module, so the generator's
  state is read and advanced at run time). The tracer puts the generator back where
  it was when the trace ends (``Tracer.will_draw``): the call that traced runs the
  generated code too, which draws the same numbers again, so the user's generator
  ends where eager code leaves it. ``normal`` and ``uniform`` given traced parameters
  are differentiable: ``loc + scale * standard_normal(shape)`` and ``low + (high -
  low) * random(shape)`` draw the very numbers numpy's methods would.
- An effect (``print``, ``logging``, ``pb.debug.print``) is the op ``callback``, with
  the traced values among its arguments as inputs, and no result: generated code calls
  it where the program did (``print('loss', loss)``); the op itself does nothing
  (while tracing: the generated code runs on that call too; when ``create_graph``
  evaluates the IR again: the forward ran it). f-strings, ``%`` formatting,
  ``float(x)`` and ``x.item()`` written directly as its arguments are formatted when
  it runs (``Formatted``, ``Later``: the source pass makes them), so
  ``print(f"loss {loss.item():.3f}")`` prints each call's loss and retraces nothing.

>>> import numpy as np, pullback as pb
>>> rs = np.random.RandomState(0)
>>> f = pb.grad(lambda x: (x * rs.randn(2)).sum())
>>> a, b = f(np.ones(2)), f(np.ones(2))
>>> bool((a != b).all())  # fresh draws on every call
True
>>> np.random.RandomState(0).randn(4).reshape(2, 2).tolist() == [a.tolist(), b.tolist()]
True
"""

from __future__ import annotations

import builtins
import logging
from typing import Any, Callable

import numpy as np

from ..autograd import record
from ..numpy_face import NumpyTensor, to_face
from ..ops import OpDef
from ..tensor import Tensor
from .conversions import allowed
from .source.scope import LOG_NAMES
from .source.traced_values import is_traced
from .tracer import active_tracer
from .user_lines import TraceError, source_of, user_frame

GENERATORS = (np.random.RandomState, np.random.Generator)
#: methods of a generator that draw nothing
_NOT_DRAWS = frozenset({"seed", "get_state", "set_state", "spawn", "jumped",
                        "__reduce__", "__getstate__", "__setstate__"})


# -------------------------------------------------------------------- draws
def is_draw(f: Any) -> bool:
    """A bound method of a numpy ``RandomState`` or ``Generator`` that draws
    (``np.random.rand`` is one: of numpy's global RandomState)."""
    return isinstance(getattr(f, "__self__", None), GENERATORS) and \
        getattr(f, "__name__", "") not in _NOT_DRAWS


class Method:
    """A generator's method as a constant of generated code, named after it."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn

    @staticmethod
    def codegen_name(m: Method) -> str:
        return m.fn.__name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


def _draw_forward(method: Method, args: tuple, kwargs: tuple) -> np.ndarray:
    return np.asarray(method(*args, **dict(kwargs)))


def _draw_source(e: Any, args: list, literal: Callable) -> str:
    p = e.params
    text = ", ".join([literal(a) for a in p["args"]] +
                     [f"{k}={literal(v)}" for k, v in p["kwargs"]])
    call = f"{literal(p['method'])}({text})"
    return call if e.out.shape else f"np.asarray({call})"  # (numpy gives a Python float)


DRAW = OpDef("draw", _draw_forward, pure=False, fresh=True, template=_draw_source,
             draws_from=lambda params: params["method"].fn.__self__)


def seeding(f: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """``f(*args, **kwargs)`` for a seeding call, from converted code. A generator the
    traced function makes or seeds with a seed draws the same numbers on every call, as
    eager code does: its draws are constants of the trace, not draws at run time (which
    would go on along the stream of the generator the trace made)."""
    out = f(*args, **kwargs)
    tracer = active_tracer()
    seed = args[0] if args else kwargs.get("seed")
    if tracer is not None and seed is not None:
        gen = out if f is np.random.RandomState or f is np.random.default_rng else \
            np.random.randn.__self__ if f is np.random.seed else f.__self__  # (numpy's own)
        tracer.seeded[id(gen)] = gen
    return out


def draw(f: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """``f(*args, **kwargs)`` for a generator's method ``f``, from converted code."""
    tracer = active_tracer()
    if tracer is not None and id(f.__self__) in tracer.seeded and not (
            any(is_traced(a) for a in args) or any(is_traced(v) for v in kwargs.values())):
        tracer.will_draw(f.__self__)  # (a converted loop's failed attempt puts it back)
        return f(*args, **kwargs)  # (seeded in the function: the same numbers every call)
    if tracer is not None and f.__name__ == "shuffle":
        raise TraceError(f"{_where()}: {_name(f)} shuffles its argument in place, which a "
                         "trace cannot repeat on every call; use "
                         f"{type(f.__self__).__name__}.permutation, which returns a new array")
    if any(is_traced(a) for a in args) or any(is_traced(v) for v in kwargs.values()):
        return _reparameterized(f, args, kwargs)
    if tracer is None:
        return f(*args, **kwargs)
    tracer.will_draw(f.__self__)
    params = {"method": Method(f), "args": args, "kwargs": tuple(kwargs.items())}
    return to_face(record.apply(DRAW, (), params))


#: the draws whose parameters may be traced: their standard draw, and how the
#: parameters map it (the numbers are numpy's own: it draws them this way)
_REPARAMETERIZED = {
    "normal": (("loc", "scale", "size"), (0.0, 1.0, None), "standard_normal",
               lambda z, loc, scale: loc + scale * z),
    "uniform": (("low", "high", "size"), (0.0, 1.0, None), "random",
                lambda u, low, high: low + (high - low) * u),
}


def _reparameterized(f: Callable, args: tuple, kwargs: dict) -> Any:
    how = _REPARAMETERIZED.get(f.__name__)
    if how is None:
        raise TypeError(f"{_name(f)}: a value that needs a gradient was passed as a "
                        "parameter of the draw; only normal and uniform are differentiable "
                        "in their parameters (write other draws with their standard one, "
                        "e.g. scale * gen.standard_exponential(size))")
    names, defaults, standard, apply = how
    if len(args) > len(names) or set(kwargs) - set(names):
        return f(*args, **kwargs)  # numpy's own error
    bound = dict(zip(names, defaults)) | dict(zip(names, args)) | kwargs
    params = [bound[n] for n in names[:-1]]
    size = bound["size"]
    shape = np.broadcast_shapes(*(np.shape(p) for p in params)) if size is None else size
    if standard == "random" and isinstance(f.__self__, np.random.RandomState):
        standard = "random_sample"
    return apply(draw(getattr(f.__self__, standard), shape), *params)


# ------------------------------------------------------------------ effects
def is_effect(f: Any) -> bool:
    """``print``, and logging's functions and its loggers' methods that emit a record."""
    if f is builtins.print:
        return True
    owner = getattr(f, "__self__", None)
    if isinstance(owner, (logging.Logger, logging.LoggerAdapter)):
        return f.__name__ in LOG_NAMES
    return getattr(f, "__module__", None) == "logging" and \
        getattr(f, "__name__", None) in LOG_NAMES


class Formatted:
    """An f-string or ``%`` formatting of traced values, formatted when the effect
    it is an argument of runs. ``parts``: strings, and ``(value, conversion, spec)``
    for ``{value!conversion:spec}``; or ``(template, values)`` for ``template % values``."""

    def __init__(self, parts: tuple, percent: bool = False) -> None:
        self.parts = parts
        self.percent = percent

    def text(self) -> str:
        with allowed():  # (formatting for an effect: its values leave no gradient behind)
            return self._text()

    def _text(self) -> str:
        if self.percent:
            template, values = self.parts
            return template % concrete(values)
        out = []
        for p in self.parts:
            if isinstance(p, str):
                out.append(p)
            else:
                value, conversion, spec = concrete(p)
                out.append(format(_CONVERSIONS[conversion](value), spec))
        return "".join(out)


_CONVERSIONS = {-1: lambda v: v, 115: str, 114: repr, 97: ascii}


class Later:
    """``fn(value)`` (``float(loss)``, ``loss.item()``) of a traced value, taken when
    the effect it is an argument of runs."""

    def __init__(self, fn: Callable, value: Any) -> None:
        self.fn = fn
        self.value = value


def fstring(*parts: Any) -> Any:
    """An f-string from converted code: its text, or ``Formatted`` when a traced value
    is inside and a trace is recording (only as an effect's argument)."""
    if active_tracer() is None or not _holds_traced(parts):
        return Formatted(parts).text()
    return Formatted(parts)


def percent(template: Any, values: Any) -> Any:
    """``template % values`` from converted code, as ``fstring``."""
    if active_tracer() is None or not isinstance(template, str) or not _holds_traced(values):
        with allowed():
            return template % values
    return Formatted((template, values), percent=True)


def later(fn: Any, value: Any = None) -> Any:
    """``float(value)``, or ``value.item()`` (``fn`` the bound method, no ``value``),
    from converted code, as ``fstring``."""
    if value is None and getattr(fn, "__name__", None) == "item":
        fn, value = _item, getattr(fn, "__self__", None)
        if value is None:
            return fn()
    if active_tracer() is None or not is_traced(value):
        with allowed():  # (an effect's argument: formatted, not computed with)
            return fn(value)
    return Later(fn, value)


def _item(v: Any) -> Any:
    return v.item()


def concrete(x: Any) -> Any:
    """``x`` with its ``Formatted`` and ``Later`` values taken (through tuples, lists
    and dicts): what code that is not an effect is given."""
    if isinstance(x, Formatted):
        return x.text()
    if isinstance(x, Later):
        return x.fn(concrete(x.value))
    if isinstance(x, (tuple, list)):
        return type(x)(concrete(y) for y in x)
    if isinstance(x, dict):
        return {k: concrete(v) for k, v in x.items()}
    return x


def _holds_traced(x: Any) -> bool:
    if isinstance(x, (tuple, list)):
        return any(_holds_traced(y) for y in x)
    if isinstance(x, dict):
        return any(_holds_traced(y) for y in x.values())
    if isinstance(x, Later):
        return True
    return is_traced(x)


class _Slot:
    """Where the k-th input of a ``callback`` goes back into its arguments."""

    def __init__(self, k: int, numpy_face: bool) -> None:
        self.k = k
        self.numpy_face = numpy_face


class Effect:
    """A call of ``fn`` made by generated code: the arguments with ``_Slot``s where
    the call's values go (on the face the program saw them: an ndarray for the numpy
    face, a Tensor, without its history, otherwise)."""

    def __init__(self, fn: Callable, args: tuple, kwargs: dict) -> None:
        self.fn = fn
        self.args = args
        self.kwargs = kwargs

    @staticmethod
    def codegen_name(e: Effect) -> str:
        return "log_" + getattr(e.fn, "__name__", "call")

    def __call__(self, *values: Any) -> None:
        fill = lambda x: _filled(x, values)
        with allowed():
            self.fn(*concrete(fill(self.args)), **concrete(fill(self.kwargs)))

    def source(self, inputs: list, literal: Callable) -> str:
        """``print('loss', v3)`` when the call is that plain; else the bound effect."""
        if self.fn is builtins.print and _plain(self.args) and _plain(self.kwargs):
            text = lambda x: inputs[x.k] if isinstance(x, _Slot) else literal(x)
            return "print(" + ", ".join([text(a) for a in self.args] + [
                f"{k}={text(v)}" for k, v in self.kwargs.items()]) + ")"
        return f"{literal(self)}({', '.join(inputs)})"


def _plain(x: Any) -> bool:
    items = x.values() if isinstance(x, dict) else x
    return all((isinstance(a, _Slot) and a.numpy_face) or
               isinstance(a, (str, int, float, bool, type(None))) for a in items)


def _rebuilt(x: Any, leaf: Callable) -> Any:
    """``x`` made again through tuples, lists, dicts, ``Formatted`` and ``Later``, with
    ``leaf`` applied to everything else."""
    if isinstance(x, Formatted):
        return Formatted(_rebuilt(x.parts, leaf), x.percent)
    if isinstance(x, Later):
        return Later(x.fn, _rebuilt(x.value, leaf))
    if isinstance(x, (tuple, list)):
        return type(x)(_rebuilt(y, leaf) for y in x)
    if isinstance(x, dict):
        return {k: _rebuilt(v, leaf) for k, v in x.items()}
    return leaf(x)


def _filled(x: Any, values: tuple) -> Any:
    """``x`` with each ``_Slot`` the call's value for it, on its face."""
    def fill(y: Any) -> Any:
        if not isinstance(y, _Slot):
            return y
        v = values[y.k]
        return v if y.numpy_face else Tensor._make(np.asarray(v))
    return _rebuilt(x, fill)


def _slotted(x: Any, inputs: list) -> Any:
    """``x`` with each Tensor in it a ``_Slot``; the Tensors appended to ``inputs``."""
    def slot(y: Any) -> Any:
        if not isinstance(y, Tensor):
            return y
        inputs.append(y)
        return _Slot(len(inputs) - 1, type(y) is NumpyTensor)
    return _rebuilt(x, slot)


def _callback_forward(*values: np.ndarray, effect: Effect) -> tuple:
    return ()  # generated code calls the effect (its template); a trace only records it


CALLBACK = OpDef("callback", _callback_forward, pure=False, fresh=False, variadic=True,
                 outputs=tuple, template=lambda e, args, literal:
                 e.params["effect"].source(args, literal))


def callback(fn: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, run for its effect, on every call of a transformed
    function: now, outside a trace; by the generated code, inside one (returns None)."""
    if active_tracer() is None:
        with allowed():
            return fn(*concrete(args), **concrete(kwargs))
    recorded(Effect(fn, args, kwargs))
    return None


def recorded(effect: Effect) -> Effect:
    """``effect`` (its arguments still the call's values) recorded as a ``callback``
    equation: its traced values become the equation's inputs, ``_Slot``s in it."""
    inputs: list = []
    effect.args = _slotted(effect.args, inputs)
    effect.kwargs = _slotted(effect.kwargs, inputs)
    record.apply(CALLBACK, tuple(inputs), {"effect": effect})
    return effect


class Write(Effect):
    """A write into state outside the traced function (``history.append(loss)``, ``step
    += 1``, ``self.n = n``: ``mutations.py``), made by generated code on every call with
    that call's values. The values it stores are copies (generated code may reuse an
    array's memory later), a 0-d numpy-face value as numpy's scalar; a Tensor without
    its history. ``target``: the object written into (a list, an object, a cell, a
    module's globals), given to ``fn`` first."""

    def __init__(self, name: str, target: Any, fn: Callable, args: tuple,
                 kwargs: dict | None = None) -> None:
        super().__init__(fn, args, kwargs or {})
        self.name = name
        self.target = target

    @staticmethod
    def codegen_name(e: Write) -> str:
        return e.name

    def __call__(self, *values: Any) -> None:
        def fill(y: Any) -> Any:
            if not isinstance(y, _Slot):
                return y
            v = np.array(values[y.k])
            return (v[()] if v.ndim == 0 else v) if y.numpy_face else Tensor._make(v)
        self.fn(self.target, *_rebuilt(self.args, fill), **_rebuilt(self.kwargs, fill))


def _name(f: Any) -> str:
    """``numpy.random.randn`` (numpy's global generator), ``RandomState.randn``..."""
    if f.__self__ is np.random.mtrand._rand:
        return f"numpy.random.{f.__name__}"
    return f"{type(f.__self__).__name__}.{f.__name__}"


def _where() -> str:
    src = source_of(user_frame())
    return "a traced function" if src is None else f"{src} ({src.text})"


__all__ = ["CALLBACK", "DRAW", "Effect", "Formatted", "Later", "Method", "Write", "callback",
           "concrete", "draw", "fstring", "is_draw", "is_effect", "later",
           "percent", "recorded"]
