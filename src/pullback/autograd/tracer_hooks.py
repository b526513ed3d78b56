"""This thread's tracers (the compiler's): the hooks ops call while a trace runs
(``record.start_tracing`` adds them; ``record.TRACING`` says whether any thread traces),
and the scopes that hide ops from them (``untraced``) or make indices gathers
(``gathering``).
"""

from __future__ import annotations

import threading
from typing import Any


class _Hooks(threading.local):
    """This thread's tracers (the compiler): ``ops`` each get (op, args, params, out),
    ``concrete`` each get (tensor, how) when a tensor's value becomes a Python value,
    ``writes`` each get the tensor an in-place op is about to write into; ``values``
    each tell whether a tensor is a value of their graph (not a constant)."""

    def __init__(self) -> None:
        self.ops: list = []
        self.concrete: list = []
        self.writes: list = []
        self.values: list = []
        #: id of a node's copy of a numpy array -> (the copy, the array): while this
        #: thread traces (a vmap of pb.grad runs eager autograd), so the tracer reads
        #: the array itself where it was not written since (a captured mask, changed
        #: between calls, is seen), and the copy where it was
        self.copies: dict = {}


HOOKS = _Hooks()


def own_copy(a: Any) -> Any:
    """A copy of the numpy array ``a`` that a node keeps, noted while this thread
    traces (``_Hooks.copies``)."""
    c = a.copy()
    if HOOKS.ops:
        HOOKS.copies[id(c)] = (c, a)
    return c


def copied_from(c: Any) -> Any:
    """The array a node's copy ``c`` was taken from while this thread traced, or None."""
    pair = HOOKS.copies.get(id(c)) if HOOKS.copies else None
    return pair[1] if pair is not None and pair[0] is c else None


class _Gathering(threading.local):
    on = False


#: while on (a vmap's trace of one example), ``x[i]`` with a traced integer tensor ``i``
#: records a gather that reads ``i`` (every example's own index), not a guard on its value
GATHERING = _Gathering()


class gathering:
    """Inside it, this thread's tensor indices are gathers (see ``GATHERING``)."""

    def __enter__(self) -> None:
        self.saved = GATHERING.on
        GATHERING.on = True

    def __exit__(self, *exc: object) -> None:
        GATHERING.on = self.saved


class untraced:
    """Inside it this thread's tracers see no op and no conversion (a custom
    Function's forward and backward are one opaque step of the trace)."""

    def __enter__(self) -> None:
        self.saved = HOOKS.ops, HOOKS.concrete, HOOKS.writes
        HOOKS.ops, HOOKS.concrete, HOOKS.writes = [], [], []

    def __exit__(self, *exc: object) -> None:
        HOOKS.ops, HOOKS.concrete, HOOKS.writes = self.saved
