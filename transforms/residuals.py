"""residuals: a reverse loop reads what its forward loop computed instead of computing
it again.

The adjoint of a scan (regions.py) is a reverse scan whose body recomputes the forward
body's values from the saved carry of each step. This pass moves that recomputation
into the forward loop: every value of the reverse body that depends only on the step's
carry, input and constants (a primal value) and that the gradient part reads becomes
an extra per-step output of the forward scan, stacked, and an extra array the reverse
scan walks. The reverse body keeps only the gradient's work; walked inputs it no longer
reads (often the saved carries) are dropped, so the forward keeps T residuals of the
kind a hand-written reverse loop keeps (``tanh`` outputs), not T carries plus a
recomputation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.ir import Eqn, Graph, Var, naming
from pullback.ops import OPS
from pullback.ops.items import item_add_op

from .cse import cse
from .dce import dce
from .regions import scan_op, scan_parts, use_body_pass, while_op


def loop_residuals(graph: Graph) -> Graph:
    """Rewrite each (forward scan, its reverse scan) pair of ``graph``."""
    eqns = list(graph.eqns)
    where = {id(e): i for i, e in enumerate(eqns)}
    for j, rev in enumerate(eqns):
        fwd = rev.block
        if rev.op is scan_op and fwd is not None and fwd.op is while_op \
                and id(fwd) in where:
            eqns[j] = _next_carries(fwd, rev)
            continue
        if rev.op is not scan_op or fwd is None or fwd.op is not scan_op \
                or fwd.params.get("remat") or id(fwd) not in where \
                or not _walks_saved(fwd, rev):
            continue
        pair = _move(eqns[where[id(fwd)]], rev)
        if pair is not None:
            eqns[where[id(fwd)]], eqns[j] = pair
            where[id(pair[0])] = where.pop(id(fwd))
    return graph.replace(eqns=eqns)


def _nested_residuals(graph: Graph) -> Graph:
    """``loop_residuals``, ``dce`` and ``sparse_sums``, on a reverse body
    (``regions.reverse_body``)."""
    return sparse_sums(dce(loop_residuals(graph)))


def sparse_sums(graph: Graph) -> Graph:
    """``x + index_add(zeros, index, v)`` as ``index_add(x, index, v)`` (``item_add``
    likewise): the gradient of
    an item read (``R[i - 1, j]`` in a loop's body) adds into the gradient it joins
    without a table of zeros and a sum of whole tables per step. A row read at a traced
    int (``xs[t]`` in a while loop's body, or a for loop that breaks) adds its gradient
    into the row as an ``item_add`` too (``g_xs[t] += g``, in place where the loop owns
    the sum), not as a table of zeros per step (quadratic in the trip count)."""
    uses: dict = {}
    for e in graph.eqns:
        for a in e.inputs:
            if isinstance(a, Var):
                uses[a.id] = uses.get(a.id, 0) + 1
    for v in graph.outputs:
        if isinstance(v, Var):
            uses[v.id] = uses.get(v.id, 0) + 2
    made = {e.out.id: e for e in graph.eqns if e.out is not None}
    eqns, dropped, rows = [], set(), False
    for e in graph.eqns:
        spread = _spread(e, made, uses) or _row_add(e, made, uses)
        if spread is not None:
            added, new = spread
            dropped.add(id(added))
            eqns += new[:-1]
            e = new[-1]
        row = _row_of(e.inputs[0], e, made) if e.op.name == "index_add" else None
        if row is not None:
            rows = True
            eqns += row[:-1]
            e = row[-1]
        eqns.append(e)
    if not dropped and not rows:
        return graph
    return dce(graph.replace(eqns=[e for e in eqns if id(e) not in dropped]))


def _spread(e: Eqn, made: dict, uses: dict) -> tuple | None:
    """(the index_add or item_add into zeros, [its replacement]) when ``e`` is
    ``x + index_add(zeros, ...)`` whose index_add nothing else reads, all of one shape
    and dtype."""
    for x, added in _added(e, made, uses, ("index_add", "item_add")):
        zeros = made.get(added.inputs[0].id) if isinstance(added.inputs[0], Var) else None
        if zeros is not None and zeros.op.name == "new_zeros" and \
                zeros.params.get("value") == 0:
            return added, [Eqn(added.op, (x,) + added.inputs[1:], e.out, added.params,
                               e.src, e.block, e.nograd)]
    return None


def _added(e: Eqn, made: dict, uses: dict, names: tuple) -> list:
    """The (x, t) of ``e = x + t`` where ``t`` is made by an op of ``names`` that
    nothing else reads, all of one shape and dtype."""
    if e.op.name != "add" or len(e.inputs) != 2 or e.params:
        return []
    found = []
    for k in (0, 1):
        t, x = e.inputs[k], e.inputs[1 - k]
        added = made.get(t.id) if isinstance(t, Var) else None
        if added is not None and added.op.name in names and uses.get(t.id) == 1 and \
                isinstance(x, Var) and x.shape == t.shape == e.out.shape and \
                x.dtype == t.dtype == e.out.dtype:
            found.append((x, added))
    return found


def _traced_int(v: Any) -> bool:
    return isinstance(v, Var) and v.shape == () and np.dtype(v.dtype).kind in "iu"


def _row_add(e: Eqn, made: dict, uses: dict) -> tuple | None:
    """(the scatter, [its replacement]) when ``e`` adds to ``x`` the gradient of a read
    of ``x``'s items at traced ints: ``index_gather_backward`` of ints and whole axes, or
    ``index_add`` along one axis at one int (``t.reshape(1)``) of a single row."""
    for x, added in _added(e, made, uses, ("index_gather_backward",)):
        new = _as_item_add(x, added, e)
        if new is not None:
            return added, new
    return None


def _as_item_add(x: Var, added: Eqn, e: Eqn) -> list | None:
    p = added.params
    g, ints = added.inputs[0], added.inputs[1:]
    slots = dict(zip(p["slots"], ints))
    where = []
    for k, part in enumerate(p["index"]):
        if k in slots and _traced_int(slots[k]):
            where.append(None)
        elif k not in slots and isinstance(part, slice) and part == slice(None):
            where.append(slice(None))
        else:
            return None
    rest = tuple(x.shape[len(where):])
    if len(where) > len(x.shape) or not isinstance(g, Var) or g.dtype != x.dtype or \
            tuple(g.shape) != tuple(s for s, w in zip(x.shape, where) if w is not None
                                    ) + rest or len(where) != len(p["index"]):
        return None
    return [Eqn(item_add_op, (x, *ints, g), e.out, {"where": tuple(where)}, e.src,
                e.block, e.nograd)]


def _row_of(x: Var, added: Eqn, made: dict) -> list | None:
    """``index_add(x, t.reshape(1), v)`` along one axis as ``item_add(x, t, row)``: one
    row added at a traced int, in place where a loop owns ``x``."""
    dim, alpha = added.params.get("dim"), added.params.get("alpha", 1)
    index, src = added.inputs[1], added.inputs[2]
    shaped = made.get(index.id) if isinstance(index, Var) else None
    if alpha != 1 or shaped is None or shaped.op.name not in ("reshape", "view") or \
            not _traced_int(shaped.inputs[0]) or tuple(index.shape) != (1,) or \
            not isinstance(src, Var) or src.dtype != x.dtype or src.shape[dim] != 1:
        return None
    row = tuple(src.shape[:dim]) + tuple(src.shape[dim + 1:])
    v = Var(row, src.dtype, None if src._data is None else np.reshape(src._data, row))
    e = added
    return [Eqn(OPS["reshape"], (src,), v, {"shape": row}, e.src, e.block, e.nograd),
            Eqn(item_add_op, (x, shaped.inputs[0], v),
                e.out, {"where": (slice(None),) * dim + (None,)}, e.src, e.block, e.nograd)]


use_body_pass(_nested_residuals)


def _next_carries(fwd: Eqn, rev: Eqn) -> Eqn:
    """A while loop's reverse (a scan walking the saved carries back) that reads the
    carries each forward step made (``h = tanh(...)``, the next step's carry) from a
    carry of its own, instead of computing them again from the step's saved carry: the
    reverse step ``i`` hands on the saved carry it walks, which is what forward step
    ``i - 1`` made (the loop's last carry, first). A while loop's stacks are as long as
    it ran, so they cannot carry new per-step residuals as a scan's do; the carries
    they hold already serve the reverse twice."""
    body, n_carry = fwd.params["body"], fwd.params["n_carry"]
    rb, rc, rx = rev.params["body"], rev.params["n_carry"], rev.params["n_xs"]
    saved = fwd.outs[n_carry + 1:]
    walked = {a.id: k for k, a in enumerate(rev.inputs[rc:rc + rx])}
    made = {v.id for e in rb.eqns for v in e.outs}
    for j, out in enumerate(body.outputs[:n_carry]):
        k = walked.get(saved[j].id)
        if k is None or not isinstance(out, Var) or out.id not in made or \
                rb.inputs[rc + k] is not body.inputs[j]:
            continue
        rev = _handed_on(rev, fwd.outs[j], out, rb.inputs[rc + k], rev.inputs[rc + k])
        rb, rc = rev.params["body"], rev.params["n_carry"]
        made = {v.id for e in rb.eqns for v in e.outs}
    return rev


def _handed_on(rev: Eqn, last: Var, made: Var, step: Var, stack: Var) -> Eqn:
    """``rev`` with a new carry that starts as ``last`` and becomes each step's walked
    ``step``, read in place of ``made`` by the body (``made``'s equations go)."""
    rb, rc = rev.params["body"], rev.params["n_carry"]
    n_y = len(rb.outputs) - rc
    nxt = Var(made.shape, made.dtype, made._data, name=made.name or step.name)
    swap = lambda a: nxt if isinstance(a, Var) and a.id == made.id else a  # noqa: E731
    eqns = [e.replace(inputs=tuple(map(swap, e.inputs))) for e in rb.eqns]
    outs = [swap(v) for v in rb.outputs]
    new_rb = dce(Graph(list(rb.inputs[:rc]) + [nxt] + list(rb.inputs[rc:]), eqns,
                       outs[:rc] + [step] + outs[rc:], rb.consts, name=rb.name))
    end = Var(last.shape, last.dtype, last._data, name=last.name)
    steps = Var((stack.shape[0],) + tuple(last.shape), last.dtype, None, name=last.name)
    new_outs = rev.outs[:rc] + (end,) + rev.outs[rc:rc + n_y] + rev.outs[rc + n_y:] + (steps,)
    return Eqn(scan_op, rev.inputs[:rc] + (last,) + rev.inputs[rc:], new_outs,
               {**rev.params, "body": new_rb, "n_carry": rc + 1}, rev.src, rev.block,
               rev.nograd)


def _walks_saved(fwd: Eqn, rev: Eqn) -> bool:
    """Whether ``rev`` walks ``fwd``'s saved carries first, as the scan rule emits."""
    n_carry = fwd.params["n_carry"]
    saved = fwd.outs[len(fwd.outs) - n_carry:]
    walked = rev.inputs[rev.params["n_carry"]:rev.params["n_carry"] + n_carry]
    return len(walked) == n_carry and all(a is s for a, s in zip(walked, saved))


def _move(fwd: Eqn, rev: Eqn) -> tuple | None:
    body, n_carry, n_xs = fwd.params["body"], fwd.params["n_carry"], fwd.params["n_xs"]
    rb, rc, rx = rev.params["body"], rev.params["n_carry"], rev.params["n_xs"]
    r_carry, r_walk, r_consts = scan_parts(rb.inputs, rc, rx)
    # the reverse body's inputs that stand for the forward's: saved carry, x, consts
    b_carry, b_x, b_k = scan_parts(body.inputs, n_carry, n_xs)
    primal = {v.id for v in r_walk[:n_carry]} | {v.id for v in rb.consts}
    primal |= {v.id for v in r_consts}
    if any(a is not b for a, b in zip(r_walk[:n_carry], b_carry)) or \
            any(a is not b for a, b in zip(r_consts, b_k)) or \
            not _walks_xs(rev, rb, fwd, rc, n_carry, n_xs, b_x):
        return None  # (not the pattern the scan rule makes: leave it)
    primal |= {v.id for v in b_x}
    # values that change from step to step (the others, of the constants alone, stay)
    varying = {v.id for v in b_carry} | {v.id for v in b_x}
    inputs = {v.id for v in rb.inputs}
    moved, kept, views, invariant = [], [], [], []
    for e in rb.eqns:
        ins = [a for a in e.inputs if isinstance(a, Var)]
        if e.op.pure and e.op is not while_op and all(a.id in primal for a in ins) and \
                not any(a.id in varying for a in ins):  # of the constants alone (i - 1 of
            kept.append(e)  # an outer loop's i): both loops compute it, each for itself
            invariant.append(e)
            primal.update(v.id for v in e.outs)
        elif e.op.pure and e.op is not while_op and all(a.id in primal for a in ins):
            # (a while loop's outputs change shape from step to step: it runs again in
            # the reverse body)
            moved.append(e)
            primal.update(v.id for v in e.outs)
            varying.update(v.id for v in e.outs)
            if e.op.is_view and all(a.id in inputs for a in ins):
                views.append(e)  # (a view of what the reverse walks anyway, h.T: taken
                inputs.update(v.id for v in e.outs)  # again there, not stacked as a copy)
        else:
            kept.append(e)
    have = inputs | {v.id for v in rb.consts} | {v.id for e in invariant for v in e.outs}
    moved, kept = _computed_again(moved, kept, rb, body, have)
    kept = views + kept
    made = {v.id for e in moved for v in e.outs} - {v.id for e in views for v in e.outs}
    read = {a.id: a for e in kept for a in e.inputs if isinstance(a, Var) and a.id in made}
    read.update((v.id, v) for v in rb.outputs if isinstance(v, Var) and v.id in made)
    if not read:
        return _unread_dropped(fwd, rev)
    res = list(read.values())
    defined = {v.id: e for e in body.eqns for v in e.outs}
    extra, swap = [], {}
    for e in invariant + moved:
        known = [defined[v.id] for v in e.outs if v.id in defined]
        if not known:
            extra.append(e)
        elif len(known) == len(e.outs):
            continue
        elif {v.id for v in known[0].outs} <= {v.id for v in e.outs}:
            swap[id(known[0])] = e  # the body's inner loop, now with the residuals its
        else:  # own reverse reads (the nested pass made it)
            extra.append(_own_outs(e, defined))
    eqns = [swap.get(id(e), e) for e in body.eqns] + extra
    new_body = dce(cse(Graph(body.inputs, eqns, body.outputs + res, body.consts,
                             name=body.name)))  # (cse: the body's i - 1 once a step)
    new_body.consts.update(rb.consts)
    length = fwd.params["length"]
    stacked = [Var((length,) + tuple(v.shape), v.dtype, _steps_of(v, length),
                   name=v.name and v.name + naming.STEPS_SUFFIX) for v in res]
    n_y = len(body.outputs) - n_carry
    outs = fwd.outs[:n_carry + n_y] + tuple(stacked) + fwd.outs[n_carry + n_y:]
    new_fwd = Eqn(scan_op, fwd.inputs, outs, {**fwd.params, "body": new_body}, fwd.src,
                  fwd.block, fwd.nograd)
    walk_vars = list(r_walk) + [Var(v.shape, v.dtype, v._data, name=v.name) for v in res]
    walk_outer = list(rev.inputs[rc:rc + rx]) + stacked
    rename = {v.id: w for v, w in zip(res, walk_vars[len(r_walk):])}
    kept = [e.replace(inputs=tuple(rename.get(a.id, a) if isinstance(a, Var) else a
                                   for a in e.inputs)) for e in kept]
    outputs = [rename.get(v.id, v) if isinstance(v, Var) else v for v in rb.outputs]
    used = {a.id for e in kept for a in e.inputs if isinstance(a, Var)}
    used |= {v.id for v in outputs if isinstance(v, Var)}
    keep = [k for k, v in enumerate(walk_vars) if v.id in used]
    new_rb = Graph(list(r_carry) + [walk_vars[k] for k in keep] + list(r_consts), kept,
                   outputs, rb.consts, name=rb.name)
    new_rev = Eqn(scan_op, rev.inputs[:rc] + tuple(walk_outer[k] for k in keep)
                  + rev.inputs[rc + rx:], rev.outs,
                  {**rev.params, "body": new_rb, "n_xs": len(keep)}, rev.src, rev.block,
                  rev.nograd)
    return new_fwd, new_rev


def _unread_dropped(fwd: Eqn, rev: Eqn) -> tuple | None:
    """(fwd, rev) with ``rev`` walking only the saved carries its body reads, when it
    reads no value worth stacking: a buffer the loop writes rows of (``traj[t] = x``)
    and the reverse never reads is not kept once per step (T copies of a T-row array)."""
    rb, rc, rx = rev.params["body"], rev.params["n_carry"], rev.params["n_xs"]
    r_carry, r_walk, r_consts = scan_parts(rb.inputs, rc, rx)
    used = {a.id for e in rb.eqns for a in e.inputs if isinstance(a, Var)}
    used |= {v.id for v in rb.outputs if isinstance(v, Var)}
    keep = [k for k, v in enumerate(r_walk) if v.id in used]
    if len(keep) == len(r_walk):
        return None
    new_rb = Graph(list(r_carry) + [r_walk[k] for k in keep] + list(r_consts), rb.eqns,
                   rb.outputs, rb.consts, name=rb.name)
    new_rev = Eqn(scan_op, rev.inputs[:rc] + tuple(rev.inputs[rc + k] for k in keep)
                  + rev.inputs[rc + rx:], rev.outs,
                  {**rev.params, "body": new_rb, "n_xs": len(keep)}, rev.src, rev.block,
                  rev.nograd)
    return fwd, new_rev


def _own_outs(e: Eqn, defined: dict) -> Eqn:
    """``e`` with new variables for the outputs the forward body defines already: another
    version of the body's inner loop (a reverse loop run again in a reverse of reverse,
    its dead carries dropped, ``g_w``'s sum, and other per-step outputs kept), which
    cannot stand in for the body's own, so the forward body runs both."""
    outs = tuple(Var(v.shape, v.dtype, v._data, name=v.name) if v.id in defined else v
                 for v in e.outs)
    return Eqn(e.op, e.inputs, outs if e.out is None else outs[0], e.params, e.src,
               e.block, e.nograd, e.keeps_history)


#: ops a reverse body computes again rather than read stacked (one cheap pass each)
_CHEAP = frozenset({"add", "sub", "rsub", "mul", "neg"})
#: comparisons, computed again from what the reverse body reads stacked anyway
_COMPARE = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})


def _computed_again(moved: list, kept: list, rb: Graph, body: Graph, have: set) -> tuple:
    """(moved, kept) with the cheap arithmetic that the reverse body reads (``1 - y * y``
    of a ``tanh``) and can compute from values the forward keeps anyway (the body's
    outputs: ``y`` is the next step's carry) or that it has (``have``: its inputs,
    constants and invariants) moved back to the reverse body: the forward stacks ``y``,
    arrays it holds already, not a new array per step. A chain reads one such value at
    most (stacked as a copy, ``h_steps[i] = h``, two would cost more than the one they
    replace), and none that the forward still computes from it."""
    alive = {v.id for v in body.outputs if isinstance(v, Var)} - have
    forward = {v.id for e in body.eqns for v in e.outs}
    by_out = {e.out.id: e for e in moved if e.out is not None}
    read = [a for e in kept for a in e.inputs if isinstance(a, Var) and a.id in by_out]
    read += [v for v in rb.outputs if isinstance(v, Var) and v.id in by_out]
    again: dict = {}
    for v in read:
        chain = _cheap_chain(v, by_out, alive | have, forward) or {}
        if len({a.id for e in chain.values() for a in e.inputs
                if isinstance(a, Var) and a.id in alive}) <= 1:
            again.update(chain)
    again.update(_compared_again(read, by_out, again, have, forward))
    while again:  # (what a moved equation still reads stays in the forward)
        needed = {a.id for e in moved if id(e) not in again for a in e.inputs
                  if isinstance(a, Var)}
        stays = [k for k, e in again.items()  # (the forward's own it computes anyway)
                 if any(v.id in needed and v.id not in forward for v in e.outs)]
        if not stays:
            break
        for k in stays:
            del again[k]
    if not again:
        return moved, kept
    staying = {id(e) for e in kept} | set(again)
    return [e for e in moved if id(e) not in again], [e for e in rb.eqns if id(e) in staying]


def _compared_again(read: list, by_out: dict, again: dict, have: set, forward: set) -> dict:
    """The comparisons (id -> equation) that the reverse body reads and can compute from
    values it reads stacked anyway or has (``win == 0`` of the minimum's gradient, whose
    ``win`` the reverse reads too), and the cheap arithmetic of what it has alone, the
    forward's own too (``j - 1`` of a walked counter ``j``): one operation a step
    instead of one more array the forward fills and the reverse walks."""
    stacked = {v.id for v in read if id(by_out[v.id]) not in again
               and by_out[v.id].op.name not in _COMPARE} | have
    found = {}
    for v in read:
        e = by_out[v.id]
        ins = [a.id for a in e.inputs if isinstance(a, Var)]
        if e.params or id(e) in again:
            continue
        if e.op.name in _COMPARE and v.id not in forward and all(a in stacked for a in ins) \
                or e.op.name in _CHEAP and all(a in have for a in ins):
            found[id(e)] = e
    return found


def _cheap_chain(v: Var, by_out: dict, known: set, forward: set) -> dict | None:
    """The cheap equations (id -> equation) that compute ``v`` from ``known`` values
    alone, none of them the forward body's own; None if there are none such."""
    if v.id in known:
        return {}
    e = by_out.get(v.id)
    if e is None or v.id in forward or e.op.name not in _CHEAP or e.params:
        return None
    chain = {id(e): e}
    for a in e.inputs:
        if isinstance(a, Var):
            more = _cheap_chain(a, by_out, known, forward)
            if more is None:
                return None
            chain.update(more)
    return chain


def _walks_xs(rev: Eqn, rb: Graph, fwd: Eqn, rc: int, n_carry: int, n_xs: int,
              b_x: tuple) -> bool:
    """Whether the reverse body reads the forward's xs as the forward body does (the
    same values, walked from the same arrays)."""
    walked = rev.inputs[rc + n_carry:rc + n_carry + n_xs]
    inner = rb.inputs[rc + n_carry:rc + n_carry + n_xs]
    outer = fwd.inputs[n_carry:n_carry + n_xs]
    return all(a is b for a, b in zip(walked, outer)) and \
        all(a is b for a, b in zip(inner, b_x))


def loop_invariants(graph: Graph) -> Graph:
    """Values a loop's body computes from its constants alone (``w.T``) computed once,
    before the loop, and read by the body as constants; in a loop's body first (an inner
    loop's ``i - 1`` of the outer loop's ``i``: once an outer step)."""
    eqns: list = []
    consts = dict(graph.consts)
    for e in graph.eqns:
        if e.op is scan_op:
            e = Eqn(scan_op, e.inputs, e.outs,
                    {**e.params, "body": loop_invariants(e.params["body"])}, e.src, e.block,
                    e.nograd)
            before, e = _hoist(e, consts)
            eqns += before
        eqns.append(e)
    return graph.replace(eqns=eqns, consts=consts)


def _hoist(e: Eqn, consts: dict) -> tuple:
    body, n_carry, n_xs = e.params["body"], e.params["n_carry"], e.params["n_xs"]
    _, _, b_k = scan_parts(body.inputs, n_carry, n_xs)
    outer = {v.id: o for v, o in zip(b_k, e.inputs[n_carry + n_xs:])}
    outer.update((v.id, v) for v in body.consts)
    moved, kept = [], []
    for q in body.eqns:
        ins = [a for a in q.inputs if isinstance(a, Var)]
        if q.op.pure and ins and all(a.id in outer for a in ins):
            new = tuple(Var(v.shape, v.dtype, v._data, name=v.name) for v in q.outs)
            moved.append(Eqn(q.op, tuple(outer.get(a.id, a) if isinstance(a, Var) else a
                                         for a in q.inputs),
                             new if q.out is None else new[0], q.params, q.src, e.block,
                             q.nograd))
            outer.update((v.id, n) for v, n in zip(q.outs, new))
        else:
            kept.append(q)
    if not moved:
        return [], e
    read = {a.id for q in kept for a in q.inputs if isinstance(a, Var)}
    read |= {v.id for v in body.outputs if isinstance(v, Var)}
    made = [v for q in body.eqns if q not in kept for v in q.outs if v.id in read]
    consts.update((v, a) for v, a in body.consts.items()
                  if any(a_.id == v.id for q in moved for a_ in q.inputs
                         if isinstance(a_, Var)))
    new_body = body.replace(inputs=list(body.inputs) + made, eqns=kept)
    new_e = Eqn(scan_op, e.inputs + tuple(outer[v.id] for v in made), e.outs,
                {**e.params, "body": new_body}, e.src, e.block, e.nograd)
    return moved, new_e


def _steps_of(v: Var, length: Any) -> Any:
    """A stand-in value for ``v`` stacked over ``length`` steps (a view of its own: no
    copy), so that a transform of the graph (forward mode's transposition of a reverse
    loop) can compute with it as with every traced value; None when the length is known
    only at run time or ``v`` has none."""
    if length is None or v._data is None:
        return None
    return np.broadcast_to(np.asarray(v._data), (length,) + tuple(v.shape))
