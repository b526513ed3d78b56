"""batch: a graph traced for one example, run on a batch (``vmap``).

``batch_eval`` walks the equations of a graph traced on one example and runs each op's
batching rule (ops/table/batching.py) where an input carries the batch, the op itself
where none does. The values may be arrays, Tensors (the result records autograd) or IR
values inside a Builder (the result is a batched graph, which codegen turns into numpy
code over the whole batch).

>>> import numpy as np
>>> import pullback as pb
>>> from pullback.ir import Builder, Graph, Var
>>> x = Var((3,), np.float64, np.ones(3), name="x")
>>> with Builder() as b:
...     y = pb.ops.OPS["sum_all"](pb.ops.OPS["tanh"](x))
>>> g = Graph([x], b.eqns, [y], b.consts)
>>> out, batched = batch_eval(g, [np.zeros((2, 3))], [True], 2)
>>> out[0], batched
(array([0., 0.]), [True])
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable

import numpy as np

from pullback.ir import Builder, Graph, Var
from pullback.ir.graph import ACTIVE
from pullback.ops import OPS
from pullback.ops.table.batching import (
    Padded,
    Unbatchable,
    apply_rule,
    example,
    padded_rule,
    with_batch,
)

#: randomness modes (torch.func.vmap's): a draw is an error, the same for every batch
#: element, or different for each
RANDOMNESS = ("error", "same", "different")


class RandomnessError(RuntimeError):
    pass


class _Mode(threading.local):
    randomness = "error"  # the mode of the vmap being run (regions' bodies inherit it)


_MODE = _Mode()


def batch_eval(graph: Graph, inputs: list, batched: list, size: int,
               randomness: str | None = None, nograd: Callable | None = None,
               apply: Callable | None = None) -> tuple[list, list]:
    """``graph`` (traced on one example) on ``inputs``, where ``batched[i]`` says input
    ``i`` carries the batch (of ``size``) in axis 0. Returns the outputs and which of
    them carry it. ``nograd()``: the context for the equations the program ran without
    grad; ``apply(op, args, params)``: how a draw with no input is run on Tensors (so a
    trace around the vmap records it, and compiled code draws anew on every call).
    ``randomness`` None: the mode of the batch_eval this one runs inside (a loop's body)."""
    outer = _MODE.randomness
    _MODE.randomness = randomness = outer if randomness is None else randomness
    try:
        return _walk(graph, inputs, batched, size, randomness, nograd, apply)
    finally:
        _MODE.randomness = outer


def _walk(graph: Graph, inputs: list, batched: list, size: int, randomness: str,
          nograd: Callable | None, apply: Callable | None) -> tuple[list, list]:
    env: dict[int, Any] = {v.id: x for v, x in zip(graph.inputs, inputs)}
    hot = {v.id for v, b in zip(graph.inputs, batched) if b}
    padded: dict = {}  # values a Padded result marks -> its steps (PADDED_RULES read them)
    b = getattr(ACTIVE, "builder", None)
    # building a graph: its constant arrays stay Vars, so an equation that reads only
    # them is emitted, not computed now (generated code reads a captured array by
    # reference: a mask written between calls is seen where a folded value was not)
    env.update((v.id, value if b is None or not isinstance(value, np.ndarray)
                else b.const(value)) for v, value in graph.consts.items())
    for e in graph.eqns:
        args = tuple(env[a.id] if isinstance(a, Var) else a for a in e.inputs)
        flags = tuple(isinstance(a, Var) and a.id in hot for a in e.inputs)
        with (nograd() if e.nograd and nograd is not None else contextlib.nullcontext()):
            if any(isinstance(a, Var) and a.id in padded for a in e.inputs):
                result = _padded_step(e, args, flags, padded)
            else:
                result = _step(e.op, args, flags, e.params, size, randomness, apply)
        if result is _UNBATCHED:
            result = _fresh(e.op, args, e.params, apply) if e.op.draws_from is not None \
                else e.op(*args, **e.params)
        else:
            hot.update(v.id for v in e.outs)
            if isinstance(result, Padded):
                padded.update((v.id, result.steps) for v in e.outs[result.start:])
                result = result[0] if e.out is not None else result
        if e.out is not None:
            env[e.out.id] = result
        else:
            env.update((v.id, r) for v, r in zip(e.outs, result))
    if any(isinstance(v, Var) and v.id in padded for v in graph.outputs):
        raise Unbatchable("while")
    outs = [env[v.id] if isinstance(v, Var) else v for v in graph.outputs]
    return outs, [isinstance(v, Var) and v.id in hot for v in graph.outputs]


def batched_graph(graph: Graph, values: list, batched: list, size: int,
                  randomness: str | None = None, force: list | None = None
                  ) -> tuple[Graph, list]:
    """``graph`` batched as a graph of its own: its inputs Vars holding ``values`` (the
    batched ones with the batch in axis 0), and which outputs carry the batch (those
    ``force`` names carry it always: the same value for every element where it is not
    batched)."""
    ins = [Var(np.shape(x), np.asarray(x).dtype, np.asarray(x), name=v.name)
           for x, v in zip(values, graph.inputs)]
    with Builder() as b:
        outs, flags = batch_eval(graph, ins, batched, size, randomness)
        for k in [k for k, f in enumerate(force or ()) if f and not flags[k]]:
            outs[k], flags[k] = with_batch(outs[k], size), True
        outs = [o if o is None or isinstance(o, Var) else b.const(np.asarray(o)) for o in outs]
    return Graph(ins, b.eqns, outs, b.consts, name=graph.name), flags


_UNBATCHED = object()  # _step's answer for an op that runs as it is


def _padded_step(e: Any, args: tuple, flags: tuple, padded: dict) -> Any:
    """An equation reading ``Padded`` values (of one loop): its op's rule for them."""
    marks = tuple(isinstance(a, Var) and a.id in padded for a in e.inputs)
    steps = {id(padded[a.id]): padded[a.id] for a, m in zip(e.inputs, marks) if m}
    rule = padded_rule(e.op)
    if rule is None or len(steps) != 1 or None in steps.values():
        raise Unbatchable(e.op.name)
    return rule(e.op, args, flags, marks, *steps.values(), **e.params)


def _step(op: Any, args: tuple, flags: tuple, params: dict, size: int,
          randomness: str, apply: Callable | None = None) -> Any:
    """The op batched, or ``_UNBATCHED`` where no input carries the batch."""
    if op.draws_from is not None:
        return _draw(op, args, flags, params, size, randomness, apply)
    if not any(flags):
        return _UNBATCHED
    if op.name == "copy_into" and not flags[0]:  # a captured buffer's new value
        raise RuntimeError(
            "vmap: inplace arithmetic(self, *extra_args) is not possible because there "
            "exists a Tensor `other` in extra_args that has more elements than `self`. This "
            "happened due to `other` being vmapped over but `self` not being vmapped over "
            "in a vmap. Please try to use out-of-place operators instead of inplace "
            "arithmetic.")
    return apply_rule(op, args, flags, params)


def _draw(op: Any, args: tuple, flags: tuple, params: dict, size: int,
          randomness: str, apply: Callable | None) -> Any:
    """A random draw: refused, made once for the whole batch, or made per element."""
    if randomness == "error":
        raise RandomnessError(
            "vmap: called random operation while in randomness error mode. Please either "
            "use the 'same' or 'different' randomness flags on vmap or perform the "
            "randomness operation out of vmap")
    if randomness == "same":
        if not any(flags):
            return _UNBATCHED
        # (a draw's inputs only type and shape it: one example's, for every element)
        return with_batch(op(*[example(a, 0) if b else a for a, b in zip(args, flags)],
                             **params), size)
    if any(flags):
        return apply_rule(op, args, flags, params)
    if "shape" in params:
        return _fresh(op, args, {**params, "shape": (size,) + tuple(params["shape"])}, apply)
    # (a draw whose size is not a param, numpy's: one draw per element, stacked)
    draws = [_fresh(op, args, params, apply) for _ in range(max(size, 1))]
    return with_batch(draws[0], 0) if size == 0 else OPS["stack"](*draws, dim=0)


def _fresh(op: Any, args: tuple, params: dict, apply: Callable | None) -> Any:
    """A draw none of whose inputs is an IR value, recorded where the batched program is
    being built (the active Builder, or ``apply``'s trace), not drawn once into a
    constant that every call would then repeat."""
    builder = getattr(ACTIVE, "builder", None)
    if builder is not None and not any(isinstance(a, Var) for a in args):
        return builder.emit(op, args, params)
    return apply(op, args, params) if apply is not None else op(*args, **params)


__all__ = ["batch_eval", "batched_graph", "RANDOMNESS", "RandomnessError"]
