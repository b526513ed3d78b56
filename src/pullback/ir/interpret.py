"""Running an IR graph op by op through the op table (on Tensors, arrays or Vars).

Used when compiled code must build a graph of its own (``create_graph=True``
through a compiled region) and in tests to check codegen against the IR.
"""

from __future__ import annotations

from typing import Any, Callable

from .graph import Eqn, Graph, Var


def evaluate(graph: Graph, inputs: list, consts: dict | None = None,
             step: Callable[[Eqn, tuple], Any] | None = None) -> list:
    """Evaluate ``graph`` on ``inputs`` (one per graph input); returns its outputs.
    ``step(eqn, args)``, if given, runs each equation (anomaly mode watches them)."""
    env: dict[int, Any] = {v.id: x for v, x in zip(graph.inputs, inputs)}
    for v, value in graph.consts.items():
        env[v.id] = value if consts is None else consts.get(v.id, value)
    for e in graph.eqns:
        args = tuple(env[a.id] if isinstance(a, Var) else a for a in e.inputs)
        result = e.op(*args, **e.params) if step is None else step(e, args)
        if e.out is not None:
            env[e.out.id] = result
        else:  # several outputs
            env.update((v.id, r) for v, r in zip(e.outs, result))
    return [env[v.id] if isinstance(v, Var) else v for v in graph.outputs]
