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

from .registry import OpDef, Public, subscribe


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
        fn = _FUNCTIONS[op, name] = _make(name.rpartition(".")[2], _first(op), op, _CALL, {},
                                          name, "pullback")  # (pb.special.<name>: its last part)
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


def inplace_public(fn: Callable, operands: Callable, name: str,
                   record_inplace: Callable) -> Callable:
    """``Tensor.<name>(self, ...)`` for a public function ``fn`` of torch's signature (not
    a primitive): ``operands``, of the same signature, gives the primitive call ``(op,
    inputs, params)``, which ``record_inplace`` writes into ``self``."""
    params = list(inspect.signature(fn).parameters.values())
    env: dict = {"_operands": operands, "_record": record_inplace}
    formal, call = [], []
    for i, p in enumerate(params):
        pname = "self" if i == 0 else p.name
        if p.kind is p.KEYWORD_ONLY and "*" not in formal:
            formal.append("*")
        if p.default is not p.empty:
            env[f"_d_{pname}"] = p.default
        formal.append(pname if p.default is p.empty else f"{pname}=_d_{pname}")
        call.append(f"{pname}={pname}" if p.kind is p.KEYWORD_ONLY else pname)
    source = (f"def {name}({', '.join(formal)}):\n"
              f"    op, inputs, params = _operands({', '.join(call)})\n"
              "    return _record(op, inputs, params)\n")
    exec(compile(source, f"<pullback binding Tensor.{name}>", "exec"), env)
    method = env[name]
    method.__qualname__, method.__module__ = f"Tensor.{name}", "pullback.tensor"
    method.__doc__ = f"Tensor.{name}: {fn.__name__} written into self (see pullback.ops)."
    return method


#: torch's argument parser takes numpy's name for two arguments, in every function and
#: method it parses (``x.sum(axis=0, keepdims=True)``; python_arg_parser.cpp)
TORCH_ALIASES = {"dim": "axis", "keepdim": "keepdims"}

_ALIASED = '''
def {name}({formal}):
{body}    return _fn({call})
'''


def torch_aliases(fn: Callable, qualname: str) -> Callable:
    """``fn`` taking ``axis=`` for its ``dim`` and ``keepdims=`` for its ``keepdim``, as
    torch's functions and methods do; ``fn`` itself when it has neither. The wrapper has
    ``fn``'s signature (``inspect.signature`` shows it), with each parameter from the first
    aliased one on defaulting to a marker, so that a missing or doubly given one is the
    ``TypeError`` Python would raise.

    >>> def sum(input, dim=None, keepdim=False):
    ...     return dim, keepdim
    >>> torch_aliases(sum, "sum")([1], axis=0, keepdims=True)
    (0, True)
    """
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return fn
    params = list(sig.parameters.values())
    names = {p.name for p in params}
    aliases = {real: alias for real, alias in TORCH_ALIASES.items()
               if real in names and alias not in names}
    if not aliases:
        return fn
    name = qualname.rpartition(".")[2]
    env: dict = {"_fn": fn, "_NO": _NO, "_given_twice": _given_twice, "_missing": _missing}
    formal, call, body = [], [], []
    marked = False  # from the first aliased parameter on, positional ones default to _NO
    star = False
    for i, p in enumerate(params):
        if p.kind is p.VAR_POSITIONAL:
            formal.append(f"*{p.name}")
            call.append(f"*{p.name}")
            star = True
            continue
        if p.kind is p.VAR_KEYWORD:
            continue  # (last, after the aliases)
        if p.kind is p.KEYWORD_ONLY and not star:
            formal.append("*")
            star = True
        marked = marked or p.name in aliases
        if p.default is not p.empty:
            env[f"_d_{p.name}"] = p.default
        if p.name in aliases or marked and p.kind is not p.KEYWORD_ONLY:
            formal.append(f"{p.name}=_NO")
            if p.name not in aliases:
                body.append(_fill(p, name))
        else:
            formal.append(p.name if p.default is p.empty else f"{p.name}=_d_{p.name}")
        if p.kind is p.POSITIONAL_ONLY and (
                i + 1 == len(params) or params[i + 1].kind is not p.POSITIONAL_ONLY):
            formal.append("/")
        call.append(f"{p.name}={p.name}" if p.kind is p.KEYWORD_ONLY else p.name)
    if not star:
        formal.append("*")
    for real, alias in aliases.items():
        formal.append(f"{alias}=_NO")
        p = sig.parameters[real]
        body.insert(0, f"    if {alias} is not _NO:\n"
                       f"        if {real} is not _NO:\n"
                       f"            _given_twice({name!r}, {alias!r})\n"
                       f"        {real} = {alias}\n" + _fill(p, name, "    el"))
    kwargs = next((p.name for p in params if p.kind is p.VAR_KEYWORD), None)
    if kwargs:
        formal.append(f"**{kwargs}")
        call.append(f"**{kwargs}")
    source = _ALIASED.format(name=name, formal=", ".join(formal), body="".join(body),
                             call=", ".join(call))
    exec(compile(source, f"<pullback aliases {qualname}>", "exec"), env)
    wrapper = env[name]
    wrapper.__qualname__, wrapper.__module__ = qualname, getattr(fn, "__module__", None)
    wrapper.__doc__ = fn.__doc__
    wrapper.__signature__ = sig
    return wrapper


class _Missing:
    def __repr__(self) -> str:
        return "<not given>"


_NO = _Missing()


def _fill(p: inspect.Parameter, name: str, prefix: str = "    ") -> str:
    """The line that gives a marked parameter its default (or refuses its absence)."""
    if p.default is not p.empty:
        return f"{prefix}if {p.name} is _NO:\n        {p.name} = _d_{p.name}\n"
    return f"{prefix}if {p.name} is _NO:\n        _missing({name!r}, {p.name!r})\n"


def _given_twice(name: str, alias: str) -> None:
    raise TypeError(f"{name}() got an unexpected keyword argument '{alias}'")  # torch's words


def _missing(name: str, param: str) -> None:
    raise TypeError(f"{name}() missing 1 required argument: '{param}'")


def _first(op: OpDef) -> str:
    first = op.torch_args[0] if op.torch_args else "input"
    return "input" if first == "self" else first


def install_module(prefix: str, namespace: dict, names: list) -> None:
    """Fill a module's ``namespace`` (and its ``__all__``, ``names``) with every binding
    declared with a ``<prefix><name>`` function name, now and as ops are declared later:
    ``pb.linalg`` ("linalg."), ``pb.fft`` ("fft.")."""

    def install(entry: Public) -> None:
        for full in entry.functions:
            if full.startswith(prefix):
                name = full[len(prefix):]
                namespace[name] = torch_aliases(public_callable(entry.fn, full), name)
                if name not in names:
                    names.append(name)

    def check(entry: Public) -> None:
        for full in entry.functions:
            if full.startswith(prefix) and full[len(prefix):] in namespace:
                raise ValueError(f"pullback.{full} exists already")

    subscribe(install, check)
