"""``autograd.backward`` and ``autograd.grad``: argument checks, then the engine."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from . import engine, messages
from .graph import accumulate
from .record import grad_edge


def _as_tuple(x: Any) -> tuple:
    from ..tensor import Tensor
    if x is None:
        return ()
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _root_grads(outputs: tuple, grads: tuple, create_graph: bool) -> list:
    """One seed gradient per output, checked as torch checks them."""
    from ..tensor import Tensor
    if len(grads) != len(outputs):
        raise RuntimeError(messages.COUNT_MISMATCH.format(n=len(outputs), m=len(grads)))
    seeds = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if out._requires_grad:
                if out._data.size != 1:
                    raise RuntimeError(messages.IMPLICIT_SCALAR)
                if out._data.dtype.kind == "c":
                    raise RuntimeError(messages.IMPLICIT_REAL.format(
                        dtype=f"torch.{out.dtype.name}"))
            g = np.ones_like(out._data)
        elif isinstance(g, Tensor):
            if g.shape != out.shape:
                raise RuntimeError(messages.SHAPE_MISMATCH.format(
                    i=i, g=messages.torch_size(g.shape), o=messages.torch_size(out.shape)))
            g = g if create_graph else g._data
        else:
            g = np.asarray(g, dtype=out._data.dtype)
            if g.shape != out.shape:
                raise RuntimeError(messages.SHAPE_MISMATCH.format(
                    i=i, g=messages.torch_size(g.shape), o=messages.torch_size(out.shape)))
        if create_graph and not isinstance(g, Tensor):
            g = Tensor._make(np.asarray(g))
        seeds.append(g)
    return seeds


def _root_edges(outputs: tuple) -> list:
    edges = []
    for i, out in enumerate(outputs):
        e = grad_edge(out)
        if e[0] is None:
            raise RuntimeError(messages.NO_GRAD_FN.format(i=i))
        edges.append(e)
    return edges


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, grad_variables: Any = None,
             inputs: Any = None) -> None:
    """Accumulate into ``.grad`` of the leaves (or of ``inputs``) the gradients of
    ``tensors``, weighted by ``grad_tensors``; one pass for several roots."""
    if grad_variables is not None:
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.",
                      FutureWarning, stacklevel=2)
        grad_tensors = grad_variables
    outputs = _as_tuple(tensors)
    grads = _as_tuple(grad_tensors) if grad_tensors is not None else (None,) * len(outputs)
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError(messages.EMPTY_INPUTS)
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        warnings.warn(messages.CREATE_GRAPH_CYCLE, UserWarning, stacklevel=3)
    seeds = _root_grads(outputs, grads, create_graph)
    edges = _root_edges(outputs)
    task = engine.GraphTask(create_graph, retain_graph, accumulate=True)
    if inputs is not None:
        task.targets = _capture(task, inputs)
    captured = engine.execute(task, edges, seeds)
    if inputs is not None:  # non-leaf inputs get .grad like retain_grad
        for t in inputs:
            if t._grad_fn is not None:
                slot = task.captures.get((t._grad_fn, t._output_nr))
                if slot is not None and captured[slot] is not None:
                    accumulate(t, captured[slot], create_graph)


def _capture(task: engine.GraphTask, inputs: tuple) -> set:
    targets = set()
    for i, t in enumerate(inputs):
        e = grad_edge(t)
        if e[0] is None:
            raise RuntimeError(messages.INPUT_NO_GRAD)
        task.captures.setdefault(e, len(task.captures))
        targets.add(e[0])
    return targets


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """The gradients of ``outputs`` with respect to ``inputs``, as a tuple; ``.grad``
    is not touched."""
    from ..tensor import Tensor
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to "
                      "True). To accumulate gradient for other parts of the graph, please use "
                      "torch.autograd.backward.", FutureWarning, stacklevel=2)
    if materialize_grads and allow_unused is False:
        raise ValueError(messages.MATERIALIZE_UNUSED)
    if allow_unused is None:
        allow_unused = materialize_grads
    if is_grads_batched:
        raise RuntimeError("grad: is_grads_batched=True is not supported by pullback yet; "
                           "call grad once per batch element")
    outs = _as_tuple(outputs)
    ins = _as_tuple(inputs)
    gouts = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outs)
    if retain_graph is None:
        retain_graph = create_graph
    seeds = _root_grads(outs, gouts, create_graph)
    edges = _root_edges(outs)
    task = engine.GraphTask(create_graph, retain_graph, accumulate=False)
    task.targets = _capture(task, ins)
    captured = engine.execute(task, edges, seeds)
    result = []
    for i, t in enumerate(ins):
        g = captured[task.captures[grad_edge(t)]]
        if g is None:
            if materialize_grads:
                g = np.zeros_like(t._data)
            elif not allow_unused:
                raise RuntimeError(messages.UNUSED_INPUT.format(i=i))
        if g is not None and not isinstance(g, Tensor):
            g = Tensor._make(np.array(g, dtype=t._data.dtype))
        result.append(g)
    return tuple(result)

