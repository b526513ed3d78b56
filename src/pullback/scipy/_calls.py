"""scipy's functions that are not ufuncs (``scipy.special.logsumexp``,
``scipy.stats.norm.logpdf``, ``scipy.integrate.odeint``) convert their arguments with
``np.asarray``; on a Tensor that requires grad, ``Tensor.__array__`` refuses. This
module tells it which scipy function asked, and which pullback.scipy function to use:

    scipy.stats.norm.logpdf converts its arguments to numpy arrays, which would drop
    their gradient: use pullback.scipy.stats.norm.logpdf instead. Can't call numpy() ...

It reads the call stack: the outermost of the scipy frames around the refused
conversion is the function the program called.

Inside ``pb.grad``, ``pb.compile`` & co. no edit is needed: the source pass routes
calls of scipy's functions, and ``replacement`` gives pullback's version of one called
on traced values (``from scipy.stats import norm; norm.logpdf(x, mu)`` differentiates).
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
from typing import Any, Callable

import numpy as np

from ..compiler.source.numpy_builders import array_like
from ..compiler.source.scope import register_replacements
from ..tensor import ARRAY_REFUSED
from . import integrate, linalg, signal, special, stats

_PULLBACK = {"special": special, "stats": stats, "integrate": integrate, "linalg": linalg,
             "signal": signal}
#: where pullback's function has another signature than scipy's (jax's odeint takes
#: ``*args``), the replacement with scipy's
_SCIPY_SIGNATURE = {"integrate.odeint": integrate.scipy_odeint}


def _scipy_frame() -> Any:
    """The outermost frame of the innermost run of scipy frames on the stack (None)."""
    frame, outer = sys._getframe(2), None
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module == "scipy" or module.startswith("scipy."):
            outer = frame
        elif outer is not None:
            break
        frame = frame.f_back
    return outer


def _wrapped(frame: Any) -> Any:
    """The scipy function that the decorator's wrapper running in ``frame`` wraps
    (scipy._lib's ``wrapper`` closes over it as ``f`` or ``fun``), or None."""
    for name in frame.f_code.co_freevars:
        f = frame.f_locals.get(name)
        module = getattr(f, "__module__", None) or ""
        if isinstance(f, types.FunctionType) and module.startswith("scipy.") \
                and not module.startswith("scipy._lib"):
            return f
    return None


def _public_name(frame: Any) -> list:
    """scipy's public name of the function running in ``frame``, as its parts
    (["scipy", "stats", "norm", "logpdf"]); for a decorator's wrapper (scipy.linalg's
    functions have one), the function it wraps."""
    wrapped = _wrapped(frame) if frame.f_code.co_freevars else None
    if wrapped is not None:
        return _callable_name(wrapped)
    module = [p for p in frame.f_globals["__name__"].split(".") if not p.startswith("_")]
    owner = frame.f_locals.get("self")
    if owner is None:
        return module + [frame.f_code.co_name]
    owner = getattr(owner, "dist", owner)  # a frozen distribution: its distribution
    name = getattr(owner, "name", None) or type(owner).__name__.removesuffix("_gen")
    return module + [name, frame.f_code.co_name]


def _pullback_version(parts: list) -> str:
    """"pullback.scipy.<...>" when pullback.scipy has the same function, else ""."""
    obj = _PULLBACK.get(parts[1]) if len(parts) > 2 else None
    for part in parts[2:]:
        obj = getattr(obj, part, None)
    return "pullback." + ".".join(parts) if callable(obj) else ""


def _callable_name(f: Any) -> list:
    """scipy's public name of the callable ``f`` as its parts (``scipy.special.
    logsumexp``: ["scipy", "special", "logsumexp"]; ``scipy.stats.norm.logpdf``:
    ["scipy", "stats", "norm", "logpdf"])."""
    owner = getattr(f, "__self__", None)
    module = getattr(f, "__module__", None) or type(owner).__module__
    parts = [p for p in module.split(".") if not p.startswith("_")][:2]
    if owner is None or isinstance(owner, type(sys)):
        return parts + [getattr(f, "__name__", "")]
    owner = getattr(owner, "dist", owner)
    name = getattr(owner, "name", None) or type(owner).__name__.removesuffix("_gen")
    return parts + [name, getattr(f, "__name__", "")]


def replacement(f: Any) -> Any:
    """pullback.scipy's function of the same name as scipy's ``f``, or None (a frozen
    distribution's method is not replaced: its parameters are fixed already). A scipy
    function pullback has no version of and that calls a function back (``quad``,
    ``brentq``, ``minimize``...) gets ``_refusing(f)``: the source pass asks only when
    traced values are among the arguments or in a callback's closure."""
    if getattr(getattr(f, "__self__", None), "dist", None) is not None:
        return None
    parts = _callable_name(f)
    if ".".join(parts[1:]) in _SCIPY_SIGNATURE:
        return _SCIPY_SIGNATURE[".".join(parts[1:])]
    obj = _PULLBACK.get(parts[1]) if len(parts) > 2 else None
    for part in parts[2:]:
        obj = getattr(obj, part, None)
    if callable(obj):
        return obj
    return _refusing(f, parts) if parts[1:2] in (["integrate"], ["optimize"]) else None


def _taking_lists(fn: Callable) -> Callable:
    """pullback's ``fn`` called as scipy's is: an argument that is a list or tuple of
    traced values (``norm.logpdf(x, [mu0, mu1])``, a nested list as a matrix) is the
    array numpy would make of it, traced."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        return fn(*[array_like(a) for a in args],
                  **{k: array_like(v) for k, v in kwargs.items()})
    return call


#: what to write instead of a scipy function that calls a function back
_INSTEAD = {
    "integrate.solve_ivp": "pullback.scipy.integrate.odeint(fun, y0, t_eval, args=..., "
                           "tfirst=True), which differentiates its solve",
    "integrate": "a fixed quadrature rule written with numpy (np.polynomial.legendre."
                 "leggauss(n) gives nodes and weights: the sum of weights * f(nodes) "
                 "differentiates)",
    "optimize": "the solve on values that carry no gradient (x.detach()), then the "
                "gradient at the solution written out (the implicit function theorem: "
                "dx/dp = -(df/dx)^-1 df/dp), or a fixed number of Newton or gradient "
                "steps written with numpy",
}


def _callbacks(f: Any, args: tuple, kwargs: dict) -> list:
    """The names of the parameters of ``f`` given a function (the callbacks)."""
    try:
        bound = inspect.signature(f).bind_partial(*args, **kwargs).arguments
    except (TypeError, ValueError):
        bound = {f"argument {i + 1}": a for i, a in enumerate(args)} | kwargs
    return [name for name, v in bound.items()
            if callable(v) and not isinstance(v, (type, np.ndarray)) and
            not hasattr(v, "_pb_dispatch")]


def _refusing(f: Any, parts: list) -> Callable:
    """``f`` (a scipy function) that refuses to run when it would call a function back:
    scipy calls it with floats and reads floats, so the gradient of the traced values
    the callback closes over or receives would be lost without a word."""
    name = ".".join(parts)
    instead = _INSTEAD.get(".".join(parts[1:])) or _INSTEAD[parts[1]]

    def refuse(*args: Any, **kwargs: Any) -> Any:
        found = _callbacks(f, args, kwargs)
        if not found:
            return f(*args, **kwargs)
        raise TypeError(
            f"{name}: its function argument {found[0]!r} closes over or receives a value "
            f"that carries a gradient (or another argument does), but {name} calls it "
            "with floats and reads floats back, so that gradient would be lost; pullback "
            f"has no differentiable version of {name}. Use instead {instead}.")

    return refuse


def explain() -> str:
    frame = _scipy_frame()
    if frame is None:
        return ""
    parts = _public_name(frame)
    use = _pullback_version(parts)
    use = f"use {use} instead" if use else "pullback has no version of it yet"
    return (f"{'.'.join(parts)} converts its arguments to numpy arrays, which would drop "
            f"their gradient: {use}. ")


def _take_lists() -> None:
    """Every function of pullback.scipy.special, .linalg and .stats' distributions takes
    lists of Tensors where scipy takes an array (``_taking_lists``), called by the
    program or routed here by the source pass."""
    for module in (special, linalg):
        for name in module.__all__:
            setattr(module, name, _taking_lists(getattr(module, name)))
    for name in stats.__all__:
        dist = getattr(stats, name)
        for key in dist._functions:
            setattr(dist, key, _taking_lists(getattr(dist, key)))


_take_lists()
ARRAY_REFUSED.append(explain)
register_replacements("scipy.", replacement)
