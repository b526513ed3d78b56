"""The op table: every primitive op, its numpy forward and its VJP rules.

An op is declared once, beside its forward, with one rule per input:

    mul = defop("mul", np.multiply, "MulBackward0",
                vjp=(lambda g, out, x, y: g * y,
                     lambda g, out, x, y: g * x),
                uses=("y", "x"))

Every rule has the signature ``rule(g, out, *inputs, **params)``. ``uses`` says,
per rule, which of ``out`` and the inputs it reads; the runtime saves exactly
those (torch saves ``other`` for the grad of ``self``, and nothing more). The
rules are written with pullback's ops and operators only, so the same rule runs

- on numpy arrays in the eager engine (``call`` runs the forward directly),
- on Tensors when ``create_graph=True`` (``call`` records graph nodes), and
- on IR values in the compiler's adjoint pass (``call`` emits equations).

A rule's result may be broadcast larger than its input: the caller reduces it
with ``sum_to`` (static axes in generated code) and casts to the input's dtype.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

OPS: dict[str, OpDef] = {}


class OpDef:
    """One primitive: forward on numpy values, VJP rules, torch's grad_fn name."""

    __slots__ = ("name", "forward", "vjp", "uses", "grad_fn", "arg_names", "is_view",
                 "differentiable", "node_cls", "doc")

    def __init__(self, name: str, forward: Callable, grad_fn: str | None,
                 vjp: tuple | None, uses: tuple | None, is_view: bool) -> None:
        self.name = name
        self.forward = forward
        self.grad_fn = grad_fn
        self.vjp = vjp
        self.is_view = is_view
        self.differentiable = vjp is not None
        self.node_cls = None  # set by autograd.graph when the first node is made
        if vjp is None:
            self.arg_names = ()
            self.uses = ()
            return
        first = next(r for r in vjp if r is not None)
        params = list(inspect.signature(first).parameters)
        self.arg_names = tuple(p for p in params[2:] if not p.startswith("_"))
        self.uses = tuple(_parse_uses(u, self.arg_names) for u in (uses or ("",) * len(vjp)))
        if len(self.uses) != len(vjp):
            raise ValueError(f"op {name}: {len(vjp)} rules but {len(self.uses)} uses entries")

    def __repr__(self) -> str:
        return f"<op {self.name}>"

    def __call__(self, *args: Any, **params: Any) -> Any:
        handler = None  # call() inlined: this is every op's entry point
        for a in args:
            h = _HANDLERS.get(type(a), _UNSEEN)
            if h is _UNSEEN:
                h = _handler_of(type(a))
            if h is not None and h is not handler and (
                    handler is None or h.priority > handler.priority):
                handler = h
        if handler is None:
            return self.forward(*args, **params)
        return handler(self, args, params)


def _parse_uses(spec: str, arg_names: tuple) -> frozenset:
    """'x out' -> frozenset({0, 'out'}): input positions and/or the output."""
    names = spec.split()
    unknown = [n for n in names if n != "out" and n not in arg_names]
    if unknown:
        raise ValueError(f"uses names {unknown} are not rule arguments {arg_names}")
    return frozenset("out" if n == "out" else arg_names.index(n) for n in names)


def defop(name: str, forward: Callable, grad_fn: str | None = None, *,
          vjp: tuple | None = None, uses: tuple | None = None,
          is_view: bool = False) -> OpDef:
    """Declare a primitive op and put it in the table (an op without vjp is
    non-differentiable: its outputs never require grad)."""
    if name in OPS:
        raise ValueError(f"op {name!r} is declared twice")
    op = OpDef(name, forward, grad_fn, vjp, uses, is_view)
    OPS[name] = op
    return op


class Meta:
    """Shape and dtype of a value the backward does not keep (rules may read
    ``.shape``/``.dtype``/``.ndim`` of any input; reading data from a Meta is a bug)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple, dtype: np.dtype) -> None:
        self.shape = shape
        self.dtype = dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"Meta({self.shape}, {self.dtype})"

    # Reading data from a Meta fails loudly instead of computing something silently wrong
    # (numpy would otherwise treat it as an object scalar, and ``==`` as identity).
    __array_ufunc__ = None
    __hash__ = object.__hash__

    def _no_data(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{self!r} holds no data: a VJP rule read a value its op's `uses` "
                        "does not declare")

    __array__ = __bool__ = __float__ = __int__ = __index__ = __len__ = __iter__ = _no_data
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __getitem__ = _no_data


def call(op: OpDef, args: tuple, params: dict) -> Any:
    """Run ``op`` on whatever kind of values it gets.

    Tensors and IR values carry a ``_pb_dispatch`` class attribute that knows how
    to record the op; plain numpy values and Python scalars run the forward.
    """
    handler = None
    for a in args:
        h = _HANDLERS.get(type(a), _UNSEEN)
        if h is _UNSEEN:
            h = _handler_of(type(a))
        if h is not None and (handler is None or h.priority > handler.priority):
            handler = h
    if handler is None:
        return op.forward(*args, **params)
    return handler(op, args, params)


_HANDLERS: dict = {}  # type -> its _pb_dispatch (None for plain values), looked up once
_UNSEEN = object()


def _handler_of(kind: type) -> Any:
    h = _HANDLERS[kind] = getattr(kind, "_pb_dispatch", None)
    return h


def dispatcher(priority: int) -> Callable:
    """Mark a function as a value kind's ``_pb_dispatch`` (higher priority wins)."""

    def mark(fn: Callable) -> staticmethod:
        fn.priority = priority
        return staticmethod(fn)

    return mark


def reduced_axes(shape: tuple, target: tuple) -> tuple:
    """Axes to sum (keepdims=True) so that ``shape`` reduces to the broadcast-compatible
    ``target``; the sum is then reshaped to ``target`` when ``shape`` had more dims.

    >>> reduced_axes((4, 3, 2), (3, 1))
    (0, 2)
    """
    lead = len(shape) - len(target)
    return tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(target) if n == 1 and shape[lead + i] != 1)
