"""The compiler's passes, in the order they run. Read this file to see the pipeline.

    traced forward IR
      -> dce                           drop what no output needs
      -> adjoint                       append backward equations (VJP rules on IR values)
      -> peephole                      undo transposes of transposes, broadcast instead of fill
      -> cse, dce                      share work between forward and backward, drop unused
      -> lean_cross_entropy, dce       nll's gradient through log_softmax: one op
      -> loop_residuals, dce           a reverse loop reads its forward loop's values
      -> loop_invariants               what a loop computes from constants, once before it
      -> split                         (compile) forward + backward, residuals = saved values
      -> fuse                          (config.fuse) arithmetic on large arrays: one kernel
      -> native_loops                  (config.native_loops) a small loop: one numba function
      -> inplace                       ufunc results into dead buffers the backward owns
                                       (a forward alone: item writes into fresh arrays)
      -> codegen                       Python source, compiled once

pb.vmap batches a graph traced on one example (``batch``: each op's batching rule):

    traced IR (one example) -> batch -> peephole -> cse -> dce -> inplace -> codegen

Forward mode (pb.jvp, linearize, jacfwd) runs ``tangent`` where the others run
``adjoint``:

    traced forward IR -> dce -> tangent (JVP rules on IR values, interleaved)
      -> peephole, cse, dce -> (linearize) split -> inplace -> codegen

Every pass is IR -> IR except split and codegen. With ``config.check_ir`` on (the tests
turn it on), the verifier checks the IR after every pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pullback.ir import Graph, Namespace, Var, naming, verify
from pullback.settings import config

from .adjoint import adjoint
from .batch import batched_graph
from .codegen import Module, generate
from .cse import cse
from .dce import dce
from .fuse import fuse
from .inplace import inplace
from .native_loops import native_loops
from .peephole import lean_cross_entropy, peephole
from .residuals import loop_invariants, loop_residuals
from .split import name_steps, split
from .tangent import tangent


def run(graph: Graph, *passes: Any) -> Graph:
    for p in passes:
        graph = p(graph)
        if config.check_ir:
            verify(graph)
    return graph


def simplify(graph: Graph) -> Graph:
    """A forward with no gradient to compute (pb.compile under no_grad)."""
    return run(graph, peephole, cse, dce, loop_invariants, dce, fuse, native_loops,
               item_writes)


def item_writes(graph: Graph) -> Graph:
    """``inplace``'s item writes alone (``R[0, 0] = 0.0`` into the fresh ``R``)."""
    return inplace(graph, ufuncs=False)


def joint_graph(forward: Graph, wrt: list, seeds: list, ones: bool = False) -> Graph:
    """forward -> forward + backward in one graph (outputs: values, then grads);
    ``ones``: the seeds are all ones whatever the call (pb.grad's), so ``x * seed`` is x."""
    joint = adjoint(unique_names(run(forward, dce)), wrt, seeds)
    if config.check_ir:
        verify(joint)
    ones_in = tuple(s for s in seeds if s is not None) if ones else ()
    return run(joint, lambda g: peephole(g, ones_in), cse, dce, lean_cross_entropy, dce,
               loop_residuals, loop_invariants, dce)


@dataclass
class Split:
    forward: Graph
    backward: Graph
    residuals: list


def unique_names(graph: Graph) -> Graph:
    """Give every named value a unique name once, so the forward and backward
    modules (and the saved-values report) call each value the same thing."""
    name_steps(graph)
    ns = Namespace()
    seen: set = set()
    for v in list(graph.inputs) + list(graph.consts) + [v for e in graph.eqns for v in e.outs]:
        if v.name is not None and v.id not in seen:
            seen.add(v.id)
            v.name = ns.fresh(v.name)
    return graph


def split_joint(joint: Graph, n_inputs: int, n_outputs: int) -> Split:
    fwd, bwd, res = split(joint, n_inputs, n_outputs)
    unique_names(joint)
    if config.check_ir:
        verify(fwd)
        verify(bwd)
    return Split(run(fwd, dce, fuse, native_loops, inplace), run(bwd, native_loops, inplace),
                 res)


def backward_for(bwd: Graph, needs: tuple, present: tuple) -> Graph:
    """The backward graph restricted to the gradients that are needed, given which
    output gradients arrive (``present``, one flag per seed; absent seeds are zeros).
    A gradient no arriving seed reaches is None: a symbolic zero, as in eager."""
    seeds = bwd.inputs[len(bwd.inputs) - len(present):]
    reach = {s.id for s, p in zip(seeds, present) if p}
    for e in bwd.eqns:
        if any(isinstance(a, Var) and a.id in reach for a in e.inputs):
            reach.update(v.id for v in e.outs)
    outs = [g if need and isinstance(g, Var) and g.id in reach else None
            for g, need in zip(bwd.outputs, needs)]
    return run(bwd.replace(outputs=outs), dce, fuse, native_loops, inplace)


def codegen(graph: Graph, name: str, env: dict | None = None, block: str = naming.GRAD_OF
            ) -> Module:
    return generate(graph, name, env=env, block=block)


def value_and_grad_graph(forward: Graph, wrt: list, seeds: list, value: bool = True) -> Graph:
    """One graph computing the value and the gradients (pb.grad / value_and_grad);
    ``value=False`` (pb.grad's): None in the values' places, and what only they need
    is not computed (an HVP's inner gradients summed against v, for one)."""
    joint = joint_graph(forward, wrt, seeds, ones=True)
    if not value:
        n = len(forward.outputs)
        joint = run(joint.replace(outputs=[None] * n + list(joint.outputs[n:])), dce)
    return unique_names(run(joint, fuse, native_loops, inplace))


def jvp_graph(forward: Graph, wrt: list, tangents: list, n_tangents: int | None = None
              ) -> Graph:
    """forward -> forward and tangents in one graph: inputs + ``tangents`` (one per
    ``wrt`` input), outputs + the tangents of the first ``n_tangents`` outputs (all by
    default). ``pb.linearize`` splits it."""
    joint = tangent(unique_names(run(forward, dce)), wrt, tangents)
    if n_tangents is not None:
        joint = joint.replace(outputs=joint.outputs[:len(forward.outputs) + n_tangents])
    if config.check_ir:
        verify(joint)
    return unique_names(run(joint, peephole, cse, dce))


def vmapped(graph: Graph, values: list, batched: list, size: int, randomness: str = "error"
            ) -> tuple[Graph, list]:
    """A graph traced on one example, over a batch of ``size`` (pb.vmap): the batching
    rules' equations, simplified; and which outputs carry the batch."""
    g, flags = batched_graph(graph, values, batched, size, randomness)
    return unique_names(run(g, peephole, cse, dce, inplace)), flags


def jvp_program(forward: Graph, wrt: list, tangents: list, n_tangents: int | None = None
                ) -> Graph:
    """One graph computing the values and their tangents (pb.jvp, jacfwd)."""
    return unique_names(run(jvp_graph(forward, wrt, tangents, n_tangents), native_loops,
                           inplace))


__all__ = ["run", "simplify", "joint_graph", "jvp_graph", "jvp_program", "split_joint",
           "backward_for", "codegen", "value_and_grad_graph", "vmapped", "Split", "Var"]
