"""What the code of a function's loops needs to know of the whole function, found
once per generated function (``loop_facts``): which values only loops walk, how often
each value is read, the equation making each, and the graphs (of the function's
regions) each value is made or read in (codegen_regions.py, codegen_loop_names.py,
codegen_loop_buffers.py read them)."""

from __future__ import annotations

from typing import Any

from pullback.ir import Graph, Var, every_eqn

from .codegen_packs import find_packs

#: the ops whose equations hold region graphs (codegen_regions.py writes each)
REGION_OPS = ("scan", "while", "switch")


class LoopFacts:
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
            returned += [v for g in _region_graphs(e) for v in g.outputs if type(v) is Var]
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
                todo += _region_graphs(e)
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
            stack += _region_graphs(e)
    return found


def loop_facts(em: Any) -> LoopFacts:
    found = getattr(em, "loop_facts", None)
    if found is None:
        found = em.loop_facts = LoopFacts(em.graph, em.guards)
    return found


def walked_only(em: Any) -> set:
    return loop_facts(em).walked_only


def _region_graphs(e: Any) -> list:
    """The region graphs a region equation holds (bodies, a condition, branches)."""
    return [g for p in e.params.values() for g in (p if isinstance(p, tuple) else (p,))
            if isinstance(g, Graph)]
