"""codegen: an IR graph becomes Python source that reads like hand-written numpy.

One statement per equation, the user's variable names where the tracer saw them,
a comment per user source line (``# grad of: ...`` over each backward block), and
``del`` of every value after its last use. The source is compiled once and kept in
``linecache`` under its own file name while the function lives, so tracebacks, pdb
and inspect show it. No text of a user object's ``repr`` goes into the source: values
of other than a few known types are constants bound in the module's globals.

Its rooms: ``codegen_emitter.py`` (the statements), ``codegen_text.py`` (literals and
comments), ``codegen_plan.py`` (names shared, values freed, transposes inlined),
``codegen_modules.py`` (compiling, ``linecache``, the dump directory), and
``codegen_regions.py`` (loops and other regions; the loops' names in
``codegen_loop_names.py``, their carries' buffers in ``codegen_loop_buffers.py``,
what they know of the whole function in ``codegen_loop_facts.py``).
"""

from __future__ import annotations

import types

import numpy as np

from pullback.ir import Graph, Var, naming
from pullback.ops import runtime as rt

from .codegen_emitter import _Emitter
from .codegen_modules import MODULES, Module, _compile, on_new_module, ops_namespace, set_dump_dir
from .regions import use_runner


def generate(graph: Graph, fn_name: str, env: dict | None = None,
             block: str = naming.GRAD_OF, dump: bool = True) -> Module:
    """Python source for ``graph`` as ``def fn_name(inputs): ... return outputs``.
    Backward equations (those with a ``block``) get ``# grad of:`` comments (``block``
    names them: ``tangent of`` in forward mode's code)."""
    em = _Emitter(graph)
    em.globals.update(env or {})
    em.label = block
    returned = {v.id for v in graph.outputs if type(v) is Var} | {v.id for v in graph.guards}
    for v, value in graph.consts.items():  # (bound when first read: see _Emitter.name)
        if v.id in returned:
            em.names[v.id] = em.bind(value)
        else:
            em.unread[v.id] = value
    params = [em.name(v) for v in graph.inputs]
    body = em.statements(graph, free=True)
    body[:0] = em.prologue
    outs = [em.bind(v) if type(v) is np.ndarray else em.literal(v) if v is not None
            else "None" for v in graph.outputs]
    if em.plain:  # (a loop's counter returned: numpy's int, as the trace has it)
        outs = [f"np.int64({o})" if type(v) is Var and v.id in em.plain else o
                for o, v in zip(outs, graph.outputs)]
    body.append("return " + (", ".join(outs) + ("," if len(outs) == 1 else "") if outs else "()"))
    for v in graph.inputs:  # guards on inputs are checked first
        for k in em.guards.get(v.id, ()):
            body.insert(0, f"guard({k}, {em.name(v)})")
    source = f"def {fn_name}({', '.join(params)}):\n" + "".join(
        f"    {line}\n" for line in body)
    return _compile(source, fn_name, em.globals, dump)


def from_source(source: str, fn_name: str, env: dict, code: types.CodeType | None = None
                ) -> Module:
    """The Module of ``source`` that ``generate`` wrote before (the persistent cache's
    hit), with numpy, ``rt``, ``ops`` and ``env`` as its globals; ``code``: its function's code
    object, compiled before from that source (else it is compiled now)."""
    # (``ops`` made only for code that names it: a later process's first call from the
    # persistent cache spent ~0.05 ms making it for code that does not)
    ops = ops_namespace() if "ops." in source else None
    return _compile(source, fn_name, {"np": np, "rt": rt, "ops": ops, **env}, code=code)


# a region's body runs as generated code when its op runs on arrays (regions.py)
use_runner(lambda graph: generate(graph, "step", dump=False).fn)


__all__ = ["MODULES", "Module", "from_source", "generate", "on_new_module", "ops_namespace",
           "set_dump_dir"]
