"""fuse: runs of elementwise arithmetic on large arrays become one numba kernel.

``t = o * o; d = 1 - t; e = g * d; gw = e * h; gn = e * w + e`` over 100k floats is six
passes over memory in numpy; fused, it is one loop (over numba's threads with
``config.fuse_threads``) that writes ``gw`` and ``gn`` and keeps ``t``, ``d`` and ``e``
in registers. The generated code calls the kernel
with a comment saying what it computes::

    # fused: t4 = h_2 * h_2; t5 = 1 - t4; t6 = g_out * t5; g_arg2 = t6 * h_1; ...
    g_h_1, g_arg2 = fused(g_out, h_2, h_1, arg2)

A group is the equations of ``FUSIBLE`` ops (arithmetic only: numpy's SIMD loops for
tanh, exp, ... are faster than the scalar libm calls a compiled loop makes, measured in
docs/design.md) whose results have one float dtype and the same shape of at least
``config.fuse_min_size`` elements, reading values of that shape and dtype (or 0-d ones,
or Python numbers). An equation joins the open groups that made its inputs (merging
them); a group closes when anything outside it reads one of its values, so the kernel
can run where its last equation was. Values read outside the group are the kernel's
outputs. An out= write (``inplace`` ran on the split backward) fuses as its ufunc: the
kernel's outputs are fresh arrays, and ``inplace`` runs again after this pass.

Off unless ``config.fuse`` is set and numba is installed (``pip install pullback[fast]``);
each kernel costs numba's compile time (a few hundred ms) once per process.
"""

from __future__ import annotations

import importlib.util
import math
from typing import Any

import numpy as np

from pullback.ir import Eqn, Graph, Var
from pullback.ops import OpDef
from pullback.settings import config

from .fuse_math import MATH, helpers
from .inplace import IntoOp

#: op name -> how a kernel line spells it ({0}, {1}: its operands)
FUSIBLE = {"add": "{0} + {1}", "sub": "{0} - {1}", "rsub": "{1} - {0}", "mul": "{0} * {1}",
           "div": "{0} / {1}", "neg": "-{0}"}
#: an out= write's ufunc -> its op (inplace.py)
_INTO_NAMES = {np.add: "add", np.subtract: "sub", np.multiply: "mul", np.true_divide: "div",
               np.negative: "neg", np.tanh: "tanh"}
FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_MAX_EXACT_INT = 2 ** 53  # larger Python ints are left to numpy (its overflow rules)
AVAILABLE = importlib.util.find_spec("numba") is not None
_COMPILED: dict[str, Any] = {}  # kernel source -> numba dispatcher, once per process


def fuse(graph: Graph) -> Graph:
    """Replace each group of two or more fusible equations by one kernel call."""
    if not (config.fuse and AVAILABLE):
        return graph
    groups = _groups(graph)
    if not groups:
        return graph
    readers = _outside_reads(graph)
    eqns: list = list(graph.eqns)
    for members in groups:
        fused = _fused_eqn(graph, members, readers)
        for i in members[:-1]:
            eqns[i] = None
        eqns[members[-1]] = fused
    return graph.replace(eqns=[e for e in eqns if e is not None])


class _Group:
    __slots__ = ("members", "open", "shape", "dtype")

    def __init__(self, e: Eqn) -> None:
        self.members: list[int] = []
        self.open = True
        self.shape, self.dtype = e.out.shape, e.out.dtype


def _groups(graph: Graph) -> list[list[int]]:
    """Equation indices of each group of two or more, in order. An equation reading
    several open groups merges them (none of their values was read outside yet, so
    one kernel at the last of their equations computes them all). A group closes after
    a tanh (fuse_math)."""
    made: dict[int, _Group] = {}  # var id -> the group whose equation made it
    groups: list[_Group] = []
    for i, e in enumerate(graph.eqns):
        reads = list({id(g): g for g in (made[a.id] for a in e.inputs
                                         if type(a) is Var and a.id in made)}.values())
        joined: list[_Group] = []
        if fusible(e):
            size = 1
            for g in reads:
                if g.open and (g.shape, g.dtype) == (e.out.shape, e.out.dtype) and (
                        size + len(g.members) <= config.fuse_max_ops):
                    joined.append(g)
                    size += len(g.members)
        for g in reads:  # a group read from outside runs before its reader: it closes
            if all(g is not j for j in joined):
                g.open = False
        if fusible(e):
            target = joined[0] if joined else _Group(e)
            if not joined:
                groups.append(target)
            for g in joined[1:]:
                target.members += g.members
                for k in g.members:
                    made[graph.eqns[k].out.id] = target
                g.members = []
            target.members.append(i)
            made[e.out.id] = target
            # a kernel ends at its tanh: chained in one loop body, each tanh's ~40-cycle
            # dependency chain waits for the last (measured 2x slower per tanh at 5)
            target.open = target.open and _op_name(e) not in MATH
    return [sorted(g.members) for g in groups if len(g.members) > 1]


def fusible(e: Eqn) -> bool:
    """An equation a kernel can compute exactly as numpy does (same dtype, no broadcast
    but of 0-d values and numbers)."""
    out = e.out
    if _spelling(e) is None or out is None:
        return False
    if out.dtype not in FLOATS or math.prod(out.shape) < config.fuse_min_size or e.params:
        return False
    return all(_operand_ok(a, out) for a in e.inputs)


def _spelling(e: Eqn, numpy: bool = False) -> str | None:
    """How a kernel line (or, ``numpy``, the comment) spells the equation's op; an out=
    write (the split backward comes with them) as its ufunc, whose result is then a
    fresh array. ``tanh`` is the kernel's own (fuse_math) if config.fuse_tanh."""
    name = _op_name(e)
    if name in MATH:
        if not config.fuse_tanh or e.out is None or e.out.dtype not in FLOATS:
            return None
        helper, spelling = MATH[name]
        return spelling if numpy else f"{helper}{8 * e.out.dtype.itemsize}({{0}})"
    return FUSIBLE.get(name)


def _op_name(e: Eqn) -> str | None:
    op = e.op
    return _INTO_NAMES.get(op.ufunc) if isinstance(op, IntoOp) else op.name


def _operand_ok(a: Any, out: Var) -> bool:
    if type(a) is Var:
        return a.dtype == out.dtype and a.shape in (out.shape, ())
    if type(a) is int:
        return abs(a) <= _MAX_EXACT_INT
    return type(a) is float or (isinstance(a, np.floating) and a.dtype == out.dtype)


def _outside_reads(graph: Graph) -> dict[int, set]:
    """Var id -> indices of the equations reading it (-1: an output or a guard)."""
    readers: dict[int, set] = {}
    for i, e in enumerate(graph.eqns):
        for a in e.inputs:
            if type(a) is Var:
                readers.setdefault(a.id, set()).add(i)
    for v in list(graph.outputs) + list(graph.guards):
        if type(v) is Var:
            readers.setdefault(v.id, set()).add(-1)
    return readers


def _fused_eqn(graph: Graph, members: list[int], readers: dict) -> Eqn:
    """One equation running the equations ``members`` (indices) as a kernel; its
    outputs are their values read outside the group."""
    eqns = [graph.eqns[i] for i in members]
    inside = set(members)
    made = {e.out.id for e in eqns}
    outs = tuple(e.out for e in eqns if readers.get(e.out.id, set()) - inside)
    ins: list = []
    for e in eqns:
        for a in e.inputs:
            if type(a) is Var and a.id not in made and all(a is not b for b in ins):
                ins.append(a)
    last = eqns[-1]
    return Eqn(FUSED, tuple(ins), outs if len(outs) > 1 else outs[0],
               {"kernel": Kernel(eqns, ins, outs)}, last.src, last.block, last.nograd)


class Kernel:
    """A fused group: the numba loop that computes it, compiled on first call, and the
    lines it stands for (shown as a comment in the generated code)."""

    def __init__(self, members: list[Eqn], ins: list, outs: tuple) -> None:
        self.ins, self.outs, self.members = ins, outs, members
        self.shape, self.dtype = outs[0].shape, outs[0].dtype
        self.scalar = [a.shape == () for a in ins]
        self.source = kernel_source(members, ins, outs, self.dtype)
        self.fn: Any = None

    @staticmethod
    def codegen_name(_: Any) -> str:
        return "fused"

    def __call__(self, *args: Any) -> Any:
        fn = self.fn or self._compile()
        # numpy keeps a transposed (Fortran-ordered) layout: so do the results, whose
        # sums then add in the same order
        order = "F" if all(s or np.isfortran(a) for a, s in zip(args, self.scalar)) else "C"
        flat = [self.dtype.type(a) if s else np.ravel(a, order)
                for a, s in zip(args, self.scalar)]
        outs = [np.empty(self.shape, self.dtype, order=order) for _ in self.outs]
        fn(*flat, *[o.ravel(order) for o in outs])
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _compile(self) -> Any:
        fn = _COMPILED.get(self.source)
        if fn is None:
            numba = importlib.import_module("numba")  # optional: imported when first used
            glb = {"np": np, "prange": numba.prange, **helpers()}
            exec(compile(self.source, "<pullback fused kernel>", "exec"), glb)
            fn = _COMPILED[self.source] = numba.njit(
                parallel="prange" in self.source, fastmath=False, error_model="numpy",
                nogil=True)(glb["kernel"])
        self.fn = fn
        return fn

    def describe(self, literal: Any) -> str:
        """``t = a * b; out = t + a``: the group as the numpy lines it replaces."""
        return "; ".join(f"{literal(e.out)} = " + _spelling(e, numpy=True).format(
            *[literal(a) for a in e.inputs]) for e in self.members)


def kernel_source(members: list[Eqn], ins: list, outs: tuple, dtype: np.dtype) -> str:
    """The kernel's Python source: one loop over the elements, one line per member."""
    names = {a.id: (f"x{k}" if a.shape == () else f"x{k}[i]") for k, a in enumerate(ins)}
    out_k = {v.id: k for k, v in enumerate(outs)}
    cast = f"np.{dtype.name}"
    lines = []
    for j, e in enumerate(members):
        ops = [names[a.id] if type(a) is Var else f"{cast}({_number(a)})" for a in e.inputs]
        names[e.out.id] = f"t{j}"
        lines.append(f"        t{j} = " + _spelling(e).format(*ops))
        if e.out.id in out_k:
            lines.append(f"        y{out_k[e.out.id]}[i] = t{j}")
    params = [f"x{k}" for k in range(len(ins))] + [f"y{k}" for k in range(len(outs))]
    loop = "prange" if config.fuse_threads else "range"
    return (f"def kernel({', '.join(params)}):\n    for i in {loop}(y0.shape[0]):\n"
            + "\n".join(lines) + "\n")


def _number(a: Any) -> str:
    """A constant as kernel source text (``np.inf``, not its repr ``inf``)."""
    x = float(a)
    if math.isnan(x):
        return "np.nan"
    return repr(x) if math.isfinite(x) else ("np.inf" if x > 0 else "-np.inf")


def _fused_template(e: Eqn, args: list, literal: Any) -> str:
    kernel = e.params["kernel"]
    return f"{literal(kernel)}({', '.join(args)})  # fused: {kernel.describe(literal)}"


FUSED = OpDef("fused", lambda *args, kernel: kernel(*args), fresh=True, elementwise=True,
              template=_fused_template)
