"""Writing region equations (regions.py) as Python control flow: a scan is a ``for``
loop with its body once, as a reader would write it by hand::

    h = h0
    ys = np.empty((50, 4), np.float32)
    for i in range(50):
        x = xs[i]
        t0 = h @ w
        h = np.tanh(t0 + x)
        ys[i] = h

The body's values take their own names, and a carry's new value the carry's; its
inputs from outside are the outer values' names, so nothing is copied in. Stacked
outputs nothing reads are not kept; those only a later loop walks (the residuals a
reverse loop reads) are lists of the steps' arrays, as a hand-written loop keeps them.

The loops' names are chosen in ``codegen_loop_names.py``, their carries' first values
and in-place sums in ``codegen_loop_buffers.py``, from what ``codegen_loop_facts.py``
finds once of the whole function.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from pullback.ir import Graph, Var, naming

from .codegen_items import items_in_place
from .codegen_loop_buffers import shared_names, starts, sum_lines, sums_in_place
from .codegen_loop_facts import loop_facts, walked_only
from .codegen_loop_names import carry_names, name_item, name_tables
from .codegen_loop_numbers import fixed_numbers, numbers_read
from .cse import _key, _params_key
from .inplace import IntoOp
from .regions import scan_parts

INDENT = "    "


def _live(em: Any, v: Var, last: dict) -> bool:
    return v.id in last or v.id in em.guards


def _emit_scan(em: Any, e: Any, last: dict) -> list[str]:
    p = e.params
    body, n_carry, n_xs, length = p["body"], p["n_carry"], p["n_xs"], p["length"]
    carries, xs, consts = scan_parts(e.inputs, n_carry, n_xs)
    b_carry, b_x, b_k = scan_parts(body.inputs, n_carry, n_xs)
    n_y = len(body.outputs) - n_carry
    last_carry, ys, saved = e.outs[:n_carry], e.outs[n_carry:n_carry + n_y], \
        e.outs[n_carry + n_y:]
    for bv, outer in zip(b_k, consts):  # the body reads the outer values by their names
        em.names[bv.id] = em.literal(outer)
    for v, value in body.consts.items():
        em.names[v.id] = em.bind(value)
    numbers = numbers_read(em, e, b_k, consts, (body,))
    saves = [(v, bv) for v, bv in zip(saved, b_carry) if _live(em, v, last)]
    region = body  # (the graph of the function's IR; the writes in place make a new one)
    body, written = items_in_place(body, b_carry, {bv.id for _, bv in saves})
    shared_names(em, e, b_carry, carries)
    name_tables(em, body)
    new_carries = carry_names(em, body, b_carry, region)
    kept = {bv.id for _, bv in saves}
    fixed = fixed_numbers(region, b_carry, [not _live(em, v, last) and bv.id not in kept
                                            for v, bv in zip(last_carry, b_carry)])
    lines = numbers + starts(em, e, b_carry, carries, written, True, fixed)
    stacked = [(v, bv) for v, bv in zip(ys, body.outputs[n_carry:]) if _live(em, v, last)]
    if length == 0 or length is None and not xs:  # (the carries stay as they came in)
        lines += [f"{em.name(v)} = np.empty({em.literal(v.shape)}, {em.literal(v.dtype)})"
                  for v, _ in stacked + saves]
    else:
        sums = sums_in_place(em, body, carries, b_carry, saves,
                              {bv.id: c for bv, c in zip(b_k, consts)})
        lines += _loop(em, e, body, stacked, saves, new_carries, sums)
    return lines + _last_values(em, last_carry, b_carry, last, region)


def _last_values(em: Any, outs: tuple, b_carry: tuple, last: dict, body: Graph
                 ) -> list[str]:
    """The carries' last values after the loop: called by the carries' names (no
    ``h_2 = h_1``), where nothing else binds those names before they are read: a
    carry no other graph holds (a reverse body running the step again would), of a
    body no other loop runs (vmap's loop over a batch runs one per element), and whose
    last value has no name yet (a loop around's carry names it); else bound to theirs."""
    lines = []
    facts = loop_facts(em)
    alone = facts.loops.get(id(body)) == 1
    for v, bv in zip(outs, b_carry):
        if not _live(em, v, last):
            continue
        if alone and v.id not in em.names and facts.graphs_of.get(bv.id, set()) <= {id(body)}:
            em.names[v.id] = em.name(bv)
        else:
            lines.append(f"{em.name(v)} = {em.name(bv)}")
    return lines


def _loop(em: Any, e: Any, body: Any, stacked: list, saves: list, new_carries: list,
          sums: list) -> list[str]:
    """The ``for`` loop, its body once. What only later loops walk (the residuals a
    reverse loop reads) is kept in a list, as a hand-written loop keeps it; the other
    per-step outputs are written into arrays made before the loop (stacked after it
    when the trip count is known at run time only)."""
    p = e.params
    n_carry, n_xs, length = p["n_carry"], p["n_xs"], p["length"]
    _, xs, _ = scan_parts(e.inputs, n_carry, n_xs)
    b_carry, b_x, _ = scan_parts(body.inputs, n_carry, n_xs)
    i = em.ns.fresh(naming.LOOP_INDEX)
    n = f"len({em.literal(xs[0])})" if length is None else str(length)
    steps = f"range({n} - 1, -1, -1)" if p["reverse"] else f"range({n})"
    walked = walked_only(em) if not p["reverse"] else set()
    packs = {v.id: loop_facts(em).packs[v.id] for v, _ in stacked + saves
             if v.id in loop_facts(em).packs and not p["reverse"]}
    lists = {v.id for v, _ in stacked + saves if v.id in walked or length is None}
    lists |= set(packs)
    for v, _ in stacked + saves:  # (a pack's values: one list, one name)
        if v.id in packs:
            em.names[v.id] = em.name(packs[v.id].fwd[0])
    lines = _uniq_lines([f"{em.name(v)} = []" if v.id in lists else
                         f"{em.name(v)} = np.empty({em.literal(v.shape)}, {em.literal(v.dtype)})"
                         for v, _ in stacked + saves])
    inner = _walks(em, i, b_x, xs)
    store = lambda v, bv: (f"{em.name(v)}.append({em.literal(bv)})" if v.id in lists
                           else f"{em.name(v)}[{i}] = {em.literal(bv)}")
    snaps = {v.id: em.ns.fresh(bv.name or naming.SAVED) for v, bv in saves
             if v.id in packs}  # (a saved carry in a pack: stored with it, at the end)
    inner += [f"{snaps[v.id]} = {em.name(bv)}" if v.id in snaps else store(v, bv)
              for v, bv in saves]
    step = em.statements(body, free=False)
    table = sum_lines(em, sums)
    inner += [table.get(line, line) for line in step]
    inner += _stores(em, stacked + [s for s in saves if s[0].id in snaps], packs, store,
                     snaps)
    inner += _next_carries(em, new_carries, b_carry)
    lines.append(f"for {i} in {steps}:")
    lines += [INDENT + line for line in inner or ["pass"]]
    order = "[::-1]" if p["reverse"] else ""
    lines += [_stacked(em, v, order, True) for v, _ in stacked + saves
              if v.id in lists and v.id not in walked and v.id not in packs]
    return lines


def _uniq_lines(lines: list) -> list:
    return list(dict.fromkeys(lines))


def _walks(em: Any, i: str, b_x: tuple, xs: tuple) -> list[str]:
    """A step's items of the walked arrays: ``x = xs[i]``; a pack's at once, unpacked
    (``a, b = res[i]``) or, nested, its inner pack (one list for all its values)."""
    packs, lines, done = loop_facts(em).packs, [], set()
    inside = {x.id: bv for bv, x in zip(b_x, xs) if type(x) is Var}
    for bv, x in zip(b_x, xs):
        pack = packs.get(x.id) if type(x) is Var else None
        if pack is None or not all(v.id in inside for v in pack.rev):
            name_item(em, bv, x)
            lines.append(f"{em.name(bv)} = {em.literal(x)}[{i}]")
            continue
        if id(pack) in done:
            continue
        done.add(id(pack))
        mine = [inside[v.id] for v in pack.rev]
        if not pack.leaf:
            for v in mine[1:]:
                em.names[v.id] = em.name(mine[0])
        names = mine[:1] if not pack.leaf or len(mine) == 1 else mine
        lines.append(f"{', '.join(em.name(v) for v in names)} = {em.literal(x)}[{i}]")
    return lines


def _stores(em: Any, stacked: list, packs: dict, store: Callable, snaps: dict
            ) -> list[str]:
    """A step's stores of its stacked outputs; a pack's at once, one tuple (or, nested,
    its inner pack's list). ``snaps``: the names of the saved carries' step-start
    values."""
    lines, done = [], set()
    made = {v.id: bv for v, bv in stacked}
    for v, bv in stacked:
        pack = packs.get(v.id)
        if pack is None:
            lines.append(store(v, bv))
        elif id(pack) not in done:
            done.add(id(pack))
            mine = [made[u.id] for u in pack.fwd]
            text = [snaps.get(u.id) or em.literal(b) for u, b in zip(pack.fwd, mine)]
            items = text[0] if not pack.leaf or len(mine) == 1 else f"({', '.join(text)})"
            lines.append(f"{em.name(v)}.append({items})")
    return lines


def _next_carries(em: Any, news: list, b_carry: tuple) -> list[str]:
    """``h, total = h_1, t5`` for the carries whose new values (``news``: values or
    literals) have names of their own."""
    pairs = [(em.name(bv), em.literal(new)) for bv, new in zip(b_carry, news)]
    pairs = [(old, new) for old, new in pairs if old != new]
    if not pairs:
        return []
    return [f"{', '.join(o for o, _ in pairs)} = {', '.join(n for _, n in pairs)}"]


def _stacked(em: Any, v: Var, order: str, maybe_empty: bool) -> str:
    """``ys = np.stack(ys)``; for a loop that may run no step, an empty array then."""
    name = em.name(v)
    if not maybe_empty:
        return f"{name} = np.stack({name}{order})"
    empty = f"np.empty({em.literal((0,) + tuple(v.shape[1:]))}, {em.literal(v.dtype)})"
    return f"{name} = np.stack({name}{order}) if {name} else {empty}"


def _emit_while(em: Any, e: Any, last: dict) -> list[str]:
    """``while True:`` with the condition's statements, ``break`` when it is false, the
    body, and a count of the steps (the reverse loop runs as many)."""
    p = e.params
    cond, body, n_carry = p["cond"], p["body"], p["n_carry"]
    carries, consts = e.inputs[:n_carry], e.inputs[n_carry:]
    last_carry, count = e.outs[:n_carry], e.outs[n_carry]
    saved, ys = e.outs[n_carry + 1:2 * n_carry + 1], e.outs[2 * n_carry + 1:]
    numbers = []
    for graph in (cond, body):
        _bind_inputs(em, graph, graph.inputs[n_carry:], consts)
        numbers += numbers_read(em, e, graph.inputs[n_carry:], consts, (graph,))
    b_carry, region = tuple(body.inputs[:n_carry]), body
    body, reused = _cond_shared(cond, body)
    saves = [(v, bv) for v, bv in zip(saved, b_carry) if _live(em, v, last)]
    body, written = items_in_place(body, b_carry, {bv.id for _, bv in saves})
    name_tables(em, body)
    new_carries = carry_names(em, body, b_carry, region)
    lines = numbers + starts(em, e, b_carry, carries, written, False)
    for cv, bv in zip(cond.inputs[:n_carry], b_carry):
        em.names[cv.id] = em.name(bv)  # (the condition reads the carries by their names)
    counted = _live(em, count, last)
    n = em.ns.fresh(naming.LOOP_COUNT) if counted else None
    stacked = [(v, bv) for v, bv in zip(ys, body.outputs[n_carry:]) if _live(em, v, last)]
    lines += [f"{n} = 0"] * counted + [f"{em.name(v)} = []" for v, _ in saves + stacked]
    inner = em.statements(cond, free=False)
    for v, cv in reused:  # (the body reads what the condition computed by its names)
        em.names[v.id] = em.name(cv)
    inner.append(f"if not {em.literal(cond.outputs[0])}:")
    inner.append(INDENT + "break")
    inner += [f"{em.name(v)}.append({em.name(bv)})" for v, bv in saves]
    inner += em.statements(body, free=False)
    inner += [f"{em.name(v)}.append({em.literal(bv)})" for v, bv in stacked]
    inner += _next_carries(em, new_carries, b_carry)
    inner += [f"{n} += 1"] * counted
    lines.append("while True:")
    lines += [INDENT + line for line in inner]
    walked = walked_only(em)
    lines += [_stacked(em, v, "", True) for v, _ in saves if v.id not in walked]
    lines += [_stacked(em, v, "", True) for v, _ in stacked]
    lines += _last_values(em, last_carry, b_carry, last, region)
    if counted:
        lines.append(f"{em.name(count)} = np.int64({n})")
    return lines


def _cond_shared(cond: Graph, body: Graph) -> tuple[Graph, list]:
    """The body without the equations the condition computed already, from the same
    values (``y * y - a`` in ``while abs(y * y - a).max() > tol: y = y - (y * y - a) /
    (2 * y)``), and the pairs (body value, condition value) it reads instead. Only
    results of their own (no views: the body may write items of a carry in place)."""
    canon = {b.id: c.id for c, b in zip(cond.inputs, body.inputs)}

    def key(q: Any) -> Any:
        return (q.op.name, tuple([canon.get(a.id, a.id) if type(a) is Var else _key(a)
                                  for a in q.inputs]), _params_key(q.params))

    def plain(q: Any) -> bool:
        return q.op.pure and q.out is not None and not q.op.aliases \
            and q.op.name not in REGIONS and not isinstance(q.op, IntoOp)

    seen = {}
    for q in cond.eqns:
        if plain(q):
            seen.setdefault(key(q), q.out)
    if not seen:
        return body, []
    kept, reused = [], []
    for q in body.eqns:
        hit = seen.get(key(q)) if plain(q) else None
        if hit is None or hit.shape != q.out.shape or hit.dtype != q.out.dtype:
            kept.append(q)
            continue
        canon[q.out.id] = hit.id
        reused.append((q.out, hit))
    return (body.replace(eqns=kept), reused) if reused else (body, [])


def _bind_inputs(em: Any, graph: Any, inner: tuple, outer: tuple) -> None:
    """A region's inputs from outside read the outer values by their names; its
    constants are the module's."""
    for bv, ov in zip(inner, outer):
        em.names[bv.id] = em.literal(ov)
    for v, value in graph.consts.items():
        em.names[v.id] = em.bind(value)


def _emit_switch(em: Any, e: Any, last: dict) -> list[str]:
    """``if``/``else`` (``elif`` for more branches), each ending in the outputs' names."""
    index, operands = e.inputs[0], e.inputs[1:]
    branches = e.params["branches"]
    k = em.literal(index)
    lines = []
    if len(branches) == 2 and np.dtype(getattr(index, "dtype", int)).kind == "b":
        tests = [f"if {k}:", "else:"]
        order = [branches[1], branches[0]]
    else:
        pick = em.ns.fresh(naming.BRANCH)
        lines.append(f"{pick} = min(max(int({k}), 0), {len(branches) - 1})")
        k = pick
        tests = [f"{'if' if j == 0 else 'elif'} {k} == {j}:" for j in range(len(branches) - 1)]
        tests.append("else:")
        order = list(branches)
    for test, graph in zip(tests, order):
        _bind_inputs(em, graph, graph.inputs, operands)
        inner = em.statements(graph, free=False)
        inner += [f"{em.name(v)} = {em.literal(o)}" for v, o in zip(e.outs, graph.outputs)]
        if len(branches) == 1:  # (one branch: no test to make)
            return lines + inner
        lines.append(test)
        lines += [INDENT + line for line in inner]
    return lines


#: op name -> the function writing its equation as statements
REGIONS: dict[str, Callable] = {"scan": _emit_scan, "while": _emit_while,
                                "switch": _emit_switch}
