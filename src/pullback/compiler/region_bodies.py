"""A region's body traced once: what ``pb.scan``, ``pb.while_loop``, ``pb.cond`` and
``pb.switch`` (``control_flow.py``) and the source pass's converted loops share.

Under a trace a body runs on stand-ins for one step's values while every active
tracer's builder is swapped for a fresh one (``Body``); the innermost tracer's
equations become a graph, and ``close`` makes the outer values the bodies read their
last inputs. Here too are the checks of what a body gives (its carry's structure,
shapes and dtypes, a predicate, the branches' outputs) and of the ``xs`` a scan walks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import record
from ..ir import Builder, Graph, Var
from ..numpy_face import NumpyTensor
from ..ops.elementwise import clone
from ..pytree import tree_flatten
from ..tensor import Tensor
from .tracer import Tracer
from .user_lines import TraceError


# --------------------------------------------------------------------------- checks
def type_of(x: Any) -> tuple:
    """(shape, dtype) of a leaf as the loop sees it."""
    data = x._data if isinstance(x, Tensor) else np.asarray(x)
    return data.shape, data.dtype


def describe(shape: tuple, dtype: Any) -> str:
    return f"{np.dtype(dtype).name}[{','.join(map(str, shape))}]"


def check_carry(fn: str, before: list, before_tree: Any, after: Any) -> list:
    """The leaves of the carry a step returned, checked against the carry it got."""
    leaves, tree = tree_flatten(after)
    if tree != before_tree:
        raise TypeError(f"{fn}: the body must return a carry of the structure it takes, "
                        f"{before_tree}, but it returned {tree}")
    for k, (a, b) in enumerate(zip(before, leaves)):
        (sa, da), (sb, db) = type_of(a), type_of(b)
        if sa != sb or (da != db and not is_weak(a)):
            raise TypeError(f"{fn}: the body must return a carry of the shapes and dtypes "
                            f"it takes, but carry leaf {k} came in as {describe(sa, da)} "
                            f"and went out as {describe(sb, db)}")
    return leaves


def is_weak(x: Any) -> bool:
    """A Python number: its dtype is what numpy's arithmetic makes of it."""
    return isinstance(x, (int, float, complex)) and not isinstance(x, bool)

def scan_length(fn: str, x_leaves: list, length: int | None) -> int:
    lengths = {type_of(x)[0][:1] for x in x_leaves}
    if any(n == () for n in lengths):
        raise ValueError(f"{fn}: every leaf of xs must be an array with a leading axis to "
                         "scan along; a 0-d value has none")
    found = {n[0] for n in lengths}
    if len(found) > 1:
        raise ValueError(f"{fn}: the leaves of xs must have one length along their first "
                         f"axis, got {sorted(found)}")
    if length is not None:
        if found and length not in found:
            raise ValueError(f"{fn}: length={length} but xs have length {found.pop()}")
        return int(length)
    if not found:
        raise ValueError(f"{fn}: with no xs to scan over, give length=")
    return found.pop()


def step_pair(fn: str, out: Any) -> tuple:
    if not isinstance(out, tuple) or len(out) != 2:
        raise TypeError(f"{fn}: the body must return a pair (carry, y), got "
                        f"{type(out).__name__}")
    return out


# --------------------------------------------------------------------------- traced
def active_tracers() -> list | None:
    """The tracers recording this thread's ops, innermost last; None when some hook is
    not a tracer's (the loop then runs unrolled, as any Python loop does)."""
    hooks = record.trace_hooks()
    tracers = [getattr(h, "__self__", None) for h in hooks]
    return tracers if all(isinstance(t, Tracer) for t in tracers) else None


def face_of(leaves: list) -> type:
    """The kind of Tensor a loop's values take: the first Tensor's, else numpy's."""
    return next((type(x) for x in leaves if isinstance(x, Tensor)), NumpyTensor)


def new_stand_in(face: type, data: np.ndarray, requires_grad: bool) -> Tensor:
    t = face._make(np.array(data))
    t._requires_grad = requires_grad and data.dtype.kind in "fc"
    return t


def grad_carries(wanted: list, outs: list, body: Graph) -> list | None:
    """The carries to trace a loop's body again with as requiring grad, or None when its
    trace stands. A body whose trace depends on which values require grad (a nested
    ``pb.grad`` detaches an argument that does not: meta-learning's inner steps) is
    traced again when a step made a carry require grad that came in without it (the
    parameters updated by a learning rate the outer gradient is taken for)."""
    now = [w or (isinstance(o, Tensor) and o._requires_grad) for w, o in zip(wanted, outs)]
    return now if now != wanted and _detaches(body) else None


def _detaches(graph: Graph) -> bool:
    """Whether ``graph`` (or a region nested in it) holds a ``detach``."""
    for e in graph.eqns:
        if e.op.name == "detach":
            return True
        for p in e.params.values():
            inner = p if isinstance(p, tuple) else (p,)
            if any(isinstance(g, Graph) and _detaches(g) for g in inner):
                return True
    return False


class Body:
    """Tracing one step of a loop into a graph of its own, in every active tracer: their
    builders are swapped for fresh ones while the body runs on stand-ins."""

    def __init__(self, fn: str, tracers: list, stand_ins: list) -> None:
        self.fn, self.tracers, self.stand_ins = fn, tracers, stand_ins
        self.inputs: list = []  # per tracer: the body's input Vars

    def __enter__(self) -> Body:
        self.saved = []
        for tr in self.tracers:
            self.saved.append((tr.builder, dict(tr.var_of), len(tr.guards), len(tr.writes),
                               len(tr.changed), len(tr.rewinds), len(tr.captures)))
            tr.builder = Builder()
            vs = [Var(t._data.shape, t._data.dtype, t._data) for t in self.stand_ins]
            for t, v in zip(self.stand_ins, vs):
                tr._bind(t, v)
            self.inputs.append(vs)
        return self

    def __exit__(self, *exc: object) -> None:
        for tr, (builder, var_of, *_) in zip(self.tracers, self.saved):
            captured = {id(t) for t, _ in tr.captures}
            kept = {k: v for k, v in tr.var_of.items() if k in captured}
            tr.builder = builder
            tr.var_of = {**var_of, **kept}

    def graph(self, outputs: list, src: Any) -> Graph:
        """The body as the innermost tracer recorded it (the values it reads from outside
        still free: ``close`` makes them inputs)."""
        for tr, (_, var_of, n_guards, n_writes, n_changed, n_draws, n_captures) in zip(
                self.tracers, self.saved):
            self._refuse(tr, n_guards, n_writes, n_changed, n_draws, src)
            self._refuse_outer_writes(tr, var_of, tr.captures[n_captures:])
        tr = self.tracers[-1]
        outs = [self._var(tr, o) for o in outputs]
        graph = Graph(self.inputs[-1], tr.builder.eqns, outs, tr.builder.consts, name=self.fn)
        for t in self.tracers:  # (its constants may be settled at the trace's end)
            t.body_graphs.append(graph)
        return graph

    @staticmethod
    def _var(tr: Tracer, value: Any) -> Var:
        v = tr.value_of(value) if isinstance(value, Tensor) else tr.builder.const(
            np.asarray(value))
        return v if isinstance(v, Var) else tr.builder.emit(clone, (v,), {})

    def _refuse_outer_writes(self, tr: Tracer, var_of: dict, captures: list) -> None:
        """A body that wrote in place into a Tensor from outside it (a buffer it closes
        over: ``out[0] = ...``) would lose the write: the graph gives new values only to
        its carries and outputs."""
        outer = [(k, v) for k, v in var_of.items()] + [(id(t), v) for t, v in captures]
        if any(tr.var_of.get(k, v) is not v for k, v in outer):
            raise TraceError(f"{self.fn}: the loop body writes into an array from outside "
                             "it, which would lose the write; carry the array instead "
                             "(pass it in the carry and return its new value)")

    def _refuse(self, tr: Tracer, n_guards: int, n_writes: int, n_changed: int,
                n_draws: int, src: Any) -> None:
        where = f" at {src} ({src.text})" if src else ""
        if len(tr.guards) > n_guards:
            g = tr.guards[n_guards]
            raise TraceError(f"{self.fn}: the loop body turns a traced value into a Python "
                             f"value: {g.describe()}; a loop body runs once per step as "
                             "one traced graph, so it cannot branch on its values (use "
                             "pb.cond)")
        if len(tr.writes) > n_writes or len(tr.changed) > n_changed:
            raise TraceError(f"{self.fn}: the loop body changes state outside it (a list, "
                             f"an attribute, a global){where}; return the new value as "
                             "part of the carry instead")
        if len(tr.rewinds) > n_draws or any(not e.op.pure for e in tr.builder.eqns):
            raise TraceError(f"{self.fn}: the loop body draws random numbers or has an "
                             f"effect (a print){where}; a traced loop body must be pure")


def close(graphs: list) -> tuple:
    """(the graphs, each with every outer value any of them reads as extra inputs, in
    one order; those outer values)."""
    free: dict = {}
    for graph in graphs:
        defined = {v.id for v in graph.inputs} | {v.id for v in graph.consts}
        for e in graph.eqns:
            for a in e.inputs:
                if isinstance(a, Var) and a.id not in defined:
                    free.setdefault(a.id, a)
            defined.update(v.id for v in e.outs)
        for v in graph.outputs:
            if v.id not in defined:
                free.setdefault(v.id, v)
    outer = list(free.values())
    return [_closed(g, outer) for g in graphs], outer


def _closed(graph: Graph, outer: list) -> Graph:
    inner = {v.id: Var(v.shape, v.dtype, v._data, name=v.name) for v in outer}
    eqns = [e.replace(inputs=tuple(inner.get(a.id, a) if isinstance(a, Var) else a
                                   for a in e.inputs)) for e in graph.eqns]
    outputs = [inner.get(v.id, v) for v in graph.outputs]
    return graph.replace(inputs=graph.inputs + [inner[v.id] for v in outer], eqns=eqns,
                         outputs=outputs)


def data_of(x: Any, dtype: Any = None) -> np.ndarray:
    return x._data if isinstance(x, Tensor) else np.asarray(x, dtype)


def weak_dtype(leaves: list, face: type) -> np.dtype:
    """The dtype a Python float carry takes: the widest float among the loop's arrays,
    else numpy's float64 (the default float dtype on the torch face)."""
    floats = [data_of(x).dtype for x in leaves if not is_weak(x) and data_of(x).dtype.kind == "f"
              and not getattr(x, "_python_float", False)]
    if floats:
        return max(floats, key=lambda d: d.itemsize)
    return np.dtype(np.float64) if face is NumpyTensor else np.dtype(np.float32)


def python_floats(leaves: list, weak: np.dtype, face: type) -> frozenset:
    """On numpy's face, the carries that are Python floats (or traced ones: a float
    argument, ``numpy_face.to_python_float``) where the loop's arrays are narrower:
    traced as Python's float64, weak where they meet arrays, so the loop computes them
    (and steps) as Python does."""
    if face is not NumpyTensor or weak == np.float64:
        return frozenset()
    return frozenset(k for k, c in enumerate(leaves) if type(c) is float
                     or getattr(c, "_python_float", False))


def python_doubles(leaves: list, weak: np.dtype, bodies: list, face: type) -> set:
    """The carries given as Python floats to keep at Python's precision (float64) where
    the loop's float32 arrays make them ``weak``: those whose values meet no array in the
    ``bodies`` (a time ``t += dt`` tested by ``while t < T``, which float32 would
    step a different number of times: ten steps of 0.1 for Python's eleven), or on
    torch's face meet arrays only as 0-d values (``y + dt * f(t)``: torch keeps the
    array's dtype, as for a Python number)."""
    if weak == np.float64:
        return set()
    numbers = {k for k, c in enumerate(leaves) if is_weak(c)}
    return {k for k in numbers if isinstance(leaves[k], float)
            and all(_alone(g, k, numbers, face is not NumpyTensor) for g in bodies)}


def _alone(graph: Graph, k: int, numbers: set, as_scalar: bool) -> bool:
    """Whether what ``graph`` computes from its input ``k`` meets only values computed
    from its inputs ``numbers`` (Python numbers' carries) and 0-d constants (or, when
    ``as_scalar``, meets arrays as a 0-d value)."""
    tainted = {graph.inputs[k].id}
    plain = {graph.inputs[j].id for j in numbers}
    scalar = lambda a: a in graph.consts and np.ndim(graph.consts[a]) == 0
    for e in graph.eqns:
        ins = [a for a in e.inputs if type(a) is Var]
        outs = {v.id for v in e.outs}
        if not any(a.id in tainted for a in ins):
            if all(a.id in plain or scalar(a) for a in ins):
                plain |= outs
            continue
        if all(a.id in tainted or a.id in plain or scalar(a) for a in ins):
            tainted |= outs
        elif not (as_scalar and e.op.name in _PROMOTING and all(
                len(a.shape) == 0 for a in ins if a.id in tainted) and all(
                len(a.shape) > 0 for a in ins if a.id not in tainted | plain)):
            return False
    return True


#: elementwise ops whose result takes an array's dtype over a 0-d value's on torch's face
_PROMOTING = {"add", "sub", "mul", "div", "rsub", "rdiv", "pow", "maximum", "minimum"}


def constant(tracers: list, face: type, data: np.ndarray) -> Tensor:
    """A loop's value given as an array or number: a constant of every trace."""
    t = face._make(data)
    for tr in tracers:
        tr._bind(t, tr.builder.const(data))
    return t


def tensors_of(tracer: Tracer, outer: list) -> list:
    """The Tensors a tracer bound to ``outer`` (the values a body reads from outside)."""
    want = {v.id for v in outer}
    found = {}
    for t in tracer.keep:
        v = tracer.var_of.get(id(t))
        if isinstance(v, Var) and v.id in want:
            found[v.id] = t
    return [found[v.id] for v in outer]


def check_predicate(fn: str, pred: Any) -> None:
    shape, dtype = type_of(pred)
    if shape != () or dtype != np.bool_:
        raise TypeError(f"{fn}: cond_fun must return a boolean scalar, got "
                        f"{describe(shape, dtype)}")


def same_outputs(fn: str, first: tuple, outs: list, tree: Any) -> None:
    if tree != first[1]:
        raise TypeError(f"{fn}: the branches must return the same structure, got "
                        f"{first[1]} and {tree}")
    for k, (a, b) in enumerate(zip(first[0], outs)):
        if type_of(a) != type_of(b):
            raise TypeError(f"{fn}: the branches must return the same shapes and dtypes, "
                            f"but output {k} is {describe(*type_of(a))} in one and "
                            f"{describe(*type_of(b))} in another")
