"""One run of a converted function by a front door (``Entry``): the tracer recording it,
the copies of its arguments it writes into (``writable``), and how what it leaves in
them goes back into the caller's arrays (copied back, or ``WRITE_BACK`` in generated
code).
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ...autograd import record
from ...autograd.grad_mode import no_grad
from ...numpy_face import adopt
from ...ops import OpDef
from ...ops.elementwise import clone
from ...pytree import tree_leaves
from ...tensor import Tensor
from ..tracer import Tracer, active_tracer
from ..user_lines import TraceError, source_of, user_frame


def in_traced_entry(nested: bool = False) -> bool:
    """Whether converted code runs as a front door's trace (not eagerly: a transform
    run eagerly inside another function's trace follows eager rules, loops unrolled).
    ``nested``: a transform inside a trace counts too (as ``pb.grad`` inside
    ``pb.vmap``'s: a loop that stops early and writes no items becomes a region there,
    so that the batch runs it once)."""
    entry = ENTRY.get()
    return entry is not None and (entry.in_trace if nested else entry.traced)


class Entry:
    """One run of a converted function by a front door: the tracer recording it (None
    when it runs eagerly), the call's argument Tensors, and the copies of them the
    function writes into (``writable``). With ``numpy_semantics`` (``pb.grad``'s, not
    ``pb.compile``'s) the function may write into its arguments, and the elements it
    reads are copies (``subscript``).

    The entry of a trace (``traced``: ``trace_call``'s) leaves the writes to generated
    code: its ``finish`` makes the first output copy them into the caller's arrays. Any
    other entry (eager, or a transform the traced function calls) copies them back
    itself when it exits, after the gradients it computes inside: those are with
    respect to the values passed in."""

    def __init__(self, numpy_semantics: bool, args: tuple = (), traced: bool = False) -> None:
        self.tracer = active_tracer()
        self.traced = traced
        self.numpy_semantics = numpy_semantics
        self.args = {id(t): t for t in tree_leaves(args) if isinstance(t, Tensor)}
        self.copies: list[Copy] = []
        self._token: Any = None

    def __enter__(self) -> Entry:
        # (a transform inside a trace, as ``pb.grad`` inside ``pb.vmap``'s)
        outer = ENTRY.get()
        self.in_trace = self.traced or (outer is not None and outer.in_trace
                                        and self.tracer is outer.tracer)
        self._token = ENTRY.set(self)
        return self

    def __exit__(self, kind: Any, *exc: object) -> None:
        ENTRY.reset(self._token)
        if kind is not None or self.traced:
            return
        for c in self.copies:
            if c.written:
                self._copy_back(c)
            else:
                self._forget(c)

    def copy_of(self, x: Tensor) -> Tensor:
        """A copy of argument ``x`` for the function to write into, made once."""
        made = next((c.copy for c in self.copies if c.arg is x), None)
        if made is None:
            made = adopt(record.apply(clone, (x,), {}), (x,))
            var = self.tracer.var_of[id(made)] if self.tracer is not None else None
            self.copies.append(Copy(x, made, var, made._vc.value, source_of(user_frame())))
        return made

    def finish(self, out: Any) -> Any:
        """``out``, its first Tensor made to copy the written arguments back into the
        caller's arrays (in generated code: ``np.copyto(x, x_2) or loss``)."""
        if not self.traced or not self.copies:
            return out
        for c in self.copies:
            if not c.written:
                self._forget(c)
        written = [c for c in self.copies if c.written]
        if not written:
            return out
        for c in written:
            self._check_only_reader(c)
        return _map_first_tensor(out, lambda leaf: self._write_back(leaf, written))

    def _forget(self, c: Copy) -> None:
        """A copy nothing wrote into: traced code reads the argument itself."""
        if self.tracer is not None:
            self.tracer.read_as_source(c.copy)

    def _check_only_reader(self, c: Copy) -> None:
        """The copy must be the argument's only reader: a read before it would see the
        caller's array after the write-back (in the generated backward), a read after it
        would miss the writes."""
        var_of = self.tracer.var_of
        v = var_of[id(c.arg)]
        readers = [e for e in self.tracer.builder.eqns if any(x is v for x in e.inputs)]
        made = next(e for e in readers if e.out is c.var)
        other = next((e for e in readers if e is not made), None)
        if other is not None:
            raise TraceError(f"argument '{v.name}' is written into by {at_line(made.src)} and "
                             f"also read outside it, {at_line(other.src)}; write into an argument "
                             "only in the function that receives it, before anything reads it")

    def _write_back(self, leaf: Tensor, written: list) -> Tensor:
        for c in written:
            # the proxy shares the caller's array: the trace writes into a copy, the
            # generated code (run next, on the same arguments) into the array itself
            c.arg._data = c.arg._data.copy()
            leaf = adopt(record.apply(WRITE_BACK, (leaf, c.arg, c.copy), {}), (leaf,))
            # no source line of its own: it is listed under the function's last line
            self.tracer.builder.eqns[-1].src = None
        return leaf

    def _copy_back(self, c: Copy) -> None:
        """The caller's argument takes what the function left in its copy: recorded by
        an enclosing trace, with a gradient; eagerly, as data (the gradients are taken)."""
        if self.tracer is None:
            with no_grad():
                c.arg.copy_(c.copy)
            return
        root = c.arg
        if root._base is not None and root._fw_tangent is not None:
            root = root._base  # (a dual tensor: forward mode's view of the argument)
        if root._grad_fn is None and root._base is None and root._requires_grad:
            raise TraceError(f"{at_line(c.src)} writes into its argument, a tensor the traced "
                             "function may not change (its argument, or one from outside "
                             "it); pass the transform a copy (np.copy(x))")
        c.arg.copy_(c.copy)


@dataclass
class Copy:
    """``copy``: the copy of argument ``arg`` a function writes into, made by the ``def``
    line ``src`` (traced as ``var``), at the copy's version ``version``."""

    arg: Tensor
    copy: Tensor
    var: Any
    version: int
    src: Any

    @property
    def written(self) -> bool:
        return self.copy._vc.value != self.version


ENTRY: ContextVar[Entry | None] = ContextVar("pullback_source_entry", default=None)


def at_line(src: Any) -> str:
    return "an unknown line" if src is None else f"{src.function} at {src} ({src.text})"


def entry_tracer() -> Tracer | None:
    entry = ENTRY.get()
    return entry.tracer if entry is not None else None


def _write_back_forward(value: Any, into: np.ndarray, new: np.ndarray) -> Any:
    np.copyto(into, new)
    return value


#: ``value``, after copying ``new`` into the argument ``into``: the epilogue of a
#: function that wrote into its argument (not in the op table: only the source pass
#: makes it; impure, so no pass merges or drops it while its value is an output)
WRITE_BACK = OpDef("write_back", _write_back_forward, "WriteBackBackward0",
                   vjp=(lambda g, out, value, into, new: g, None, None), aliases=True,
                   pure=False, fresh=False, template="np.copyto({1}, {2}) or {0}")


def _map_first_tensor(x: Any, fn: Callable) -> Any:
    """``x`` with its first Tensor (depth first through tuples, lists, dicts) as
    ``fn(tensor)``."""
    return _mapped_first(x, fn, [False])


def _mapped_first(y: Any, fn: Callable, done: list) -> Any:
    """``_map_first_tensor``'s walk (a module function: a closure calling itself is a
    reference cycle, which kept ``fn`` and what it holds alive until the cyclic gc ran)."""
    if done[0]:
        return y
    if isinstance(y, Tensor):
        done[0] = True
        return fn(y)
    if isinstance(y, dict):
        return {k: _mapped_first(v, fn, done) for k, v in y.items()}
    if isinstance(y, (list, tuple)):
        items = [_mapped_first(v, fn, done) for v in y]
        return type(y)(*items) if hasattr(y, "_fields") else type(y)(items)
    return y


def writable(x: Any) -> Any:
    """At the top of a function that writes into its argument ``x`` or hands it to a
    function that may: under ``pb.grad``, a copy of an argument of the front door's call
    for the function to write into (``Entry`` copies what it leaves back into the
    caller's array, and forgets a copy nothing wrote into); otherwise ``x`` itself."""
    entry = ENTRY.get()
    # (``x`` may be None, a default such as ``ax=None``: ``args.get`` says None too)
    if entry is None or not entry.numpy_semantics or not isinstance(x, Tensor) \
            or entry.args.get(id(x)) is not x or getattr(x, "_python_float", False):
        return x  # (a Python float is a number: ``t += dt`` binds a new one)
    return entry.copy_of(x)
