"""native_loops: a loop region over small arrays runs as one numba-compiled loop.

A ``scan`` (a forward loop, or the reverse loop of its gradient) whose body is a few
small matrix products and elementwise steps spends its time in numpy's per-call cost
(about a microsecond per op), not in arithmetic. With ``config.native_loops`` on and
numba installed (``pip install pullback[fast]``), such a scan becomes one call of a
function compiled with ``numba.njit``: the whole loop, its body written once::

    # <rnn>:5: for x in xs:
    _, t0, t1, t2, _ = native_loop(h, c_1, xs, w)  # one numba-compiled loop

A scan qualifies when its values are of the dtypes in ``DTYPES``, its products and
sums small (``MAX_ELEMENTS``), and every equation is one ``_lines`` writes (arithmetic,
math functions, 2-D products, sums, transposes, reshapes by axes of one, indexing by
ints or by the step's counter, items read and written at traced ints) or a scan whose
body qualifies (written in place as an inner loop, ``native_body.py``: soft-DTW's
nested loops); anything else stays a Python loop (``why_not`` says why,
``pb.compiler.inspect`` shows it). Shapes are static, so every equation is written
(``native_source.py``) as plain loops over its elements: a run of elementwise equations
of one shape shares a loop nest (``Nest``), where values read nowhere else are scalars;
a product sums each element in a register; other temporaries are buffers the caller
makes once per call.
numba compiles that several times quicker than its array expressions, and at these
sizes it beats numpy's calls and BLAS (docs/control_flow.md has the numbers). Each
compiled loop is kept per process by its source text; its first call costs numba's
compile. A call on anything but plain arrays (the trace of an enclosing transform)
runs the region's own op instead, and so does a loop numba refuses to compile.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
from typing import Any, Callable

import numpy as np

from pullback.ir import Eqn, Graph, Var
from pullback.ops import OPS, OpDef
from pullback.settings import config

from .native_body import loop_source
from .native_source import REGRID, _lines
from .regions import reverse_body, scan_parts

AVAILABLE = importlib.util.find_spec("numba") is not None
MAX_ELEMENTS = 4096  # larger products and sums: numpy's vectorised loops and BLAS win
#: ops whose loops numba writes as quickly as numpy at any size (an item op touches one
#: element; a copy or an elementwise step is one pass): a carried table may be large
ANY_SIZE = {"item", "item_put", "item_add", "zeros", "expand", "clone", "where", "add",
            "sub", "rsub", "mul", "div", "neg", *REGRID}
#: the dtypes a body's values may have (beside bool masks): numba's arithmetic on them
#: promotes as numpy's does
DTYPES = ({np.dtype(np.float64)}, {np.dtype(np.float32)},
          {np.dtype(np.float64), np.dtype(np.int64)})
_COMPILED: dict[str, Any] = {}  # loop source -> numba dispatcher, once per process
_BROKEN: dict[str, str] = {}  # loop source -> why numba refused it (the Python loop runs)


def native_loops(graph: Graph) -> Graph:
    """Replace each scan that qualifies by one call of its compiled loop."""
    if not (config.native_loops and AVAILABLE):
        return graph
    if not any(e.op.name == "scan" for e in graph.eqns):
        return graph
    read = _read(graph)
    eqns = [_native(e, read) if e.op.name == "scan" else e for e in graph.eqns]
    return graph.replace(eqns=eqns)


def _read(graph: Graph) -> set:
    """Ids of the values something reads (an equation, an output, a guard)."""
    ids = {a.id for e in graph.eqns for a in e.inputs if type(a) is Var}
    return ids | {v.id for v in list(graph.outputs) + list(graph.guards) if type(v) is Var}


def _native(e: Eqn, read: set) -> Eqn:
    if why_not(e) is not None:
        return e
    loop = NativeLoop(e, [v.id in read for v in e.outs])
    return Eqn(NATIVE, e.inputs, e.outs, {"loop": loop}, e.src, e.block, e.nograd)


def why_not(e: Eqn) -> str | None:
    """Why the scan ``e`` stays a Python loop (None: it can be native)."""
    if e.params.get("remat"):
        return "checkpointed (remat)"
    return _why_not_body(e.params["body"])


def _why_not_body(body: Graph) -> str | None:
    """Why a scan over ``body`` stays a Python loop (None: it can be native)."""
    values = list(body.inputs) + [v for b in body.eqns for v in b.outs]
    dtypes = {v.dtype for v in values if v.dtype.kind != "b"}
    if dtypes not in DTYPES:
        return "its values are not of one float dtype (float64 with int64 counters)"
    if any(type(o) is not Var for o in body.outputs):
        return "a body output is a constant"
    if any(not isinstance(c, (np.ndarray, np.generic, float, int)) for c in body.consts.values()):
        return "its body reads a constant that is not an array"
    for b in body.eqns:
        if b.op.name == "scan":
            inner = why_not(b)
            if inner is None and any(type(a) is not Var and np.ndim(a)
                                     for a in b.inputs[:b.params["n_carry"]]):
                inner = "a carry starts from a constant array"
            if inner is not None:
                return f"its inner loop stays a Python loop: {inner}"
            continue
        if b.out is None or _lines(b, "t", ["a"] * len(b.inputs)) is None:
            return f"its body uses {b.op.name}, which native loops do not write"
        if b.op.name not in ANY_SIZE and any(
                math.prod(np.shape(v)) > MAX_ELEMENTS for v in (*b.inputs, b.out)):
            return f"its {b.op.name} takes more than {MAX_ELEMENTS} elements"
    return None


def notes(graph: Graph) -> tuple:
    """With ``config.native_loops``: per scan of ``graph`` (its forward loops),
    ``"file:line: native"`` or ``"file:line: Python loop: why"``; per while loop (a
    Python loop forward), the same of its reverse loop: ``"file:line: reverse loop:
    native"`` or ``"file:line: reverse loop: Python loop: why"`` (pb.compiler.inspect)."""
    if not config.native_loops:
        return ()
    out = []
    for e in graph.eqns:
        if e.op.name not in ("scan", "while"):
            continue
        where = f"{e.src.filename}:{e.src.lineno}" if e.src is not None else e.op.name
        why = "numba is not installed" if not AVAILABLE else why_not(e) \
            if e.op.name == "scan" else _why_not_reverse(e)
        if e.op.name == "while":
            where += ": reverse loop"
        out.append(f"{where}: native" if why is None else f"{where}: Python loop: {why}")
    return tuple(out)


def _why_not_reverse(e: Eqn) -> str | None:
    """Why the reverse loop of the while loop ``e`` (a scan over its body's adjoint,
    as long as the loop ran) stays a Python loop (None: it can be native)."""
    try:
        rev = reverse_body(e.params["body"], e.params["n_carry"], 0)
    except Exception as err:  # (a body the adjoint refuses: no reverse loop to run)
        return f"its body has no adjoint ({type(err).__name__})"
    return _why_not_body(rev.graph)


class NativeLoop:
    """One scan as a numba-compiled function of its inputs (compiled on first call)."""

    def __init__(self, e: Eqn, keep: list) -> None:
        p = e.params
        self.params = dict(p)
        self.body, self.n_carry, self.n_xs = p["body"], p["n_carry"], p["n_xs"]
        self.length, self.reverse = p["length"], p["reverse"]
        n_y = len(self.body.outputs) - self.n_carry
        self.keep_y = keep[self.n_carry:self.n_carry + n_y]
        self.keep_s = keep[self.n_carry + n_y:]
        self.source, self.buffers, self.consts = loop_source(
            self.body, self.n_carry, self.n_xs, self.reverse, self.keep_y, self.keep_s)
        self.src = e.src
        self.fn: Any = None

    @staticmethod
    def codegen_name(_: Any) -> str:
        return "native_loop"

    def __call__(self, *args: Any) -> Any:
        carries, xs, consts = scan_parts(args, self.n_carry, self.n_xs)
        n = len(xs[0]) if self.length is None else self.length
        fn = self.fn or self._compile()
        if fn is None or n == 0 or not all(_plain(a) for a in args):
            return OPS["scan"](*args, **self.params)  # (the Python loop; or traced)
        b_c, b_x, b_k = scan_parts(self.body.inputs, self.n_carry, self.n_xs)
        ins = [_scalar(a, v) if v.shape == () else np.array(a, v.dtype, order="C")
               for a, v in zip(carries, b_c)]
        ins += [np.asarray(a) for a in xs]
        ins += [_scalar(a, v) if v.shape == () else np.asarray(a) for a, v in zip(consts, b_k)]
        ins += [np.asarray(c) for c in self.consts]
        ins += [np.empty(v.shape, v.dtype) for v in self.buffers]
        ys = [np.empty((n,) + v.shape, v.dtype) if k else None
              for v, k in zip(self.body.outputs[self.n_carry:], self.keep_y)]
        saves = [np.empty((n,) + v.shape, v.dtype) if k else None
                 for v, k in zip(b_c, self.keep_s)]
        try:
            last = fn(n, *ins, *[y for y in ys if y is not None],
                      *[s for s in saves if s is not None])
        except Exception as err:  # numba refused a case the checks missed: Python runs it
            if not type(err).__module__.startswith("numba"):
                raise
            _BROKEN[self.source] = str(err).strip().splitlines()[0]
            self.fn = None
            return OPS["scan"](*args, **self.params)
        last = [np.asarray(c, v.dtype) for c, v in zip(last, b_c)]
        return tuple(last + ys + saves)

    def _compile(self) -> Callable | None:
        """The numba dispatcher (None when numba refused this loop: it runs in Python)."""
        if self.source in _BROKEN:
            return None
        fn = _COMPILED.get(self.source)
        if fn is None:
            numba = importlib.import_module("numba")  # optional: imported when first used
            glb = {"np": np, "math": math}
            exec(compile(self.source, "<pullback native loop>", "exec"), glb)
            fn = _COMPILED[self.source] = numba.njit(error_model="numpy", nogil=True)(
                glb["loop"])
        self.fn = fn
        return fn


def _plain(a: Any) -> bool:
    return type(a) in (np.ndarray, float, int) or isinstance(a, np.generic)


def _scalar(a: Any, v: Var) -> Any:
    return v.dtype.type(np.asarray(a).item() if isinstance(a, np.ndarray) else a)


def _template(e: Eqn, args: list, literal: Any) -> str:
    loop = e.params["loop"]
    return f"{literal(loop)}({', '.join(args)})  # one numba-compiled loop"


NATIVE = OpDef("native_loop", lambda *args, loop: loop(*args), aliases=True, fresh=False,
               variadic=True, outputs=tuple, template=_template)
