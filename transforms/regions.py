"""Control flow as regions: ops whose params hold sub-graphs, run as loops and branches.

A region equation holds its body once, as a closed graph (every value it reads from
outside is one of its inputs), however many times it runs:

    h:f32[4] ys:f32[50,4] hs:f32[50,4] = scan[length=50 n_carry=1 n_xs=1 reverse=False
        body={ lambda h:f32[4] x:f32[4] w:f32[4,4] .
               let t0:f32[4] = matmul h w
                   t1:f32[4] = add t0 x
                   h_1:f32[4] = tanh t1
               in (h_1 h_1) }] h0 xs w

``scan``'s inputs are its carries, the arrays it walks along their first axis and the
values its body reads from outside (``consts``); its outputs the last carries, the
body's per-step outputs stacked, and the carries each step started from, stacked (read
by the reverse loop only; codegen does not keep them when nothing reads them).

Every pass sees one equation. The adjoint of a scan is a scan (``_scan_vjp``): a
reverse loop whose body is the adjoint of the forward body (``reverse_body``), carrying
the carries' gradients and the sums of the consts' gradients, walking the saved
carries and the outputs' gradients backwards. So gradients of gradients follow from
the one rule; forward mode has its own (regions_jvp.py), batching too
(regions_batch.py). Codegen writes a Python ``for`` loop with the body once
(codegen.py).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from pullback.ir import (
    Builder,
    Eqn,
    Graph,
    Var,
    emit_zeros,
    evaluate,
    grad_of,
    is_zeros,
    naming,
    shapes_only,
)
from pullback.ops import OPS, defop
from pullback.ops.elementwise import zeros_like

from .adjoint import adjoint
from .cse import cse
from .dce import dce
from .peephole import peephole
from .regions_batch import _scan_batch, _switch_batch, _while_batch, scan_parts
from .regions_jvp import scan_jvp, while_jvp


def _is_float(v: Any) -> bool:
    return np.dtype(v.dtype).kind in "fc"


def _steps(length: int, reverse: bool) -> range:
    return range(length - 1, -1, -1) if reverse else range(length)


_BODY_PASSES: list = []  # passes run on a reverse body (residuals.py registers itself)
_RUNNERS: dict[int, tuple] = {}  # id(graph) -> (graph, its generated function)
_COMPILE: list = []  # codegen's graph -> function, registered by codegen.py


def use_runner(compile_graph: Any) -> None:
    """How bodies run on arrays: as generated code (codegen registers itself here)."""
    _COMPILE[:] = [compile_graph]


def use_body_pass(p: Any) -> None:
    """A pass run on each reverse body after its cleanup: ``loop_residuals``, so that a
    loop inside the body keeps its own residuals (a nested loop's items, not the
    table each inner step started from)."""
    if p not in _BODY_PASSES:
        _BODY_PASSES.append(p)


def runner(graph: Graph) -> Any:
    """``graph`` as a function of its inputs returning its outputs (a tuple)."""
    hit = _RUNNERS.get(id(graph))
    if hit is not None and hit[0] is graph:
        return hit[1]
    if not _COMPILE:  # (codegen not imported: the interpreter)
        return lambda *a: evaluate(graph, list(a))
    fn = _COMPILE[0](graph)
    with _REVERSE_LOCK:
        if len(_RUNNERS) > 1024:
            _RUNNERS.clear()
        _RUNNERS[id(graph)] = (graph, fn)
    return fn


class _StandIn(threading.local):
    on = False
    stood = False  # (a while loop stood in: standing_in.stood reads it)


_STAND_IN = _StandIn()


class standing_in:
    """Inside it (when ``on``), a scan run on arrays computes nothing: its outputs are
    zeros of their shapes, stand-ins a tracer marks and must never let anything read
    (``Tracer.stood_in``): the loop then runs once, in the generated code. A while
    loop stops after ``WHOLE_LOOP_FROM`` steps, its outputs stand-ins made of its state
    then (``stood`` says whether it did: a short loop's outputs are its values)."""

    def __init__(self, on: bool) -> None:
        self.on, self.stood = on, False

    def __enter__(self) -> standing_in:
        self.before, _STAND_IN.on = _STAND_IN.on, self.on
        _STAND_IN.stood = False
        return self

    def __exit__(self, *exc: object) -> None:
        _STAND_IN.on, self.stood, _STAND_IN.stood = self.before, _STAND_IN.stood, False


def _run_scan(*arrays: Any, body: Graph, length: int, n_carry: int, n_xs: int,
              reverse: bool, remat: bool = False) -> tuple:
    """The forward on arrays: the body evaluated once per step (``remat``: the reverse
    loop recomputes what the body computed, ``checkpointed``)."""
    if _STAND_IN.on:
        _STAND_IN.on = False  # (this scan's outputs only, not those of a scan inside it)
        return tuple(np.zeros(np.shape(o), o.dtype) for o in _scan_zeros(
            *arrays, body=body, length=length, n_carry=n_carry, n_xs=n_xs, reverse=reverse))
    carries, xs, consts = scan_parts(arrays, n_carry, n_xs)
    carries = [np.asarray(c) for c in carries]
    given = length
    if length is None:  # as long as the arrays it walks (a while loop's reverse)
        length = len(xs[0])
    if length == 0:
        stacked = body.outputs[n_carry:] + body.inputs[:n_carry]
        return tuple(carries) + tuple(np.empty((0,) + v.shape, v.dtype) for v in stacked)
    whole = _loop_runner(arrays, body, length, given, n_carry, n_xs, reverse)
    if whole is not None:
        return tuple(whole(*carries, *xs, *consts))
    ys: list = []
    saved: list = []
    step = runner(body)
    for i in _steps(length, reverse):
        saved.append(carries)
        outs = step(*carries, *[x[i] for x in xs], *consts)
        carries = [np.asarray(c) for c in outs[:n_carry]]
        ys.append(outs[n_carry:])
    if reverse:
        ys.reverse()
        saved.reverse()
    return tuple(carries) + tuple(np.stack(s) for s in zip(*ys)) + tuple(
        np.stack(s) for s in zip(*saved))


#: from this many steps a scan's forward on arrays runs as one generated function, its
#: ``for`` loop with the body once (the generated forward's own loop), instead of a call
#: of the body's function per step: a long loop traced for the compiler runs once at
#: trace time, at the cost of a compiled function per body (even at about 64 steps)
WHOLE_LOOP_FROM = 100
_LOOPS: dict[tuple, tuple] = {}  # (id(body), length, ...) -> (body, its loop function)


def _loop_runner(arrays: tuple, body: Graph, length: int, given: int | None, n_carry: int,
                 n_xs: int, reverse: bool) -> Any:
    """The whole scan over ``arrays`` as one generated function returning all its
    outputs (the saved carries too), or None: a short loop, no code generator, or
    arrays whose types are not the body's (the per-step loop takes them as they are).
    ``given``: the scan's own ``length`` (None: the function reads it from the arrays
    it walks, so that one function serves every trip count of a while loop's reverse)."""
    if length < WHOLE_LOOP_FROM or not _COMPILE:
        return None
    lead = [()] * n_carry + [(length,)] * n_xs + [()] * (len(arrays) - n_carry - n_xs)
    like = [(pre + v.shape, v.dtype, v.name) for pre, v in zip(lead, body.inputs)]
    return _whole_loop(scan_op, arrays, like, (body,), (given, n_carry, n_xs, reverse),
                       body=body, length=given, n_carry=n_carry, n_xs=n_xs, reverse=reverse)


def _whole_loop(op: Any, arrays: tuple, like: list, graphs: tuple, key: tuple,
                outs: list | None = None, **params: Any) -> Any:
    """``op(*arrays, **params)`` (a region: ``graphs`` are its sub-graphs) as one
    generated function, made once per region and types, or None when the arrays'
    types are not ``like``'s ((shape, dtype, name) of each input). ``outs``: the
    equation's output Vars, for an op a builder would run to learn them (a while loop,
    whose trip count is known only by running it)."""
    types = tuple((np.shape(a), np.result_type(a)) for a in arrays)
    if len(types) != len(like) or any(
            t != (shape, np.dtype(dtype)) for t, (shape, dtype, _) in zip(types, like)):
        return None
    key = (op.name, *map(id, graphs), *key)
    hit = _LOOPS.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], graphs)):
        return hit[1]
    ins = [Var(shape, dtype, np.broadcast_to(np.zeros((), dtype), shape), name=name)
           for (shape, dtype), (_, _, name) in zip(types, like)]
    if outs is None:
        with Builder() as b:  # (a builder records the scan without running it)
            outs = op(*ins, **params)
        eqns, consts = b.eqns, b.consts
    else:
        eqns, consts = [Eqn(op, tuple(ins), tuple(outs), params)], {}
    fn = _COMPILE[0](Graph(ins, eqns, list(outs), consts, name=graphs[-1].name + "_loop"))
    with _REVERSE_LOCK:
        if len(_LOOPS) > 256:
            _LOOPS.clear()
        _LOOPS[key] = (graphs, fn)
    return fn


class _Memo(threading.local):
    """The gradients one application of a region's rule computed, for its other inputs
    (``key``: the very g, out and inputs it got)."""

    key: tuple = (None, None, None)
    grads: list = []

    def hit(self, g: Any, out: Any, tensors: Any) -> bool:
        k = self.key
        return k[0] is g and k[1] is out and k[2] is tensors

    def keep(self, g: Any, out: Any, tensors: Any, grads: list) -> list:
        self.key, self.grads = (g, out, tensors), grads
        return grads


_MEMO = _Memo()


def _scan_vjp(g: tuple, out: tuple, tensors: tuple, i: int, body: Graph, length: int,
              n_carry: int, n_xs: int, reverse: bool, remat: bool = False) -> Any:
    """The gradient of input ``i``: all of them come from one reverse scan, run once per
    application of the rule (``_MEMO``) and read for each input that needs one."""
    if not _MEMO.hit(g, out, tensors):
        _MEMO.keep(g, out, tensors,
                   _scan_grads(g, out, tensors, body, length, n_carry, n_xs, reverse))
    return _MEMO.grads[i]


def _scan_grads(g: tuple, out: tuple, tensors: tuple, body: Graph, length: int,
                n_carry: int, n_xs: int, reverse: bool) -> list:
    carries, xs, consts = scan_parts(tensors, n_carry, n_xs)
    n_y = len(body.outputs) - n_carry
    g_last, g_ys, g_saved = g[:n_carry], g[n_carry:n_carry + n_y], g[n_carry + n_y:]
    saved = out[n_carry + n_y:]
    # the saved carries get a gradient only in a gradient of a gradient
    fs = tuple(k for k, gs in enumerate(g_saved) if not _zero(gs))
    rev = reverse_body(body, n_carry, n_xs, fs)
    init = [g_last[k] for k in rev.fc] + [zeros_like(consts[k]) for k in rev.fk]
    walk = (list(saved) + list(xs) + [g_ys[k] for k in rev.fy]
            + [g_saved[k] for k in rev.fs])
    res = scan_op(*init, *walk, *consts, body=rev.graph, length=length, n_carry=len(init),
                  n_xs=len(walk), reverse=not reverse)
    grads: list = [None] * len(tensors)
    for j, k in enumerate(rev.fc):
        grads[k] = res[j]
    for j, k in enumerate(rev.fk):
        grads[n_carry + n_xs + k] = res[len(rev.fc) + j]
    for j, k in enumerate(rev.fx):
        grads[n_carry + k] = res[len(init) + j]
    return grads


class ReverseBody:
    """The body of a scan's reverse loop and which of the forward's values it takes
    gradients of (positions among the carries, xs, consts and per-step outputs, and the
    saved carries whose gradients it walks)."""

    def __init__(self, graph: Graph, fc: list, fx: list, fk: list, fy: list,
                 fs: tuple) -> None:
        self.graph, self.fc, self.fx, self.fk, self.fy, self.fs = graph, fc, fx, fk, fy, fs


_REVERSE: dict[tuple, tuple] = {}  # (id(body), fs) -> (body, its ReverseBody)
_REVERSE_LOCK = threading.Lock()


def reverse_body(body: Graph, n_carry: int, n_xs: int, fs: tuple = ()) -> ReverseBody:
    """``(g_carry..., sums..., carry..., x..., g_y..., g_saved..., consts...) ->
    (g_carry_before..., sums + g_consts..., g_x...)``: one step of the reverse loop (made
    once per body); ``fs``: the carries whose saved values get a gradient, added to
    theirs at their step."""
    with _REVERSE_LOCK:
        hit = _REVERSE.get((id(body), fs))
        if hit is not None and hit[0] is body:
            return hit[1]
    b_carry, b_x, b_k = scan_parts(body.inputs, n_carry, n_xs)
    ys = body.outputs[n_carry:]
    fc = [k for k, v in enumerate(b_carry) if _is_float(v)]
    fx = [k for k, v in enumerate(b_x) if _is_float(v)]
    fk = [k for k, v in enumerate(b_k) if _is_float(v)]
    fy = [k for k, v in enumerate(ys) if isinstance(v, Var) and _is_float(v)]
    fs = tuple(k for k in fs if k in fc)
    seeds = [_like(v, grad_of(v.name)) if isinstance(v, Var) and _is_float(v) else None
             for v in body.outputs]
    wrt = [b_carry[k] for k in fc] + [b_x[k] for k in fx] + [b_k[k] for k in fk]
    joint = adjoint(body, wrt, seeds)
    grads = joint.outputs[len(body.outputs):]
    g_c, g_x, g_k = grads[:len(fc)], grads[len(fc):len(fc) + len(fx)], grads[len(fc) + len(fx):]
    sums = [_like(b_k[k], naming.grad_sum(b_k[k].name)) for k in fk]
    g_saved = {k: _like(b_carry[k], grad_of(naming.SAVED)) for k in fs}
    with Builder() as b:
        b.consts = dict(joint.consts)
        outs = ([_plus(_or_zeros(gv, b_carry[k]), g_saved.get(k)) for gv, k in zip(g_c, fc)]
                + [s if gv is None else s + gv for s, gv in zip(sums, g_k)]
                + [_or_zeros(gv, b_x[k]) for gv, k in zip(g_x, fx)])
    inputs = ([seeds[k] for k in fc] + sums + list(b_carry) + list(b_x)
              + [seeds[n_carry + k] for k in fy] + list(g_saved.values()) + list(b_k))
    graph = Graph(inputs, joint.eqns + b.eqns, outs, b.consts, name=body.name + "_reverse")
    for p in (peephole, cse, dce, *_BODY_PASSES):
        graph = p(graph)
    rev = ReverseBody(graph, fc, fx, fk, fy, fs)
    with _REVERSE_LOCK:
        if len(_REVERSE) > 1024:
            _REVERSE.clear()
        _REVERSE[id(body), fs] = (body, rev)
    return rev


def _zero(g: Any) -> bool:
    """A gradient known to be zero: none, ``emit_zeros``'s, or the zeros array the eager
    engine fills in for an output no gradient reached (its shape is the trace's: a
    while loop's saved steps read at another trip count failed with an IndexError)."""
    return g is None or is_zeros(g) or isinstance(g, np.ndarray) and not g.any()


def _plus(a: Any, b: Any) -> Any:
    return a if b is None else a + b


def _like(v: Var, name: str) -> Var:
    """A new value of ``v``'s type (its trace value: ones, a seed's stand-in)."""
    return Var(v.shape, v.dtype, np.ones(v.shape, v.dtype), name=name)


def _or_zeros(g: Any, like: Var) -> Any:
    return emit_zeros(like.shape, like.dtype) if g is None else g


# (``OPS.get``: pytest's doctest run imports this folder a second time, as ``transforms``)
scan_op = OPS.get("scan") or defop("scan", _run_scan, "ScanBackward0", variadic=True, outputs=tuple,
                vjp=(_scan_vjp,), jvp=(scan_jvp,), uses=("tensors out",), aliases=True,
                fresh=False, batch=_scan_batch)


def checkpointed(body: Graph, n_carry: int, n_xs: int, k: int, reverse: bool) -> Graph:
    """The body of a loop over blocks of ``k`` steps: one inner scan of ``body``. A scan
    of it marked ``remat`` keeps one carry per block; its reverse runs each block's
    forward again (keeping ``k`` carries) and then that block's reverse."""
    b_carry, b_x, b_k = scan_parts(body.inputs, n_carry, n_xs)
    copy = lambda v: Var(v.shape, v.dtype, v._data, name=v.name)
    blocks = [Var((k,) + v.shape, v.dtype, np.repeat(v._data[None], k, 0), name=v.name)
              for v in b_x]
    ins = [copy(v) for v in b_carry] + blocks + [copy(v) for v in b_k]
    n_y = len(body.outputs) - n_carry
    with Builder() as b:
        outs = scan_op(*ins, body=body, length=k, n_carry=n_carry, n_xs=n_xs,
                       reverse=reverse)
    return Graph(ins, b.eqns, list(outs[:n_carry + n_y]), b.consts, name=body.name + "_block")


# ------------------------------------------------------------------------ while
def _run_while(*arrays: Any, cond: Graph, body: Graph, n_carry: int, n_ys: int = 0) -> tuple:
    """The forward on arrays: the last carries, the number of steps taken, the carries
    each step started from, stacked (its reverse walks them back), and the body's
    ``n_ys`` per-step outputs (after its carries), stacked as long as it ran."""
    carries, consts = [np.asarray(c) for c in arrays[:n_carry]], list(arrays[n_carry:])
    saved: list = []
    ys: list = []
    test, step = runner(cond), runner(body)
    stand_in, _STAND_IN.on = _STAND_IN.on, False  # (its body's loops run as they are)
    while test(*carries, *consts)[0]:
        saved.append(carries)
        outs = step(*carries, *consts)
        carries = [np.asarray(c) for c in outs[:n_carry]]
        ys.append([np.asarray(y) for y in outs[n_carry:]])
        if len(saved) == WHOLE_LOOP_FROM and stand_in:
            _STAND_IN.stood = True  # (the state after these steps stands in for the end)
            break
        if len(saved) == WHOLE_LOOP_FROM and _COMPILE:
            rest = _rest_of_while(carries, consts, cond, body, n_carry, n_ys)
            if rest is not None:
                return rest[:n_carry] + (np.asarray(len(saved) + int(rest[n_carry])),) + tuple(
                    np.concatenate([np.stack(s), more]) for s, more in
                    zip([*zip(*saved), *zip(*ys)], rest[n_carry + 1:]))
    return tuple(carries) + (np.asarray(len(saved)),) + _stacks(saved, body.inputs[:n_carry]) \
        + _stacks(ys, body.outputs[n_carry:])


def _stacks(steps: list, like: list) -> tuple:
    """Each step's values stacked, one array per value of ``like`` (empty: no step)."""
    if steps:
        return tuple(np.stack(s) for s in zip(*steps))
    return tuple(np.empty((0,) + tuple(v.shape), v.dtype) for v in like)


def _rest_of_while(carries: list, consts: list, cond: Graph, body: Graph,
                   n_carry: int, n_ys: int = 0) -> tuple | None:
    """The rest of a long while loop from ``carries`` (after ``WHOLE_LOOP_FROM`` steps)
    run by one generated function, as ``_run_while`` gives it, or None (types not the
    body's: the per-step loop goes on)."""
    like = [(v.shape, v.dtype, v.name) for v in body.inputs]
    first = body.inputs[:n_carry]
    outs = [_like(v, v.name) for v in first] + [Var((), np.int64, np.int64(0))] + [
        Var((0,) + v.shape, v.dtype, np.zeros((0,) + v.shape, v.dtype), name=v.name)
        for v in [*first, *body.outputs[n_carry:]]]
    more = {"n_ys": n_ys} if n_ys else {}
    whole = _whole_loop(while_op, (*carries, *consts), like, (cond, body), (n_carry, n_ys),
                        outs, cond=cond, body=body, n_carry=n_carry, **more)
    return None if whole is None else tuple(whole(*carries, *consts))


def _while_vjp(g: tuple, out: tuple, tensors: tuple, i: int, cond: Graph, body: Graph,
               n_carry: int, n_ys: int = 0) -> Any:
    """The reverse of a while loop is a scan as long as the loop ran (its length read at
    run time from the saved carries), over the body's adjoint; it reads the gradients
    of the per-step outputs row by row, as a scan's reverse does."""
    if not _MEMO.hit(g, out, tensors):
        consts = tensors[n_carry:]
        g_last, g_saved = g[:n_carry], g[n_carry + 1:n_carry + 1 + n_carry]
        g_ys = g[n_carry + 1 + n_carry:]
        saved = out[n_carry + 1:n_carry + 1 + n_carry]
        fs = tuple(k for k, gs in enumerate(g_saved) if not _zero(gs))
        rev = reverse_body(body, n_carry, 0, fs)
        init = [g_last[k] for k in rev.fc] + [zeros_like(consts[k]) for k in rev.fk]
        walk = list(saved) + [_or_zeros_stack(g_ys[k], out[2 * n_carry + 1 + k])
                              for k in rev.fy] + [g_saved[k] for k in rev.fs]
        res = scan_op(*init, *walk, *consts, body=rev.graph, length=None,
                      n_carry=len(init), n_xs=len(walk), reverse=True)
        grads: list = [None] * len(tensors)
        for j, k in enumerate(rev.fc):
            grads[k] = res[j]
        for j, k in enumerate(rev.fk):
            grads[n_carry + k] = res[len(rev.fc) + j]
        _MEMO.keep(g, out, tensors, grads)
    return _MEMO.grads[i]


def _or_zeros_stack(g: Any, ys: Any) -> Any:
    """A per-step output's gradient, zeros as long as the loop ran when none reached it."""
    return zeros_like(ys) if g is None else g


while_op = OPS.get("while") or defop(
    "while", _run_while, "WhileBackward0", variadic=True, outputs=tuple,
    vjp=(_while_vjp,), jvp=(while_jvp,), uses=("tensors out",), aliases=True, fresh=False,
    batch=_while_batch)


# ------------------------------------------------------------------------ switch
def _run_switch(index: Any, *arrays: Any, branches: tuple) -> tuple:
    """The branch ``index`` picks (clamped into range, as JAX's switch), on arrays."""
    k = min(max(int(index), 0), len(branches) - 1)
    return tuple(np.asarray(o) for o in runner(branches[k])(*arrays))


def _switch_vjp(g: tuple, out: tuple, tensors: tuple, i: int, branches: tuple) -> Any:
    """The gradient of the branch that ran: a switch over the branches' adjoints."""
    if i == 0:
        return None  # (the index: an integer or a boolean)
    if not _MEMO.hit(g, out, tensors):
        index, operands = tensors[0], tensors[1:]
        adjoints, wrt = branch_adjoints(branches)
        seeds = [gk for gk, v in zip(g, branches[0].outputs) if _is_float(v)]
        res = switch_op(index, *operands, *seeds, branches=adjoints)
        grads: list = [None] * len(tensors)
        for j, k in enumerate(wrt):
            grads[1 + k] = res[j]
        _MEMO.keep(g, out, tensors, grads)
    return _MEMO.grads[i]


_ADJOINTS: dict[int, tuple] = {}  # id(branches) -> (branches, (adjoints, wrt))


def branch_adjoints(branches: tuple) -> tuple:
    """Per branch ``(operands..., g_out...) -> (g_operand...)`` for the float operands
    (``wrt``: their positions); a branch no gradient reaches gives zeros."""
    with _REVERSE_LOCK:
        hit = _ADJOINTS.get(id(branches))
        if hit is not None and hit[0] is branches:
            return hit[1]
    first = branches[0]
    wrt = [k for k, v in enumerate(first.inputs) if _is_float(v)]
    seeds = [_like(v, grad_of(v.name)) if _is_float(v) else None for v in first.outputs]
    adjoints = []
    for br in branches:
        s = [None if sd is None else _like(sd, sd.name) for sd in seeds]
        joint = adjoint(br, [br.inputs[k] for k in wrt], s)
        with Builder() as b:
            b.consts = dict(joint.consts)
            outs = [_or_zeros(gv, br.inputs[k]) for gv, k in
                    zip(joint.outputs[len(br.outputs):], wrt)]
        graph = Graph(br.inputs + [x for x in s if x is not None], joint.eqns + b.eqns, outs,
                      b.consts, name=br.name + "_grad")
        for p in (peephole, cse, dce):
            graph = p(graph)
        adjoints.append(graph)
    result = (tuple(adjoints), wrt)
    with _REVERSE_LOCK:
        _ADJOINTS[id(branches)] = (branches, result)
    return result


switch_op = OPS.get("switch") or defop(
    "switch", _run_switch, "SwitchBackward0", variadic=True, outputs=tuple,
    vjp=(_switch_vjp,), uses=("tensors",), aliases=True, fresh=False, batch=_switch_batch)


# a graph being built reads only the shapes of a loop's or a branch's results: builders
# do not run them (their values at trace time come from the traced call itself)
def _scan_zeros(*arrays: Any, body: Graph, length: int | None, n_carry: int, n_xs: int,
                reverse: bool, remat: bool = False) -> tuple:
    carries, xs, _ = scan_parts(arrays, n_carry, n_xs)
    n = len(xs[0]) if length is None else length
    stacked = list(body.outputs[n_carry:]) + list(body.inputs[:n_carry])
    # (the stacks as zeros broadcast, no memory: a while loop's reverse carries the
    # gradient of an array the loop reads, whose stack is trip count x that array)
    return tuple(np.zeros(np.shape(c), v.dtype) for c, v in zip(carries, body.inputs)) + \
        tuple(np.broadcast_to(np.zeros((), v.dtype), (n,) + v.shape) for v in stacked)


def _switch_zeros(index: Any, *arrays: Any, branches: tuple) -> tuple:
    return tuple(np.zeros(v.shape, v.dtype) for v in branches[0].outputs)


shapes_only("scan", _scan_zeros)
shapes_only("switch", _switch_zeros)
