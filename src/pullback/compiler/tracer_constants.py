"""The tracer's part for numpy arrays a trace reads as constants: an array the function
made (``idx = np.arange(2)``, ``m = x_np > 0``) or captured, read by an op as an
operand or in its parameters (an index), is kept by reference, so generated code
reads it live (a captured array changed between calls is seen). A write into it
after a use and before the trace ends (``idx[0] = 2``, ``np.copyto(m, ...)``, ``out=``)
would change what that earlier use reads in generated code, where numpy read the
value the array had then. So each use keeps a copy of what it read; when the trace
ends, a use whose array no longer holds that value reads its copy instead (a
constant of that variant), and a use whose array is unchanged keeps the reference.

That is right for an array the function made, which every call makes again. An array
from outside it (captured, or reached from an argument) written after a use is
refused: generated code does not make a plain numpy write again, so a later call
would read at that use what the trace's call read, not what the write left
(``captured.py``, which knows what was captured, refuses it); the source pass's
writes into such an array (``G[0] = 2``, made again by generated code) after a read
are refused here, since the read, and its gradient, would see the written values.

Uses of an array that holds the same values share one copy (a loop unrolled over a
captured array keeps one). An array larger than ``COPY_LIMIT`` bytes keeps a checksum
instead: a write into it after a use is refused (write into a copy), rather than
copied and compared at every use.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from ..autograd.tracer_hooks import copied_from
from ..ir import Var
from ..ops.writes import may_be_written
from .user_lines import TraceError, fname

#: the largest array (in bytes) a use keeps a copy of; larger ones keep a checksum
COPY_LIMIT = 1 << 20


class _Read:
    """What uses of an array read, while it holds those values: a copy of it, or its
    checksum when it is large."""

    __slots__ = ("array", "copy", "crc", "written")

    def __init__(self, a: np.ndarray, copy: np.ndarray | None = None) -> None:
        self.array = a
        small = a.nbytes <= COPY_LIMIT or copy is not None
        self.copy = copy if copy is not None else a.copy() if small else None
        self.crc = None if small else _crc(a)
        self.written: bool | None = None  # (known at the trace's end)

    def changed(self) -> bool:
        a = self.array
        if self.copy is None:
            return _crc(a) != self.crc
        return not np.array_equal(a, self.copy, equal_nan=a.dtype.kind in "fc")


def _crc(a: np.ndarray) -> int:
    return zlib.crc32(np.ascontiguousarray(a).view(np.uint8).reshape(-1))


class ConstantReads:
    """``Tracer``'s methods for the arrays its equations read (its ``const_reads``,
    ``param_reads``, ``last_reads``, ``body_graphs`` and ``baked``, made in
    ``Tracer.__init__``)."""

    def constant(self, a: np.ndarray) -> Any:
        """The Var (or inline scalar) for a use of the array ``a``: of the array a
        node's copy ``a`` was taken from (eager autograd's backward inside this trace),
        read as it was then. A 0-d array is a copy of its value now (inline):
        generated code would read a written one's later value, and a captured one is
        guarded by its bytes."""
        if not a.ndim:
            return a.copy() if may_be_written(a) else a
        v = self.builder.const(a)
        if isinstance(v, Var):
            o = copied_from(a)
            if o is not None:
                self.builder.consts[v] = o
                self.const_reads.append((v, _Read(o, a)))
            elif may_be_written(a):
                self.const_reads.append((v, self._read(a)))
        return v

    def read_params(self, first: int) -> None:
        """The equations recorded from ``first`` on: the arrays in their parameters
        (an index array, a mask) are uses too (a node's copy: of its array)."""
        for e in self.builder.eqns[first:]:
            if _has_0d(tuple(e.params.values())):
                e.params = {k: _scalars(p) for k, p in e.params.items()}
            arrays = _arrays(tuple(e.params.values()))
            origins = {id(a): o for a in arrays if (o := copied_from(a)) is not None}
            if origins:
                e.params = {k: _replaced(p, origins) for k, p in e.params.items()}
            reads = [_Read(origins[id(a)], a) if id(a) in origins else self._read(a)
                     for a in arrays if id(a) in origins or may_be_written(a)]
            if reads:
                self.param_reads.append((e, reads))

    def _read(self, a: np.ndarray) -> _Read:
        """The record of this use of ``a``: the last use's, while ``a`` still holds
        what it read (a large array keeps its first, and is checked at the end)."""
        r = self.last_reads.get(id(a))
        if r is None or (r.copy is not None and r.changed()):
            r = self.last_reads[id(a)] = _Read(a)
        return r

    def settle_constants(self) -> None:
        """At the trace's end: uses whose array was written since read their copy."""
        for v, r in self.const_reads:
            if self._written_since(r):
                self.builder.consts[v] = v._data = r.copy
                for g in self.body_graphs:
                    if v in g.consts:
                        g.consts[v] = r.copy
        for e, reads in self.param_reads:
            copies = {id(r.array): r.copy for r in reads if self._written_since(r)}
            if copies:
                e.params = {k: _replaced(p, copies) for k, p in e.params.items()}
        self.const_reads, self.param_reads, self.last_reads = [], [], {}

    def _written_since(self, r: _Read) -> bool:
        """Whether ``r``'s array was written after the uses ``r`` records (kept in
        ``baked``: a captured one is refused once the walk knows it, ``captured.py``)."""
        if r.written is None:
            r.written = r.changed()
            if r.written and r.copy is None:
                raise TraceError(
                    f"{fname(self.fn)}: a numpy array of {r.array.nbytes} bytes was "
                    "written after the traced code read it; generated code would read "
                    "the written values at that earlier use. Write into a copy "
                    "(a = a.copy()) instead")
            if r.written and ("array", id(r.array)) in self.changed:
                raise TraceError(
                    f"{fname(self.fn)}: an array from outside the function "
                    f"(shape {r.array.shape}, {r.array.dtype}) is read by an op and then "
                    "written by the function; generated code writes it again on every "
                    "call, but the earlier read (and its gradient) would see the written "
                    "values. Read a copy (a.copy()) there, or write after the last read")
            if r.written:
                self.baked[id(r.array)] = r.array
        return r.written


def _arrays(x: Any) -> list:
    if isinstance(x, np.ndarray):
        return [x] if x.ndim else []
    if isinstance(x, (tuple, list)):
        return [a for y in x for a in _arrays(y)]
    return []


def _has_0d(x: Any) -> bool:
    if isinstance(x, np.ndarray):
        return not x.ndim
    return isinstance(x, (tuple, list)) and any(_has_0d(y) for y in x)


def _scalars(x: Any) -> Any:
    """``x`` with its 0-d arrays (an index ``np.array(0)``) as copies of their values now."""
    if isinstance(x, np.ndarray):
        return x.copy() if not x.ndim and may_be_written(x) else x
    if isinstance(x, (tuple, list)):
        return type(x)(_scalars(y) for y in x)
    return x


def _replaced(x: Any, copies: dict) -> Any:
    if isinstance(x, np.ndarray):
        return copies.get(id(x), x)
    if isinstance(x, (tuple, list)):
        return type(x)(_replaced(y, copies) for y in x)
    return x
