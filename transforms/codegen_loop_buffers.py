"""A loop's carries' buffers: each carry's first value (the initial array itself where
the loop owns it, else a copy; a counter as a Python int), and the running sums a step
adds to in place (``sum_ += g_w``), an inner loop adding into its outer loop's sum."""

from __future__ import annotations

from typing import Any

from pullback.ir import Graph, Var
from pullback.ops.elementwise import zeros_like

from .codegen_ints import int_literal
from .codegen_loop_facts import loop_facts
from .inplace import owned


def _start(em: Any, e: Any, init: Any, written: bool, k: int = -1) -> str:
    """A carry's first value: for a table the body writes items of in place, the
    initial value itself when the loop owns it (a fresh array only it reads, made in
    the loop's own graph), else a copy of it (one per run of the loop); a counter's
    (codegen_ints.py) as a Python int."""
    if k >= 0 and int_literal(init) and \
            e.params["body"].inputs[k].id in em.plain_ints():
        return repr(int(init))
    text = em.literal(init)
    into = em.sum_starts.get((id(e), k))
    if into is not None:  # (a loop around adds what this one sums: it adds in place)
        return into
    if not written:
        return text
    return text if _owned_start(loop_facts(em), e, init) else f"{text}.copy()"


def starts(em: Any, e: Any, b_carry: tuple, carries: tuple, written: list,
            counters: bool, numbers: dict | None = None) -> list[str]:
    """The carries' first values (none for a carry named as its start: ``name_starts``);
    ``numbers``: carry index -> the constructor making its first value a number."""
    lines = []
    for k, (bv, c) in enumerate(zip(b_carry, carries)):
        name, text = em.name(bv), _start(em, e, c, k in written, k if counters else -1)
        if numbers and k in numbers:
            text = f"{numbers[k]}({text})"
        if text != name:
            lines.append(f"{name} = {text}")
    return lines


def shared_names(em: Any, e: Any, b_carry: tuple, carries: tuple) -> None:
    """A carry whose first value goes by the carry's own name (the user's variable:
    ``R`` before the loop and in it) and which the loop owns (``_owned_start``: made
    for it alone, read nowhere after) keeps that name: one buffer before, in and after
    the loop (``R[i, j] = ...`` on ``R``, as by hand; no ``R_1 = R`` before it)."""
    facts = loop_facts(em)
    for k, (bv, init) in enumerate(zip(b_carry, carries)):
        if bv.id not in em.names and (id(e), k) not in em.sum_starts \
                and type(init) is Var and em.names.get(init.id) == bv.name \
                and _owned_start(facts, e, init):
            em.names[bv.id] = em.names[init.id]


def _owned_start(facts: Any, e: Any, init: Any) -> bool:
    """Whether the loop ``e`` may write into its carry's first value ``init`` in place:
    a fresh array only it reads, made in the loop's own graph; or the carry of the loop
    around it (``R`` of the outer loop, whose rows the inner loop writes) that only it
    reads, that the outer loop saves nowhere, whose first value the outer loop owns so,
    and whose next value is what ``e`` leaves in it (no copy of the table a row)."""
    if type(init) is not Var or facts.value_uses.get(init.id) != 1 \
            or init.id in facts.returned:
        return False
    start = facts.made.get(init.id)
    if start is not None:
        return owned(start) and facts.home.get(init.id) == facts.home[id(e)]
    outer = facts.carry_of.get(init.id)
    if outer is None:
        return False
    loop, k = outer
    n_carry = loop.params["n_carry"]
    body = loop.params["body"]
    saved = loop.outs[len(body.outputs) + k]
    end = e.outs[[a is init for a in e.inputs[:e.params["n_carry"]]].index(True)]
    return body.outputs[k] is end and facts.uses.get(saved.id, 0) == 0 \
        and saved.id not in facts.returned and k < n_carry \
        and _owned_start(facts, loop, loop.inputs[k])


def sums_in_place(em: Any, body: Any, carries: tuple, b_carry: tuple,
                   saves: list, outer: dict) -> list:
    """The carries a step adds to (``sum_ = sum_ + g_w``; or subtracts from) whose
    buffer the loop owns: a fresh array made for it alone, never kept per step. They
    are added to in place, ``sum_ += g_w`` (``sum_ -= t5``), as a hand-written loop sums
    a weight's gradient: only when the step reads the sum nowhere else (no view of it
    lives on). (sum's name, the value added, op, whether an inner loop adds it) each,
    written by ``sum_lines`` once the step's statements have named their values."""
    facts = loop_facts(em)
    saved = {bv.id for _, bv in saves}
    ends = {v.id for v in body.outputs[len(b_carry):] if type(v) is Var}
    made = {v.id: q for q in body.eqns for v in q.outs}
    reads = [a.id for q in body.eqns for a in q.inputs if type(a) is Var]
    reads += [v.id for v in body.outputs if type(v) is Var]
    sums = []
    for init, old, new in zip(carries, b_carry, body.outputs):
        q = made.get(new.id) if type(new) is Var else None
        if q is None or q.op.name not in ("add", "sub") or q.params or old.id in saved \
                or q.op.name == "sub" and q.inputs[0] is not old \
                or reads.count(old.id) != 1 or reads.count(new.id) != 1 \
                or new.id in ends or em.names.get(new.id) != em.name(old) \
                or new.shape != old.shape or new.dtype != old.dtype or new.shape == ():
            continue  # (a number is summed as numbers are: a 0-d array's += is ~20x slower)
        start = facts.made.get(init.id) if type(init) is Var else None
        if start is None or not (owned(start) or start.op is zeros_like) \
                or facts.uses.get(init.id) != 1 or init.id in facts.returned:
            continue
        others = [a for a in q.inputs if a is not old]
        if len(others) != 1 or len(q.inputs) != 2:
            continue
        into = _inner_sum(em, body, others[0], reads, outer) if q.op.name == "add" else None
        if into:  # the inner loop adds into this sum itself: no table of zeros a step
            em.sum_starts[into] = em.name(old)
        sums.append((em.name(old), others[0], q.op.name, into))
    return sums


def sum_lines(em: Any, sums: list) -> dict:
    """Line -> line: the statements of ``sums_in_place``'s sums, in place."""
    lines = {}
    for name, part, op, into in sums:
        other = em.literal(part)
        if op == "sub":
            lines[f"{name} = {name} - {other}"] = f"{name} -= {other}"
            continue
        for text in (f"{name} + {other}", f"{other} + {name}"):
            lines[f"{name} = {text}"] = f"{name} = {other}" if into else f"{name} += {other}"
    return lines


def _inner_sum(em: Any, body: Graph, part: Any, reads: list, outer: dict) -> tuple | None:
    """``(id of loop, carry)`` when ``part``, which a step adds to its sum, is the sum
    of an inner loop of the step that starts from zeros and only adds items into it
    (``g_D`` of soft-DTW's rows): that loop may add into the outer sum itself, as a
    hand-written loop does (no zeros copied and added per step); else None."""
    facts = loop_facts(em)
    q = facts.made.get(part.id) if type(part) is Var else None
    if q is None or q.op.name != "scan" or not any(x is q for x in body.eqns) \
            or reads.count(part.id) != 1:
        return None
    n_carry = q.params["n_carry"]
    k = next((k for k, v in enumerate(q.outs[:n_carry]) if v is part), None)
    inner = q.params["body"]
    n_y = len(inner.outputs) - n_carry
    init = q.inputs[k] if k is not None else None
    if type(init) is not Var or facts.uses.get(init.id) != 1:
        return None
    init = outer.get(init.id, init)  # (made before the loop around: read as its input)
    start = facts.made.get(init.id) if type(init) is Var else None
    saved = q.outs[n_carry + n_y + k:n_carry + n_y + k + 1]
    if start is None or start.op is not zeros_like or facts.uses.get(init.id) != 1 \
            or any(facts.uses.get(v.id, 0) or v.id in facts.returned for v in saved):
        return None
    cur, outs = inner.inputs[k], [v for v in inner.outputs if type(v) is Var]
    while not any(v is cur for v in outs):
        readers = [e for e in inner.eqns if any(a is cur for a in e.inputs)]
        if len(readers) != 1 or readers[0].op.name != "item_add" \
                or readers[0].inputs[0] is not cur \
                or sum(a is cur for a in readers[0].inputs) != 1:
            return None
        cur = readers[0].out
    if [n for n, v in enumerate(inner.outputs) if v is cur] != [k]:
        return None
    em.unused_starts.add(em.name(init))
    return id(q), k
