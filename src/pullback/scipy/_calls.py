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

import sys
import types
from typing import Any

from ..compiler.source_ast import register_replacements
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
    distribution's method is not replaced: its parameters are fixed already)."""
    if getattr(getattr(f, "__self__", None), "dist", None) is not None:
        return None
    parts = _callable_name(f)
    if ".".join(parts[1:]) in _SCIPY_SIGNATURE:
        return _SCIPY_SIGNATURE[".".join(parts[1:])]
    obj = _PULLBACK.get(parts[1]) if len(parts) > 2 else None
    for part in parts[2:]:
        obj = getattr(obj, part, None)
    return obj if callable(obj) else None


def explain() -> str:
    frame = _scipy_frame()
    if frame is None:
        return ""
    parts = _public_name(frame)
    use = _pullback_version(parts)
    use = f"use {use} instead" if use else "pullback has no version of it yet"
    return (f"{'.'.join(parts)} converts its arguments to numpy arrays, which would drop "
            f"their gradient: {use}. ")


ARRAY_REFUSED.append(explain)
register_replacements("scipy.", replacement)
