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
from ..ir import Graph
from ..numpy_face import to_python_float
from ..ops.joining import cat, dtype_of, stack
from ..pytree import tree_flatten, tree_unflatten
from ..tensor import Tensor
from .region_bodies import (
    Body,
    active_tracers,
    check_carry,
    check_predicate,
    close,
    constant,
    data_of,
    face_of,
    grad_carries,
    new_stand_in,
    python_doubles,
    python_floats,
    same_outputs,
    scan_length,
    step_pair,
    tensors_of,
    type_of,
    weak_dtype,
)
from .user_lines import source_of, user_frame


# --------------------------------------------------------------------------- checks
def _stack(values: list, like: Any) -> Any:
    """Per-step outputs as one array (a Tensor when the steps made Tensors)."""
    face = next((type(v) for v in values if isinstance(v, Tensor)), None)
    if face is not None:
        return stack([v if isinstance(v, Tensor) else face._make(np.asarray(v))
                      for v in values])
    if not values:
        shape, dtype = type_of(like)
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
        carry, y = step_pair(fn, out)
        c_leaves = check_carry(fn, c_leaves, c_tree, carry)
        y_leaves, y_tree = tree_flatten(y)
        ys.append([_own(v) for v in y_leaves])
    if reverse:
        ys.reverse()
    if y_tree is None:  # no step ran: one on zeros tells the outputs' structure
        x0 = [np.zeros(type_of(x)[0][1:], type_of(x)[1]) for x in x_leaves]
        out = f(carry, tree_unflatten(x_tree, x0))
        y_leaves, y_tree = tree_flatten(step_pair(fn, out)[1])
        return carry, tree_unflatten(y_tree, [_stack([], y) for y in y_leaves])
    stacked = [_stack([step[k] for step in ys], None) for k in range(len(ys[0]))]
    return carry, tree_unflatten(y_tree, stacked)


def _own(x: Any) -> Any:
    """A numpy array's copy (the loop's own); other values as they are."""
    return np.array(x) if type(x) is np.ndarray else x


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
    n = scan_length(fn, x_leaves, length)
    tracers = active_tracers() if record.TRACING else None
    if not tracers:
        return _eager_scan(fn, f, init, x_leaves, x_tree, n, bool(reverse))
    return _traced_scan(fn, f, init, x_leaves, x_tree, n, bool(reverse), tracers, remat)


def site(name: str) -> str:
    """``name`` and the user's line that called it, as errors name them."""
    src = source_of(user_frame())
    return f"{name} at {src} ({src.text})" if src else name


def _traced_scan(fn: str, f: Callable, init: Any, x_leaves: list, x_tree: Any, n: int,
                 reverse: bool, tracers: list, remat: Any = False) -> tuple:
    src = source_of(user_frame())
    c_leaves, c_tree = tree_flatten(init)
    face = face_of(c_leaves + x_leaves)
    weak = weak_dtype(c_leaves + x_leaves, face)
    c_data = [data_of(c, weak if isinstance(c, float) else None) for c in c_leaves]
    x_data = [data_of(x) for x in x_leaves]
    wants = lambda x: isinstance(x, Tensor) and x._requires_grad
    c_wants: list | None = [wants(c) for c in c_leaves]
    while c_wants is not None:
        c_in = [new_stand_in(face, d, w) for d, w in zip(c_data, c_wants)]
        x_in = [new_stand_in(face, d[0] if n else np.zeros(d.shape[1:], d.dtype), wants(x))
                for d, x in zip(x_data, x_leaves)]
        with Body(fn, tracers, c_in + x_in) as body:
            carry, y = step_pair(fn, f(tree_unflatten(c_tree, c_in),
                                       tree_unflatten(x_tree, x_in)))
            c_out = check_carry(fn, c_in, c_tree, carry)
            y_leaves, y_tree = tree_flatten(y)
            graph = body.graph(c_out + y_leaves, src)
        c_wants = grad_carries(c_wants, c_out, graph)
    (graph,), outer = close([graph])
    consts = tensors_of(tracers[-1], outer)
    args = [x if isinstance(x, Tensor) else constant(tracers, face, d)
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
        return _eager_while(fn, cond_fun, body_fun, init_val, leaves, tree, stacking)
    return _traced_while(fn, cond_fun, body_fun, leaves, tree, stacking, tracers)


def _eager_while(fn: str, cond_fun: Callable, body_fun: Callable, val: Any, leaves: list,
                 tree: Any, stacking: bool) -> Any:
    steps = []
    while _truth(cond_fun(val)):
        new, ys = body_fun(val)
        leaves = check_carry(fn, leaves, tree, new)
        val = new
        steps.append(ys)
    return (val, tuple(_stack(list(s), s[0]) for s in zip(*steps))) if stacking else val


def _traced_while(fn: str, cond_fun: Callable, body_fun: Callable, leaves: list, tree: Any,
                  stacking: bool, tracers: list) -> Any:
    """The loop as one ``while`` region: its condition and its body traced once each."""
    src = source_of(user_frame())
    face = face_of(leaves)
    weak = weak_dtype(leaves, face)
    pythons = python_floats(leaves, weak, face)
    data = [data_of(c, np.float64 if k in pythons else weak if isinstance(c, float) else None)
            for k, c in enumerate(leaves)]
    cond, step, out, ys = _while_bodies(fn, cond_fun, body_fun, leaves, tree, face, data,
                                        tracers, src, pythons)
    doubles = pythons or python_doubles(leaves, weak, [cond, step], face)
    if doubles and not pythons:  # (traced again with those carries at Python's precision)
        data = [d.astype(np.float64) if k in doubles else d for k, d in enumerate(data)]
        cond, step, out, ys = _while_bodies(fn, cond_fun, body_fun, leaves, tree, face, data,
                                            tracers, src)
    (cond, step), outer = close([cond, step])
    args = [x if isinstance(x, Tensor) else constant(tracers, face, d)
            for x, d in zip(leaves, data)] + tensors_of(tracers[-1], outer)
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
    carry = tree_unflatten(tree, [to_python_float(v) if k in pythons else v.to(weak)
                                  if k in doubles else v
                                  for k, v in enumerate(values[:len(leaves)])])
    if not stacking:
        return carry
    if ys:  # (a guard: the code after it is written for this many rows)
        values[len(leaves)].item()
    return carry, tuple(values[2 * len(leaves) + 1:])


def _while_bodies(fn: str, cond_fun: Callable, body_fun: Callable, leaves: list, tree: Any,
                  face: type, data: list, tracers: list, src: Any,
                  pythons: frozenset = frozenset()) -> tuple:
    """A while loop's condition and body traced on stand-ins of ``data``: the two graphs,
    the body's new carry leaves and its per-step outputs (the carries ``pythons`` are
    traced Python floats)."""
    wants = lambda x: isinstance(x, Tensor) and x._requires_grad
    stand = lambda k, d, w: to_python_float(new_stand_in(face, d, w)) if k in pythons \
        else new_stand_in(face, d, w)  # noqa: E731
    c_in = [stand(k, d, wants(c)) for k, (c, d) in enumerate(zip(leaves, data))]
    with Body(fn, tracers, c_in) as body:
        pred = cond_fun(tree_unflatten(tree, c_in))
        check_predicate(fn, pred)
        cond = body.graph([pred], src)
    c_wants: list | None = [wants(c) for c in leaves]
    while c_wants is not None:
        c_in = [stand(k, d, w) for k, (d, w) in enumerate(zip(data, c_wants))]
        with Body(fn, tracers, c_in) as body:
            new, ys = body_fun(tree_unflatten(tree, c_in))
            out = check_carry(fn, c_in, tree, new)
            step = body.graph(out + list(ys), src)
        c_wants = grad_carries(c_wants, out, step)
    return cond, step, out, ys


def _truth(pred: Any) -> bool:
    return bool(pred)


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
    face = face_of(leaves + [index])
    data = [data_of(x) for x in leaves]
    graphs, first = [], None
    for br in branches:
        ins = [new_stand_in(face, d, isinstance(x, Tensor) and x._requires_grad)
               for x, d in zip(leaves, data)]
        with Body(fn, tracers, ins) as body:
            outs, out_tree = tree_flatten(br(*tree_unflatten(tree, ins)))
            first = first or (outs, out_tree)
            same_outputs(fn, first, outs, out_tree)
            graphs.append(body.graph(outs, src))
    graphs, outer = close(graphs)
    args = [x if isinstance(x, Tensor) else constant(tracers, face, d)
            for x, d in zip(leaves, data)] + tensors_of(tracers[-1], outer)
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


