"""scipy's functions that are not ufuncs (``scipy.special.logsumexp``,
``scipy.stats.norm.logpdf``, ``scipy.integrate.odeint``) convert their arguments with
``np.asarray``; on a Tensor that requires grad, ``Tensor.__array__`` refuses. This
module tells it which scipy function asked, and which pullback.scipy function to use:

    scipy.stats.norm.logpdf converts its arguments to numpy arrays, which would drop
    their gradient: use pullback.scipy.stats.norm.logpdf instead. Can't call numpy() ...

It reads the call stack: the outermost of the scipy frames around the refused
conversion is the function the program called.
"""

from __future__ import annotations

import sys
from typing import Any

from ..tensor import ARRAY_REFUSED
from . import integrate, special, stats

_PULLBACK = {"special": special, "stats": stats, "integrate": integrate}


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


def _public_name(frame: Any) -> list:
    """scipy's public name of the function running in ``frame``, as its parts
    (["scipy", "stats", "norm", "logpdf"])."""
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
