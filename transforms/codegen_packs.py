"""Packs: a forward loop's per-step outputs that one reverse loop alone walks, kept as
one list of tuples (one append and one unpack a step), as a hand-written loop keeps
them::

    res = []
    for i in range(32):
        ...
        res.append((t36, t35, w_a, w_b))
    for i in range(32 - 1, -1, -1):
        t59, t60, w_a, w_b = res[i]

rather than one array per value, each written an item a step and read back an item a
step. Nested loops nest the packs: an inner forward loop's pack is the outer loop's
per-step output, and the outer reverse loop hands each step's list to its inner reverse
loop, which unpacks it.
"""

from __future__ import annotations

from typing import Any

from pullback.ir import Eqn, Graph, Var


class Pack:
    """The values of one pack: ``fwd``, the forward loop's stacked outputs, and ``rev``,
    what the reverse loop walks for them (the same values, or, nested, the inputs of an
    inner reverse body), in one order; ``leaf``: its steps are tuples of the values
    (else each step is an inner loop's pack, one list)."""

    def __init__(self, fwd: tuple, rev: tuple, leaf: bool) -> None:
        self.fwd, self.rev, self.leaf = fwd, rev, leaf


def find_packs(facts: Any, scans: list) -> dict:
    """Value id -> its Pack, for every reverse loop of ``scans`` that walks two or more
    of one forward loop's per-step outputs, read by nothing else (or one whose steps
    nest a pack)."""
    packs: dict = {}
    for rev in scans:
        n_carry, n_xs = rev.params["n_carry"], rev.params["n_xs"]
        groups: dict = {}
        for k, x in enumerate(rev.inputs[n_carry:n_carry + n_xs]):
            if type(x) is not Var or x.id not in facts.walked_only \
                    or facts.uses.get(x.id) != 1:
                continue
            fwd = facts.made.get(x.id)
            j = _stacked_at(fwd, x)
            if j is not None:  # (saved carries apart: they do not nest)
                groups.setdefault((id(fwd), _saved(fwd, j)), (fwd, []))[1].append((j, k))
        for fwd, pairs in groups.values():
            xs = [fwd.outs[j] for j, _ in pairs]
            _pack(packs, facts, fwd, rev, pairs, xs, xs)
    return packs


def _stacked_at(fwd: Eqn | None, x: Var) -> int | None:
    """The index of ``x`` among the per-step outputs (or the saved carries) of ``fwd``,
    a forward scan."""
    if fwd is None or fwd.op.name != "scan" or fwd.params["reverse"]:
        return None
    for j in range(fwd.params["n_carry"], len(fwd.outs)):
        if fwd.outs[j] is x:
            return j
    return None


def _saved(fwd: Eqn, j: int) -> bool:
    """Whether ``fwd.outs[j]`` is a saved carry (not a per-step output)."""
    return j >= len(fwd.params["body"].outputs)


def _in_body(fwd: Eqn, j: int) -> Var:
    """What ``fwd``'s body makes for ``fwd.outs[j]``: a per-step output, or the carry
    it saves."""
    body = fwd.params["body"]
    n = len(body.outputs)
    return body.outputs[j] if j < n else body.inputs[j - n]


def _pack(packs: dict, facts: Any, fwd: Eqn, rev: Eqn, pairs: list, xs_fwd: list,
          xs_rev: list) -> None:
    fb, rb = fwd.params["body"], rev.params["body"]
    made = [_in_body(fwd, j) for j, _ in pairs]
    walked = [rb.inputs[rev.params["n_carry"] + k] for _, k in pairs]
    inner = _inner(facts, fb, rb, made, walked)
    if inner is None and len(pairs) < 2 or any(v.id in packs for v in xs_fwd + xs_rev):
        return
    pack = Pack(tuple(xs_fwd), tuple(xs_rev), inner is None)
    packs.update((v.id, pack) for v in xs_fwd + xs_rev)
    if inner is not None:
        i_fwd, i_rev, i_pairs = inner
        _pack(packs, facts, i_fwd, i_rev, i_pairs, made, walked)


def _inner(facts: Any, fb: Graph, rb: Graph, made: list, walked: list) -> tuple | None:
    """(inner forward scan, inner reverse scan, [(output index, walked index)]) when the
    forward body's ``made`` values are one inner forward scan's per-step outputs that
    the body only hands on, and the reverse body's ``walked`` inputs are what one inner
    reverse scan alone walks."""
    if not all(type(v) is Var for v in made) or len({v.id for v in made}) != len(made):
        return None
    fwd = facts.made.get(made[0].id)
    rev = _walker(rb, walked[0])
    if fwd is None or rev is None:
        return None
    n_carry, n_xs = rev.params["n_carry"], rev.params["n_xs"]
    xs = rev.inputs[n_carry:n_carry + n_xs]
    pairs = []
    for v, w in zip(made, walked):
        j = _stacked_at(facts.made.get(v.id), v) if facts.made.get(v.id) is fwd else None
        if j is None or facts.uses.get(v.id, 0) != 0 or facts.uses.get(w.id) != 1 \
                or sum(o is v for o in fb.outputs) != 1 or any(o is w for o in rb.outputs) \
                or facts.graphs_of.get(v.id) != {id(fb)} \
                or facts.graphs_of.get(w.id) != {id(rb)}:
            return None
        k = next((k for k, x in enumerate(xs) if x is w), None)
        if k is None:
            return None
        pairs.append((j, k))
    return fwd, rev, pairs


def _walker(rb: Graph, w: Var) -> Eqn | None:
    """The scan of ``rb`` (not in a region of it) that walks ``w``."""
    for e in rb.eqns:
        if e.op.name == "scan":
            n_carry, n_xs = e.params["n_carry"], e.params["n_xs"]
            if any(x is w for x in e.inputs[n_carry:n_carry + n_xs]):
                return e
    return None
