"""The body of a native loop (``native_loops.py``), written once inside
``for step in range(n)``: its equations by ``native_source.py``'s writers, and a loop
nested in it written in place as an inner ``for`` (soft-DTW's two loops, forward and
reverse, are one function each). An item write (``R[i, j] = v``, ``g_R[i, j] += g``)
to a table nothing reads after it is made in place; items read from the table after
the write, at indices known before it, are read first (they read the table as it
was), so a step costs its own work, not a copy of the table.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.ir import Eqn, Graph, Var

from .native_source import (
    FLOATS,
    UPDATES,
    _copy,
    _lines,
    _number,
    _operand,
    _render,
    _store,
    _update,
)
from .regions import scan_parts


class Buf:
    """A buffer the caller makes once per call: its shape and dtype."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple, dtype: Any) -> None:
        self.shape, self.dtype = shape, np.dtype(dtype)


class _Writer:
    """The statements of a loop's body, nested loops written in place: the buffers
    and body constants they use become parameters of the compiled function."""

    def __init__(self) -> None:
        self.count = 0
        self.buffers: list = []  # (name, Buf)
        self.consts: list = []  # (name, value): the bodies' constants
        self.made: set = set()  # values computed in a buffer of their own
        self.owned: set = set()  # values whose buffer the loop may write in place

    def temp(self, like: Any = None) -> str:
        """A new name; with ``like`` (an array's shape and dtype), a buffer's."""
        name = f"t{self.count}"
        self.count += 1
        if like is not None:
            self.buffers.append((name, Buf(like.shape, like.dtype)))
        return name

    def body(self, body: Graph, names: dict) -> list:
        """The statements of one step of ``body`` (its inputs named in ``names``)."""
        for v, value in body.consts.items():
            names[v.id] = f"b{len(self.consts)}"
            self.consts.append((names[v.id], value))
        eqns = _reads_first(body)
        last = _last_reads(eqns, body.outputs)
        out: list = []
        for j, e in enumerate(eqns):
            if e.op.name == "scan":
                out += self.scan(e, names, j, last, _read_ids(body))
                continue
            a = [_operand(x, e, names) for x in e.inputs]
            x = e.inputs[0] if e.inputs else None
            if e.op.name in UPDATES and type(x) is Var and x.id in self.owned \
                    and last.get(x.id, -1) <= j:  # (written in place: read nowhere after)
                out += _update(e, names[x.id], a, self.temp())
                names[e.out.id] = names[x.id]
                self.owned.add(e.out.id)
                if x.id in self.made:
                    self.made.add(e.out.id)
                continue
            big = e.out.shape != () and e.op.name != "t"
            name = self.temp(e.out if big else None)
            out += _lines(e, name, a)
            names[e.out.id] = name
            if big:
                self.made.add(e.out.id)
                self.owned.add(e.out.id)
        return out

    def scan(self, e: Eqn, names: dict, j: int, last: dict, read: set) -> list:
        """A scan inside a body: its loop, written in place (its carries in buffers of
        their own, or in the buffer of a start value read nowhere after; its stacked
        outputs in buffers)."""
        p = e.params
        body, n_carry, n_xs = p["body"], p["n_carry"], p["n_xs"]
        carries, xs, consts = scan_parts(e.inputs, n_carry, n_xs)
        b_c, b_x, b_k = scan_parts(body.inputs, n_carry, n_xs)
        n = p["length"] if p["length"] is not None else xs[0].shape[0]
        inner: dict = {}
        lines: list = []
        for a, v in zip(carries, b_c):
            if v.shape == ():
                inner[v.id] = self.temp()
                lines.append(f"{inner[v.id]} = {_start(a, v, names)}")
            elif type(a) is Var and a.id in self.owned and last.get(a.id, -1) <= j \
                    and sum(c is a for c in e.inputs) == 1:  # (its buffer, read nowhere else)
                inner[v.id] = names[a.id]
                self.owned.add(v.id)
            else:
                inner[v.id] = self.temp(v)
                lines += _copy(inner[v.id], names[a.id], v.shape)
                self.owned.add(v.id)
                self.made.add(v.id)
        step = self.temp()
        for a, v in zip(xs, b_x):
            inner[v.id] = f"{names[a.id]}[{step}]"
        for a, v in zip(consts, b_k):
            inner[v.id] = _start(a, v, names)
        outs = e.outs
        n_y = len(body.outputs) - n_carry
        stacks = [self.temp(Buf((n,) + v.shape, v.dtype)) if o.id in read else None
                  for o, v in zip(outs[n_carry:], list(body.outputs[n_carry:]) + list(b_c))]
        steps = f"range({n} - 1, -1, -1)" if p["reverse"] else f"range({n})"
        cs = [inner[v.id] for v in b_c]
        loop = [line for s, c, v in zip(stacks[n_y:], cs, b_c) if s
                for line in _store(s, c, v.shape, step)]
        loop += self.body(body, inner)
        news = [inner[o.id] for o in body.outputs]
        loop += [line for s, y, v in zip(stacks[:n_y], news[n_carry:], body.outputs[n_carry:])
                 if s for line in _store(s, y, v.shape, step)]
        loop += self.next_carries(body, cs, news[:n_carry])
        rendered, gone = _render(loop)
        self.buffers = [(b, v) for b, v in self.buffers if b not in gone]
        for o, c, v in zip(outs, cs, b_c):
            names[o.id] = c
            if v.id in self.owned:
                self.owned.add(o.id)
            if v.id in self.made:
                self.made.add(o.id)
        for o, s in zip(outs[n_carry:], stacks):
            if s:
                names[o.id] = s
                self.owned.add(o.id)
                self.made.add(o.id)
        return lines + [f"for {step} in {steps}:"] + ["    " + line for line in rendered]

    def next_carries(self, body: Graph, cs: list, news: list) -> list:
        """The carries take their next values: scalars by name; arrays copied into
        their own buffers, through a scratch buffer when the new value is not one the
        step computed in a buffer (it may be another carry, or a view of one)."""
        lines, scalars, direct = [], [], []
        b_c = body.inputs[:len(cs)]
        for c, v, new, o in zip(cs, b_c, news, body.outputs):
            if new == c:
                continue
            if v.shape == ():
                scalars.append((c, new))
            elif o.id in self.made:
                direct.append((c, new, v.shape))
            else:
                u = self.temp(v)
                lines += _copy(u, new, v.shape)
                direct.append((c, u, v.shape))
        for c, new, shape in direct:
            lines += _copy(c, new, shape)
        if scalars:
            lines.append(", ".join(c for c, _ in scalars) + " = "
                         + ", ".join(new for _, new in scalars))
        return lines


def _read_ids(body: Graph) -> set:
    """Ids of the values of ``body`` an equation or an output reads."""
    return {a.id for e in body.eqns for a in e.inputs if type(a) is Var} | \
        {o.id for o in body.outputs if type(o) is Var}


def _last_reads(eqns: list, outputs: Any) -> dict:
    """Value id -> the index of the last of ``eqns`` reading it (the body's outputs:
    past the last)."""
    last = {a.id: j for j, e in enumerate(eqns) for a in e.inputs if type(a) is Var}
    last.update({o.id: len(eqns) for o in outputs if type(o) is Var})
    return last


def _reads_first(body: Graph) -> list:
    """``body``'s equations, the items read from a table after a write to it moved
    before the write when their indices are known there (they read the table as it
    was): the write can then be made in place (the reverse loop's ``g_R[i, j] = 0``
    before its read of ``g_R[i, j]``)."""
    eqns = list(body.eqns)
    known = {v.id for v in (*body.inputs, *body.consts)}
    j = 0
    while j < len(eqns):
        e = eqns[j]
        if e.op.name in UPDATES and type(e.inputs[0]) is Var:
            moved = [f for f in eqns[j + 1:] if f.op.name == "item" and f.inputs[0] is e.inputs[0]
                     and all(type(a) is not Var or a.id in known for a in f.inputs)]
            if moved:
                ids = {id(f) for f in moved}
                eqns = eqns[:j] + moved + [f for f in eqns[j:] if id(f) not in ids]
                known |= {f.out.id for f in moved}
                j += len(moved)
        known |= {v.id for v in eqns[j].outs if v is not None}
        j += 1
    return eqns


def _start(a: Any, v: Var, names: dict) -> str:
    """An inner loop's start value or constant: a name, or a number of ``v``'s dtype."""
    if type(a) is Var:
        return names[a.id]
    if v.dtype.kind == "i":
        return repr(int(a))
    return _number(float(a), v.dtype if v.dtype in FLOATS else np.dtype(np.float64))


def loop_source(body: Graph, n_carry: int, n_xs: int, reverse: bool, keep_y: list,
                keep_s: list) -> tuple[str, list, list]:
    """The compiled function's Python source, ``loop(n, carries..., xs..., consts...,
    body constants..., buffers..., stacked outputs kept...)`` returning the last
    carries; the buffers it takes (``Buf``s: the caller makes them once per call, so
    that the loop allocates nothing), and the body constants' values (a loop nested in
    the body brings its own)."""
    b_c, b_x, b_k = scan_parts(body.inputs, n_carry, n_xs)
    w = _Writer()
    names: dict[int, str] = {}
    for prefix, values in (("c", b_c), ("x", b_x), ("k", b_k)):
        for k, v in enumerate(values):
            names[v.id] = f"{prefix}{k}" + "_i" * (prefix == "x")
    w.owned = {v.id for v in b_c}  # (the caller copies the carries in)
    inner = [line for k, keep in enumerate(keep_s) if keep
             for line in _store(f"s{k}", f"c{k}", b_c[k].shape)]
    inner += [f"x{k}_i = x{k}[step]" for k in range(n_xs)]
    inner += w.body(body, names)
    outs = [names[o.id] for o in body.outputs]
    inner += [line for k, keep in enumerate(keep_y) if keep
              for line in _store(f"y{k}", outs[n_carry + k], body.outputs[n_carry + k].shape)]
    inner += w.next_carries(body, [f"c{k}" for k in range(n_carry)], outs[:n_carry])
    lines, gone = _render(inner)
    kept = [(name, v) for name, v in w.buffers if name not in gone]
    params = (["n"] + [f"c{k}" for k in range(n_carry)] + [f"x{k}" for k in range(n_xs)]
              + [names[v.id] for v in b_k] + [name for name, _ in w.consts]
              + [name for name, _ in kept]
              + [f"y{k}" for k, keep in enumerate(keep_y) if keep]
              + [f"s{k}" for k, keep in enumerate(keep_s) if keep])
    steps = "range(n - 1, -1, -1)" if reverse else "range(n)"
    last = ", ".join(f"c{k}" for k in range(n_carry))
    source = (f"def loop({', '.join(params)}):\n    for step in {steps}:\n"
              + "".join(f"        {line}\n" for line in lines)
              + f"    return ({last}{',' if n_carry == 1 else ''})\n")
    return source, [v for _, v in kept], [value for _, value in w.consts]
