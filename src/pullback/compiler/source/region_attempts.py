"""Trying a converted loop or ``if`` as a region (``loop_regions.py``): why it cannot be
one (``why_not``: a carried value that is not an array, an array changed in place or
read through a view while its items are written, no traced value at all), and an
attempt that fails (``attempt``): what it changed in the tracers and outside (guards,
writes, random states) put back, and the reason noted for ``pb.compiler.inspect``
(``fell_back``), before the loop runs as written.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...ops.sampling import set_state_of, state_of
from ...tensor import Tensor
from .loop_writes import DEPTH


class _Unbound:
    """A carried name with no value before the loop."""

    def __repr__(self) -> str:
        return "<unbound>"


UNBOUND = _Unbound()


def _name(get: Callable) -> str:
    code = get.__code__
    return (code.co_freevars or code.co_names or ("?",))[0]


def why_not(body: Callable, getters: tuple, init: list, in_place: tuple,
            traced: bool = False, written: tuple = ()) -> str | None:
    """Why the loop cannot be a region (None: it may be)."""
    for k in written:
        name = _name(getters[k])
        if not isinstance(init[k], Tensor):
            return f"{name}, whose items it writes, is not a traced array"
        if _closes_over_alias(body, init[k]):
            return f"it reads a view of {name}, whose items it writes"
        other = next((j for j, v in enumerate(init) if j != k and _shares(v, init[k])), None)
        if other is not None:  # (y and its view z both carried: each sees the other's writes)
            return f"{_name(getters[other])} shares memory with {name}, whose items it writes"
    for k, (get, v) in enumerate(zip(getters, init)):
        name = _name(get)
        if v is UNBOUND:
            return f"{name} has no value before it"
        if isinstance(v, bool) or not isinstance(v, (Tensor, np.ndarray, np.number, float)):
            return f"{name} is a {type(v).__name__}, not an array or a float"
        if k in in_place and not isinstance(v, (float, np.integer)):  # (+= rebinds them)
            return f"{name} is an array changed in place (+= and the like)"
    if not traced and not any(isinstance(v, Tensor) for v in init) \
            and not _closes_over_tensors(body):
        return "no traced value flows through it"
    return None


def _shares(v: Any, x: Tensor) -> bool:
    """Whether the carried value ``v`` is an array sharing memory with ``x``."""
    data = v._data if isinstance(v, Tensor) else v
    return isinstance(data, np.ndarray) and np.may_share_memory(data, x._data)


def _closes_over_alias(fn: Callable, x: Tensor) -> bool:
    """Whether ``fn`` (or a loop's function it holds) reads an array sharing memory
    with ``x``: it would see the writes into ``x`` that the region's body makes into a
    new value."""
    for cell in fn.__closure__ or ():
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        data = v._data if isinstance(v, Tensor) else v
        if isinstance(data, np.ndarray) and np.may_share_memory(data, x._data):
            return True
        if callable(v) and getattr(v, "__name__", "").startswith("__pb_loop_") \
                and _closes_over_alias(v, x):
            return True
    return False


def _closes_over_tensors(fn: Callable) -> bool:
    for cell in fn.__closure__ or ():
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        if isinstance(v, Tensor) or any(isinstance(a, Tensor)
                                        for a in getattr(v, "__dict__", {}).values()):
            return True
        if callable(v) and getattr(v, "__name__", "").startswith("__pb_loop_") \
                and _closes_over_tensors(v):
            return True
    return False


def fell_back(tracers: list, body: Callable, why: str, what: str = "loop") -> None:
    code = body.__code__
    done = "unrolled" if what == "loop" else "guarded"
    note = f"{code.co_filename}:{code.co_firstlineno}: {what} {done}: {why}"
    for tr in tracers:
        tr.notes.append(note)
    return None


def attempt(tracers: list, body: Callable, region: Callable,
            what: str = "loop") -> tuple | None:
    """``region()``, or None with what it changed in the tracers and outside put back."""
    saved = [(len(tr.guards), len(tr.writes), set(tr.changed), set(tr.written),
              {k: (g, state_of(g)) for k, (g, _) in tr.rewinds.items()}) for tr in tracers]
    depth = what == "loop"  # (item writes in a branch alone stay writes: a guard)
    DEPTH[0] += depth
    try:
        return tuple(region())
    except Exception as e:  # (the plain loop runs next: a real error is raised again there)
        for tr, s in zip(tracers, saved):
            _put_back(tr, *s)
        reason = str(e).split(": ", 1)[-1] if str(e) else type(e).__name__
        return fell_back(tracers, body, reason, what)
    finally:
        DEPTH[0] -= depth


def _put_back(tr: Any, n_guards: int, n_writes: int, changed: set, written: set,
              rewinds: dict) -> None:
    del tr.guards[n_guards:], tr.writes[n_writes:]
    for key in [k for k in tr.changed if k not in changed]:
        target, restore, before = tr.changed.pop(key)
        restore(target, before)
    for key in [k for k in tr.written if k not in written]:
        t, old = tr.written.pop(key)
        np.copyto(t._data, old)
    for key, (gen, state) in list(tr.rewinds.items()):
        if key in rewinds:
            set_state_of(*rewinds[key])
        else:
            set_state_of(gen, state)
            del tr.rewinds[key]
