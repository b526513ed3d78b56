"""dce: drop equations whose results no output needs. An impure equation (a random
draw, a print: effects.py) is kept: it does something besides its result. A loop's
per-step outputs nothing reads leave its body, and what only they needed goes with them
(the reverse loop of a gradient computes the gradients of every input it walks, whether
asked for or not); so do its carries nothing reads after the loop (neither the last
value nor the stack of the values each step started from) and no other kept value of
the body reads (the sum of the gradient of an array the loop only reads)."""

from __future__ import annotations

from pullback.ir import Eqn, Graph, Var


def dce(graph: Graph) -> Graph:
    live = {v.id for v in list(graph.outputs) + graph.guards if isinstance(v, Var)}
    forwards = None  # ids of the equations backward ones are the gradient of (a scan's)
    kept = []
    for e in reversed(graph.eqns):
        out = e.out  # (None for an equation with several outputs: needed if any one is)
        if (out.id in live if out is not None else any(v.id in live for v in e.outs)) \
                or not e.op.pure:
            if e.op.name == "scan":
                if forwards is None:
                    forwards = {id(q.block) for q in graph.eqns if q.block is not None}
                e = _pruned(e, live, _adjoint_loop(e) and id(e) not in forwards)
            kept.append(e)
            live.update([a.id for a in e.inputs if type(a) is Var])
    kept.reverse()
    consts = {v: a for v, a in graph.consts.items() if v.id in live}
    return graph.replace(eqns=kept, consts=consts)


def _adjoint_loop(e: Eqn) -> bool:
    """Whether scan ``e`` is the reverse loop of a region (made by its VJP rule: its
    carries are gradients and sums of gradients). Only those lose dead carries: a
    forward loop's equation is matched with its reverse loop by identity
    (residuals.py), and its copy in a reverse body is moved back into the forward body,
    every output kept."""
    return e.block is not None and e.block.op.name in ("scan", "while")


def _pruned(e: Eqn, live: set, carries: bool = False) -> Eqn:
    """A scan without the per-step outputs (ys) nothing reads, its body without what
    only they needed (or nothing reads); with ``carries``, without its dead carries too
    (``_without_carries``); a while loop's reverse also without the saved steps its body
    no longer reads (then the while loop does not keep them: ``_unwalked``)."""
    body, n_carry = e.params["body"], e.params["n_carry"]
    n_ys = len(body.outputs) - n_carry
    dead = [k for k in range(n_ys) if e.outs[n_carry + k].id not in live]
    if not dead:  # (a body a batching rule built may still hold dead equations)
        clean = dce(body)
        if len(clean.eqns) != len(body.eqns):
            e = Eqn(e.op, e.inputs, e.outs, {**e.params, "body": clean}, e.src, e.block,
                    e.nograd, e.keeps_history)
        return _unwalked(_without_carries(e, live) if carries else e)
    keep = [k for k in range(n_ys) if k not in dead]
    outputs = body.outputs[:n_carry] + [body.outputs[n_carry + k] for k in keep]
    new_body = dce(body.replace(outputs=outputs))
    outs = e.outs[:n_carry] + tuple(e.outs[n_carry + k] for k in keep) + \
        e.outs[n_carry + n_ys:]
    e = Eqn(e.op, e.inputs, outs, {**e.params, "body": new_body}, e.src, e.block, e.nograd,
            e.keeps_history)
    return _unwalked(_without_carries(e, live) if carries else e)


def _without_carries(e: Eqn, live: set) -> Eqn:
    """A scan without the carries whose last value and saved stack nothing reads and
    that no kept output of its body reads, each step (their initial values go too)."""
    body, n_carry = e.params["body"], e.params["n_carry"]
    n_ys = len(body.outputs) - n_carry
    saved = e.outs[n_carry + n_ys:]
    dead = {k for k in range(n_carry)
            if e.outs[k].id not in live and saved[k].id not in live}
    while dead:
        kept = dce(body.replace(outputs=[o for k, o in enumerate(body.outputs)
                                         if k not in dead]))
        read = {a.id for q in kept.eqns for a in q.inputs if isinstance(a, Var)} | {
            o.id for o in kept.outputs if isinstance(o, Var)}
        back = {k for k in dead if body.inputs[k].id in read}
        if not back:
            break
        dead -= back
    if not dead:
        return e
    alive = [k for k in range(n_carry) if k not in dead]
    pick = lambda seq: [seq[k] for k in alive] + list(seq[n_carry:])  # noqa: E731
    inputs = [body.inputs[k] for k in alive] + list(body.inputs[n_carry:])
    new_body = dce(body.replace(inputs=inputs, outputs=pick(body.outputs)))
    outs = pick(e.outs[:n_carry + n_ys]) + [saved[k] for k in alive]
    return Eqn(e.op, tuple(pick(e.inputs)), tuple(outs),
               {**e.params, "body": new_body, "n_carry": len(alive)}, e.src, e.block,
               e.nograd, e.keeps_history)


def _unwalked(e: Eqn) -> Eqn:
    """A scan as long as the arrays it walks (``length`` None: a while loop's reverse)
    without the walked arrays its body reads nowhere, but the first (its length). A scan
    of known length keeps them: ``loop_residuals`` pairs it with its forward by them."""
    body, n_carry, n_xs = e.params["body"], e.params["n_carry"], e.params["n_xs"]
    if e.params.get("length") is not None or n_xs < 2:
        return e
    read = {a.id for q in body.eqns for a in q.inputs if isinstance(a, Var)}
    read |= {v.id for v in body.outputs if isinstance(v, Var)}
    b_x = body.inputs[n_carry:n_carry + n_xs]
    keep = [k for k, v in enumerate(b_x) if v.id in read] or [0]
    if len(keep) == n_xs:
        return e
    inputs = list(body.inputs[:n_carry]) + [b_x[k] for k in keep] \
        + list(body.inputs[n_carry + n_xs:])
    outer = e.inputs[:n_carry] + tuple(e.inputs[n_carry + k] for k in keep) \
        + e.inputs[n_carry + n_xs:]
    return Eqn(e.op, outer, e.outs, {**e.params, "body": body.replace(inputs=inputs),
                                     "n_xs": len(keep)}, e.src, e.block, e.nograd,
               e.keeps_history)
