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
"""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

from pullback.ir import Graph, Var, every_eqn, naming
from pullback.ops.elementwise import zeros_like

from .codegen_ints import int_literal
from .codegen_items import items_in_place
from .codegen_packs import find_packs
from .cse import _key, _params_key
from .inplace import IntoOp, owned
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
    saves = [(v, bv) for v, bv in zip(saved, b_carry) if _live(em, v, last)]
    region = body  # (the graph of the function's IR; the writes in place make a new one)
    body, written = items_in_place(body, b_carry, {bv.id for _, bv in saves})
    _name_tables(em, body)
    new_carries = _carry_names(em, body, b_carry, region)
    lines = _starts(em, e, b_carry, carries, written, True)
    stacked = [(v, bv) for v, bv in zip(ys, body.outputs[n_carry:]) if _live(em, v, last)]
    if length == 0 or length is None and not xs:  # (the carries stay as they came in)
        lines += [f"{em.name(v)} = np.empty({em.literal(v.shape)}, {em.literal(v.dtype)})"
                  for v, _ in stacked + saves]
    else:
        sums = _sums_in_place(em, body, carries, b_carry, saves,
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
    facts = _facts(em)
    alone = facts.loops.get(id(body)) == 1
    for v, bv in zip(outs, b_carry):
        if not _live(em, v, last):
            continue
        if alone and v.id not in em.names and facts.graphs_of.get(bv.id, set()) <= {id(body)}:
            em.names[v.id] = em.name(bv)
        else:
            lines.append(f"{em.name(v)} = {em.name(bv)}")
    return lines


def _name_tables(em: Any, body: Graph) -> None:
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
    facts = _facts(em)
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
    return text if _owned_start(_facts(em), e, init) else f"{text}.copy()"


def _starts(em: Any, e: Any, b_carry: tuple, carries: tuple, written: list,
            counters: bool) -> list[str]:
    """The carries' first values (none for a carry named as its start: ``name_starts``)."""
    lines = []
    for k, (bv, c) in enumerate(zip(b_carry, carries)):
        name, text = em.name(bv), _start(em, e, c, k in written, k if counters else -1)
        if text != name:
            lines.append(f"{name} = {text}")
    return lines


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
    walked = _walked_only(em) if not p["reverse"] else set()
    packs = {v.id: _facts(em).packs[v.id] for v, _ in stacked + saves
             if v.id in _facts(em).packs and not p["reverse"]}
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
    table = _sum_lines(em, sums)
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
    packs, lines, done = _facts(em).packs, [], set()
    inside = {x.id: bv for bv, x in zip(b_x, xs) if type(x) is Var}
    for bv, x in zip(b_x, xs):
        pack = packs.get(x.id) if type(x) is Var else None
        if pack is None or not all(v.id in inside for v in pack.rev):
            _name_item(em, bv, x)
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


def _name_item(em: Any, bv: Var, x: Any) -> None:
    """An unnamed step's item of the stacked steps ``exp_steps`` is ``exp`` (a row an
    inner loop walks in turn keeps the ``exp_steps`` name)."""
    if bv.name is not None or bv.id in em.names or type(x) is not Var:
        return
    base = _STEPS.match(em.names.get(x.id) or x.name or "")
    if base is not None:
        walked = bv.id in _facts(em).walked
        em.names[bv.id] = em.ns.fresh(base[1] + naming.STEPS_SUFFIX if walked else base[1])


_STEPS = re.compile(rf"(\w+?){naming.STEPS_SUFFIX}(?:_\d+)?$")


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


class _Facts:
    """What the loops' code needs to know of the whole function (found once per
    generated function): the values only loops walk (read a step at a time, never
    whole: a list of the steps' arrays serves them as well as one stacked array), how
    many times each value is read, the equation making each, and the graphs (of the
    function's regions) each value is made or read in."""

    def __init__(self, graph: Graph, guards: dict) -> None:
        walked: set = set()
        self.uses: dict = {}
        self.made: dict = {}
        self.graphs_of = _graphs_of(graph)
        whole = [v for v in graph.outputs if type(v) is Var]
        returned = list(whole)
        for e in every_eqn(graph):
            self.made.update((v.id, e) for v in e.outs)
            ins = e.inputs
            if e.op.name == "scan":
                n_carry, n_xs = e.params["n_carry"], e.params["n_xs"]
                walked.update(v.id for v in ins[n_carry:n_carry + n_xs] if type(v) is Var)
            for v in ins:
                if type(v) is Var:
                    self.uses[v.id] = self.uses.get(v.id, 0) + 1
            if e.op.name == "scan":
                ins = ins[:n_carry] + ins[n_carry + n_xs:]
            whole += [v for v in ins if type(v) is Var]
            returned += [v for g in _graphs(e) for v in g.outputs if type(v) is Var]
        self.value_uses = dict(self.uses)  # (copy's dst: read for its shape alone)
        for e in every_eqn(graph):
            if e.op.name == "copy" and type(e.inputs[0]) is Var:
                self.value_uses[e.inputs[0].id] -= 1
        self.carry_of = {v.id: (e, k) for e in every_eqn(graph) if e.op.name == "scan"
                         for k, v in enumerate(e.params["body"].inputs[:e.params["n_carry"]])}
        self.home: dict = {}  # an equation's or a value's graph (by id)
        todo = [graph]
        while todo:
            g = todo.pop()
            for e in g.eqns:
                self.home[id(e)] = id(g)
                self.home.update((v.id, id(g)) for v in e.outs)
                todo += _graphs(e)
        self.returned = {v.id for v in returned} | set(guards)
        self.read_whole = {v.id for v in whole} | self.returned
        self.walked_only = walked - self.read_whole
        self.walked = walked
        self.loops: dict = {}  # id of a loop's body -> how many loop equations run it
        for e in every_eqn(graph):
            if e.op.name in ("scan", "while"):
                key = id(e.params["body"])
                self.loops[key] = self.loops.get(key, 0) + 1
        self.packs = find_packs(self, [e for e in every_eqn(graph) if e.op.name == "scan"])


def _graphs_of(graph: Graph) -> dict:
    """Value id -> the ids of the graphs (the function's and its regions') that make or
    read it. A reverse body that runs its forward again (``remat``) holds the forward
    body's own values."""
    found: dict = {}
    stack, seen = [graph], set()
    while stack:
        g = stack.pop()
        if id(g) in seen:
            continue
        seen.add(id(g))
        for v in g.inputs:
            found.setdefault(v.id, set()).add(id(g))
        for e in g.eqns:
            for v in e.inputs + e.outs:
                if type(v) is Var:
                    found.setdefault(v.id, set()).add(id(g))
            stack += _graphs(e)
    return found


def _facts(em: Any) -> _Facts:
    found = getattr(em, "loop_facts", None)
    if found is None:
        found = em.loop_facts = _Facts(em.graph, em.guards)
    return found


def _walked_only(em: Any) -> set:
    return _facts(em).walked_only


def _sums_in_place(em: Any, body: Any, carries: tuple, b_carry: tuple,
                   saves: list, outer: dict) -> list:
    """The carries a step adds to (``sum_ = sum_ + g_w``; or subtracts from) whose
    buffer the loop owns: a fresh array made for it alone, never kept per step. They
    are added to in place, ``sum_ += g_w`` (``sum_ -= t5``), as a hand-written loop sums
    a weight's gradient: only when the step reads the sum nowhere else (no view of it
    lives on). (sum's name, the value added, op, whether an inner loop adds it) each,
    written by ``_sum_lines`` once the step's statements have named their values."""
    facts = _facts(em)
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
                or new.shape != old.shape or new.dtype != old.dtype:
            continue
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


def _sum_lines(em: Any, sums: list) -> dict:
    """Line -> line: the statements of ``_sums_in_place``'s sums, in place."""
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
    facts = _facts(em)
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
    ends = [n for n, v in enumerate(inner.outputs) if v is cur]
    return (id(q), k) if ends == [k] else None


def _graphs(e: Any) -> list:
    """The region graphs a region equation holds (bodies, a condition, branches)."""
    return [g for p in e.params.values() for g in (p if isinstance(p, tuple) else (p,))
            if isinstance(g, Graph)]


def _carry_names(em: Any, body: Any, b_carry: tuple, region: Graph | None = None) -> list:
    """Each carry's new value takes the carry's own name when the body reads the old
    value no more once the new one is made (``h = np.tanh(h @ w + x)``, as by hand):
    no copy from one name to the other at the end of the step. The names of the new
    values, in order."""
    n_carry = len(b_carry)
    news = body.outputs[:n_carry]
    made = {v.id: k for k, q in enumerate(body.eqns) for v in q.outs
            if q.op.name not in REGIONS and not isinstance(q.op, IntoOp)}
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
    graphs = _facts(em).graphs_of
    return bool((graphs.get(new.id, set()) & graphs.get(old.id, set())) - {id(body)})


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
    for graph in (cond, body):
        _bind_inputs(em, graph, graph.inputs[n_carry:], consts)
    b_carry, region = tuple(body.inputs[:n_carry]), body
    body, reused = _cond_shared(cond, body)
    saves = [(v, bv) for v, bv in zip(saved, b_carry) if _live(em, v, last)]
    body, written = items_in_place(body, b_carry, {bv.id for _, bv in saves})
    _name_tables(em, body)
    new_carries = _carry_names(em, body, b_carry, region)
    lines = _starts(em, e, b_carry, carries, written, False)
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
    walked = _walked_only(em)
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
