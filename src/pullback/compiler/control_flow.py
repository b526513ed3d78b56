"""Loops as loops: ``pb.scan`` and ``pb.fori_loop``, JAX's signatures, on Tensors,
numpy arrays and Python numbers.

Eagerly (no trace running) they are Python loops over the user's function, so eager
mode is what it always was. Under a trace (``pb.compile``, ``pb.grad`` and the other
transforms) the body is traced ONCE, on stand-ins for one step's values, into a closed
graph that one ``scan`` equation holds (transforms/regions.py); the generated code runs
it as a Python ``for`` loop, its gradient as a reverse loop. The trip count is part of
the equation, so the generated source does not grow with it.

>>> import numpy as np
>>> import pullback as pb
>>> def cumulative(xs):
...     return pb.scan(lambda c, x: (c + x, c * x), 0.0, xs)
>>> total, products = cumulative(np.array([1.0, 2.0, 3.0]))
>>> float(total), products
(6.0, array([0., 2., 9.]))
>>> pb.grad(lambda xs: cumulative(xs)[1].sum())(np.array([1.0, 2.0, 3.0]))
array([5., 4., 3.])

A body may not turn a traced value into a Python value (``if`` on it, ``float()``),
draw random numbers or change state outside it: the error names the line.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from pullback.transforms.regions import checkpointed, scan_op, standing_in, switch_op, while_op

from ..autograd import record
from ..ir import Builder, Graph, Var
from ..numpy_face import NumpyTensor
from ..ops.elementwise import clone
from ..ops.joining import cat, dtype_of, stack
from ..pytree import tree_flatten, tree_unflatten
from ..tensor import Tensor
from .tracer import Tracer
from .user_lines import TraceError, source_of, user_frame


# --------------------------------------------------------------------------- checks
def _type_of(x: Any) -> tuple:
    """(shape, dtype) of a leaf as the loop sees it."""
    data = x._data if isinstance(x, Tensor) else np.asarray(x)
    return data.shape, data.dtype


def _describe(shape: tuple, dtype: Any) -> str:
    return f"{np.dtype(dtype).name}[{','.join(map(str, shape))}]"


def check_carry(fn: str, before: list, before_tree: Any, after: Any) -> list:
    """The leaves of the carry a step returned, checked against the carry it got."""
    leaves, tree = tree_flatten(after)
    if tree != before_tree:
        raise TypeError(f"{fn}: the body must return a carry of the structure it takes, "
                        f"{before_tree}, but it returned {tree}")
    for k, (a, b) in enumerate(zip(before, leaves)):
        (sa, da), (sb, db) = _type_of(a), _type_of(b)
        if sa != sb or (da != db and not _weak(a)):
            raise TypeError(f"{fn}: the body must return a carry of the shapes and dtypes "
                            f"it takes, but carry leaf {k} came in as {_describe(sa, da)} "
                            f"and went out as {_describe(sb, db)}")
    return leaves


def _weak(x: Any) -> bool:
    """A Python number: its dtype is what numpy's arithmetic makes of it."""
    return isinstance(x, (int, float, complex)) and not isinstance(x, bool)


def _length(fn: str, x_leaves: list, length: int | None) -> int:
    lengths = {_type_of(x)[0][:1] for x in x_leaves}
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


def _stack(values: list, like: Any) -> Any:
    """Per-step outputs as one array (a Tensor when the steps made Tensors)."""
    face = next((type(v) for v in values if isinstance(v, Tensor)), None)
    if face is not None:
        return stack([v if isinstance(v, Tensor) else face._make(np.asarray(v))
                      for v in values])
    if not values:
        shape, dtype = _type_of(like)
        return np.empty((0,) + shape, dtype)
    return np.stack([np.asarray(v) for v in values])


# --------------------------------------------------------------------------- eager
def _eager_scan(fn: str, f: Callable, init: Any, x_leaves: list, x_tree: Any,
                length: int, reverse: bool) -> tuple:
    c_leaves, c_tree = tree_flatten(init)
    # (JAX's values are immutable: a body that updates its carry in place must not write
    # into the caller's init or into the ys of earlier steps)
    carry = tree_unflatten(c_tree, [_own(c) for c in c_leaves])
    ys: list = []
    y_tree = None
    for i in (range(length - 1, -1, -1) if reverse else range(length)):
        out = f(carry, tree_unflatten(x_tree, [x[i] for x in x_leaves]))
        carry, y = _pair(fn, out)
        c_leaves = check_carry(fn, c_leaves, c_tree, carry)
        y_leaves, y_tree = tree_flatten(y)
        ys.append([_own(v) for v in y_leaves])
    if reverse:
        ys.reverse()
    if y_tree is None:  # no step ran: one on zeros tells the outputs' structure
        x0 = [np.zeros(_type_of(x)[0][1:], _type_of(x)[1]) for x in x_leaves]
        out = f(carry, tree_unflatten(x_tree, x0))
        y_leaves, y_tree = tree_flatten(_pair(fn, out)[1])
        return carry, tree_unflatten(y_tree, [_stack([], y) for y in y_leaves])
    stacked = [_stack([step[k] for step in ys], None) for k in range(len(ys[0]))]
    return carry, tree_unflatten(y_tree, stacked)


def _own(x: Any) -> Any:
    """A numpy array's copy (the loop's own); other values as they are."""
    return np.array(x) if type(x) is np.ndarray else x


def _pair(fn: str, out: Any) -> tuple:
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


def _face(leaves: list) -> type:
    """The kind of Tensor a loop's values take: the first Tensor's, else numpy's."""
    return next((type(x) for x in leaves if isinstance(x, Tensor)), NumpyTensor)


def _stand_in(face: type, data: np.ndarray, requires_grad: bool) -> Tensor:
    t = face._make(np.array(data))
    t._requires_grad = requires_grad and data.dtype.kind in "fc"
    return t


class _Body:
    """Tracing one step of a loop into a graph of its own, in every active tracer: their
    builders are swapped for fresh ones while the body runs on stand-ins."""

    def __init__(self, fn: str, tracers: list, stand_ins: list) -> None:
        self.fn, self.tracers, self.stand_ins = fn, tracers, stand_ins
        self.inputs: list = []  # per tracer: the body's input Vars

    def __enter__(self) -> _Body:
        self.saved = []
        for tr in self.tracers:
            self.saved.append((tr.builder, dict(tr.var_of), len(tr.guards), len(tr.writes),
                               len(tr.changed), len(tr.rewinds)))
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
        for tr, (_, _, n_guards, n_writes, n_changed, n_draws) in zip(self.tracers,
                                                                       self.saved):
            self._refuse(tr, n_guards, n_writes, n_changed, n_draws, src)
        tr = self.tracers[-1]
        outs = [self._var(tr, o) for o in outputs]
        return Graph(self.inputs[-1], tr.builder.eqns, outs, tr.builder.consts, name=self.fn)

    @staticmethod
    def _var(tr: Tracer, value: Any) -> Var:
        v = tr.value_of(value) if isinstance(value, Tensor) else tr.builder.const(
            np.asarray(value))
        return v if isinstance(v, Var) else tr.builder.emit(clone, (v,), {})

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


#: from this many steps (a nested scan's counted: ``_steps``) a scan traced for a front
#: door computes nothing at trace time
#: (``Tracer.may_stand_in``): its outputs are stand-ins until the trace ends, when the
#: call runs the generated code, the loop's only run; a trace that reads a stand-in
#: (a Python value, a guard, a print) is made again on the real values
STAND_IN_FROM = 500


# --------------------------------------------------------------------------- pb.scan
def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None,
         reverse: bool = False, unroll: int = 1, remat: Any = False) -> tuple:
    """``f(carry, x) -> (carry, y)`` over the leading axis of ``xs`` (JAX's
    ``lax.scan``): returns the last carry and the ``y``s stacked. ``init`` and ``xs``
    are pytrees of arrays, Tensors or numbers; ``length`` is needed without ``xs``;
    ``reverse`` walks from the end (the ``y``s stay in index order). ``unroll`` is
    accepted for JAX's signature; the loop is never unrolled. ``remat=k`` (True: k
    about the square root of the length) keeps one carry per k steps for the gradient
    and computes the others again: memory of the order of length / k + k steps."""
    fn = site("pb.scan")
    x_leaves, x_tree = tree_flatten(xs)
    n = _length(fn, x_leaves, length)
    tracers = active_tracers() if record.TRACING else None
    if not tracers:
        return _eager_scan(fn, f, init, x_leaves, x_tree, n, bool(reverse))
    return _traced_scan(fn, f, init, x_leaves, x_tree, n, bool(reverse), tracers, remat)


def site(name: str) -> str:
    """``name`` and the user's line that called it, as errors name them."""
    src = source_of(user_frame())
    return f"{name} at {src} ({src.text})" if src else name


def _data(x: Any, dtype: Any = None) -> np.ndarray:
    return x._data if isinstance(x, Tensor) else np.asarray(x, dtype)


def _weak_dtype(leaves: list, face: type) -> np.dtype:
    """The dtype a Python float carry takes: the widest float among the loop's arrays,
    else numpy's float64 (the default float dtype on the torch face)."""
    floats = [_data(x).dtype for x in leaves if not _weak(x) and _data(x).dtype.kind == "f"]
    if floats:
        return max(floats, key=lambda d: d.itemsize)
    return np.dtype(np.float64) if face is NumpyTensor else np.dtype(np.float32)


def _traced_scan(fn: str, f: Callable, init: Any, x_leaves: list, x_tree: Any, n: int,
                 reverse: bool, tracers: list, remat: Any = False) -> tuple:
    src = source_of(user_frame())
    c_leaves, c_tree = tree_flatten(init)
    face = _face(c_leaves + x_leaves)
    weak = _weak_dtype(c_leaves + x_leaves, face)
    c_data = [_data(c, weak if isinstance(c, float) else None) for c in c_leaves]
    x_data = [_data(x) for x in x_leaves]
    wants = lambda x: isinstance(x, Tensor) and x._requires_grad
    c_in = [_stand_in(face, d, wants(c)) for c, d in zip(c_leaves, c_data)]
    x_in = [_stand_in(face, d[0] if n else np.zeros(d.shape[1:], d.dtype), wants(x))
            for d, x in zip(x_data, x_leaves)]
    with _Body(fn, tracers, c_in + x_in) as body:
        carry, y = _pair(fn, f(tree_unflatten(c_tree, c_in), tree_unflatten(x_tree, x_in)))
        c_out = check_carry(fn, c_in, c_tree, carry)
        y_leaves, y_tree = tree_flatten(y)
        graph = body.graph(c_out + y_leaves, src)
    (graph,), outer = close([graph])
    consts = _tensors_of(tracers[-1], outer)
    args = [x if isinstance(x, Tensor) else _constant(tracers, face, d)
            for x, d in zip(c_leaves + x_leaves, c_data + x_data)] + consts
    n_c, n_x, n_y = len(c_leaves), len(x_leaves), len(y_leaves)
    if remat and n > 1:
        carries, ys = _blocked(fn, graph, args, n, n_c, n_x, n_y, reverse, remat)
    else:
        # one op on this call's Tensors: every tracer records it as one equation, and
        # its node gives an eager backward (which a nested transform may run) the loop
        stand_in = _steps(graph, n) >= STAND_IN_FROM and len(tracers) == 1 \
            and tracers[0].may_stand_in
        with standing_in(stand_in):
            values = scan_op(*args, body=graph, length=n, n_carry=n_c, n_xs=n_x,
                             reverse=reverse)
        if stand_in:
            tracers[0].stood_in(values)
        carries, ys = list(values[:n_c]), list(values[n_c:n_c + n_y])
    return tree_unflatten(c_tree, carries), tree_unflatten(y_tree, ys)


def _steps(body: Graph, n: int) -> int:
    """The steps a scan of ``n`` steps over ``body`` runs, its nested scans' steps
    counted (soft-DTW's 100 rows of 100 cells: 10,100), for ``STAND_IN_FROM``."""
    inner = sum(_steps(e.params["body"], e.params["length"]) for e in body.eqns
                if e.op.name == "scan")
    return n * (1 + inner)


def _blocked(fn: str, graph: Graph, args: list, n: int, n_c: int, n_x: int, n_y: int,
             reverse: bool, remat: Any) -> tuple:
    """A scan keeping one carry per block of k steps (k = remat, or about sqrt(n) for
    True): a scan over blocks whose reverse recomputes each block, then the steps left
    over (the first ones when walking in reverse, the last ones otherwise)."""
    k = int(remat) if remat is not True else max(1, int(round(n ** 0.5)))
    if not 1 <= k <= n:
        raise ValueError(f"{fn}: remat={remat} must be between 1 and length={n}")
    blocks, rest = divmod(n, k)
    carries, xs, consts = args[:n_c], args[n_c:n_c + n_x], args[n_c + n_x:]
    head = slice(rest, n) if reverse else slice(0, blocks * k)
    tail = slice(0, rest) if reverse else slice(blocks * k, n)
    split = [x[head].reshape((blocks, k) + tuple(x.shape[1:])) for x in xs]
    body = checkpointed(graph, n_c, n_x, k, reverse)
    values = scan_op(*carries, *split, *consts, body=body, length=blocks, n_carry=n_c,
                     n_xs=n_x, reverse=reverse, remat=True)
    carries = list(values[:n_c])
    ys = [y.reshape((blocks * k,) + tuple(y.shape[2:])) for y in values[n_c:n_c + n_y]]
    if rest:
        more = scan_op(*carries, *[x[tail] for x in xs], *consts, body=graph, length=rest,
                       n_carry=n_c, n_xs=n_x, reverse=reverse)
        carries = list(more[:n_c])
        ys = [cat([t, y] if reverse else [y, t])
              for y, t in zip(ys, more[n_c:n_c + n_y])]
    return carries, ys


def _constant(tracers: list, face: type, data: np.ndarray) -> Tensor:
    """A loop's value given as an array or number: a constant of every trace."""
    t = face._make(data)
    for tr in tracers:
        tr._bind(t, tr.builder.const(data))
    return t


def _tensors_of(tracer: Tracer, outer: list) -> list:
    """The Tensors a tracer bound to ``outer`` (the values a body reads from outside)."""
    want = {v.id for v in outer}
    found = {}
    for t in tracer.keep:
        v = tracer.var_of.get(id(t))
        if isinstance(v, Var) and v.id in want:
            found[v.id] = t
    return [found[v.id] for v in outer]


def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any) -> Any:
    """``body_fun(i, val) -> val`` for ``i`` in ``range(lower, upper)`` (JAX's
    ``lax.fori_loop``): a scan over the indices when both bounds are Python ints, a
    ``pb.while_loop`` over ``(i, val)`` when a bound is an integer array or Tensor (a
    value the trace does not fix), reverse-differentiable the same way."""
    for name, v in (("lower", lower), ("upper", upper)):
        if not _integral(v):
            raise TypeError(f"pb.fori_loop: {name} must be an int or a 0-d integer "
                            f"array, got {_bound_type(v)}")
    if isinstance(lower, Tensor) or isinstance(upper, Tensor):
        _, val = while_loop(lambda c: c[0] < upper,
                            lambda c: (c[0] + 1, body_fun(c[0], c[1])),
                            (lower, init_val))
        return val
    steps = np.arange(int(lower), max(int(lower), int(upper)))
    carry, _ = scan(lambda val, i: (body_fun(i, val), None), init_val, steps)
    return carry


def _integral(v: Any) -> bool:
    if isinstance(v, (bool, np.bool_)):
        return False
    if isinstance(v, (int, np.integer)):
        return True
    return getattr(v, "shape", None) == () and np.issubdtype(dtype_of(v), np.integer)


def _bound_type(v: Any) -> str:
    if hasattr(v, "dtype") and hasattr(v, "shape"):
        return f"{type(v).__name__} of {v.dtype}{list(v.shape)}"
    return type(v).__name__

# --------------------------------------------------------------------- pb.while_loop
def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """``val = body_fun(val)`` while ``cond_fun(val)`` (JAX's ``lax.while_loop``). Under
    a trace the loop is one region whatever its trip count, and reverse-differentiable:
    the generated code counts the steps and keeps the carries each step started from;
    the gradient walks them back."""
    return _while(cond_fun, lambda c: (body_fun(c), ()), init_val, False)


def while_stacking(cond_fun: Callable, body_fun: Callable, init_val: Any) -> tuple:
    """``while_loop`` whose ``body_fun`` gives ``(carry, ys)``, ``ys`` a tuple of arrays
    of one shape and dtype each step: ``(carry, stacked ys)``, the ys stacked as long as
    it ran (the source pass's lists appended to in a ``while`` loop). Under a trace
    its trip count, the stacks' length, is guarded: what reads them may read their
    shape."""
    return _while(cond_fun, body_fun, init_val, True)


def _while(cond_fun: Callable, body_fun: Callable, init_val: Any, stacking: bool) -> Any:
    fn = site("pb.while_loop")
    leaves, tree = tree_flatten(init_val)
    tracers = active_tracers() if record.TRACING else None
    if not tracers:
        val, steps = init_val, []
        while _truth(cond_fun(val)):
            new, ys = body_fun(val)
            leaves = check_carry(fn, leaves, tree, new)
            val = new
            steps.append(ys)
        return (val, tuple(_stack(list(s), s[0]) for s in zip(*steps))) if stacking else val
    src = source_of(user_frame())
    face = _face(leaves)
    weak = _weak_dtype(leaves, face)
    data = [_data(c, weak if isinstance(c, float) else None) for c in leaves]
    wants = lambda x: isinstance(x, Tensor) and x._requires_grad
    stand = lambda: [_stand_in(face, d, wants(c)) for c, d in zip(leaves, data)]
    c_in = stand()
    with _Body(fn, tracers, c_in) as body:
        pred = cond_fun(tree_unflatten(tree, c_in))
        _check_predicate(fn, pred)
        cond = body.graph([pred], src)
    c_in = stand()
    with _Body(fn, tracers, c_in) as body:
        new, ys = body_fun(tree_unflatten(tree, c_in))
        out = check_carry(fn, c_in, tree, new)
        step = body.graph(out + list(ys), src)
    (cond, step), outer = close([cond, step])
    args = [x if isinstance(x, Tensor) else _constant(tracers, face, d)
            for x, d in zip(leaves, data)] + _tensors_of(tracers[-1], outer)
    for tr in tracers:  # (its trip count, the shape of what it keeps, is a value)
        for a in args:
            tr.must_be_real(a, "a while loop's run")
    more = {"n_ys": len(ys)} if ys else {}
    # a long loop (traced alone for a front door) stops after some steps: its outputs are
    # stand-ins, and the generated code runs it once (regions.standing_in)
    with standing_in(len(tracers) == 1 and tracers[0].may_stand_in and not ys) as stand_in:
        values = while_op(*args, cond=cond, body=step, n_carry=len(leaves), **more)
    if stand_in.stood:
        tracers[0].stood_in(values)
    carry = tree_unflatten(tree, list(values[:len(leaves)]))
    if not stacking:
        return carry
    if ys:  # (a guard: the code after it is written for this many rows)
        values[len(leaves)].item()
    return carry, tuple(values[2 * len(leaves) + 1:])


def _truth(pred: Any) -> bool:
    return bool(pred)


def _check_predicate(fn: str, pred: Any) -> None:
    shape, dtype = _type_of(pred)
    if shape != () or dtype != np.bool_:
        raise TypeError(f"{fn}: cond_fun must return a boolean scalar, got "
                        f"{_describe(shape, dtype)}")


# ---------------------------------------------------------------- pb.cond, pb.switch
def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any) -> Any:
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)`` (JAX's
    ``lax.cond``). A traced ``pred`` makes one region holding both branches: the
    generated code has an ``if``, and a new outcome does not trace again."""
    return _branch(site("pb.cond"), pred, [false_fun, true_fun], operands, True)


def switch(index: Any, branches: Any, *operands: Any) -> Any:
    """``branches[index](*operands)``, ``index`` clamped into range (JAX's
    ``lax.switch``)."""
    fn = site("pb.switch")
    branches = list(branches)
    if not branches:
        raise ValueError(f"{fn}: branches must not be empty")
    return _branch(fn, index, branches, operands, False)


def _branch(fn: str, index: Any, branches: list, operands: tuple, boolean: bool) -> Any:
    tracers = active_tracers() if record.TRACING and isinstance(index, Tensor) else None
    if not tracers:
        k = int(bool(index)) if boolean else int(index)
        return branches[min(max(k, 0), len(branches) - 1)](*operands)
    src = source_of(user_frame())
    if index._data.shape != ():
        raise TypeError(f"{fn}: the {'predicate' if boolean else 'index'} must be a scalar, "
                        f"got shape {index._data.shape}")
    leaves, tree = tree_flatten(operands)
    face = _face(leaves + [index])
    data = [_data(x) for x in leaves]
    graphs, first = [], None
    for br in branches:
        ins = [_stand_in(face, d, isinstance(x, Tensor) and x._requires_grad)
               for x, d in zip(leaves, data)]
        with _Body(fn, tracers, ins) as body:
            outs, out_tree = tree_flatten(br(*tree_unflatten(tree, ins)))
            first = first or (outs, out_tree)
            _same_outputs(fn, first, outs, out_tree)
            graphs.append(body.graph(outs, src))
    graphs, outer = close(graphs)
    args = [x if isinstance(x, Tensor) else _constant(tracers, face, d)
            for x, d in zip(leaves, data)] + _tensors_of(tracers[-1], outer)
    pick = index if not boolean or index._data.dtype == np.bool_ else index != 0
    values = _passed_through(graphs, args)
    if values is None:
        values = switch_op(pick, *args, branches=tuple(graphs))
    return tree_unflatten(first[1], list(values))


def _passed_through(graphs: list, args: list) -> list | None:
    """The operands every branch returns as they are, each at the same place (a
    converted ``if ...: break`` whose branches only hand the carries on), or None: no
    region, the values themselves (a loop's reverse then reads the body's values, not
    a branch's). Branches that do something besides their results (a print) stay."""
    if any(not e.op.pure for g in graphs for e in g.eqns):
        return None
    values = []
    for m in range(len(graphs[0].outputs)):
        at = {next((p for p, v in enumerate(g.inputs) if v is g.outputs[m]), None)
              for g in graphs}
        if len(at) != 1 or None in at:
            return None
        values.append(args[at.pop()])
    return values


def _same_outputs(fn: str, first: tuple, outs: list, tree: Any) -> None:
    if tree != first[1]:
        raise TypeError(f"{fn}: the branches must return the same structure, got "
                        f"{first[1]} and {tree}")
    for k, (a, b) in enumerate(zip(first[0], outs)):
        if _type_of(a) != _type_of(b):
            raise TypeError(f"{fn}: the branches must return the same shapes and dtypes, "
                            f"but output {k} is {_describe(*_type_of(a))} in one and "
                            f"{_describe(*_type_of(b))} in another")
