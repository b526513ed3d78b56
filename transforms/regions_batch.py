"""The batching rules of the regions (regions.py): scan, while and switch over a batch.

A while loop whose condition the batch reaches runs until every element has stopped,
each element's carries kept once its own condition no longer holds (JAX's batched
``while_loop``), and counts each element's steps. Its saved steps are then as many as
the longest element's: they are ``Padded`` (ops/table/batching.py), marked by each
step's counter. Only a scan walking them all (the loop's reverse, and the reverse of
that reverse) may read them: ``_padded_scan`` runs the longest count and masks the
steps each element did not take (its carries kept, its per-step outputs zero).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.ir import Builder, Graph, Var
from pullback.ops import OPS
from pullback.ops.table import batching

from .batch import batch_eval, batched_graph
from .dce import dce


def scan_parts(inputs: tuple, n_carry: int, n_xs: int) -> tuple:
    """(carries, xs, consts) of a scan's inputs (of its equation or its body)."""
    return (tuple(inputs[:n_carry]), tuple(inputs[n_carry:n_carry + n_xs]),
            tuple(inputs[n_carry + n_xs:]))


def _scan_batch(op: Any, args: tuple, batched: tuple, body: Graph, length: int | None,
                n_carry: int, n_xs: int, reverse: bool, remat: bool = False) -> tuple:
    """A scan over a batch: one scan whose body is the batched body. A carry is batched
    when its start is or when a batched value reaches it (found by batching the body
    until the carries' flags settle); the walked arrays batched in axis 0 are walked
    along axis 1."""
    size = batching.size_of(args, batched)
    carries, xs, consts = scan_parts(args, n_carry, n_xs)
    flags_c, flags_x, flags_k = (list(f) for f in scan_parts(batched, n_carry, n_xs))
    lengths = {np.shape(x)[int(b)] for x, b in zip(xs, flags_x)}
    if len(lengths) > 1:  # walked arrays whose length the batch changed (a while loop's
        raise batching.Unbatchable("scan")  # steps) beside ones one example's trace fixed
    if 0 in lengths:
        raise batching.NoRule  # (no step to build the body on)
    step = [np.asarray(getattr(x, "_data", x))[(slice(None), 0) if b else 0]
            for x, b in zip(xs, flags_x)]
    values = [np.asarray(getattr(a, "_data", a)) for a in (*carries, *consts)]
    while True:
        inputs = [v if b or not f else np.broadcast_to(v, (size,) + v.shape)
                  for v, b, f in zip(values[:n_carry], batched[:n_carry], flags_c)]
        force = [False] * n_carry + [True] * (len(body.outputs) - n_carry)
        g, out = batched_graph(body, inputs + step + values[n_carry:],
                               flags_c + flags_x + flags_k, size, force=force)
        settled = [c or o for c, o in zip(flags_c, out[:n_carry])]
        if settled == flags_c:
            break
        flags_c = settled
    g = dce(g)  # (the batch of what nothing reads: a while loop's steps, as long as one
    # example's trace made them, broadcast to the batch: not run at every step's length)
    outs = op(*[c if b or not f else batching.with_batch(c, size)
                for c, b, f in zip(carries, batched[:n_carry], flags_c)],
              *[batching.moved(x, 0, 1) if b else x for x, b in zip(xs, flags_x)], *consts,
              body=g, length=length, n_carry=n_carry, n_xs=n_xs, reverse=reverse, remat=remat)
    n_ys = len(body.outputs) - n_carry
    last = [o if f else batching.with_batch(o, size) for o, f in zip(outs[:n_carry], flags_c)]
    ys = [batching.moved(y, 1, 0) for y in outs[n_carry:n_carry + n_ys]]
    saved = [batching.moved(s, 1, 0) if f else batching.with_batch(s, size)
             for s, f in zip(outs[n_carry + n_ys:], flags_c)]
    return tuple(last + ys + saved)




def _while_batch(op: Any, args: tuple, batched: tuple, cond: Graph, body: Graph,
                 n_carry: int, n_ys: int = 0) -> tuple:
    """A while loop over a batch. A predicate the batch does not reach: one loop over the
    batched body, whose carries the batch does not reach stay unbatched (a counter that
    indexes a table stays an int: found by batching the body until the carries' flags
    settle). A batched predicate: one loop while any element's holds, each element's
    carries kept where its own predicate no longer holds (JAX's)."""
    if n_ys:  # (its per-step outputs are as many as each element's steps)
        raise batching.Unbatchable("a while loop's per-step outputs")
    size = batching.size_of(args, batched)
    values = [np.asarray(getattr(a, "_data", a)) for a in args]
    flags_c, flags_k = list(batched[:n_carry]), list(batched[n_carry:])
    while True:
        inputs = [v if b or not f else np.broadcast_to(v, (size,) + v.shape)
                  for v, b, f in zip(values[:n_carry], batched[:n_carry], flags_c)]
        inputs += values[n_carry:]
        g_cond, c_flags = batched_graph(cond, inputs, flags_c + flags_k, size)
        if c_flags[0]:
            flags_c = [True] * n_carry
            inputs = [v if b else np.broadcast_to(v, (size,) + v.shape)
                      for v, b in zip(values[:n_carry], batched[:n_carry])] + inputs[n_carry:]
            g_cond, g_body = _masked(cond, body, inputs, flags_c + flags_k, n_carry, size)
            break
        g_body, out = batched_graph(body, inputs, flags_c + flags_k, size, force=flags_c)
        settled = [c or o for c, o in zip(flags_c, out[:n_carry])]
        if settled == flags_c:
            break
        flags_c = settled
    starts = [a if b or not f else batching.with_batch(a, size)
              for a, b, f in zip(args[:n_carry], batched[:n_carry], flags_c)]
    if c_flags[0]:
        return _masked_while(op, starts, args[n_carry:], g_cond, g_body, n_carry, size)
    outs = op(*starts, *args[n_carry:], cond=g_cond, body=g_body, n_carry=n_carry)
    return tuple(o if f else batching.with_batch(o, size)
                 for o, f in zip(outs[:n_carry], flags_c)) \
        + (batching.with_batch(outs[n_carry], size),) + tuple(
        batching.moved(s, 1, 0) if f else batching.with_batch(s, size)
        for s, f in zip(outs[n_carry + 1:], flags_c))


def _masked_while(op: Any, starts: list, consts: tuple, g_cond: Graph, g_body: Graph,
                  n_carry: int, size: int) -> tuple:
    """The loop over ``_masked``'s graphs, whose last carry counts each element's steps:
    the count is each element's own; the saved steps, as many as the longest element's,
    are ``Padded``, marked by the counter's saved values (step t is element i's when
    its counter then is below its count: ``_padded_scan`` masks the others)."""
    zero = OPS["zeros"](shape=(size,), dtype=np.dtype(np.int64))
    outs = op(*starts, zero, *consts, cond=g_cond, body=g_body, n_carry=n_carry + 1)
    counts = outs[n_carry]
    saved = [batching.moved(s, 1, 0) for s in outs[n_carry + 2:]]
    result = tuple(outs[:n_carry]) + (counts,) + tuple(saved[:n_carry])
    return batching.Padded.of(result, n_carry + 1, (counts, saved[n_carry]))


def _masked(cond: Graph, body: Graph, values: list, flags: list, n_carry: int,
            size: int) -> tuple:
    """The condition ``any(cond)`` and the body that steps only the elements whose
    condition holds, as graphs over the batched carries, a step counter per element
    (a last carry, counting the steps each element took) and the consts."""
    ins = [Var(np.shape(x), np.asarray(x).dtype, np.asarray(x), name=v.name)
           for x, v in zip(values, body.inputs)]
    counter = _counter(size)
    with Builder() as b:
        pred = batch_eval(cond, ins, flags, size)[0][0]
        any_ = OPS["amax"](OPS["cast"](pred, dtype=np.dtype(np.int64)), dim=(0,), keepdim=False)
        test = OPS["cast"](any_, dtype=np.dtype(bool))
    new_cond = Graph(ins[:n_carry] + [counter] + ins[n_carry:], b.eqns, [test], b.consts,
                     name=cond.name)
    ins = [Var(v.shape, v.dtype, v._data, name=v.name) for v in ins]
    counter = _counter(size)
    with Builder() as b:
        pred = batch_eval(cond, ins, flags, size)[0][0]
        outs, out_flags = batch_eval(body, ins, flags, size)
        stepped = [OPS["where"](batching.align(pred, batching.ndim(o) - 1),
                                o if f else batching.with_batch(o, size), old)
                   for o, f, old in zip(outs, out_flags, ins[:n_carry])]
        stepped.append(OPS["add"](counter, OPS["cast"](pred, dtype=np.dtype(np.int64))))
    return new_cond, Graph(ins[:n_carry] + [counter] + ins[n_carry:], b.eqns, stepped,
                           b.consts, name=body.name)


def _counter(size: int) -> Var:
    return Var((size,), np.int64, np.zeros(size, np.int64), name="steps")


def _switch_batch(op: Any, args: tuple, batched: tuple, branches: tuple) -> tuple:
    """A switch over a batch. An unbatched index: one switch over the batched branches
    (every output batched, so that the branches agree). A batched index: every branch
    on the whole batch, each element's outputs picked from its branch (JAX's select)."""
    index, arrays, flags = args[0], args[1:], list(batched[1:])
    size = batching.size_of(args, batched)
    if not batched[0]:
        values = [np.asarray(getattr(a, "_data", a)) for a in arrays]
        graphs = tuple(batched_graph(br, values, flags, size, force=[True] * len(br.outputs))[0]
                       for br in branches)
        return op(index, *arrays, branches=graphs)
    picked = OPS["clamp"](index, min=0, max=len(branches) - 1)
    results = []
    for br in branches:
        outs, out_flags = batch_eval(br, list(arrays), flags, size)
        results.append([o if f else batching.with_batch(o, size) for o, f in zip(outs, out_flags)])
    chosen = results[0]
    for j, outs in enumerate(results[1:], 1):
        here = OPS["eq"](picked, j)
        chosen = [OPS["where"](batching.align(here, batching.ndim(o) - 1), o, c)
                  for o, c in zip(outs, chosen)]
    return tuple(chosen)


def _padded_scan(op: Any, args: tuple, batched: tuple, padded: tuple, steps: tuple,
                 body: Graph, length: int | None, n_carry: int, n_xs: int, reverse: bool,
                 remat: bool = False) -> tuple:
    """A scan walking a batched while loop's ``Padded`` saved steps (its reverse, or the
    reverse of that): one scan as long as the longest element's loop, each step masked
    per element by ``steps`` (the counts, and each step's counter), so that an element's
    carries pass the steps it did not take unchanged and its per-step outputs there are
    zeros; those outputs and the saved carries are ``Padded`` in turn."""
    p_c, p_x, p_k = scan_parts(padded, n_carry, n_xs)
    if length is not None or any(p_c) or any(p_k) or not all(p_x):
        raise batching.Unbatchable("scan")
    size = batching.size_of(args, batched)
    counts, marks = steps
    carries, xs, consts = scan_parts(args, n_carry, n_xs)
    carries = [c if b else batching.with_batch(c, size)
               for c, b in zip(carries, batched[:n_carry])]
    flags_k = list(batched[n_carry + n_xs:])
    value = lambda a: np.asarray(getattr(a, "_data", a))  # noqa: E731
    firsts = [value(x)[:, 0] if value(x).shape[1] else np.zeros(
        value(x).shape[:1] + value(x).shape[2:], value(x).dtype) for x in xs]
    ins = [Var(np.shape(v), v.dtype, v, name=bv.name) for v, bv in
           zip([value(c) for c in carries] + firsts + [value(k) for k in consts], body.inputs)]
    mark, count = _counter(size), _counter(size)
    with Builder() as b:
        outs, flags = batch_eval(body, ins, [True] * (n_carry + n_xs) + flags_k, size)
        outs = [o if f else batching.with_batch(o, size) for o, f in zip(outs, flags)]
        keep = OPS["lt"](mark, count)
        here = lambda o: batching.align(keep, batching.ndim(o) - 1)  # noqa: E731
        outs = ([OPS["where"](here(o), o, old) for o, old in zip(outs, ins[:n_carry])]
                + [OPS["where"](here(o), o, OPS["zeros_like"](o)) for o in outs[n_carry:]])
    c_in, x_in, k_in = scan_parts(ins, n_carry, n_xs)
    g = Graph([*c_in, *x_in, mark, *k_in, count], b.eqns, outs, b.consts, name=body.name)
    res = op(*carries, *[batching.moved(x, 0, 1) for x in xs], batching.moved(marks, 0, 1),
             *consts, counts, body=g, length=None, n_carry=n_carry, n_xs=n_xs + 1,
             reverse=reverse, remat=remat)
    result = tuple(res[:n_carry]) + tuple(batching.moved(s, 1, 0) for s in res[n_carry:])
    return batching.Padded.of(result, n_carry, steps)


batching.PADDED_RULES["scan"] = _padded_scan
