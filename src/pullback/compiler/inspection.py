"""Looking inside compiled functions: IR, generated source, saved values, guards.

>>> import pullback as pb
>>> @pb.compile
... def f(x, w):
...     h = (x * w).tanh()
...     return h.sum()
>>> info = pb.compiler.inspect(f, pb.ones(3), pb.ones(3, requires_grad=True))
>>> print(info.ir)
{ lambda x:f32[3] w:f32[3] .
  let t0:f32[3] = mul x w
      h:f32[3] = tanh t0
      t1:f32[] = sum_all h
  in (t1) }
>>> [s.name for s in info.saved]
['h', 'x']
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from inspect import signature
from typing import Any

import numpy as np

from pullback.transforms import native_loops

from ..ir import type_str
from ..settings import config
from .compiled import CompiledFunction
from .grad import GradFunction
from .source import traced_ints


@dataclass
class SavedValue:
    """One value the forward keeps for the backward."""

    name: str
    shape: tuple
    dtype: str
    nbytes: int
    made_by: str  # the user's source line, or "argument"

    def __str__(self) -> str:
        return f"{self.name:12s} {self.dtype}{list(self.shape)!s:16s} {self.nbytes:>10d} B  " \
               f"{self.made_by}"


@dataclass
class Inspection:
    ir: str  # the traced forward, printed
    forward: str  # generated forward source
    backward: str | None  # generated backward source (None when no gradient is needed)
    saved: list  # SavedValue per residual
    guards: list  # descriptions of the guards (traced values', then captured values')
    loops: tuple = ()  # the loops that ran unrolled or guarded: "file:line: ... why"
    native: tuple = ()  # config.native_loops: "file:line: native" or "...: Python loop: why"
    from_disk: bool = False  # the variant calls run came from the persistent cache (traced
    # again here: the kept one has no equations to show)

    def saved_report(self) -> str:
        total = sum(s.nbytes for s in self.saved)
        lines = [str(s) for s in self.saved] + [f"total {total} bytes in {len(self.saved)} values"]
        return "\n".join(lines)


def _made_by(var: Any, graph: Any) -> str:
    for e in graph.eqns:
        if any(v is var for v in e.outs):
            src = e.src
            if src is None:
                return e.op.name
            return f"{os.path.basename(src.filename)}:{src.lineno}  {src.text}"
    return "argument"


def saved_values(residuals: list, graph: Any) -> list:
    out = []
    for v in residuals:
        nbytes = int(np.prod(v.shape, dtype=np.int64)) * v.dtype.itemsize
        out.append(SavedValue(v.name or f"v{v.id}", v.shape, type_str(v).split("[")[0], nbytes,
                              _made_by(v, graph)))
    return out


def _guards(traced: Any) -> list:
    """The guards on traced values, then those on the values the function captured."""
    captured = traced.captured.describe() if traced.captured is not None else []
    return [gd.describe() for gd in traced.guards] + captured


def _takes_none(fn: Any) -> None:
    """Refuse ``inspect(g)`` of a function that takes arguments: they pick the variant."""
    user = getattr(fn, "fn", None)
    if not callable(user):
        return
    try:
        sig = signature(user)
        sig.bind()
    except TypeError:
        name = getattr(user, "__name__", type(user).__name__)
        raise TypeError(f"inspect(fn, *args): {name}{_plain(sig)} takes arguments: pass the "
                        "ones to inspect it for, as you call it (each shape, dtype and "
                        "static value has its own generated code)") from None
    except ValueError:  # (no signature to read: the front door's own error follows)
        pass


def _plain(sig: Any) -> str:
    return "(" + ", ".join(p.replace(annotation=p.empty).__str__()
                           for p in sig.parameters.values()) + ")"


def inspect(fn: Any, *args: Any) -> Inspection:
    """IR, generated code, saved values and guards of ``fn`` (a ``pb.compile`` or
    ``pb.grad``/``pb.value_and_grad`` function) for these example arguments."""
    if not args:
        _takes_none(fn)
    args = traced_ints(getattr(fn, "fn", None), args)  # (as the front door's call does)
    if isinstance(fn, CompiledFunction):
        v = fn.lookup(args)
        from_disk = v.disk is not None
        if from_disk:
            with config.override(cache_dir=None):
                v = fn.traced_variant(args)
        g = v.traced.graph
        bwd = None
        saved: list = []
        if v.split is not None:
            bwd = v.backward_module(tuple(True for _ in v.wrt),
                                    tuple(True for _ in v.split.backward.inputs[
                                        len(v.split.residuals):])).source
            saved = saved_values(v.split.residuals, v.split.forward)
        return Inspection(str(g), v.forward.source, bwd, saved, _guards(v.traced),
                          v.traced.notes, native_loops.notes(g), from_disk)
    if isinstance(fn, GradFunction):
        v = fn.build(args)
        from_disk = not v.traced.graph.eqns and bool(config.cache_dir)
        if from_disk:  # (a graph without equations: the persistent cache's)
            with config.override(cache_dir=None):
                v = fn.build(args)
        return Inspection(str(v.traced.graph), v.module.source, None, [], _guards(v.traced),
                          v.traced.notes, native_loops.notes(v.traced.graph), from_disk)
    raise TypeError(f"inspect: expected a pb.compile or pb.grad function, got {type(fn).__name__}")
