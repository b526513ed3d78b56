"""This thread's tracers (the compiler's): the hooks ops call while a trace runs
(``record.start_tracing`` adds them; ``record.TRACING`` says whether any thread traces),
and the scopes that hide ops from them (``untraced``) or make indices gathers
(``gathering``).
"""

from __future__ import annotations

import threading


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


HOOKS = _Hooks()


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
