"""Names in generated loops, as a hand-written loop has them: a carry's new value takes
the carry's name (``h = np.tanh(h @ w + x)``), a table written in place keeps one name
through the step, the zeros a carry starts from take the carry's name, and a step's
item of the stacked ``exp_steps`` is ``exp``."""

from __future__ import annotations

import re
from typing import Any

from pullback.ir import Graph, Var, naming

from .codegen_loop_facts import REGION_OPS, loop_facts
from .inplace import IntoOp


def name_tables(em: Any, body: Graph) -> None:
    """A table whose items the body writes in place keeps one name through the step:
    the name its writes' results had (``g_R``, not the seed's ``g_out``)."""
    writes = [q for q in body.eqns if isinstance(q.op, IntoOp) and q.op.ufunc is None]
    hint: dict = {}
    for q in reversed(writes):
        hint[q.inputs[0].id] = hint.get(q.out.id) or q.out.name
    for q in writes:
        old = q.inputs[0]
        if old.id not in em.names and hint.get(old.id):
            em.names[old.id] = em.ns.fresh(hint[old.id])
        em.names[q.out.id] = em.name(old)


_ZEROS = ("zeros", "zeros_like")


def name_starts(em: Any, graph: Graph) -> None:
    """Name the zeros a loop's carry starts from (a gradient, a sum of gradients), made
    in ``graph`` for that loop alone, by the carry's name: ``g_W_sum =
    np.zeros_like(W)`` before the loop, no ``t1 = ...; g_W_sum = t1``. A running sum
    keeps its own name; another carry takes its new value's (``g_h``, not a seed's)."""
    loops = [e for e in graph.eqns if e.op.name in ("scan", "while")]
    if not loops:
        return
    facts = loop_facts(em)
    for e in loops:
        body, n_carry = e.params["body"], e.params["n_carry"]
        for k, (init, bv) in enumerate(zip(e.inputs[:n_carry], body.inputs)):
            q = facts.made.get(init.id) if type(init) is Var else None
            if q is None or q.op.name not in _ZEROS or facts.home.get(init.id) != id(graph) \
                    or facts.uses.get(init.id) != 1 or init.id in facts.returned \
                    or init.id in em.names or bv.id in em.names \
                    or (id(e), k) in em.sum_starts:
                continue
            new = body.outputs[k]
            hint = bv.name
            if not (hint or "").endswith(naming.GRAD_SUM) and type(new) is Var and new.name:
                hint = new.name
            em.names[init.id] = em.names[bv.id] = em.ns.fresh(hint)


def name_item(em: Any, bv: Var, x: Any) -> None:
    """An unnamed step's item of the stacked steps ``exp_steps`` is ``exp`` (a row an
    inner loop walks in turn keeps the ``exp_steps`` name)."""
    if bv.name is not None or bv.id in em.names or type(x) is not Var:
        return
    base = _STEPS.match(em.names.get(x.id) or x.name or "")
    if base is not None:
        walked = bv.id in loop_facts(em).walked
        em.names[bv.id] = em.ns.fresh(base[1] + naming.STEPS_SUFFIX if walked else base[1])


_STEPS = re.compile(rf"(\w+?){naming.STEPS_SUFFIX}(?:_\d+)?$")


def carry_names(em: Any, body: Any, b_carry: tuple, region: Graph | None = None) -> list:
    """Each carry's new value takes the carry's own name when the body reads the old
    value no more once the new one is made (``h = np.tanh(h @ w + x)``, as by hand):
    no copy from one name to the other at the end of the step. The names of the new
    values, in order."""
    n_carry = len(b_carry)
    news = body.outputs[:n_carry]
    made = {v.id: k for k, q in enumerate(body.eqns) for v in q.outs
            if q.op.name not in REGION_OPS and not isinstance(q.op, IntoOp)}
    ends = [v.id for v in body.outputs[n_carry:] if type(v) is Var]
    for new, old in zip(news, b_carry):
        if type(new) is not Var or new.id not in made or new.id in em.names \
                or sum(type(o) is Var and o.id == new.id for o in news) > 1 \
                or old.id in ends or any(o is old for o in news):
            continue
        later = body.eqns[made[new.id] + 1:]
        if not any(a is old for q in later for a in q.inputs) \
                and not _both_elsewhere(em, region or body, new, old):
            if old.id not in em.names and new.name:  # (the new value's name reads better:
                em.names[old.id] = em.ns.fresh(new.name)  # g_h, not the seed's g_out)
            em.names[new.id] = em.name(old)
    return list(news)  # (written after the body: a loop in it may name its last values)


def _both_elsewhere(em: Any, body: Graph, new: Var, old: Var) -> bool:
    """Whether another graph of the function holds both values (a reverse body running
    the step again, ``remat``): one name for both would lose the old value there."""
    graphs = loop_facts(em).graphs_of
    return bool((graphs.get(new.id, set()) & graphs.get(old.id, set())) - {id(body)})
