"""The tracer's part for in-place ops: which writes a trace refuses (into its
arguments, or captured tensors that record a gradient), the SSA form of a write (a
new value for the same tensor, cast to its dtype), and the views and detach()ed
aliases that share the written memory (updated, or gone stale).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.grad_mode import STATE
from ..ir import Var
from ..ops.elementwise import cast
from ..ops.shape import detach
from ..ops.writes import view_scatter
from ..tensor import Tensor
from .user_lines import SourceLine, TraceError, fname


class InplaceWrites:
    """``Tracer``'s methods for in-place writes and the memory they share (its
    ``views``, ``detached``, ``stale`` and ``written``, made in ``Tracer.__init__``)."""

    def _check_inplace(self, op: Any, t: Tensor, src: SourceLine | None,
                       args: tuple = ()) -> None:
        where = f" at {src} ({src.text})" if src else ""
        if self._outside(t) and t._base is None and not _records(t, args):
            self.value_of(t)  # a buffer updated outside the graph (running statistics):
            return            # an input of generated code, written back at its end
        if self._outside(t):
            raise TraceError(f"{fname(self.fn)}: in-place {op.name}_() on a tensor captured "
                             f"from outside the compiled function{where}; pass it as an "
                             "argument and return the new value instead")
        if self._is_input(t):
            raise TraceError(f"{fname(self.fn)}: in-place {op.name}_() on argument "
                             f"'{self.var_of[id(t)].name}'{where}; compiled functions must not "
                             "mutate their inputs")
        root, _ = self._storage(t)
        if root is not t and self._outside(root) and root._base is None and \
                self._through_detach(t) and not _records(t, args):
            self.value_of(root)  # a write through .data / detach() of a captured tensor,
            return               # recording no gradient (Embedding's max_norm renorm, as
            # torch's under no_grad): its history stays; generated code writes it back
        if root is not t and (self._outside(root) or self._is_input(root)):
            raise TraceError(f"{fname(self.fn)}: in-place {op.name}_() through a view (or "
                             f"detach()) of an argument or captured tensor{where}; compiled "
                             "functions must not mutate their inputs")

    def _through_detach(self, t: Tensor) -> bool:
        """Whether ``t`` reaches its memory's root through a detach()ed alias."""
        while True:
            if id(t) in self.detached:
                return True
            if t._base is None:
                return False
            t = t._base

    def _outside(self, t: Tensor) -> bool:
        return id(t) not in self.var_of or any(c is t for c, _ in self.captures)

    def _is_input(self, t: Tensor) -> bool:
        return any(self.var_of[id(t)] is i for i in self.inputs)

    def on_write(self, t: Tensor) -> None:
        """An in-place op is about to write into ``t``: a captured tensor's value before
        the trace's first write is put back when the trace ends (``written``)."""
        if id(t) in self.var_of and not self._outside(t):
            t = self._storage(t)[0]  # (through .data of a captured tensor)
        if id(t) not in self.written and self._outside(t) and t._base is None:
            self.written[id(t)] = (t, t._data.copy())

    def _functional(self, op: Any, inputs: tuple, params: dict, t: Tensor,
                    src: Any) -> Var:
        """The new value of ``t`` after an in-place op: cast to ``t``'s dtype (an in-place
        op keeps its target's dtype); under no_grad ``t`` keeps its history."""
        keep = not STATE.grad_enabled
        dtype = t._data.dtype
        if any(getattr(a, "dtype", dtype) != dtype for a in inputs):  # may promote
            with np.errstate(all="ignore"):
                value = np.asarray(op.forward(*[a._data if isinstance(a, Var) else a
                                                for a in inputs], **params))
            if value.dtype != dtype:
                inputs, params = (self._emit(op, inputs, params, value, src, keep),), \
                    {"dtype": dtype}
                op = cast
        out = self._emit(op, inputs, params, t._data.copy(), src, keep)
        out.name = self.var_of[id(t)].name
        return out

    def _written(self, t: Tensor, src: Any) -> None:
        """After an in-place write to ``t``: a written view updates its base (as
        view_scatter of the new view value); a written detach()ed alias updates the
        memory it shares, whose history stays as it was; every other view of that
        memory goes stale."""
        base = t._base if t._base is not None else t
        if base is not t:
            self._scatter(base, t, t._view_chain, not STATE.grad_enabled, src)
        root, chain = self._storage(base)
        if root is not base:
            self._scatter(root, base, chain, True, src)
        for v in self.views.get(id(root), ()):
            if v is not t and v is not base:
                self.stale.add(id(v))

    def _scatter(self, base: Tensor, view: Tensor, chain: tuple, keep: bool,
                 src: Any) -> None:
        """``base`` takes ``view``'s new value where the chain puts it."""
        old = self.value_of(base)
        self._bind(base, self._emit(view_scatter, (old, self.var_of[id(view)]),
                                    {"chain": chain}, base._data.copy(), src, keep))

    def _alias(self, t: Tensor, source: Tensor, op: Any) -> None:
        """``t`` shares ``source``'s memory: a view, or a detach()ed alias."""
        if op is detach:
            self.detached[id(t)] = source
        root, _ = self._storage(t)
        self.views.setdefault(id(root), []).append(t)

    def _storage(self, t: Tensor) -> tuple[Tensor, tuple]:
        """The tensor at the root of ``t``'s memory (through views and detach()ed
        aliases) and the view chain that takes it to ``t``."""
        chain: tuple = ()
        while True:
            if t._base is not None:
                chain, t = t._view_chain + chain, t._base
            elif id(t) in self.detached:
                t = self.detached[id(t)]
            else:
                return t, chain


def _records(t: Tensor, args: tuple) -> bool:
    """Whether an in-place op on ``t`` with ``args`` records a gradient."""
    return STATE.grad_enabled and any(
        isinstance(a, Tensor) and (a._requires_grad or a._base is not None and
                                   a._base._requires_grad) for a in (t, *args))
