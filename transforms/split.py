"""split: cut a joint graph into a forward and a backward graph.

Forward equations stay in the forward; every forward value the backward reads
becomes a residual, returned by the forward and passed to the backward (the
saved values). Rules already read shapes statically and prefer outputs where
they allow, so only values a rule really needs are kept.
"""

from __future__ import annotations

from pullback.ir import Graph, Var, naming


def residuals(joint: Graph, n_fwd_inputs: int) -> list:
    """Forward values (inputs or results) that backward equations read."""
    fwd_ids = {v.id for v in joint.inputs[:n_fwd_inputs]}
    fwd_ids.update(v.id for e in joint.eqns if e.block is None for v in e.outs)
    used: dict[int, Var] = {}
    for e in joint.eqns:
        if e.block is not None:
            for a in e.inputs:
                if isinstance(a, Var) and a.id in fwd_ids:
                    used.setdefault(a.id, a)
    for v in draws(joint):  # (create_graph evaluates the forward again: not its draws)
        used.setdefault(v.id, v)
    return list(used.values())


def draws(graph: Graph) -> list:
    """The results of impure equations with no Var input (random draws) that other
    equations read: saved, so that evaluating the graph again reuses them."""
    made = {v.id: v for e in graph.eqns if not e.op.pure and e.block is None
            and not any(isinstance(a, Var) for a in e.inputs) for v in e.outs}
    read = {a.id for e in graph.eqns for a in e.inputs if isinstance(a, Var)}
    return [v for i, v in made.items() if i in read]


def name_steps(graph: Graph) -> Graph:
    """Name the per-step values loops stack (a scan's ys, the carries a loop saves each
    step) after what they hold: ``h_steps`` for the user's ``h``, ``exp_steps`` for an
    unnamed value ``np.exp`` made; inner loops first (their stacks keep their names in the
    loops around them). Values that have names keep them."""
    for e in graph.eqns:
        if e.op.name not in ("scan", "while"):
            continue
        body, n_carry = e.params["body"], e.params["n_carry"]
        name_steps(body)
        n_y = len(body.outputs) - n_carry
        if e.op.name == "scan":
            ys, saved = e.outs[n_carry:n_carry + n_y], e.outs[n_carry + n_y:]
        else:
            saved, ys = e.outs[n_carry + 1:2 * n_carry + 1], e.outs[2 * n_carry + 1:]
        made = {v.id: q.op.name for q in body.eqns for v in q.outs}
        pairs = list(zip(ys, body.outputs[n_carry:])) + list(zip(saved, body.inputs))
        for v, bv in pairs:
            if v.name is not None or not isinstance(bv, Var):
                continue
            hint = bv.name or made.get(bv.id)
            if hint in ("scan", "while", None):
                continue
            v.name = hint if hint.endswith(naming.STEPS_SUFFIX) else naming.steps_of(hint)
    return graph


def split(joint: Graph, n_fwd_inputs: int, n_fwd_outputs: int) -> tuple[Graph, Graph, list]:
    """(forward, backward, residuals); backward inputs = residuals + seeds.
    Forward equations are the traced ones; the adjoint's carry a ``block``."""
    name_steps(joint)
    res = residuals(joint, n_fwd_inputs)
    made_by = {v.id: e.op.name for e in joint.eqns for v in e.outs}
    for v in res:  # name saved values after the op that made them (report and code agree)
        if v.name is None:
            v.name = made_by.get(v.id, naming.SAVED)
    fwd_ids = {v.id for v in joint.inputs[:n_fwd_inputs]}
    fwd_ids.update(v.id for e in joint.eqns if e.block is None for v in e.outs)
    grads = joint.outputs[n_fwd_outputs:]
    # a gradient that is itself a forward value (a rule returning a saved value)
    res += [g for g in grads if isinstance(g, Var) and g.id in fwd_ids
            and all(g is not r for r in res)]
    fwd = joint.replace(inputs=joint.inputs[:n_fwd_inputs],
                        eqns=[e for e in joint.eqns if e.block is None],
                        outputs=joint.outputs[:n_fwd_outputs] + res,
                        name=joint.name + "_forward")
    bwd = joint.replace(inputs=res + joint.inputs[n_fwd_inputs:],
                        eqns=[e for e in joint.eqns if e.block is not None], outputs=grads,
                        name=joint.name + "_backward", guards=[])
    return fwd, bwd, res
