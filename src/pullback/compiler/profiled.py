"""The profiler over generated code: while ``pb.autograd.profiler.profile`` is on, every
generated function (every live codegen ``Module``, and the ones made meanwhile) is
swapped for one timed as a ``compiled::<name>`` range (``compiled_detail=True``: a
range per statement inside), and swapped back after. The profiler itself is the eager
runtime's (``autograd/profiler.py``); it calls ``switch`` as profiling starts and
stops."""

from __future__ import annotations

import ast
import threading
from typing import Any, Callable

from pullback.transforms import codegen

from ..autograd.profiler import clock, current, on_profiling

_LOCK = threading.Lock()
_ON = False


def switch(on: bool) -> None:
    """Time generated functions from now on (True), or no more (False)."""
    global _ON
    with _LOCK:
        _ON = on
        for mod in list(codegen.MODULES):
            (_wrap_module if on else _unwrap_module)(mod)
        codegen.on_new_module(_new_module if on else None)


def _wrap_module(mod: Any) -> None:
    """Swap a generated module's function for a timed one (until the profilers end)."""
    if "_pb_untimed" in mod.__dict__:
        return
    fn = mod._pb_untimed = mod.fn
    name = "compiled::" + fn.__name__

    def timed(*args: Any) -> Any:
        rec = current()
        if rec is None:
            return fn(*args)
        run = detailed(mod, fn) if rec.compiled_detail else fn  # (made outside the range)
        ev = rec.push(name, shapes=rec.shapes(args))
        out = None
        try:
            out = run(*args)
            return out
        finally:
            rec.close(ev, out)

    timed.__name__ = fn.__name__
    mod.fn = timed


def _new_module(mod: Any) -> None:
    """A module generated while profilers are on (maybe in another thread) is timed."""
    with _LOCK:
        if _ON:
            _wrap_module(mod)


def _unwrap_module(mod: Any) -> None:
    fn = mod.__dict__.pop("_pb_untimed", None)
    if fn is not None:
        mod.fn = fn


def detailed(mod: Any, fn: Callable) -> Callable:
    """``fn`` (generated from ``mod.source``) with each statement timed, as a range named
    ``<function>:<line> <statement>``: compiled regions broken down line by line."""
    got = mod.__dict__.get("_pb_detailed")
    if got is not None:
        return got
    tree = ast.parse(mod.source)
    fdef = tree.body[0]
    labels: list[str] = []
    body: list = []
    for stmt in fdef.body:
        if isinstance(stmt, (ast.Return, ast.Delete)):
            body.append(stmt)
            continue
        text = ast.get_source_segment(mod.source, stmt).splitlines()[0]
        labels.append(f"{fn.__name__}:{stmt.lineno} {text}")
        body += [ast.parse("_pb_start = _pb_clock()").body[0], stmt,
                 ast.parse(f"_pb_line({len(labels) - 1}, _pb_start)").body[0]]
    fdef.body = body
    ast.fix_missing_locations(tree)

    def line(k: int, start: int) -> None:
        rec = current()
        if rec is not None:
            rec.close(rec.push(labels[k], start=start))

    glb = dict(fn.__globals__, _pb_clock=clock, _pb_line=line)
    exec(compile(tree, mod.filename, "exec"), glb)
    got = mod._pb_detailed = glb.pop(fdef.name)
    return got


on_profiling(switch)
