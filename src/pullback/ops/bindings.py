"""How users call a primitive: a Python function with torch's signature.

A primitive runs as ``op(*inputs, **params)``; users call ``pb.clamp(input, min=None,
max=None)``, ``x.mul(other)`` or ``x.clamp_(0, 1)``. These functions are made once per
op from its declaration (inputs named after ``torch_args``, params after the rule's
argument names, defaults from the forward), so a wrong call fails as Python's own
``TypeError`` naming the function, keywords work, and ``inspect.signature`` tells.

>>> from pullback.ops.elementwise import clamp_op
>>> import inspect
>>> inspect.signature(function(clamp_op, "clamp"))
<Signature (input, min=None, max=None)>
>>> inspect.signature(method(clamp_op, "clamp_", record=print))
<Signature (self, min=None, max=None)>
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from .registry import OpDef


def _signature(op: OpDef) -> tuple[list, list]:
    """(input names, [(param name, default or _REQUIRED)]) of ``op`` as torch names them."""
    n = op.n_inputs if op.n_inputs is not None else getattr(op.forward, "nin", 1)
    inputs = list(op.torch_args[:n]) + [f"input{i}" for i in range(len(op.torch_args), n)]
    try:
        found = inspect.signature(op.forward).parameters
        defaults = {k: p.default for k, p in found.items() if p.default is not p.empty}
    except (TypeError, ValueError):  # a ufunc
        defaults = {}
    params = [(p, defaults.get(p, _REQUIRED)) for p in op.arg_names[n:]]
    return inputs, params


_REQUIRED = object()


def _make(name: str, first: str, op: OpDef, body: str, env: dict, qualname: str,
          module: str) -> Callable:
    """``def name(first, ...): body`` with ``op``'s inputs and params as arguments."""
    inputs, params = _signature(op)
    inputs = [first] + ["input" if a == "self" else a for a in inputs[1:]]
    env = dict(env, _op=op)
    formal = inputs + [p if d is _REQUIRED else f"{p}=_d_{p}" for p, d in params]
    env.update({f"_d_{p}": d for p, d in params if d is not _REQUIRED})
    source = body.format(name=name, formal=", ".join(formal), inputs=", ".join(inputs),
                         keywords="".join(f", {p}={p}" for p, _ in params),
                         params=", ".join(f"{p!r}: {p}" for p, _ in params),
                         plain=" and ".join([f"type({a}) in _plain" for a in inputs[1:]])
                         or "True")
    exec(compile(source, f"<pullback binding {qualname}>", "exec"), env)
    fn = env[name]
    fn.__qualname__, fn.__module__ = qualname, module
    fn.__doc__ = f"{qualname}: the op {op.name!r} (see pullback.ops)."
    return fn


_CALL = '''
def {name}({formal}):
    return _op({inputs}{keywords})
'''

_FAST = '''
def {name}({formal}):
    if {plain}:
        return _record(_op, ({inputs},), {{{params}}})
    return _op({inputs}{keywords})
'''

_INPLACE = '''
def {name}({formal}):
    return _record(_op, ({inputs},), {{{params}}})
'''


def function(op: OpDef, name: str) -> Callable:
    """``pullback.<name>(input, ...)`` (``nn.functional``'s is the same object)."""
    fn = _FUNCTIONS.get((op, name))
    if fn is None:
        fn = _FUNCTIONS[op, name] = _make(name, _first(op), op, _CALL, {}, name, "pullback")
    return fn


_FUNCTIONS: dict = {}


def public_callable(fn: Any, name: str) -> Callable:
    """What ``pullback.<name>`` is for a binding's ``fn``: a primitive's torch-signature
    function, or the public function itself."""
    return function(fn, name) if isinstance(fn, OpDef) else fn


def method(op: OpDef, name: str, record: Callable | None = None, plain: Any = (),
           owner: str = "Tensor") -> Callable:
    """``Tensor.<name>(self, ...)``. With ``record``, operands whose types are all in
    ``plain`` go straight to it (the Tensor fast path, past the op's dispatch)."""
    if record is None:
        return _make(name, "self", op, _CALL, {}, f"{owner}.{name}", "pullback.tensor")
    return _make(name, "self", op, _FAST, {"_record": record, "_plain": plain},
                 f"{owner}.{name}", "pullback.tensor")


def inplace(op: OpDef, name: str, record_inplace: Callable) -> Callable:
    """``Tensor.<name>_(self, ...)``: ``op`` written into ``self`` by ``record_inplace``."""
    return _make(name, "self", op, _INPLACE, {"_record": record_inplace},
                 f"Tensor.{name}", "pullback.tensor")


def _first(op: OpDef) -> str:
    first = op.torch_args[0] if op.torch_args else "input"
    return "input" if first == "self" else first
